package reverse

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// A 2025 server's tasks, offered to a modern client that declared the
// tasks extension: a tools/call of a tool that supports tasks asks for one
// (params.task), and the 2025 CreateTaskResult comes back flat; tasks/get
// inlines the result (or error) of a terminal task from tasks/result, and
// shows the input an input_required task waits for, which the server sends
// on a tasks/result stream the proxy keeps open for it, as inputRequests
// that tasks/update answers; tasks/cancel is acknowledged.

// maxToolPages bounds the proxy's own tools/list walk.
const maxToolPages = 100

// augment reports whether the modern client's tools/call f is sent as a
// task: the server makes tasks, the client declared the extension, and the
// tool supports them.
func (r *reverse) augment(ctx context.Context, c *link.Call, f *rewrite.Frame) bool {
	if !r.serverTasks || !f.Params.Get(metaPath(protocol.MetaClientCapabilities)).Get("extensions."+gjson.Escape(protocol.TasksExtension)).Exists() {
		return false
	}
	s := r.toolSupport(ctx, c, f.Params.Get("name").String())
	return s == "optional" || s == "required"
}

// toolSupport is a tool's execution.taskSupport, from the client's own
// tools/list answers, or a walk of the proxy's own the first time it is
// needed.
func (r *reverse) toolSupport(ctx context.Context, c *link.Call, tool string) string {
	r.toolsMu.Lock()
	defer r.toolsMu.Unlock()
	if !r.toolsListed {
		r.toolsListed = true
		cursor := ""
		for range maxToolPages {
			params := []byte(`{}`)
			if cursor != "" {
				params = append(rewrite.AppendString([]byte(`{"cursor":`), cursor), '}')
			}
			res := gjson.GetBytes(r.ownCall(ctx, c, "tools/list", params), "result")
			r.keepTools(res)
			next := res.Get("nextCursor")
			if next.Type != gjson.String || next.Str == cursor {
				break
			}
			cursor = next.Str
		}
	}
	return r.toolTasks[tool]
}

// keepTools records the taskSupport of the tools of a tools/list result.
func (r *reverse) keepTools(res gjson.Result) {
	for _, t := range res.Get("tools").Array() {
		if s := t.Get("execution.taskSupport"); s.Type == gjson.String {
			r.toolTasks[t.Get("name").Str] = s.Str
		}
	}
}

// ownCall makes a request of the proxy's own in c's name and returns the
// 2025 server's answer (nil: none).
func (r *reverse) ownCall(ctx context.Context, c *link.Call, method string, params []byte) []byte {
	uc := r.upCall(c, method)
	f, err := rewrite.Parse(rewrite.RequestFrame(uc.ID, method, params))
	if err != nil {
		return nil
	}
	return r.up.Request(ctx, uc, &f).Frame
}

// taskMethod answers a modern client's tasks/get, tasks/update or
// tasks/cancel from the 2025 server's tasks.
func (r *reverse) taskMethod(ctx context.Context, c *link.Call, f *rewrite.Frame) []byte {
	id := f.Params.Get("taskId").String()
	params := append(rewrite.AppendString([]byte(`{"taskId":`), id), '}')
	switch f.Method {
	case "tasks/update":
		r.mu.Lock()
		h := r.inputs[id]
		r.mu.Unlock()
		if h == nil {
			return rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams, "Invalid params: task "+id+" is waiting for no input", nil)
		}
		r.answerAsks(h, f.Params.Get("inputResponses"), false)
		return rewrite.ResultFrame(c.ID, []byte(`{"resultType":"complete"}`))
	case "tasks/cancel":
		ans := r.ownCall(ctx, c, "tasks/cancel", params)
		if ans == nil || rewrite.IsError(ans) {
			return r.down(c, f.Method, ans)
		}
		return rewrite.ResultFrame(c.ID, []byte(`{"resultType":"complete"}`))
	}
	ans := r.ownCall(ctx, c, "tasks/get", params)
	if ans == nil || rewrite.IsError(ans) {
		return r.down(c, f.Method, ans)
	}
	task := gjson.GetBytes(ans, "result")
	status := task.Get("status").String()
	var payload []byte
	switch status {
	case rewrite.StatusCompleted, rewrite.StatusFailed:
		payload = r.outcome(ctx, c, id, params, status, task)
	case rewrite.StatusInputRequired:
		if reqs := r.taskAsks(id); len(reqs) > 0 {
			payload = append([]byte(`"inputRequests":`), rewrite.InputRequests(reqs)...)
		} else {
			// The server's requests come on the tasks/result stream
			// just opened: until they do, the task shows as working (a
			// 2026 input_required task lists what it waits for).
			status = rewrite.StatusWorking
		}
	}
	return rewrite.ResultFrame(c.ID, rewrite.ModernTask(task, "complete", status, payload))
}

// outcome is the result (or error) member of a terminal task, from
// tasks/result, which answers at once for one.
func (r *reverse) outcome(ctx context.Context, c *link.Call, id string, params []byte, status string, task gjson.Result) []byte {
	m, err := rewrite.Parse(r.ownCall(ctx, c, "tasks/result", params))
	switch {
	case err == nil && m.Error.IsObject():
		return append([]byte(`"error":`), m.Error.Raw...)
	case err == nil && m.Result.IsObject() && status == rewrite.StatusCompleted:
		return append([]byte(`"result":`), rewrite.InputResponse(m.Result)...) // the related-task _meta goes
	}
	msg := task.Get("statusMessage").String()
	if msg == "" {
		msg = "task " + id + " " + status + "; tasks/result did not say how"
	}
	return append(rewrite.AppendString(fmt.Appendf(nil, `"error":{"code":%d,"message":`, protocol.CodeInternalError), msg), '}')
}

// taskAsks is what an input_required task waits for: the server's requests
// on the tasks/result stream the proxy keeps open for the task, opened at
// the first look, under keys that stay the same until answered.
func (r *reverse) taskAsks(id string) []rewrite.InputRequest {
	r.mu.Lock()
	h := r.inputs[id]
	if h == nil {
		h = r.openInput(id)
	}
	r.mu.Unlock()
	if h == nil {
		return nil
	}
	h.round()
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]string, 0, len(h.given))
	for k := range h.given {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(a, b) })
	reqs := make([]rewrite.InputRequest, 0, len(keys))
	for _, k := range keys {
		a := h.given[k]
		reqs = append(reqs, rewrite.InputRequest{Key: k, Method: a.Method, Params: a.Params})
	}
	return reqs
}

// openInput starts the tasks/result call of a task that needs input: the
// server sends what it needs on its stream (related to the task). It ends
// with the task. r.mu is held.
func (r *reverse) openInput(id string) *held {
	uc := &link.Call{ID: r.env.NextUpstreamID(), Method: "tasks/result", Op: "task/" + id, Start: time.Now()}
	f, err := rewrite.Parse(rewrite.RequestFrame(uc.ID, "tasks/result", append(rewrite.AppendString([]byte(`{"taskId":`), id), '}')))
	if err != nil {
		return nil
	}
	hctx, cancel := context.WithCancel(link.WithOp(r.env.Ctx, uc.Op))
	h := &held{uc: uc, cancel: cancel, done: make(chan []byte, 1), wake: make(chan struct{}, 1), given: map[string]rewrite.Frame{}}
	r.inputs[id], r.byOp[uc.Op] = h, h
	if !r.env.BG.Start(func() {
		r.up.Request(hctx, uc, &f)
		r.release(h)
		r.mu.Lock()
		if r.inputs[id] == h {
			delete(r.inputs, id)
		}
		r.mu.Unlock()
	}) {
		delete(r.inputs, id)
		delete(r.byOp, uc.Op)
		return nil
	}
	return h
}
