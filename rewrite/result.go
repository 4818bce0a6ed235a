package rewrite

import (
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// Down says how to rewrite one modern response for the legacy client.
type Down struct {
	// ID is the legacy client's original id, raw JSON; it replaces the
	// upstream id byte for byte.
	ID []byte
	// Method is the method of the request being answered; it decides which
	// fields are stripped (cache fields only on cacheable results).
	Method string
	// HTTPStatus, when neither 0 nor 200, is recorded as error.data.httpStatus
	// on an error response.
	HTTPStatus int
	// TaskSupport marks every tool of a tools/list result with
	// execution.taskSupport "optional" (tasks.md §4).
	TaskSupport bool
	// RelatedTask, when set, adds _meta["io.modelcontextprotocol/related-task"]
	// = {"taskId": RelatedTask} to the result (a tasks/result payload).
	RelatedTask string
	// Room, when set, is the whole buffer the frame was read into, with
	// spare bytes in front of it (routing.Response.Room). A complete result
	// is then rewritten in that buffer rather than copied, when the edits
	// fit; the frame's views (f.Raw, f.Result...) are invalid afterwards.
	// A large result then has one copy in memory, not two.
	Room []byte
}

// Downed is the outcome of ResponseDown.
type Downed struct {
	// Frame is the legacy frame, or nil when ResultType is not "complete":
	// the caller decides what to do with input_required, task and unknown
	// result types.
	Frame []byte
	// ResultType is the upstream resultType, "complete" when absent.
	ResultType string
	// IsError is true for a JSON-RPC error response.
	IsError bool
	// Tools lists the valid x-mcp-header annotations of a tools/list page.
	Tools []ToolHeaders
	// Rejected lists tools removed from a tools/list page, with the reason.
	Rejected []RejectedTool
	// Rewrites names what was changed, for the trace.
	Rewrites []string
}

// cacheable reports whether a method's result carries ttlMs and cacheScope
// (eras.md §7). Only these lose them: a task's ttlMs is unrelated.
func cacheable(method string) bool {
	switch method {
	case "server/discover", "tools/list", "prompts/list", "resources/list",
		"resources/templates/list", "resources/read":
		return true
	}
	return false
}

// ResponseDown rewrites a modern response f (an answer to d.Method) for the
// legacy client: the id is restored, and resultType, the cache fields and
// the serverInfo _meta are removed. Everything else is copied byte for byte.
func ResponseDown(f *Frame, d Down) (Downed, error) {
	if f.Kind != KindResponse {
		return Downed{}, ErrShape
	}
	e := make(edits, 0, 8) // one allocation for the usual handful of edits
	e.replace(f.ID.Index, f.ID.Index+len(f.ID.Raw), d.ID)
	if f.Error.Exists() {
		rw := []string{"id.restore"}
		if d.HTTPStatus != 0 && d.HTTPStatus != 200 && f.Error.IsObject() {
			addErrorStatus(&e, f.Error, d.HTTPStatus)
			rw = append(rw, "error.httpStatus")
		}
		return Downed{Frame: e.apply(f.Raw), ResultType: protocol.ResultComplete, IsError: true, Rewrites: rw}, nil
	}
	res := f.Result
	if !res.IsObject() {
		return Downed{}, errResultNotObject
	}
	var buf [16]member
	ms := members(res, buf[:0])
	out := Downed{ResultType: protocol.ResultComplete}
	var meta, tools *member
	for i := range ms {
		switch ms[i].key.Str {
		case "resultType":
			if ms[i].value.Type == gjson.String {
				out.ResultType = ms[i].value.Str
			} else {
				out.ResultType = ms[i].value.Raw
			}
		case "_meta":
			meta = &ms[i]
		case "tools":
			tools = &ms[i]
		}
	}
	if out.ResultType != protocol.ResultComplete {
		return out, nil
	}
	strip := cacheable(d.Method)
	call := d.Method == "tools/call"
	var metaGone bool
	if meta != nil && meta.value.IsObject() {
		if d.RelatedTask != "" {
			relatedTaskInto(&e, meta.value, d.RelatedTask)
		} else {
			metaGone = stripServerInfo(&e, meta.value)
		}
	}
	out.Rewrites = append(out.Rewrites, "id.restore")
	note := func(name string) {
		if !contains(out.Rewrites, name) {
			out.Rewrites = append(out.Rewrites, name)
		}
	}
	if metaGone || meta != nil && d.RelatedTask == "" && meta.value.Get(gjson.Escape(protocol.MetaServerInfo)).Exists() {
		note("serverInfo.strip")
	}
	kept := e.removeMembers(res, ms, func(i int) bool {
		m := &ms[i]
		switch m.key.Str {
		case "resultType":
			note("resultType.strip")
			return true
		case "ttlMs", "cacheScope":
			if strip {
				note("cache.strip")
			}
			return strip
		case "_meta":
			return metaGone || d.RelatedTask != "" && !m.value.IsObject()
		case "structuredContent":
			// 2026 allows any JSON value; 2025 requires an object
			// (eras.md §17, POLICY: drop a non-object).
			if call && !m.value.IsObject() {
				note("structuredContent.drop")
				return true
			}
			return false
		}
		return false
	})
	if d.RelatedTask != "" {
		note("relatedTask.add")
	}
	if d.RelatedTask != "" && (meta == nil || !meta.value.IsObject()) {
		b := []byte(`"_meta":{`)
		if kept > 0 {
			b = append([]byte{','}, b...)
		}
		b = append(b, relatedTaskMember(d.RelatedTask)...)
		end := lastBrace(res)
		e.replace(end, end, append(b, '}'))
	}
	if d.Method == "tools/list" && tools != nil && tools.value.IsArray() {
		out.Tools, out.Rejected = toolsList(&e, tools.value, d.TaskSupport)
		if len(out.Rejected) > 0 {
			note("tools.filter")
		}
		if d.TaskSupport {
			note("tools.taskSupport")
		}
	}
	if d.Room != nil {
		out.ResultType = protocol.ResultComplete // the constant, not a view into the frame
		if b := e.applyInPlace(d.Room, f.Raw); b != nil {
			out.Frame = b
			return out, nil
		}
	}
	out.Frame = e.apply(f.Raw)
	return out, nil
}

type rewriteError string

func (e rewriteError) Error() string { return string(e) }

const errResultNotObject = rewriteError(`"result" must be a JSON object`)

// stripServerInfo removes _meta["io.modelcontextprotocol/serverInfo"]. It
// reports true when the whole _meta should go because nothing else is left.
func stripServerInfo(e *edits, meta gjson.Result) (dropAll bool) {
	var buf [8]member
	ms := members(meta, buf[:0])
	found := false
	for i := range ms {
		if ms[i].key.Str == protocol.MetaServerInfo {
			found = true
		}
	}
	if !found {
		return false
	}
	if len(ms) == 1 {
		return true
	}
	e.removeMembers(meta, ms, func(i int) bool { return ms[i].key.Str == protocol.MetaServerInfo })
	return false
}

// relatedTaskInto puts the related-task member first in a _meta object,
// dropping serverInfo and any related-task the server sent.
func relatedTaskInto(e *edits, meta gjson.Result, taskID string) {
	var buf [8]member
	ms := members(meta, buf[:0])
	kept := e.removeMembers(meta, ms, func(i int) bool {
		return ms[i].key.Str == protocol.MetaServerInfo || ms[i].key.Str == protocol.MetaRelatedTask
	})
	if kept > 0 {
		e.replace(meta.Index+1, meta.Index+1, relatedTaskMember(taskID), comma)
	} else {
		e.replace(meta.Index+1, meta.Index+1, relatedTaskMember(taskID))
	}
}

// addErrorStatus records the HTTP status in error.data: it creates data when
// absent and adds httpStatus to an object data that lacks it.
func addErrorStatus(e *edits, errObj gjson.Result, status int) {
	var buf [8]member
	ms := members(errObj, buf[:0])
	for i := range ms {
		if ms[i].key.Str != "data" {
			continue
		}
		data := ms[i].value
		if !data.IsObject() || data.Get("httpStatus").Exists() {
			return
		}
		b := strconv.AppendInt([]byte(`"httpStatus":`), int64(status), 10)
		if !objectIsEmpty(data.Raw) {
			b = append(b, ',')
		}
		e.replace(data.Index+1, data.Index+1, b)
		return
	}
	b := strconv.AppendInt([]byte(`,"data":{"httpStatus":`), int64(status), 10)
	b = append(b, '}')
	end := lastBrace(errObj)
	if objectIsEmpty(errObj.Raw) {
		b = b[1:]
	}
	e.replace(end, end, b)
}
