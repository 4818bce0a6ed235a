// Package reverse is the reverse bridge: a modern (2026-07-28) client
// served from a 2025 server. The proxy opens one 2025 session in the
// client's name (its clientInfo, its capabilities mapped back), answers
// server/discover from that session's InitializeResult, and forwards each
// request with the 2026 envelope taken out of _meta; results gain
// resultType and, where 2026 requires them, cache fields that forbid
// caching. What the 2025 server asks during a call (elicitation, sampling,
// roots) becomes an input_required answer whose requestState is the
// proxy's own token; the client's retry answers the held server requests,
// and the call's eventual result (or the next round) answers the retry.
// subscriptions/listen is served from resources/subscribe and the 2025
// session's own notifications.
//
// What it must never do: send a modern client a request (2026 servers make
// none; the client's input is asked for in results), leave a server
// request of a call unanswered when the call ends, or let a requestState
// be used twice.
package reverse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/passthrough"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// reverse is a modern client's session against a 2025 server.
type reverse struct {
	env        *link.Env
	up         link.Upstream // the 2025 session (a passthrough whose server messages come to fromServer)
	discover   []byte        // the DiscoverResult the client is answered with
	serverCaps gjson.Result  // the InitializeResult's capabilities

	mu      sync.Mutex
	held    map[string]*held   // calls waiting for the client's retry, by requestState
	byOp    map[string]*held   // calls open upstream, by the op their stream carries
	waiters map[string]*waiter // the client's requests waiting on an exchange, by the op its stream carries
	listens *listens

	levelMu sync.Mutex // one logging/setLevel at a time
	level   string     // the log level set upstream

	// The server's tasks (tasks.go): whether it makes them for tools/call,
	// the tasks/result calls open for tasks that need input (under mu),
	// and the tools' taskSupport (under toolsMu).
	serverTasks bool
	inputs      map[string]*held
	toolsMu     sync.Mutex
	toolsListed bool
	toolTasks   map[string]string
}

// getReadyBound bounds the wait, at the start, for the 2025 session's GET
// stream (see passthrough's GetReady): it opens in a round trip.
const getReadyBound = 5 * time.Second

// metaPath is the gjson path, from params, of a request _meta member.
func metaPath(key string) string { return "_meta." + gjson.Escape(key) }

// Start opens the 2025 session for the modern client whose first request
// is f. The reverse bridge it returns serves every message of the session,
// f included; a server that refuses the session returns nil, and the
// client's error saying why.
func Start(ctx context.Context, e *link.Env, c *link.Call, f *rewrite.Frame) (link.Upstream, []byte) {
	caps := capabilities.LegacyClientCapabilities([]byte(f.Params.Get(metaPath(protocol.MetaClientCapabilities)).Raw))
	info := f.Params.Get(metaPath(protocol.MetaClientInfo)).Raw
	if info == "" {
		info = `{"name":"mcp-tasks-proxy","version":"unknown"}`
	}
	uc := &link.Call{ID: e.NextUpstreamID(), Method: "initialize", Op: c.Op, Start: c.Start}
	params := fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":%s,"clientInfo":%s}`, protocol.LegacyVersion, caps, info)
	init, err := rewrite.Parse(rewrite.RequestFrame(uc.ID, "initialize", params))
	if err != nil {
		return nil, rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams, "Invalid params: the client's clientInfo or clientCapabilities: "+err.Error(), nil)
	}
	r := &reverse{env: e, held: map[string]*held{}, byOp: map[string]*held{}, waiters: map[string]*waiter{}, inputs: map[string]*held{}, toolTasks: map[string]string{}}
	r.listens = &listens{r: r, open: map[*listen]bool{}, subs: map[string]int{}}
	out := passthrough.Open(ctx, e, uc, &init, r.fromServer)
	if out.Next == nil {
		return nil, r.down(c, "initialize", out.Frame) // the server refused the session: the client sees why
	}
	res := gjson.GetBytes(out.Frame, "result")
	r.mu.Lock() // an HTTP+SSE stream may deliver before Start returns
	r.up = out.Next
	r.mu.Unlock()
	r.serverCaps = res.Get("capabilities")
	r.serverTasks = r.serverCaps.Get("tasks.requests.tools.call").Exists()
	r.discover = capabilities.DiscoverResult(res, r.serverTasks)
	initialized, _ := rewrite.Parse(rewrite.NotificationFrame("notifications/initialized", nil))
	r.up.Notified(&initialized, c.Op, nil) // and the GET stream opens
	if g, ok := r.up.(interface{ GetReady() <-chan struct{} }); ok {
		// Before the client can act: a list change or resource update
		// the server sends on the GET stream must find it open.
		select {
		case <-g.GetReady():
		case <-ctx.Done():
		case <-time.After(getReadyBound):
			e.Warn("the 2025 server's GET stream did not open in time; its notifications may come late", zap.Duration("bound", getReadyBound))
		}
	}
	e.Info("serving a 2026-07-28 client from a 2025 server", zap.String("protocolVersion", out.Era))
	return r, nil
}

func (r *reverse) Open()                    {}
func (r *reverse) Barrier() <-chan struct{} { return nil }

// Close ends the calls still open upstream (their server requests are
// answered and their cancels sent, before the session's DELETE: a server
// whose handler waits for an answer may not end its session otherwise),
// then the 2025 session.
func (r *reverse) Close() {
	r.mu.Lock()
	open := slices.Collect(maps.Values(r.byOp))
	r.mu.Unlock()
	for _, h := range open {
		r.abandon(h, "the client's session ended")
	}
	if f, ok := r.up.(interface{ Flush() }); ok {
		f.Flush()
	}
	r.up.Close()
}

func (r *reverse) Reached() (era, transport string) { return r.up.Reached() }

// Local refuses a request missing the string param that names it, as a
// 2026 server would; the 2025 server answers the rest.
func (r *reverse) Local(f *rewrite.Frame) ([]byte, []string, bool) {
	if e, ok := rewrite.CheckNameParam(f); !ok {
		return r.env.ErrorFrame([]byte(f.ID.Raw), e), nil, true
	}
	return nil, nil, false
}

// Notified ends a request the client cancelled (which sends the 2025
// cancel upstream); a modern client has no other notification for a
// server.
func (r *reverse) Notified(f *rewrite.Frame, _ string, cancel func()) {
	if f.Method == "notifications/cancelled" && cancel != nil {
		cancel()
		return
	}
	r.env.Debug("client notification consumed", zap.String("method", f.Method))
}

// Answered: the proxy asks a modern client nothing by request.
func (r *reverse) Answered(*rewrite.Frame, string) bool { return false }

func (r *reverse) Request(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	switch f.Method {
	case "server/discover":
		return link.FrameOnly(rewrite.ResultFrame(c.ID, r.discover))
	case "initialize":
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeInvalidRequest,
			"this session speaks 2026-07-28, as its client's first request did, and a client keeps its era: a 2025-11-25 client starts a new session with initialize", nil))
	case "subscriptions/listen":
		return r.listens.listen(ctx, c, f)
	case "tasks/get", "tasks/update", "tasks/cancel":
		if r.serverTasks {
			return link.FrameOnly(r.taskMethod(ctx, c, f))
		}
	}
	r.setLevel(ctx, c, f.Params.Get(metaPath(protocol.MetaLogLevel)).String())
	if state := f.Params.Get("requestState"); state.Exists() {
		return link.FrameOnly(r.resume(ctx, c, f, state.String()))
	}
	if protocol.InputRequired(f.Method) {
		return link.FrameOnly(r.call(ctx, c, f))
	}
	uc := r.upCall(c, f.Method)
	uf, err := rewrite.Parse(rewrite.LegacyRequest(f, uc.ID))
	if err != nil {
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, rewrite.Code(err), link.InvalidMessage(err), nil))
	}
	defer r.await(uc.Op, c, f)()
	ans := r.up.Request(ctx, uc, &uf).Frame
	if f.Method == "tools/list" && ans != nil {
		r.toolsMu.Lock()
		r.keepTools(gjson.GetBytes(ans, "result"))
		r.toolsMu.Unlock()
	}
	return link.FrameOnly(r.down(c, f.Method, ans))
}

// upCall is the upstream request that serves c: an id of the proxy's (the
// client's ids are its own; a held call outlives the request that began
// it), c's op and start.
func (r *reverse) upCall(c *link.Call, method string) *link.Call {
	return &link.Call{ID: r.env.NextUpstreamID(), Method: method, Op: c.Op, Start: c.Start}
}

// down is the 2025 server's answer for the modern client's request c:
// under c's id, a result in the 2026 shape. nil stays nil (no answer).
func (r *reverse) down(c *link.Call, method string, frame []byte) []byte {
	if frame == nil {
		return nil
	}
	m, err := rewrite.Parse(frame)
	if err != nil || m.Kind != rewrite.KindResponse {
		return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, fmt.Sprintf("invalid upstream answer for %s", method), nil)
	}
	if task := m.Result.Get("task"); method == "tools/call" && task.IsObject() {
		// A 2025 CreateTaskResult: the extension's is flat.
		return rewrite.ResultFrame(c.ID, rewrite.ModernTask(task, protocol.ResultTask, task.Get("status").String(), nil))
	}
	return rewrite.ResultUp(&m, c.ID, method)
}

// setLevel sets the log level a modern request's _meta asks for on the
// 2025 session (logging/setLevel), when it changed and the server logs.
func (r *reverse) setLevel(ctx context.Context, c *link.Call, level string) {
	if level == "" || !r.serverCaps.Get("logging").Exists() {
		return
	}
	r.levelMu.Lock()
	defer r.levelMu.Unlock()
	if level == r.level {
		return
	}
	uc := r.upCall(c, "logging/setLevel")
	f, _ := rewrite.Parse(rewrite.RequestFrame(uc.ID, "logging/setLevel", append(rewrite.AppendString([]byte(`{"level":`), level), '}')))
	if out := r.up.Request(ctx, uc, &f); out.Frame != nil && !rewrite.IsError(out.Frame) {
		r.level = level
	}
}

// fromServer takes what the 2025 server sends outside answers: its
// requests (a ping is answered here; what a call needs from the client is
// held for the call's next round) and its notifications (a call's progress
// and log messages go to the client; list changes and resource updates to
// the listens that asked for them).
func (r *reverse) fromServer(frame []byte, op string) {
	r.mu.Lock()
	started := r.up != nil
	r.mu.Unlock()
	m, err := rewrite.Parse(frame)
	if err != nil || !started {
		return
	}
	switch m.Kind {
	case rewrite.KindRequest:
		if m.Method == "ping" {
			r.answerServer(op, rewrite.ResultFrame([]byte(m.ID.Raw), []byte(`{}`)))
			return
		}
		r.mu.Lock()
		h := r.byOp[op]
		if h == nil { // on another stream, but about a task that needs input
			h = r.inputs[m.Params.Get(metaPath(protocol.MetaRelatedTask)+".taskId").String()]
		}
		r.mu.Unlock()
		if h == nil || !inputMethod(m.Method) {
			r.env.Warn("a server request outside a call refused: a 2026-07-28 client is asked for input only in a call's answer", zap.String("method", m.Method))
			r.answerServer(op, rewrite.ErrorFrame([]byte(m.ID.Raw), protocol.CodeMethodNotFound,
				fmt.Sprintf("%s is not available: the client speaks 2026-07-28, whom the proxy can ask only for the input of a call in progress", m.Method), nil))
			return
		}
		h.add(&m)
	case rewrite.KindNotification:
		switch m.Method {
		case "notifications/progress", "notifications/message":
			r.requestNotification(&m, op)
		case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed", "notifications/resources/updated":
			r.listens.notify(&m)
		default:
			r.env.Debug("server notification dropped", zap.String("method", m.Method))
		}
	}
}

// waiter is a modern client's request that an upstream exchange's
// messages belong to: the op they go to, the progressToken they carry,
// and the log level the request asked for (2026 logs only for a request
// that asks).
type waiter struct {
	op, level string
	token     []byte // raw JSON; nil: no progress
}

// levels are the log levels, least severe first.
var levels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// await makes c, the request f, the one the messages of the exchange on op
// belong to, until the returned func runs.
func (r *reverse) await(op string, c *link.Call, f *rewrite.Frame) func() {
	w := &waiter{op: c.Op, level: f.Params.Get(metaPath(protocol.MetaLogLevel)).String()}
	if t := f.Params.Get("_meta.progressToken"); t.Exists() {
		w.token = []byte(t.Raw)
	}
	r.mu.Lock()
	r.waiters[op] = w
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.waiters[op] == w {
			delete(r.waiters, op)
		}
		r.mu.Unlock()
	}
}

// requestNotification delivers a server's progress or log message on the
// stream of op to the client's request waiting on it: progress under that
// request's own progressToken (a call's retry has its own), a log message
// only at or above the level it asked for. Nothing goes to a request that
// did not ask, or when none waits.
func (r *reverse) requestNotification(m *rewrite.Frame, op string) {
	r.mu.Lock()
	w := r.waiters[op]
	r.mu.Unlock()
	switch {
	case w == nil:
		return
	case m.Method == "notifications/progress":
		if w.token == nil {
			return
		}
		r.env.Send(rewrite.WithParam(m, "progressToken", w.token), w.op, nil)
	case w.level != "" && slices.Index(levels, m.Params.Get("level").String()) >= slices.Index(levels, w.level):
		r.env.Send(m.Raw, w.op, nil)
	}
}

// inputMethod reports the server requests that become a call's input
// requests.
func inputMethod(method string) bool {
	return method == "elicitation/create" || method == "sampling/createMessage" || method == "roots/list"
}

// answerServer POSTs the proxy's answer to a server request.
func (r *reverse) answerServer(op string, frame []byte) {
	if a, err := rewrite.Parse(frame); err == nil {
		r.up.Answered(&a, op)
	}
}

// token is a requestState of the proxy's own: 128 random bits.
func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "mcp-tasks-proxy/" + hex.EncodeToString(b)
}
