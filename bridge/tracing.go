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
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
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

// traceFrame records one frame on the stdio side.
func (s *env) traceFrame(dir trace.Dir, op string, frame []byte, rewrites []string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: dir, Op: op, Rewrites: rewrites, Frame: json.RawMessage(frame), MethodIDFromFrame: true})
}

// traceUp records a request the proxy POSTs under ctx, with the headers it
// derives.
func (s *env) traceUp(ctx context.Context, op string, body []byte, params []routing.ParamHeader, rewrites []string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: trace.ProxyToServer, Op: op, Rewrites: rewrites, Frame: json.RawMessage(body), MethodIDFromFrame: true,
		HTTP: &trace.HTTP{Method: http.MethodPost, URL: s.client.URL(), Header: s.sentHeaders(ctx, body, params)}})
}

// traceEvent records an event of the proxy itself.
func (s *env) traceEvent(op, note string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: trace.Proxy, Op: op, Note: note})
}

// traceHTTP records a passthrough request (POST, GET or DELETE) with the
// headers it carries.
func (s *env) traceHTTP(op, method string, body []byte, h http.Header, rewrites []string) {
	if !s.tracing() {
		return
	}
	r := trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: trace.ProxyToServer, Op: op, Rewrites: rewrites,
		HTTP: &trace.HTTP{Method: method, URL: s.client.URL(), Header: firstValues(s.client.UserHeader(), h)}}
	if body != nil {
		r.Frame, r.MethodIDFromFrame = json.RawMessage(body), true
	}
	s.cfg.Trace.Emit(r)
}

// traceDown records a message from the server; status is 0 after the first
// message of a stream.
func (s *env) traceDown(op string, msg []byte, status int, start time.Time, err error) {
	if !s.tracing() {
		return
	}
	r := trace.Record{Session: s.cfg.SessionID, Time: time.Now(), Dir: trace.ServerToProxy, Op: op, LatencyMs: float64(time.Since(start).Microseconds()) / 1000}
	if len(msg) > 0 {
		r.Frame, r.MethodIDFromFrame = json.RawMessage(msg), true
	}
	if status != 0 {
		r.HTTP = &trace.HTTP{Status: status}
	}
	if err != nil {
		r.Error = err.Error()
	}
	s.cfg.Trace.Emit(r)
}

// prober is the era probe, traced under op.
func (s *env) prober(op string) capabilities.Prober {
	p := capabilities.Prober{Client: s.client, NextID: s.nextUpstreamID}
	if s.tracing() {
		p.Observe = func(body, answer []byte, status int, start time.Time, err error) {
			if status == -1 {
				s.traceUp(context.Background(), op, body, nil, []string{"id.mint", "meta.inject"})
				return
			}
			s.traceDown(op, answer, status, start, err)
		}
	}
	return p
}

// sentHeaders are the headers of a POST as the trace shows them: the
// user's (--header; the trace writer redacts the secret ones) and the
// derived MCP headers on top.
func (s *env) sentHeaders(ctx context.Context, body []byte, params []routing.ParamHeader) map[string]string {
	return firstValues(s.client.UserHeader(), routing.HeadersFor(ctx, body, params))
}

// firstValues flattens headers, later ones on top, to one value per name.
func firstValues(hs ...http.Header) map[string]string {
	m := make(map[string]string)
	for _, h := range hs {
		for k, v := range h {
			if len(v) > 0 {
				m[k] = v[0]
			}
		}
	}
	return m
}
