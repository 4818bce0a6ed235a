package bridge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// An upstream is how a session reaches its server. There are two: modern
// (the 2026-07-28 bridge: discover, _meta, MRTR, listen, tasks) and legacy
// (passthrough of 2025, over Streamable HTTP or HTTP+SSE). A session starts
// with modern; the initialize that finds a 2025 server returns the
// passthrough it started as its outcome's next, and from then on every
// message goes there. The core never asks which one it has.
//
// request and answerLocally run on the session's goroutines concurrently;
// local, notified and answered run on the reader, in the client's order,
// and must not block on the server.
type upstream interface {
	// open prepares the upstream when the session starts.
	open()
	// local answers a request that never reaches a worker, at once, on
	// the reader (ping, logging/setLevel, a request missing what names
	// it). It reports false for a request to queue.
	local(f *rewrite.Frame, op string, stream any) bool
	// request runs one client request to its one outcome.
	request(ctx context.Context, c *call, f *rewrite.Frame) outcome
	// notified takes a client notification. cancel is set for a
	// notifications/cancelled that names a request in flight: it ends
	// that request, and the mode runs it when its order allows.
	notified(f *rewrite.Frame, op string, cancel func())
	// answered takes a client response to a request the proxy did not
	// make itself; it reports false when nobody waits for it.
	answered(f *rewrite.Frame, op string) bool
	// barrier is what a request read now must wait for before it leaves
	// (nil: nothing): the client's earlier notifications, in passthrough.
	barrier() <-chan struct{}
	// close ends the upstream when the session ends.
	close()
}

// upstreamBox holds an upstream in an atomic.Pointer.
type upstreamBox struct{ upstream }

// upstream is where requests go now.
func (s *Session) upstream() upstream { return s.up.Load().upstream }

// outcome is what an upstream returns for a request.
type outcome struct {
	// frame is the client's answer; nil when there is none (the client
	// cancelled, or the session is ending).
	frame []byte
	// rewrites names what the answer's rewrite changed, for the Observer.
	rewrites []string
	// after runs once the answer is queued (the input requests that must
	// follow a tasks/get answer).
	after func()
	// next, set by an initialize, is the upstream every later message
	// takes; era is the protocol an initialize found.
	next upstream
	era  string
}

// frameOnly is an outcome of a frame alone.
func frameOnly(frame []byte) outcome { return outcome{frame: frame} }

// modern is the 2026-07-28 bridge: the client's requests are rewritten to
// the modern wire, with the _meta block, and answered from the server's
// results, MRTR rounds and tasks.
type modern struct {
	*env
	hs     *handshake
	tasks  *taskBridge
	listen *listens

	// state is the initialize result, stored once an initialize succeeded
	// (nil before: requests are refused as not initialized).
	state atomic.Pointer[modernState]

	// metaMu guards level and the _meta block made from it and state.
	metaMu sync.Mutex
	level  string // logging/setLevel
	meta   atomic.Pointer[rewrite.MetaBlock]

	tools *toolAnnotations

	rawHeadersNoted sync.Once // the first raw UTF-8 header retry is logged
}

// modernState is what a successful initialize learned, stored once.
type modernState struct {
	caps       []byte // the client's capabilities, mapped to 2026
	clientInfo []byte // the client's clientInfo
	legacyCaps []byte // the client's own capabilities
	serverCaps []byte // the server's 2026 capabilities, from discover
	hasTasks   bool   // the server declares the tasks extension
}

func newModern(e *env) *modern {
	m := &modern{env: e}
	m.tools = &toolAnnotations{call: m.internalCall, warn: e.warn, debug: e.debug, logFrame: e.logFrame,
		params: map[string][]protocol.ParamHeader{}}
	m.hs = &handshake{modern: m}
	m.tasks = &taskBridge{modern: m, reg: ownedBy(newMemRegistry(), e.cfg.StateOwner), dispatched: map[string]map[string]*inputKey{}}
	m.listen = newListens(m)
	return m
}

// ready reports whether an initialize succeeded.
func (s *modern) ready() bool { return s.state.Load() != nil }

// open opens the task state file, or keeps the registry in memory when
// there is none. A file that cannot be used moves the session to memory,
// said once (tasks/list would forget tasks on restart).
func (s *modern) open() {
	if s.cfg.StatePath != "" {
		s.tasks.reg = ownedBy(openStateRegistry(s.cfg.StatePath, s.client.URL(), s.log), s.cfg.StateOwner)
	}
}

// local answers what the method table says is answered as soon as it is
// read (ping, logging/setLevel), and refuses a request without the string
// param that names it (it is also what Mcp-Name carries).
func (s *modern) local(f *rewrite.Frame, op string, stream any) bool {
	id := []byte(f.ID.Raw)
	if protocol.LocalOf(f.Method) == protocol.LocalAnswer {
		frame, rw := s.answerLocally(f, id)
		s.logRequest(op, f.Method, id, time.Now(), frame, false)
		s.reply(frame, op, stream, rw)
		return true
	}
	if e, ok := rewrite.CheckNameParam(f); !ok {
		s.reply(s.errorFrame(id, e), op, stream, nil)
		return true
	}
	return false
}

// answerLocally is the answer to a request the proxy answers itself, and
// the rewrite the trace names.
func (s *modern) answerLocally(f *rewrite.Frame, id []byte) ([]byte, []string) {
	if f.Method == "logging/setLevel" {
		return s.setLevel(f, id), []string{"setLevel.local"}
	}
	return rewrite.ResultFrame(id, []byte(`{}`)), []string{"ping.local"}
}

// request runs one client request against the modern server, by what the
// method table says the proxy does with it.
func (s *modern) request(ctx context.Context, c *call, f *rewrite.Frame) outcome {
	switch protocol.LocalOf(f.Method) {
	case protocol.LocalInitialize:
		return s.hs.initialize(ctx, c, f)
	case protocol.LocalTask:
		return s.tasks.taskMethod(ctx, c, f)
	case protocol.LocalSubscription:
		return frameOnly(s.listen.subscription(ctx, c, f))
	}
	return s.forward(ctx, c, f)
}

// notified: no client notification is forwarded to a 2026-07-28 server
// (2026 has none of them). notifications/initialized opens the list-change
// stream.
func (s *modern) notified(f *rewrite.Frame, _ string, cancel func()) {
	switch f.Method {
	case "notifications/initialized":
		s.debug("client initialized")
		// The 2025 client signals readiness here: the list-change stream
		// starts now, once: a 2025 server sends nothing but pings and
		// logs before it.
		s.listen.mu.Lock()
		start := s.ready() && !s.listen.listening
		s.listen.listening = s.listen.listening || start
		s.listen.mu.Unlock()
		if start {
			s.listen.openListChanged()
		}
	case "notifications/cancelled":
		if cancel != nil {
			cancel() // closes the upstream stream, or drops it from the queue
		}
	default:
		s.debug("client notification consumed", zap.String("method", f.Method))
	}
}

// answered routes the client's answer to the proxy's request that waits
// for it.
func (s *modern) answered(f *rewrite.Frame, _ string) bool { return s.clientAnswered(f) }

func (s *modern) barrier() <-chan struct{} { return nil }

func (s *modern) close() {}

// handshake answers the legacy initialize: from a server/discover probe
// when the server is modern, or by starting a passthrough when it speaks
// 2025 (over Streamable HTTP, or the 2024-11-05 HTTP+SSE transport).
type handshake struct {
	*modern
	initMu sync.Mutex // one initialize at a time
}
