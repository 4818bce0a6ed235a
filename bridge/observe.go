package bridge

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
)

// An Observer sees a session's traffic at its hops: the frame trace
// (--trace) is one. The session calls it on its own goroutines (the reader,
// the writer, the workers), concurrently: each method must be quick, must
// not block, and must not keep the bytes, slices or header it is given past
// its return (they are the session's, and change). A session without one
// (Config.Observer nil) pays a nil check per hop.
//
// session is Config.SessionID. op links a client request to everything it
// causes: its upstream exchanges (the discover probe, MRTR retries, task
// polls), the frames sent while it runs, the client's answers to what the
// proxy asked for it, its cancel and its answer. rewrites names what the
// proxy changed in a frame, such as "id.remap" or "meta.inject".
type Observer interface {
	// FromClient is a frame read from the client, before it is parsed.
	FromClient(session, op string, frame []byte)
	// ToClient is a frame as it is written to the client.
	ToClient(session, op string, frame []byte, rewrites []string)
	// ToServer is a request as it leaves for the server (each time it is
	// sent): its HTTP method, the URL, its headers (before the Authorization
	// the auth hook adds) and its body (nil for GET and DELETE).
	ToServer(session, op string, rewrites []string, method, url string, h http.Header, body []byte)
	// FromServer is what comes back: err for a failure before any status;
	// each message read (the first with the status, later ones with 0);
	// or, for an answer closed without a message read, the status alone.
	// latency is the time since the request left.
	FromServer(session, op string, status int, msg []byte, latency time.Duration, err error)
	// Note is an event of the proxy itself, such as the upstream era
	// verdict.
	Note(session, op, note string)
}

// outFrame is a frame for the client with the rewrites the Observer is told
// of.
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

type hopKey struct{}

// hop is what a context tells the Observer of the exchanges made under it:
// their op, and what the proxy changed in their requests.
type hop struct {
	op       string
	rewrites []string
}

// withOp carries an op id to the proxy's own upstream requests.
func withOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, hopKey{}, hop{op: op})
}

func hopOf(ctx context.Context) hop {
	h, _ := ctx.Value(hopKey{}).(hop)
	return h
}

func opOf(ctx context.Context) string { return hopOf(ctx).op }

// observed is ctx with rw, for the Observer, as what the proxy changed in
// the requests made under it, and op as their op (ctx's own when ""). With
// no Observer it is ctx itself.
func (s *env) observed(ctx context.Context, op string, rw []string) context.Context {
	if s.cfg.Observer == nil {
		return ctx
	}
	if op == "" {
		op = opOf(ctx)
	}
	return context.WithValue(ctx, hopKey{}, hop{op: op, rewrites: rw})
}

// nextOp mints an op id.
func (s *env) nextOp() string {
	return "op-" + strconv.FormatInt(s.opID.Add(1), 10)
}

// note tells the Observer of an event of the proxy itself.
func (s *env) note(op, note string) {
	if o := s.cfg.Observer; o != nil {
		o.Note(s.cfg.SessionID, op, note)
	}
}

// upstreamHops is the session's routing.Observer while it has an Observer:
// every HTTP exchange with the server is told to it on the two server
// hops, under the op and with the rewrites its context carries (withOp,
// observed). No call site reports an exchange by hand.
type upstreamHops struct{ s *env }

func (u upstreamHops) Request(ctx context.Context, method, url string, h http.Header, body []byte) {
	x := hopOf(ctx)
	u.s.cfg.Observer.ToServer(u.s.cfg.SessionID, x.op, x.rewrites, method, url, h, body)
}

func (u upstreamHops) Answer(ctx context.Context, status int, msg []byte, since time.Time, err error) {
	u.s.cfg.Observer.FromServer(u.s.cfg.SessionID, opOf(ctx), status, msg, time.Since(since), err)
}

// The rewrites of the proxy's own requests and of passthrough, for the
// Observer.
var (
	rwForward   = []string{"id.remap", "meta.inject"}
	rwOwn       = []string{"id.mint", "meta.inject"}
	rwAsk       = []string{"input.ask"}
	rwPass      = []string{"passthrough"}
	rwPassSSE   = []string{"passthrough", "sse"}
	rwResume    = []string{"stream.resume"}
	rwSSEStream = []string{"sse"}
)

// prober is the era probe; its exchanges are observed like any other.
func (s *env) prober() capabilities.Prober {
	return capabilities.Prober{Client: s.client, NextID: s.nextUpstreamID}
}
