package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// The frame trace (--trace): one record per frame per hop, linked by an op
// id that a client request gives to everything it causes. Tracing never
// blocks or changes the data path; with no trace every call here is a
// cheap no-op.

// outFrame is a frame for the client with the rewrites the trace records.
type outFrame struct {
	Out
	rewrites []string
}

// streams maps the op of each request in flight to the In.Stream it came
// from, so that what is sent while it runs reaches the same stream. A front
// without streams (stdio) never fills it, and then a lookup is one atomic
// load.
type streams struct {
	used atomic.Bool
	m    sync.Map // op -> In.Stream
}

func (t *streams) add(op string, stream any) {
	if stream == nil {
		return
	}
	t.used.Store(true)
	t.m.Store(op, stream)
}

func (t *streams) drop(op string) {
	if t.used.Load() {
		t.m.Delete(op)
	}
}

func (t *streams) of(op string) any {
	if op == "" || !t.used.Load() {
		return nil
	}
	v, _ := t.m.Load(op)
	return v
}

type opKey struct{}

// withOp carries an op id to the proxy's own upstream requests.
func withOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

func opOf(ctx context.Context) string {
	op, _ := ctx.Value(opKey{}).(string)
	return op
}

// nextOp mints an op id.
func (s *env) nextOp() string {
	return "op-" + strconv.FormatInt(s.opID.Add(1), 10)
}

func (s *env) tracing() bool { return s.cfg.Trace.Enabled() }

// traceFrame records one frame on the client's side; valid says the
// session parsed or built it (trace.Record.FrameValid).
func (s *env) traceFrame(dir trace.Dir, op string, frame []byte, valid bool, rewrites []string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: dir, Op: op, Rewrites: rewrites,
		Frame: json.RawMessage(frame), FrameValid: valid, MethodIDFromFrame: true})
}

// traceEvent records an event of the proxy itself.
func (s *env) traceEvent(op, note string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: trace.Proxy, Op: op, Note: note})
}

// tracer is the session's routing.Observer while it traces: every HTTP
// exchange with the server becomes records on the two server hops, under
// the op and with the rewrites its context carries (withOp,
// withRewrites). No call site traces an exchange by hand.
type tracer struct{ s *env }

func (t tracer) Request(ctx context.Context, method, url string, h http.Header, body []byte) {
	r := trace.Record{Session: t.s.cfg.SessionID, Time: time.Now(), Dir: trace.ProxyToServer, Op: opOf(ctx), Rewrites: rewritesOf(ctx),
		HTTP: &trace.HTTP{Method: method, URL: url, Request: h}}
	if body != nil {
		// Every body the proxy sends is a frame it built, or a client's
		// frame it parsed.
		r.Frame, r.FrameValid, r.MethodIDFromFrame = json.RawMessage(body), true, true
	}
	t.s.cfg.Trace.Emit(r)
}

func (t tracer) Answer(ctx context.Context, status int, msg []byte, since time.Time, err error) {
	now := time.Now()
	r := trace.Record{Session: t.s.cfg.SessionID, Time: now, Dir: trace.ServerToProxy, Op: opOf(ctx), LatencyMs: float64(now.Sub(since).Microseconds()) / 1000}
	if len(msg) > 0 {
		r.Frame, r.MethodIDFromFrame = json.RawMessage(msg), true
	}
	if status != 0 {
		r.HTTP = &trace.HTTP{Status: status}
	}
	if err != nil {
		r.Error = err.Error()
	}
	t.s.cfg.Trace.Emit(r)
}

type rewritesKey struct{}

// withRewrites names, for the trace, what the proxy changed in the
// requests made under ctx. Only call it while tracing: it allocates.
func withRewrites(ctx context.Context, rw []string) context.Context {
	return context.WithValue(ctx, rewritesKey{}, rw)
}

func rewritesOf(ctx context.Context) []string {
	rw, _ := ctx.Value(rewritesKey{}).([]string)
	return rw
}

// traced is ctx with rw for the trace, or ctx itself when not tracing.
func (s *env) traced(ctx context.Context, rw []string) context.Context {
	if !s.tracing() {
		return ctx
	}
	return withRewrites(ctx, rw)
}

// tracedAs is traced, with the records under op whatever ctx carries.
func (s *env) tracedAs(ctx context.Context, op string, rw []string) context.Context {
	if !s.tracing() {
		return ctx
	}
	return withRewrites(withOp(ctx, op), rw)
}

// The rewrites of the proxy's own requests and of passthrough, for the
// trace.
var (
	rwForward   = []string{"id.remap", "meta.inject"}
	rwOwn       = []string{"id.mint", "meta.inject"}
	rwAsk       = []string{"input.ask"}
	rwPass      = []string{"passthrough"}
	rwPassSSE   = []string{"passthrough", "sse"}
	rwResume    = []string{"stream.resume"}
	rwSSEStream = []string{"sse"}
)

// prober is the era probe; its exchanges are traced like any other.
func (s *env) prober() capabilities.Prober {
	return capabilities.Prober{Client: s.client, NextID: s.nextUpstreamID}
}
