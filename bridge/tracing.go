package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
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
	clean    bool // Frame is clean for the trace (trace.Record.FrameClean)
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
// session parsed or built it (trace.Record.FrameValid), clean that it is
// known clean (trace.Record.FrameClean). parsed, when not nil, is the frame
// parsed: its method and id are then the record's, else the trace reads
// them from the frame. It reports whether the trace found the frame clean.
func (s *env) traceFrame(dir trace.Dir, op string, frame []byte, parsed *rewrite.Frame, valid, clean bool, rewrites []string) bool {
	if !s.tracing() {
		return false
	}
	r := trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: dir, Op: op, Rewrites: rewrites,
		Frame: json.RawMessage(frame), FrameValid: valid, FrameClean: clean, MethodIDFromFrame: true}
	if parsed != nil {
		if id, ok := rawIn(frame, parsed.ID); ok {
			r.Method, r.ID, r.MethodIDFromFrame = parsed.Method, id, false
		}
	}
	return s.cfg.Trace.Emit(r)
}

// rawIn is the bytes of frame that v, a member read from it, was read from
// (nil for a member it lacks), so that they go to the trace without a copy.
// ok is false when v does not say where they lie.
func rawIn(frame []byte, v gjson.Result) (raw []byte, ok bool) {
	if !v.Exists() {
		return nil, true
	}
	i, j := v.Index, v.Index+len(v.Raw)
	if i <= 0 || j > len(frame) || string(frame[i:j]) != v.Raw {
		return nil, false
	}
	return frame[i:j:j], true
}

// What the trace knows clean (trace.Record.FrameClean) is passed on by
// identity: a frame is clean when it is the very bytes, same start and
// length, that were found or made clean. The frames made from clean ones
// are edits (rewrite.RequestUp, rewrite.ResponseDown) that add only the
// proxy's compact constants, ids and the _meta block, itself checked
// (metaClean): such a frame's keys are the source's and the block's, and
// it has whitespace only where they had.
func same(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
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
	x := exchangeOf(ctx)
	r := trace.Record{Session: t.s.cfg.SessionID, Time: time.Now(), Dir: trace.ProxyToServer, Op: x.recordOp(ctx), Rewrites: x.rewrites}
	if body != nil {
		// Every body the proxy sends is a frame it built, or a client's
		// frame it parsed.
		r.Frame, r.FrameValid, r.FrameClean, r.MethodIDFromFrame = json.RawMessage(body), true, same(body, x.cleanBody), true
	}
	t.s.cfg.Trace.EmitHTTP(r, trace.HTTP{Method: method, URL: url, Request: h})
}

func (t tracer) Answer(ctx context.Context, status int, msg []byte, since time.Time, err error) {
	now := time.Now()
	x := exchangeOf(ctx)
	r := trace.Record{Session: t.s.cfg.SessionID, Time: now, Dir: trace.ServerToProxy, Op: x.recordOp(ctx), LatencyMs: float64(now.Sub(since).Microseconds()) / 1000}
	if len(msg) > 0 {
		r.Frame, r.MethodIDFromFrame = json.RawMessage(msg), true
	}
	if err != nil {
		r.Error = err.Error()
	}
	var clean bool
	if status != 0 {
		clean = t.s.cfg.Trace.EmitHTTP(r, trace.HTTP{Status: status})
	} else {
		clean = t.s.cfg.Trace.Emit(r)
	}
	if x.answers {
		x.cleanAnswer = nil
		if clean {
			x.cleanAnswer = rewrite.TrimFrame(msg) // the bytes Emit judged
		}
	}
}

type exchangeKey struct{}

// traceExchange is what the trace's records of the requests made under a
// context carry: their op, what the proxy changed in them, and what is
// known clean (see same). It is that context too (withExchange): the
// parent with the exchange under exchangeKey, one allocation where a
// context.WithValue would add a second, and the op at hand where opOf
// would walk the chain for it on every record.
type traceExchange struct {
	context.Context
	op       string
	rewrites []string
	// cleanBody is a request body made clean from clean parts.
	cleanBody []byte
	// answers says the exchange's own goroutine reads its answer, which
	// then notes in cleanAnswer the last message the trace found clean.
	answers     bool
	cleanAnswer []byte
}

// withRewrites names, for the trace, what the proxy changed in the
// requests made under ctx. Only call it while tracing: it allocates.
func withRewrites(ctx context.Context, rw []string) context.Context {
	return withExchange(ctx, &traceExchange{rewrites: rw})
}

// withExchange is withRewrites for one exchange of a client request: its
// body, when clean, and its answer's verdict are passed on through x. It
// returns x, made the child of ctx; x's op, when not set, is ctx's.
func withExchange(ctx context.Context, x *traceExchange) context.Context {
	x.Context = ctx
	if x.op == "" {
		x.op = opOf(ctx)
	}
	return x
}

// Value is the exchange for exchangeKey, its op (when it has one) for
// opKey, and the parent's value for any other key.
func (x *traceExchange) Value(key any) any {
	switch key.(type) {
	case exchangeKey:
		return x
	case opKey:
		if x.op != "" {
			return x.op
		}
	}
	return x.Context.Value(key)
}

var noExchange traceExchange

// recordOp is the op of the records made under ctx, x's exchange.
func (x *traceExchange) recordOp(ctx context.Context) string {
	if x.op != "" {
		return x.op
	}
	return opOf(ctx)
}

func exchangeOf(ctx context.Context) *traceExchange {
	if x, ok := ctx.Value(exchangeKey{}).(*traceExchange); ok {
		return x
	}
	return &noExchange
}

// parseKnown parses raw, without validating it again when the trace has
// just found these very bytes valid.
func parseKnown(raw []byte, valid bool) (rewrite.Frame, error) {
	if valid {
		return rewrite.ParseValid(raw)
	}
	return rewrite.Parse(raw)
}

// cleanAnswer reports whether the trace found the server's message m
// clean, under the context of its exchange.
func (s *env) cleanAnswer(ctx context.Context, m []byte) bool {
	return s.tracing() && same(m, exchangeOf(ctx).cleanAnswer)
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
	return withExchange(ctx, &traceExchange{op: op, rewrites: rw})
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
