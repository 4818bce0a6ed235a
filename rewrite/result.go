package rewrite

import (
	"slices"
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
	// execution.taskSupport "optional" (docs/protocol.md, Tasks).
	TaskSupport bool
	// RelatedTask, when set, adds _meta["io.modelcontextprotocol/related-task"]
	// = {"taskId": RelatedTask} to the result (a tasks/result payload).
	RelatedTask string
	// Room, when set, is the whole buffer the frame was read into, with
	// spare bytes in front of it (routing.Response.Room): a complete result
	// is then rewritten in it when the edits fit, so that a large result
	// has one copy in memory, not two; f's views are invalid afterwards.
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
	IsError    bool // a JSON-RPC error response
	// Tools lists the valid x-mcp-header annotations of a tools/list page.
	Tools []ToolHeaders
	// Rejected lists tools removed from a tools/list page, with the reason.
	Rejected []RejectedTool
	// Rewrites names what was changed, for the trace.
	Rewrites []string
}

// ResponseDown rewrites a modern response f (an answer to d.Method) for the
// legacy client: the id is restored, resultType and the serverInfo _meta
// go, and the method's answer rule applies (dropByRule, toolsList).
// Everything else is copied byte for byte.
func ResponseDown(f *Frame, d Down) (Downed, error) {
	if f.Kind != KindResponse {
		return Downed{}, ErrShape
	}
	e := make(edits, 0, 8) // one allocation for the usual handful of edits
	e.replace(f.ID.Index, f.ID.Index+len(f.ID.Raw), d.ID)
	if f.Error.Exists() {
		return errorDown(&e, f, d), nil
	}
	res := f.Result
	if !res.IsObject() {
		return Downed{}, errResultNotObject
	}
	var buf [16]member
	ms := members(res, buf[:0])
	out := Downed{ResultType: resultType(ms)}
	if out.ResultType != protocol.ResultComplete {
		return out, nil
	}
	completeDown(&e, res, ms, d, &out)
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

// errorDown is the answer rule of every error response: the id is
// restored, and a non-200 HTTP status is recorded in error.data.
func errorDown(e *edits, f *Frame, d Down) Downed {
	rw := []string{"id.restore"}
	if d.HTTPStatus != 0 && d.HTTPStatus != 200 && f.Error.IsObject() {
		addErrorStatus(e, f.Error, d.HTTPStatus)
		rw = append(rw, "error.httpStatus")
	}
	return Downed{Frame: e.apply(f.Raw), ResultType: protocol.ResultComplete, IsError: true, Rewrites: rw}
}

// dropByRule reports whether the answer rule a removes member m of a
// complete result beyond the edits every rule makes, and then the name of
// the rewrite, for the trace: a cacheable result (and a tools/list page)
// loses the 2026-07-28 cache fields, unknown to 2025 (a task's ttlMs is
// unrelated); a tools/call result a structuredContent that is not an
// object, which 2025 requires.
func dropByRule(a protocol.Answer, m *member) (bool, string) {
	switch {
	case (a == protocol.AnswerCacheable || a == protocol.AnswerToolsList) && (m.key.Str == "ttlMs" || m.key.Str == "cacheScope"):
		return true, "cache.strip"
	case a == protocol.AnswerToolCall && m.key.Str == "structuredContent" && !m.value.IsObject():
		return true, "structuredContent.drop"
	}
	return false, ""
}

// resultType is the result's resultType, "complete" when absent.
func resultType(ms []member) string {
	m := memberNamed(ms, "resultType")
	switch {
	case m == nil:
		return protocol.ResultComplete
	case m.value.Type == gjson.String:
		return m.value.Str
	}
	return m.value.Raw
}

// memberNamed is the last member key of ms (with a duplicated key the last
// one counts here, as it always has in ResponseDown), or nil. The members,
// and so the pointer, live in the caller's frame.
func memberNamed(ms []member, key string) *member {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].key.Str == key {
			return &ms[i]
		}
	}
	return nil
}

// pathServerInfo is the gjson path of the serverInfo member of _meta.
var pathServerInfo = gjson.Escape(protocol.MetaServerInfo)

// note records a rewrite once.
func (d *Downed) note(name string) {
	if !slices.Contains(d.Rewrites, name) {
		d.Rewrites = append(d.Rewrites, name)
	}
}

// completeDown makes the edits of a complete result res (its members ms):
// those every rule makes (resultType, serverInfo, the related task), and
// the rule of d.Method's answer.
func completeDown(e *edits, res gjson.Result, ms []member, d Down, out *Downed) {
	a := protocol.AnswerOf(d.Method)
	meta := memberNamed(ms, "_meta")
	var metaGone bool
	if meta != nil && meta.value.IsObject() {
		if d.RelatedTask != "" {
			relatedTaskInto(e, meta.value, d.RelatedTask)
		} else {
			metaGone = dropMetaKey(e, meta.value, protocol.MetaServerInfo)
		}
	}
	if out.Rewrites == nil {
		out.Rewrites = make([]string, 0, 4) // id.restore and up to three more, in one allocation
	}
	out.Rewrites = append(out.Rewrites, "id.restore")
	if metaGone || meta != nil && d.RelatedTask == "" && meta.value.Get(pathServerInfo).Exists() {
		out.note("serverInfo.strip")
	}
	kept := e.removeMembers(res, ms, func(i int) bool {
		m := &ms[i]
		switch m.key.Str {
		case "resultType":
			out.note("resultType.strip")
			return true
		case "_meta":
			return metaGone || d.RelatedTask != "" && !m.value.IsObject()
		}
		drop, name := dropByRule(a, m)
		if drop {
			out.note(name)
		}
		return drop
	})
	if d.RelatedTask != "" {
		out.note("relatedTask.add")
		if meta == nil || !meta.value.IsObject() {
			b := []byte(`"_meta":{`)
			if kept > 0 {
				b = append([]byte{','}, b...)
			}
			b = append(b, relatedTaskMember(d.RelatedTask)...)
			end := lastBrace(res)
			e.replace(end, end, append(b, '}'))
		}
	}
	// tools/list: taskSupport, x-mcp-header annotations and output schemas
	// made 2025's.
	if a != protocol.AnswerToolsList {
		return
	}
	if tools := memberNamed(ms, "tools"); tools != nil && tools.value.IsArray() {
		out.Tools, out.Rejected = toolsList(e, tools.value, d.TaskSupport)
		if len(out.Rejected) > 0 {
			out.note("tools.filter")
		}
		if d.TaskSupport {
			out.note("tools.taskSupport")
		}
	}
}

type rewriteError string

func (e rewriteError) Error() string { return string(e) }

const errResultNotObject = rewriteError(`"result" must be a JSON object`)

// relatedTaskInto puts the related-task member first in a _meta object,
// dropping serverInfo and any related-task the server sent.
func relatedTaskInto(e *edits, meta gjson.Result, taskID string) {
	prependMembers(e, meta, relatedTaskMember(taskID), protocol.MetaServerInfo, protocol.MetaRelatedTask)
}

// addErrorStatus records the HTTP status in error.data: it creates data when
// absent and adds httpStatus to an object data that lacks it.
func addErrorStatus(e *edits, errObj gjson.Result, status int) {
	var buf [8]member
	ms := members(errObj, buf[:0])
	if i := slices.IndexFunc(ms, func(m member) bool { return m.key.Str == "data" }); i >= 0 {
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
