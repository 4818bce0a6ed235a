package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// The frame trace (--trace): one record per frame per hop, linked by an op
// id that a client request gives to everything it causes. Tracing never
// blocks or changes the data path; with no trace every call here is a
// cheap no-op.

// outFrame is a frame for stdout with the op it belongs to, for the trace.
type outFrame struct {
	b        []byte
	op       string
	rewrites []string
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
func (s *Session) nextOp() string {
	return "op-" + strconv.FormatInt(s.opID.Add(1), 10)
}

func (s *Session) tracing() bool { return s.cfg.Trace.Enabled() }

// traceFrame records one frame on the stdio side.
func (s *Session) traceFrame(dir trace.Dir, op string, frame []byte, rewrites []string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Time: time.Now(), Dir: dir, Op: op, Rewrites: rewrites, Frame: json.RawMessage(frame), MethodIDFromFrame: true})
}

// traceUp records a request the proxy POSTs under ctx, with the headers it
// derives.
func (s *Session) traceUp(ctx context.Context, op string, body []byte, params []protocol.ParamHeader, rewrites []string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Time: time.Now(), Dir: trace.ProxyToServer, Op: op, Rewrites: rewrites, Frame: json.RawMessage(body), MethodIDFromFrame: true,
		HTTP: &trace.HTTP{Method: http.MethodPost, URL: s.client.URL(), Header: s.sentHeaders(ctx, body, params)}})
}

// traceEvent records an event of the proxy itself.
func (s *Session) traceEvent(op, note string) {
	if !s.tracing() {
		return
	}
	s.cfg.Trace.Emit(trace.Record{Time: time.Now(), Dir: trace.Proxy, Op: op, Note: note})
}

// traceHTTP records a passthrough request (POST, GET or DELETE) with the
// headers it carries.
func (s *Session) traceHTTP(op, method string, body []byte, h http.Header, rewrites []string) {
	if !s.tracing() {
		return
	}
	r := trace.Record{Time: time.Now(), Dir: trace.ProxyToServer, Op: op, Rewrites: rewrites,
		HTTP: &trace.HTTP{Method: method, URL: s.client.URL(), Header: firstValues(s.client.UserHeader(), h)}}
	if body != nil {
		r.Frame, r.MethodIDFromFrame = json.RawMessage(body), true
	}
	s.cfg.Trace.Emit(r)
}

// traceDown records a message from the server; status is 0 after the first
// message of a stream.
func (s *Session) traceDown(op string, msg []byte, status int, start time.Time, err error) {
	if !s.tracing() {
		return
	}
	r := trace.Record{Time: time.Now(), Dir: trace.ServerToProxy, Op: op, LatencyMs: float64(time.Since(start).Microseconds()) / 1000}
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
func (s *Session) prober(op string) capabilities.Prober {
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
func (s *Session) sentHeaders(ctx context.Context, body []byte, params []protocol.ParamHeader) map[string]string {
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
