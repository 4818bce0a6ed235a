package serve

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// session is one client session: a bridge.Session over the session's Conn,
// the GET stream's event log, and its lifetime (idleness, end).
type session struct {
	id     string
	owner  string // the task registry's owner: identity/session
	srv    *Server
	log    *zap.Logger
	in     chan bridge.In // to the bridge's reader (unbuffered)
	inEnd  chan struct{}  // closed when the input ends
	endMu  sync.Once
	done   chan struct{} // closed when the bridge session has returned
	events *eventLog
	nextID atomic.Int64 // SSE event ids, unique in the session
	// stateless: one request of a 2026-07-28 client (link.Config.Stateless)
	stateless bool

	mu      sync.Mutex
	getKick chan struct{}          // the open GET stream's: closed to take it over
	posts   map[string]*postStream // the requests' POSTs open, by raw id
	ended   bool                   // end has run: the idle timer stays stopped
	active  int                    // HTTP requests open on the session
	idle    *time.Timer            // ends the session once idle for IdleTimeout
}

func newSession(srv *Server, id string) *session {
	sess := &session{
		id:    id,
		owner: srv.identity + "/" + id,
		srv:   srv,
		log:   srv.log.With(zap.String("session", id)),
		in:    make(chan bridge.In),
		inEnd: make(chan struct{}),
		done:  make(chan struct{}),
		posts: map[string]*postStream{},
	}
	sess.events = newEventLog(srv.cfg.EventLogBytes, &sess.nextID)
	sess.idle = time.AfterFunc(srv.cfg.IdleTimeout, sess.expire)
	return sess
}

// run serves the bridge session until its input ends and it drained, or
// the server is closed.
func (sess *session) run() {
	defer close(sess.done)
	cfg := sess.srv.cfg.Bridge
	cfg.SessionID = sess.id
	cfg.StateOwner = sess.owner
	cfg.Logger = sess.log
	cfg.UpstreamIDs = &sess.srv.upIDs
	cfg.KnownModern = &sess.srv.knownModern
	cfg.Stateless = sess.stateless
	b := bridge.New(cfg)
	sess.log.Info("session started")
	ctx := routing.WithObserver(sess.srv.ctx, sess.srv.metrics.observer)
	if err := b.Serve(ctx, &conn{sess: sess}); err != nil {
		sess.log.Warn("session ended with an error", zap.Error(err))
	}
	sess.end("")
	sess.srv.forget(sess)
	sess.log.Info("session ended")
}

// end ends the session's input: the bridge answers what it has read
// (within its drain bound) and stops. why, when set, is logged.
func (sess *session) end(why string) {
	sess.endMu.Do(func() {
		if why != "" {
			sess.log.Info("ending the session", zap.String("reason", why))
		}
		sess.mu.Lock()
		sess.ended = true
		sess.idle.Stop()
		sess.mu.Unlock()
		close(sess.inEnd)
	})
}

// deliver hands one client message to the bridge's reader, or reports
// false when the session's input ended or the request went away.
func (sess *session) deliver(in bridge.In, gone <-chan struct{}) bool {
	select {
	case sess.in <- in:
		return true
	case <-sess.inEnd:
		return false
	case <-gone:
		return false
	}
}

// begin and finish bracket an HTTP request on the session: a session is
// idle while none is open.
func (sess *session) begin() {
	sess.mu.Lock()
	sess.active++
	sess.idle.Stop()
	sess.mu.Unlock()
}

func (sess *session) finish() {
	sess.mu.Lock()
	sess.active--
	if sess.active == 0 && !sess.ended {
		sess.idle.Reset(sess.srv.cfg.IdleTimeout)
	}
	sess.mu.Unlock()
}

func (sess *session) expire() {
	sess.mu.Lock()
	idle := sess.active == 0 && !sess.ended
	sess.mu.Unlock()
	if !idle {
		return
	}
	sess.srv.metrics.expired.Inc()
	sess.srv.forget(sess)
	sess.end("idle for " + sess.srv.cfg.IdleTimeout.String())
}

// openGet claims the session's one GET stream. A GET that resumes (with
// Last-Event-ID) takes the stream over from one still open, whose client
// has most likely gone (a reconnect can reach the server before the old
// connection's end does); any other GET while one is open is refused. The
// returned channel is closed when the stream is taken over; release gives
// it back.
func (sess *session) openGet(resume bool) (kicked <-chan struct{}, release func(), ok bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.getKick != nil {
		if !resume {
			return nil, nil, false
		}
		close(sess.getKick)
	}
	kick := make(chan struct{})
	sess.getKick = kick
	return kick, func() {
		sess.mu.Lock()
		if sess.getKick == kick {
			sess.getKick = nil
		}
		sess.mu.Unlock()
	}, true
}

// conn is the session's bridge.Conn: messages from the POSTs in, frames to
// the POST they belong to or to the GET stream's log.
type conn struct{ sess *session }

// Read returns the next message a POST delivered, or io.EOF once the input
// ended and nothing is left.
func (c *conn) Read() (bridge.In, error) {
	select {
	case in := <-c.sess.in:
		return in, nil
	case <-c.sess.inEnd:
		select {
		case in := <-c.sess.in:
			return in, nil
		default:
			return bridge.In{}, io.EOF
		}
	}
}

// Write routes a frame: to its request's POST stream when it has one that
// takes it, else (a frame of no request, or one a JSON-only or closed POST
// cannot carry) to the GET stream's log. An answer whose POST has gone is
// dropped: its client is not listening, and the GET stream carries no
// answers.
func (c *conn) Write(o bridge.Out) error {
	o.Frame = bridge.OneLine(o.Frame) // one SSE data line
	if st, ok := o.Stream.(*postStream); ok && st.push(o) {
		return nil
	}
	switch {
	case o.Final && o.Frame != nil:
		c.sess.log.Debug("an answer whose POST has gone is dropped", zap.String("op", o.Op))
	case o.Frame != nil:
		c.sess.events.append(o.Frame)
	}
	return nil
}

// Flush has nothing to do: every stream flushes on its own.
func (c *conn) Flush() error { return nil }

// track registers a request's POST while it is open, for the client's
// cancel of it.
func (sess *session) track(st *postStream) func() {
	key := string(st.id)
	sess.mu.Lock()
	if _, dup := sess.posts[key]; dup {
		sess.mu.Unlock()
		return func() {} // a duplicate id: the session refuses it
	}
	sess.posts[key] = st
	sess.mu.Unlock()
	return func() {
		sess.mu.Lock()
		if sess.posts[key] == st {
			delete(sess.posts, key)
		}
		sess.mu.Unlock()
	}
}

// cancelled marks the POST of the request a notifications/cancelled names.
func (sess *session) cancelled(requestID string) {
	sess.mu.Lock()
	st := sess.posts[requestID]
	sess.mu.Unlock()
	if st != nil && st.method != "initialize" { // the bridge does not cancel an initialize
		st.cancelled.Store(true)
	}
}
