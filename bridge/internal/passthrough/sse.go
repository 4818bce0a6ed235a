package passthrough

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// sseStreamOp is the trace's op for the messages of the HTTP+SSE stream.
const sseStreamOp = "sse-stream"

// sseCarrier carries passthrough messages over the HTTP+SSE transport of
// MCP 2024-11-05 (routing.OpenLegacy): every server message, the answers
// to the client's requests included, comes on one GET stream, and each
// client message is POSTed to the endpoint the stream named.
//
// The transport has no resumption, and a new GET is a new session on the
// server. So when the stream drops, every request waiting for its answer
// gets an error naming the cause (the request may or may not have run),
// and the proxy reconnects with backoff and re-initializes, as it does when
// a 2025 session expires: it replays the client's initialize,
// notifications/initialized, the log level and the resource
// subscriptions. Requests that come meanwhile wait for the new session, up
// to --discover-timeout, then fail with an error that says so. A POST
// answered 404 (session not found) is a session expiry too.
type sseCarrier struct {
	p *passthrough
	s *link.Env

	mu           sync.Mutex
	endpoint     string             // where to POST, on the URL's origin
	gen          int                // the stream's generation
	stop         context.CancelFunc // ends the current stream
	waiters      map[string]*sseWaiter
	down         error         // why there is no stream; nil while one is open
	up           chan struct{} // closed while an initialized session is up
	ready        bool          // up is closed
	live         bool          // the client's session is established: reconnect after a drop
	reconnecting bool          // a reconnect loop runs
}

// sseWaiter is a request waiting for its answer on the stream.
type sseWaiter struct {
	c     *link.Call
	ch    chan []byte // buffered: the answer, or dropFrame's error
	touch func()      // restarts the request's idle timer
}

// sseInit opens an HTTP+SSE stream and, when the server opens one with an
// endpoint event, forwards the client's initialize over it. err says why
// the server is not an HTTP+SSE server (the handshake's own failure, or
// an endpoint on another origin, is in the frame).
func sseInit(ctx context.Context, e *link.Env, c *link.Call, f *rewrite.Frame, deliver func([]byte, string)) (link.Outcome, error) {
	t := &sseCarrier{s: e, waiters: map[string]*sseWaiter{}, up: make(chan struct{})}
	if err := t.open(ctx, false); err != nil {
		var ee *routing.EndpointError
		switch {
		case ctx.Err() != nil:
			return link.Outcome{}, nil
		case !errors.As(err, &ee):
			return link.Outcome{}, err
		}
		e.Warn("no HTTP+SSE stream", zap.String("url", e.URL()), zap.Error(err))
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, fmt.Sprintf("cannot initialize: %v; the next initialize will try again", err),
			link.ErrorData(e.URL(), 0, "cause", "endpoint origin"))), nil
	}
	e.Verdict(link.OpOf(ctx), capabilities.LegacySSE.String(), "a GET opened an event stream with an endpoint event")
	out, _ := start(ctx, e, c, f, deliver, func(p *passthrough) carrier {
		t.p = p
		return t
	})
	return out, nil
}

func (t *sseCarrier) name() string { return "http+sse" }

// open GETs a new event stream, reads its endpoint, and starts reading its
// messages; the stream it replaces is closed, and requests waiting on it
// fail. ctx bounds the opening only: the stream lasts as long as the
// session. A reconnect is unattended: it may refresh a token, never start a
// sign-in.
func (t *sseCarrier) open(ctx context.Context, reconnect bool) error {
	s := t.s
	sctx, cancel := context.WithCancel(s.Observed(s.Ctx, sseStreamOp, link.RwSSEStream))
	if reconnect {
		sctx = routing.Unattended(sctx)
	}
	abort := context.AfterFunc(ctx, cancel)
	st, err := s.Client.OpenLegacy(sctx, min(s.Cfg.DiscoverTimeout, routing.DefaultEndpointWait))
	if !abort() {
		err = errors.Join(ctx.Err(), err)
	}
	if err != nil {
		if st != nil {
			st.Close()
		}
		cancel()
		return err
	}
	t.mu.Lock()
	if t.stop != nil {
		t.stop()
	}
	t.gen++
	gen := t.gen
	t.stop, t.endpoint, t.down = cancel, st.Endpoint, nil
	t.failWaiters(errors.New("the upstream server ended the MCP session")) // unlocks t.mu
	s.Debug("HTTP+SSE stream open", zap.String("endpoint", routing.Redact(st.Endpoint)))
	if !s.BG.Start(func() { t.run(st, gen) }) {
		st.Close()
		cancel()
		return context.Canceled
	}
	return nil
}

// run reads the stream: answers go to the requests waiting for them,
// server requests and notifications to the client.
func (t *sseCarrier) run(st *routing.LegacyStream, gen int) {
	s := t.s
	defer st.Close()
	for {
		msg, err := st.Next()
		if err != nil {
			t.dropped(gen, err)
			return
		}
		t.mu.Lock()
		for _, w := range t.waiters {
			w.touch()
		}
		t.mu.Unlock()
		if ev := st.Event(); ev != "" && ev != "message" {
			s.Debug("HTTP+SSE event skipped", zap.String("event", ev))
			continue
		}
		m, perr := rewrite.Parse(rewrite.TrimFrame(msg))
		switch {
		case perr != nil:
			s.Warn("upstream stream event skipped", zap.Error(perr), zap.ByteString("event", s.LogFrame(msg)))
		case m.Kind == rewrite.KindResponse:
			t.mu.Lock()
			w := t.waiters[m.ID.Raw]
			delete(t.waiters, m.ID.Raw)
			t.mu.Unlock()
			if w == nil {
				s.Debug("upstream response for no waiting request dropped (cancelled or timed out)", zap.String("id", m.ID.Raw))
				continue
			}
			w.ch <- link.Clone(m.Raw)
		default:
			t.p.toClient(m.Raw, sseStreamOp)
		}
	}
}

// failWaiters answers every request waiting on the stream with the error
// for why, and returns how many there were. t.mu is held; it unlocks it
// first.
func (t *sseCarrier) failWaiters(why error) int {
	old := t.waiters
	t.waiters = map[string]*sseWaiter{}
	t.mu.Unlock()
	for _, w := range old {
		w.ch <- t.dropFrame(w.c, why)
	}
	return len(old)
}

// dropped fails the requests waiting on the stream of generation gen and
// starts reconnecting, once the client's session is established.
func (t *sseCarrier) dropped(gen int, err error) {
	s := t.s
	if s.Ctx.Err() != nil {
		return // the session is ending
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the server closed it")
	}
	t.mu.Lock()
	if gen != t.gen {
		t.mu.Unlock()
		return // a newer stream replaced it
	}
	t.down = fmt.Errorf("the HTTP+SSE event stream from the upstream server dropped (%v)", err)
	if t.ready {
		t.up, t.ready = make(chan struct{}), false
	}
	reconnect := t.live && !t.reconnecting
	t.reconnecting = t.reconnecting || reconnect
	n := t.failWaiters(t.down)
	s.Warn("the upstream HTTP+SSE stream dropped; requests waiting for answers fail, and the proxy reconnects with a new session", zap.Error(err), zap.Int("waiting", n))
	if reconnect {
		s.BG.Start(t.reconnect)
	}
}

// reconnect re-initializes with backoff until a new session is up.
func (t *sseCarrier) reconnect() {
	s := t.s
	defer func() {
		t.mu.Lock()
		t.reconnecting = false
		t.mu.Unlock()
	}()
	backoff := link.BackoffMin
	for {
		if !link.Sleep(s.Ctx, backoff) {
			return
		}
		t.mu.Lock()
		done := t.ready || !t.live
		t.mu.Unlock()
		if done {
			return
		}
		if err := t.p.reinit(s.Ctx, t.p.sess.Gen()); err != nil {
			if s.Ctx.Err() != nil {
				return
			}
			backoff = min(backoff*2, link.BackoffMax)
			s.Info("reconnecting to the upstream HTTP+SSE server failed; retrying", zap.Error(err), zap.Duration("after", backoff))
		}
	}
}

func (t *sseCarrier) connect(ctx context.Context) error { return t.open(ctx, true) }

func (t *sseCarrier) started() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.live = true
	if !t.ready {
		t.ready = true
		close(t.up)
	}
}

func (t *sseCarrier) wait(ctx context.Context, c *link.Call) ([]byte, bool) {
	t.mu.Lock()
	up := t.up
	t.mu.Unlock()
	select {
	case <-up:
		return nil, true
	default:
	}
	select {
	case <-up:
		return nil, true
	case <-ctx.Done():
		return nil, false
	case <-time.After(t.s.Cfg.DiscoverTimeout):
	}
	if c == nil {
		return nil, false
	}
	t.mu.Lock()
	why := cmp.Or(t.down, errors.New("the upstream HTTP+SSE session is being re-established"))
	t.mu.Unlock()
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("%v, and the proxy could not start a new session within %v; it keeps trying: send %s again later", why, t.s.Cfg.DiscoverTimeout, c.Method),
		link.ErrorData(t.s.URL(), 0, "cause", "stream dropped")), false
}

func (t *sseCarrier) exchange(ctx context.Context, c *link.Call, body []byte, _ routing.Stamp) passResult {
	s := t.s
	actx, dl := s.Deadlines(ctx, c)
	defer dl.Stop()
	w := &sseWaiter{c: c, ch: make(chan []byte, 1), touch: dl.Touch}
	key := string(c.ID)
	t.mu.Lock()
	endpoint, down := t.endpoint, t.down
	if down == nil {
		t.waiters[key] = w
	}
	t.mu.Unlock()
	if down != nil {
		return passResult{frame: t.dropFrame(c, down)}
	}
	defer func() {
		t.mu.Lock()
		if t.waiters[key] == w {
			delete(t.waiters, key)
		}
		t.mu.Unlock()
	}()
	start := time.Now()
	resp, err := s.Client.SendTo(s.Observed(actx, c.Op, link.RwPassSSE), endpoint, body)
	if err != nil {
		frame, again := s.SendFailed(ctx, actx, c, err)
		return passResult{frame: frame, again: again, err: err}
	}
	msg, _ := resp.Next()
	resp.Close()
	switch {
	case resp.Status == http.StatusNotFound:
		return passResult{err: errExpired}
	case resp.Status >= 300:
		return passResult{frame: link.HTTPFailure(s.URL(), c.ID, c.Method, resp, msg)}
	}
	select {
	case frame := <-w.ch:
		s.LogExchange(c, nil, resp.Status, start, len(body), len(frame))
		return passResult{frame: frame}
	case <-actx.Done():
		if ctx.Err() != nil {
			return passResult{} // cancelled: nothing more for this id
		}
		return passResult{frame: s.TimedOut(actx, c)}
	}
}

// dropFrame is the error for a request whose answer cannot come.
func (t *sseCarrier) dropFrame(c *link.Call, why error) []byte {
	tail := "the request may or may not have run"
	if protocol.Repeatable(c.Method) {
		tail = "sending it again is safe"
	}
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("%v before the answer to %s; %s (the proxy reconnects with a new session)", why, c.Method, tail),
		link.ErrorData(t.s.URL(), 0, "cause", "stream dropped"))
}

func (t *sseCarrier) fire(ctx context.Context, op string, body []byte, _ routing.Stamp) (int, error) {
	s := t.s
	t.mu.Lock()
	endpoint, down := t.endpoint, t.down
	t.mu.Unlock()
	if down != nil {
		return 0, down
	}
	pctx, cancel := context.WithTimeout(ctx, s.Cfg.IdleTimeout)
	defer cancel()
	resp, err := s.Client.SendTo(s.Observed(pctx, op, link.RwPassSSE), endpoint, body)
	if err != nil {
		return 0, err
	}
	resp.Close()
	if resp.Status == http.StatusNotFound { // a 2024-11-05 server's answer for a session it no longer has
		return resp.Status, errExpired
	}
	return resp.Status, nil
}

// openGet has nothing to do: the stream is the session.
func (t *sseCarrier) openGet(context.Context) { t.p.getSettled() }

func (t *sseCarrier) end() {
	t.mu.Lock()
	t.live = false
	stop := t.stop
	t.stop = nil
	t.mu.Unlock()
	if stop != nil {
		stop()
	}
}
