package modern

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Tasks across eras (docs/protocol.md, Tasks): the legacy client's 2025 core
// tasks on top of the server's 2026 tasks extension.
//
//	tools/call + task  ─▶ tools/call (task dropped) ─▶ task: nested CreateTaskResult, registered
//	                                                 └▶ result: a synthetic local task
//	tools/call         ─▶ tools/call ─▶ task: followed here until terminal (polls, progress)
//	tasks/get          ─▶ tasks/get, reshaped; input_required keys asked of the client
//	tasks/result       ─▶ tasks/get polling until terminal (never sent upstream)
//	tasks/cancel       ─▶ tasks/cancel; the client sees cancelled from then on
//	tasks/list         ─▶ the registry, refreshed with tasks/get

// taskBridge is the modern session's tasks: the registry of the tasks the
// client created through the proxy, and what was done with their input.
type taskBridge struct {
	env *link.Env
	srv *server
	reg *store

	mu         sync.Mutex
	dispatched map[[2]string]*inputKey // by task id and input key
	unanswered map[string]bool         // the tasks whose server was told the client cannot give their input
}

// SyntheticPrefix starts the ids of proxy-made tasks: the prefix, then 32
// random hex digits. The proxy knows its tasks by their registry record
// (record.Synthetic), not by the id: a server's task id may start the same
// way. Only an id the registry does not know is judged by its shape
// (localTask), so that a proxy-made id that expired or was trimmed is
// answered locally and never sent upstream.
const SyntheticPrefix = "mcp-tasks-proxy-"

// localTask looks a task up in the registry and says whether the proxy
// answers for it: a proxy-made task (found, and the answer is the record),
// an id of the proxy's own shape it no longer knows, or a task recorded
// under another owner (both not found).
func (s *taskBridge) localTask(id string) (rec record, found, local bool) {
	rec, found, foreign := s.reg.get(id)
	hex, minted := strings.CutPrefix(id, SyntheticPrefix) // the shape of the ids the proxy mints
	minted = minted && len(hex) == 32 && strings.Trim(hex, "0123456789abcdef") == ""
	return rec, found, found && rec.Synthetic || foreign || !found && minted
}

func taskNotFound(c *link.Call) []byte {
	return rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams, "Failed to retrieve task: Task not found", nil)
}

// maxPollFailures failed polls in a row end a wait with an error.
const maxPollFailures = 5

const taskListPage = 50

func now() string { return time.Now().UTC().Format(time.RFC3339Nano) }

func (s *taskBridge) taskMethod(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	if !s.srv.tasksEnabled() {
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeMethodNotFound,
			fmt.Sprintf("Method not found: %s is not available because the server at %s does not support the tasks extension (io.modelcontextprotocol/tasks)", f.Method, s.env.URL()), nil))
	}
	if f.Method == "tasks/list" {
		return link.FrameOnly(s.taskList(ctx, c, f))
	}
	id := f.Params.Get("taskId")
	if id.Type != gjson.String || id.Str == "" {
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams, fmt.Sprintf("Invalid params: %s needs params.taskId, a string", f.Method), nil))
	}
	switch f.Method {
	case "tasks/get":
		return s.taskGet(ctx, c, id.Str)
	case "tasks/result":
		return link.FrameOnly(s.taskResult(ctx, c, id.Str))
	case "tasks/cancel":
		return link.FrameOnly(s.taskCancel(ctx, c, id.Str))
	}
	return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeMethodNotFound, "Method not found: "+f.Method, nil))
}

// taskCall makes a tasks/* request of the proxy's own: the result, or the
// server's JSON-RPC error, or why there is neither.
func (s *taskBridge) taskCall(ctx context.Context, method, taskID string, extra []byte) (gjson.Result, gjson.Result, error) {
	msg, err := s.srv.internalCall(ctx, method, taskIDObject(taskID, extra...))
	if err != nil {
		return gjson.Result{}, gjson.Result{}, err
	}
	m, err := rewrite.Parse(msg)
	if err != nil || m.Kind != rewrite.KindResponse {
		return gjson.Result{}, gjson.Result{}, fmt.Errorf("%s: the server's answer is not a JSON-RPC response", method)
	}
	if m.Error.Exists() {
		return gjson.Result{}, m.Error, nil
	}
	if !m.Result.IsObject() {
		return gjson.Result{}, gjson.Result{}, fmt.Errorf("%s: the server's result is not an object", method)
	}
	return m.Result, gjson.Result{}, nil
}

// boundedTaskCall is taskCall bounded by Config.PollTimeout. A -32602 to
// tasks/get means the task is gone: it leaves the registry.
func (s *taskBridge) boundedTaskCall(ctx context.Context, method, id string, extra []byte) (gjson.Result, gjson.Result, error) {
	bctx, cancel := context.WithTimeout(ctx, s.env.Cfg.PollTimeout)
	defer cancel()
	res, rpcErr, err := s.taskCall(bctx, method, id, extra)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%s: %w within %v (raise %s if it is that slow)", method, errPollTimeout, s.env.Cfg.PollTimeout, s.env.Hint(rewrite.HintPollTimeout))
	}
	if method == "tasks/get" && rpcErr.Get("code").Int() == protocol.CodeInvalidParams {
		s.prune(id)
	}
	return res, rpcErr, err
}

// pollAfter waits d, then polls task id with tasks/get until the server
// answers (its result or its error) or maxPollFailures polls in a row
// failed, waiting retry between them.
func (s *taskBridge) pollAfter(ctx context.Context, id string, d, retry time.Duration) (res, rpcErr gjson.Result, err error) {
	for failures := 1; ; failures++ {
		if !link.Sleep(ctx, d) {
			return res, rpcErr, ctx.Err()
		}
		res, rpcErr, err = s.boundedTaskCall(ctx, "tasks/get", id, nil)
		if err == nil || ctx.Err() != nil || failures == maxPollFailures {
			return res, rpcErr, err
		}
		s.env.Warn("polling a task failed; retrying", zap.String("taskId", id), zap.Error(err))
		d = retry
	}
}

var errPollTimeout = errors.New("the server did not answer")

// transient reports whether a failed task request of the proxy's own may be
// made again: when the connection failed or broke, or the request timed out
// (its own short bound), not when the server answered, even with garbage:
// the next poll asks again anyway. tasks/update, which carries the client's
// answer, is made again after an HTTP 5xx too.
func transient(method string, err error) bool {
	var te *routing.TransportError
	var na *noAnswerError
	switch {
	case refused(err):
		return false // the same request meets the same refusal
	case errors.As(err, &te), errors.Is(err, errPollTimeout):
		return true
	}
	return method == "tasks/update" && errors.As(err, &na) && na.status >= 500
}

// retriedTaskCall makes a tasks/get or tasks/update of the proxy's own
// (both safe to repeat) under link.Retry's policy (docs/reliability.md,
// Retries): a transient failure is made again. The server's JSON-RPC error
// is its answer: never retried.
func (s *taskBridge) retriedTaskCall(ctx context.Context, method, id string, extra []byte) (res, rpcErr gjson.Result, err error) {
	var te *routing.TransportError
	if !link.Retry(ctx, true, func() link.RetryKind {
		res, rpcErr, err = s.boundedTaskCall(ctx, method, id, extra)
		switch {
		case err == nil || ctx.Err() != nil || !transient(method, err):
			return link.RetryNone
		case errors.As(err, &te) && te.Kind == routing.KindDial:
			return link.RetryDial
		}
		return link.RetryBroken
	}, func(after time.Duration) {
		s.env.Info("retrying a task request", zap.String("method", method), zap.String("taskId", id), zap.Duration("after", after), zap.Error(err))
	}) {
		return res, rpcErr, ctx.Err()
	}
	return res, rpcErr, err
}

// forClient makes a tasks/get or tasks/cancel on the client's behalf. When
// it fails, the second value is the client's answer (nil when the request
// was cancelled): the server's error verbatim, or one naming the failure.
func (s *taskBridge) forClient(ctx context.Context, c *link.Call, method, id string) (gjson.Result, []byte, bool) {
	do := s.taskCall
	if method == "tasks/get" {
		do = s.retriedTaskCall // safe to repeat
	}
	res, rpcErr, err := do(ctx, method, id, nil)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return res, nil, false
		}
		return res, s.unreachable(c, method, err), false
	case rpcErr.Exists():
		return res, rewrite.ErrorFrameRaw(c.ID, []byte(rpcErr.Raw)), false
	}
	return res, nil, true
}

// unreachable is the error for a task request that did not reach the
// server. A refusal's message names the fix: trying again cannot help.
func (s *taskBridge) unreachable(c *link.Call, method string, err error) []byte {
	if refused(err) {
		return s.env.TransportError(c.ID, method, err)
	}
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("%s failed: %v; the task itself is unaffected, try again", method, err),
		link.ErrorData(s.env.URL(), 0, "", ""))
}

// observe records what a poll showed about a registered task: the latest
// task object and a terminal outcome for tasks/result. With notify (polls
// the client did not ask for, unlike tasks/get), a status change is told to
// the client as notifications/tasks/status. It returns the record and
// whether the task is registered; op is the trace op of the poll's request.
func (s *taskBridge) observe(op string, t rewrite.Task, raw gjson.Result, notify bool) (record, bool) {
	var rec record
	var registered, changed bool
	s.reg.update(t.ID, func(r *record) bool {
		if r.Seq == 0 {
			return false // not a task this client created through the proxy
		}
		registered = true
		changed = r.task().Status != t.Status
		r.Task = []byte(raw.Raw)
		switch t.Status {
		case rewrite.StatusCompleted:
			r.Result = []byte(t.Result.Raw)
		case rewrite.StatusFailed:
			r.Error = []byte(t.Error.Raw)
		}
		rec = *r
		return true
	})
	if notify && registered && changed && !rec.settled() {
		params := t.View(s.env.Cfg.Tasks, rewrite.ViewOverride{})
		s.env.Send(rewrite.NotificationFrame("notifications/tasks/status", params), op, nil)
	}
	return rec, registered
}

func (s *taskBridge) prune(id string) {
	s.reg.update(id, func(*record) bool { return false })
}

// settled reports whether the proxy decided the task's status for the
// client, whatever the server says later: cancelled by the client, or
// failed because it asked for input the client cannot give.
func (r record) settled() bool { return r.CancelledAt != "" || r.UnanswerableAt != "" }

// override is the record's sticky view (see settled), or none.
func (r record) override() rewrite.ViewOverride {
	switch {
	case r.CancelledAt != "":
		return rewrite.ViewOverride{Status: rewrite.StatusCancelled, StatusMessage: "The task was cancelled by request.", LastUpdatedAt: r.CancelledAt}
	case r.UnanswerableAt != "":
		// Failed because it asked for input the client cannot give: the
		// statusMessage is the error's message.
		return rewrite.ViewOverride{Status: rewrite.StatusFailed, StatusMessage: gjson.GetBytes(r.Unanswerable, "message").String(), LastUpdatedAt: r.UnanswerableAt}
	}
	return rewrite.ViewOverride{}
}

func (s *taskBridge) taskGet(ctx context.Context, c *link.Call, id string) link.Outcome {
	if rec, found, local := s.localTask(id); local {
		if !found {
			return link.FrameOnly(taskNotFound(c))
		}
		return link.FrameOnly(rewrite.ResultFrame(c.ID, rewrite.TaskResult(recordTask(rec), s.env.Cfg.Tasks, rec.override())))
	}
	res, failed, ok := s.forClient(ctx, c, "tasks/get", id)
	if !ok {
		return link.FrameOnly(failed)
	}
	t := rewrite.ReadTask(res)
	rec, _ := s.observe(c.Op, t, res, false)
	out := link.Outcome{Rewrites: []string{"task.view", "ttl.rename"}}
	ov := rec.override()
	if !rec.settled() && t.Status == rewrite.StatusInputRequired {
		if errObj, at := s.unanswerable(c.Op, t, "task "+id); errObj != nil {
			// The client cannot give what the task waits for: it sees
			// the task failed at once, not input_required forever.
			ov = record{Unanswerable: errObj, UnanswerableAt: at}.override()
		} else {
			// Ask after the answer is out (2025 order: the client learns
			// the status, then gets the requests).
			out.After = func() { s.dispatchInput(link.WithOp(s.env.Ctx, c.Op), t, id) }
		}
	}
	out.Frame = rewrite.ResultFrame(c.ID, rewrite.TaskResult(t, s.env.Cfg.Tasks, ov))
	return out
}

// task is the record's task: the one place that parses its stored bytes.
func (r record) task() rewrite.Task { return rewrite.ReadTask(gjson.ParseBytes(r.Task)) }

// recordTask reads a record's task, with the cached result inlined (a
// synthetic task keeps its result apart), so that views see isError.
func recordTask(rec record) rewrite.Task {
	t := rec.task()
	if !t.Result.Exists() && len(rec.Result) > 0 {
		t.Result = gjson.ParseBytes(rec.Result)
	}
	return t
}

// taskResult answers tasks/result (never sent upstream): from the cached
// outcome, or by polling tasks/get until the task is terminal. A client
// cancel stops the wait, not the task.
func (s *taskBridge) taskResult(ctx context.Context, c *link.Call, id string) []byte {
	if rec, found, local := s.localTask(id); found {
		// Only a known outcome is final: a task may be created already
		// terminal, without its payload, which a tasks/get then brings.
		t := rec.task()
		final := rec.Synthetic || rec.settled() || t.Status == rewrite.StatusCancelled || len(rec.Result) > 0 || len(rec.Error) > 0
		if frame := s.taskOutcome(c, rec, t, id, id); final && frame != nil {
			return frame
		}
	} else if local {
		return taskNotFound(c)
	}
	for wait := time.Duration(0); ; {
		res, rpcErr, err := s.pollAfter(ctx, id, wait, rewrite.DefaultPollInterval)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			return s.unreachable(c, "tasks/get", err)
		case rpcErr.Exists():
			return rewrite.ErrorFrameRaw(c.ID, []byte(rpcErr.Raw))
		}
		t := rewrite.ReadTask(res)
		var gaveUp []byte
		if t.Status == rewrite.StatusInputRequired {
			// Before observe records the status: a task given up is
			// never announced input_required.
			gaveUp, _ = s.unanswerable(c.Op, t, "task "+id)
		}
		rec, registered := s.observe(c.Op, t, res, true)
		if !registered {
			rec = record{ID: id, Task: []byte(res.Raw), Result: []byte(t.Result.Raw), Error: []byte(t.Error.Raw)}
		}
		if rec.settled() || t.Terminal() {
			if t.Status == rewrite.StatusCancelled && !rec.settled() {
				rec.CancelledAt = now()
			}
			if frame := s.taskOutcome(c, rec, t, id, id); frame != nil {
				return frame
			}
		}
		if gaveUp != nil {
			return rewrite.ErrorFrameRaw(c.ID, gaveUp)
		}
		if t.Status == rewrite.StatusInputRequired {
			s.dispatchInput(link.WithOp(s.env.Ctx, c.Op), t, id)
		}
		wait = rewrite.PollInterval(t.PollInterval)
	}
}

// taskOutcome is the answer for a terminal record whose task is t, or nil
// while the task is still running. A tasks/result answer carries the
// related-task _meta (related); a followed call's does not.
func (s *taskBridge) taskOutcome(c *link.Call, rec record, t rewrite.Task, id, related string) []byte {
	switch {
	case rec.CancelledAt != "":
		return taskCancelled(c, id)
	case rec.UnanswerableAt != "":
		return rewrite.ErrorFrameRaw(c.ID, rec.Unanswerable)
	case t.Status == rewrite.StatusCancelled:
		return taskCancelled(c, id)
	case len(rec.Result) > 0:
		frame, err := rewrite.ResultFrameFor(c.ID, "tools/call", gjson.ParseBytes(rec.Result), related)
		if err != nil {
			return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, fmt.Sprintf("the task's result is invalid: %v", err), nil)
		}
		return frame
	case len(rec.Error) > 0:
		return rewrite.ErrorFrameRaw(c.ID, rec.Error)
	case t.Status == rewrite.StatusFailed:
		msg := t.StatusMessage
		if msg == "" {
			msg = "Task failed"
		}
		return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, msg, nil)
	case t.Status == rewrite.StatusCompleted:
		return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, "the server reported the task completed without a result", nil)
	}
	return nil
}

// taskCancelled is the policy's answer for the result of a cancelled task.
func taskCancelled(c *link.Call, id string) []byte {
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, "Task was cancelled", taskIDObject(id))
}

// taskIDObject is {"taskId":id}, with the members in extra (`,"k":v`).
func taskIDObject(id string, extra ...byte) []byte {
	return append(append(rewrite.AppendString([]byte(`{"taskId":`), id), extra...), '}')
}

func (s *taskBridge) taskCancel(ctx context.Context, c *link.Call, id string) []byte {
	rec, ok, local := s.localTask(id)
	if !ok && local {
		return taskNotFound(c)
	}
	t := rec.task() // read afresh below when not found
	if !ok || !t.Terminal() && !rec.settled() && !rec.Synthetic {
		// Fresh state first: a task that finished meanwhile cannot be
		// cancelled (2025 MUST answer -32602).
		res, failed, ok := s.forClient(ctx, c, "tasks/get", id)
		if !ok {
			return failed
		}
		t = rewrite.ReadTask(res)
		rec, _ = s.observe(c.Op, t, res, false)
		rec.Task = []byte(res.Raw)
	}
	switch {
	case rec.CancelledAt != "":
		return alreadyTerminal(c, rewrite.StatusCancelled)
	case rec.UnanswerableAt != "":
		return alreadyTerminal(c, rewrite.StatusFailed)
	case rec.Synthetic || t.Terminal():
		status := t.Status
		if rec.Synthetic {
			status = rewrite.StatusCompleted
		}
		return alreadyTerminal(c, status)
	}
	if _, failed, ok := s.forClient(ctx, c, "tasks/cancel", id); !ok {
		return failed
	}
	at := now()
	task := rec.Task
	s.reg.update(id, func(r *record) bool {
		if r.Seq == 0 {
			r.Seq = time.Now().UnixNano()
		}
		r.Task, r.CancelledAt = task, at
		return true
	})
	s.env.Info("task cancelled by the client", zap.String("taskId", id))
	return rewrite.ResultFrame(c.ID, rewrite.TaskResult(rewrite.ReadTask(gjson.ParseBytes(task)), s.env.Cfg.Tasks, record{CancelledAt: at}.override()))
}

func alreadyTerminal(c *link.Call, status string) []byte {
	return rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams,
		fmt.Sprintf("Cannot cancel task: already in terminal status '%s'", status), nil)
}

// taskList answers tasks/list from the registry (the 2026 extension has
// none), newest first, refreshing the page's running tasks with tasks/get.
// Only a -32602 prunes an entry; any other failure keeps its last state.
func (s *taskBridge) taskList(ctx context.Context, c *link.Call, f *rewrite.Frame) []byte {
	recs := slices.DeleteFunc(s.reg.list(), func(r record) bool {
		exp, err := time.Parse(time.RFC3339Nano, r.Expires)
		if r.Expires != "" && err == nil && time.Now().After(exp) {
			s.prune(r.ID)
			return true
		}
		return false
	})
	off := 0
	if cur := f.Params.Get("cursor"); cur.Exists() {
		b, err := base64.RawURLEncoding.DecodeString(cur.String())
		digits, ok := strings.CutPrefix(string(b), cursorPrefix)
		n, nerr := strconv.Atoi(digits)
		if err != nil || !ok || nerr != nil || n < 0 || n > len(recs) {
			return rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams, "Invalid params: unknown tasks/list cursor", nil)
		}
		off = n
	}
	end := min(off+taskListPage, len(recs))
	page := append([]record(nil), recs[off:end]...)
	s.refresh(ctx, page)
	b := []byte(`{"tasks":[`)
	for _, rec := range page {
		if rec.ID != "" { // not pruned
			b = append(append(b, recordTask(rec).View(s.env.Cfg.Tasks, rec.override())...), ',')
		}
	}
	b = append(bytes.TrimSuffix(b, []byte{','}), ']')
	if end < len(recs) {
		b = append(b, `,"nextCursor":`...)
		b = rewrite.AppendString(b, base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix+strconv.Itoa(end))))
	}
	return rewrite.ResultFrame(c.ID, append(b, '}'))
}

// refresh polls the page's running tasks in parallel (at most 4 at once).
// A pruned task's record is zeroed in place.
func (s *taskBridge) refresh(ctx context.Context, page []record) {
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range page {
		rec := &page[i]
		t := rec.task()
		if rec.Synthetic || rec.settled() || t.Terminal() {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			// One bounded poll, not retried: a listing should not wait,
			// and a failure shows the last known state.
			res, rpcErr, err := s.boundedTaskCall(ctx, "tasks/get", rec.ID, nil)
			switch {
			case err != nil:
				s.env.Warn("refreshing a listed task failed; showing its last known state", zap.String("taskId", rec.ID), zap.Error(err))
			case rpcErr.Exists():
				if rpcErr.Get("code").Int() == protocol.CodeInvalidParams {
					*rec = record{} // pruned
					return
				}
				s.env.Warn("refreshing a listed task failed; showing its last known state", zap.String("taskId", rec.ID), zap.String("error", rpcErr.Raw))
			default:
				t := rewrite.ReadTask(res)
				if t.Status == rewrite.StatusInputRequired {
					// Recorded before observe, which then announces no
					// input_required for a task given up.
					s.unanswerable(link.OpOf(ctx), t, "task "+rec.ID)
				}
				if r, ok := s.observe(link.OpOf(ctx), t, res, true); ok {
					*rec = r
				}
			}
		})
	}
	wg.Wait()
}

const cursorPrefix = "mtp-tasks:"

// inputKey is what the proxy did with one input request key of a task
// (under taskBridge.mu). Keys are unique for a task's life: the client is
// asked once per key, and a tasks/update that answers a key is idempotent,
// so the proxy sends a held answer as often as it takes to be accepted.
type inputKey struct {
	busy   bool   // a goroutine is asking the client or sending the answer
	answer []byte // the client's answer, held until the server accepts it
	done   bool   // accepted, or it cannot be answered
}

// dispatchInput asks the client for every input request of t not asked
// before (deduplicated across polls by inputKey), and sends each answer
// upstream with tasks/update. A held answer the server has not accepted is
// sent again (never asked twice); a key whose answer never came (the wait
// timed out) is asked again. relatedTask ties the requests to a task the
// client knows (none for a task the proxy follows for the client).
func (s *taskBridge) dispatchInput(ctx context.Context, t rewrite.Task, relatedTask string) {
	for _, in := range inputRequests(t.InputRequests) {
		s.mu.Lock()
		k := s.dispatched[[2]string{t.ID, in.key}]
		if k == nil {
			k = &inputKey{}
			s.dispatched[[2]string{t.ID, in.key}] = k
		}
		start := !k.busy && !k.done
		k.busy = k.busy || start
		held := k.answer
		s.mu.Unlock()
		if !start {
			continue
		}
		s.env.BG.Start(func() { s.deliverInput(ctx, t.ID, in, relatedTask, k, held) })
	}
}

// unanswerable handles a poll that shows task t input_required. When an
// input request asks for what the client declared it cannot give (2026
// forbids the server to ask), nobody waits for an answer that cannot come
// (docs/policies.md, Client input): the server is told at once, once per
// task, in the background (answerUnaskable); a task the client created
// through the proxy is failed for the client from then on
// (record.Unanswerable: tasks/get shows it failed, tasks/result answers the
// error); and the JSON-RPC error object (what names the work that cannot
// finish) is returned with when the task was given up, for the call that
// waits. It returns nil when every input request can be asked.
func (s *taskBridge) unanswerable(op string, t rewrite.Task, what string) ([]byte, string) {
	reqs := inputRequests(t.InputRequests)
	merr := s.srv.firstUnaskable(reqs)
	if merr == nil {
		return nil, ""
	}
	errObj := []byte(gjson.GetBytes(merr.rpcError(what, t.ID).Frame(rewrite.NullID, nil), "error").Raw)
	at := now()
	s.mu.Lock()
	first := !s.unanswered[t.ID]
	s.unanswered[t.ID] = true
	s.mu.Unlock()
	if first {
		s.env.Warn("a task asks for input the client declared it cannot give; the client's wait ends with an error and the server is told",
			zap.String("taskId", t.ID), zap.Error(merr))
		s.env.BG.Start(func() { s.answerUnaskable(link.WithOp(s.env.Ctx, op), op, t.ID, reqs) })
	}
	s.reg.update(t.ID, func(r *record) bool {
		switch {
		case r.Seq == 0:
			return false // not a task this client created through the proxy
		case r.UnanswerableAt != "":
			errObj, at = r.Unanswerable, r.UnanswerableAt // given up before
		case r.CancelledAt == "":
			r.Unanswerable, r.UnanswerableAt = errObj, at
		}
		return true
	})
	return errObj, at
}

// cancelAnswer is the ElicitResult of an elicitation the client cannot
// show: dismissed without an explicit choice.
var cancelAnswer = []byte(`{"action":"cancel"}`)

// answerUnaskable tells the server of task taskID that its input requests
// reqs will not be answered as asked. When every one is an elicitation the
// client cannot show, each is answered {"action":"cancel"} with one
// tasks/update (docs/policies.md, Client input: servers must handle it),
// and the task goes on. Otherwise (sampling or roots have no "cannot"
// result), or when the server does not take the update, the task is
// abandoned with tasks/cancel rather than sent an unsupported request.
func (s *taskBridge) answerUnaskable(ctx context.Context, op, taskID string, reqs []inputRequest) {
	answers := make([]rewrite.InputAnswer, 0, len(reqs))
	for _, in := range reqs {
		if in.method != "elicitation/create" || s.srv.cannotAsk(in) == nil {
			answers = nil
			break
		}
		answers = append(answers, rewrite.InputAnswer{Key: in.key, Answer: cancelAnswer})
	}
	if len(answers) > 0 {
		extra := append([]byte{','}, rewrite.RetryParams(answers, nil)...)
		_, rpcErr, err := s.retriedTaskCall(ctx, "tasks/update", taskID, extra)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && !rpcErr.Exists():
			s.env.Info("answered the task's elicitation with cancel: the client cannot show it", zap.String("taskId", taskID))
			return
		}
		s.env.Warn("tasks/update with cancel failed; cancelling the task", zap.String("taskId", taskID), zap.Error(err), zap.String("error", rpcErr.Raw))
	}
	s.cancelUpstream(op, taskID)
}

// deliverInput asks the client for one input request (unless its answer is
// held), within --request-timeout, and sends the answer with tasks/update
// (retried: idempotent per input key, since keys are unique for a task's life).
func (s *taskBridge) deliverInput(ctx context.Context, taskID string, in inputRequest, relatedTask string, k *inputKey, answer []byte) {
	settle := func(held []byte, done bool) {
		s.mu.Lock()
		k.busy, k.answer, k.done = false, held, done
		s.mu.Unlock()
	}
	log := []zap.Field{zap.String("taskId", taskID), zap.String("key", in.key)}
	if answer == nil {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if s.env.Cfg.RequestTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, s.env.Cfg.RequestTimeout)
		}
		a, err := s.srv.askInput(actx, in, relatedTask)
		cancel()
		switch {
		case err == nil:
			answer = a
		case ctx.Err() != nil:
			settle(nil, false) // no one waits for the task any more
			return
		case errors.Is(err, context.DeadlineExceeded):
			s.env.Warn("the client did not answer a task's input request within "+s.env.Hint(rewrite.HintRequestTimeout)+"; it is asked again if a later poll still shows the request",
				append(log, zap.Duration("requestTimeout", s.env.Cfg.RequestTimeout))...)
			settle(nil, false)
			return
		default:
			s.env.Warn("a task's input request was not answered; the task waits until it is cancelled", append(log, zap.Error(err))...)
			settle(nil, true)
			return
		}
	}
	extra := append([]byte{','}, rewrite.RetryParams([]rewrite.InputAnswer{{Key: in.key, Answer: answer}}, nil)...)
	_, rpcErr, err := s.retriedTaskCall(ctx, "tasks/update", taskID, extra)
	if err != nil {
		if ctx.Err() == nil {
			s.env.Warn("tasks/update failed; the client's answer is kept and sent again when a poll shows the request still open", append(log, zap.Error(err))...)
		}
		settle(answer, false)
		return
	}
	if rpcErr.Exists() {
		s.env.Warn("the server refused tasks/update", append(log, zap.String("error", rpcErr.Raw))...)
	}
	settle(nil, true)
}

// taskCreated handles a task-augmented tools/call: a task from the server
// becomes the nested 2025 CreateTaskResult; a synchronous result becomes a
// synthetic local task holding it.
func (s *taskBridge) taskCreated(c *link.Call, m *rewrite.Frame) link.Result {
	rec := record{Seq: time.Now().UnixNano(), Task: []byte(m.Result.Raw)}
	rw := []string{"task.drop", "task.nest", "ttl.rename"}
	if m.Result.Get("resultType").String() == protocol.ResultTask {
		rec.ID = rewrite.ReadTask(m.Result).ID
	} else {
		rec.ID, rec.Synthetic, rec.Result = SyntheticPrefix+randomHex(16), true, rec.Task
		ms, ok := rewrite.TTLMillis(c.Task.Get("ttl"), s.env.Cfg.Tasks.TTLSeconds)
		if ok {
			rec.Expires = time.Now().Add(time.Duration(ms) * time.Millisecond).UTC().Format(time.RFC3339Nano)
		}
		rec.Task = rewrite.SyntheticTask(rec.ID, now(), ms, ok)
		rw = []string{"task.drop", "task.synthetic"}
	}
	s.reg.update(rec.ID, func(r *record) bool { *r = rec; return true })
	return link.Result{Frame: rewrite.ResultFrame(c.ID, rewrite.CreateTaskResult(rec.task(), s.env.Cfg.Tasks)), Rewrites: rw}
}

// follow drives a task the server made of a plain tools/call until it ends,
// and answers the call with its outcome, as a 2025 client that asked for no
// task expects. With a progressToken, every poll sends progress with the
// task's status message. A client cancel sends tasks/cancel upstream and
// nothing to the client.
func (s *taskBridge) follow(ctx context.Context, c *link.Call, t rewrite.Task) []byte {
	// A task created already terminal carries no payload: fetch it at once.
	fetch := t.Terminal() && t.Status != rewrite.StatusCancelled && !t.Result.Exists() && !t.Error.Exists()
	for polls := 1; ; polls++ {
		switch {
		case fetch:
		case t.Terminal():
			return s.taskOutcome(c, record{Result: []byte(t.Result.Raw), Error: []byte(t.Error.Raw)}, t, t.ID, "")
		case t.Status == rewrite.StatusInputRequired:
			if errObj, _ := s.unanswerable(c.Op, t, "tools/call (the server runs it as task "+t.ID+")"); errObj != nil {
				return rewrite.ErrorFrameRaw(c.ID, errObj)
			}
			s.dispatchInput(ctx, t, "")
		}
		d := rewrite.PollInterval(t.PollInterval)
		if fetch {
			d, fetch = 0, false
		}
		res, rpcErr, err := s.pollAfter(ctx, t.ID, d, rewrite.PollInterval(t.PollInterval))
		switch {
		case err != nil && ctx.Err() != nil:
			if c.Cancelled.Load() {
				s.cancelUpstream(c.Op, t.ID)
			}
			return nil
		case err != nil:
			return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
				fmt.Sprintf("the server turned this call into task %s, and polling it failed %d times (%v); the task may still be running on the server", t.ID, maxPollFailures, err),
				taskIDObject(t.ID))
		case rpcErr.Exists():
			return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
				fmt.Sprintf("the server lost the task it made of this call: %s", rpcErr.Get("message").String()),
				taskIDObject(t.ID, append([]byte(`,"error":`), rpcErr.Raw...)...))
		}
		t = rewrite.ReadTask(res)
		if len(c.ProgressToken) > 0 && !t.Terminal() && !c.Cancelled.Load() {
			s.env.Send(rewrite.NotificationFrame("notifications/progress", rewrite.ProgressParams(c.ProgressToken, int64(polls), t.StatusMessage)), c.Op, nil)
		}
	}
}

// cancelUpstream sends tasks/cancel for a followed task the client gave up
// on; its outcome does not matter, and it is bounded in time. op is the
// trace op of the followed call.
func (s *taskBridge) cancelUpstream(op, id string) {
	ctx, cancel := context.WithTimeout(link.WithOp(s.env.Ctx, op), 10*time.Second)
	defer cancel()
	if _, rpcErr, err := s.taskCall(ctx, "tasks/cancel", id, nil); err != nil || rpcErr.Exists() {
		s.env.Warn("tasks/cancel for a followed task failed", zap.String("taskId", id), zap.Error(err), zap.String("error", rpcErr.Raw))
		return
	}
	s.env.Info("followed task cancelled upstream", zap.String("taskId", id))
}
