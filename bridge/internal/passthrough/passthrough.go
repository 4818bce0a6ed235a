// Package passthrough is the 2025 upstream mode (docs/protocol.md, Two
// modes): when the upstream speaks 2025, like the client, the proxy is a
// faithful 2025 Streamable HTTP client and changes no frame. It forwards the client's own initialize, keeps the
// Mcp-Session-Id and the negotiated MCP-Protocol-Version on every later
// request, POSTs every message (requests, notifications and the client's
// answers to server requests), delivers server messages from POST streams and
// from the GET stream, resumes dropped streams with Last-Event-ID,
// re-initializes an expired session by replaying the client's handshake, and
// ends the session with DELETE on exit.
//
//	client request ──▶ queue ──▶ POST ──▶ JSON or SSE ──▶ messages to the client
//	client notification / answer ──▶ poster (in order) ──▶ POST (202)
//	GET stream ──▶ server requests and notifications ──▶ client
//
// How messages travel is the carrier's: Streamable HTTP as above, or the
// HTTP+SSE transport of 2024-11-05 servers (sse.go). Init and SSEFirst are
// how the modern bridge's handshake starts it, choosing the transport.
//
// What it must never do: change a frame's bytes (the server's frames are
// the client's, verbatim; only the proxy's own re-initialization mints
// ids), send a client request before the client's earlier notifications,
// or repeat a request that is not safe to repeat.
package passthrough

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

const (
	// MaxResumes bounds the resumptions of one stream in a row that bring
	// no new event.
	MaxResumes = 5
	// defaultResumeDelay is the wait before resuming a stream that named no
	// retry delay.
	defaultResumeDelay = 500 * time.Millisecond
	// deleteTimeout bounds the DELETE that ends the session on exit.
	deleteTimeout = 2 * time.Second
	// drainTimeout bounds sending, on exit, the client messages still queued.
	drainTimeout = 2 * time.Second
)

// passthrough is the session's state against a legacy upstream.
type passthrough struct {
	s     *link.Env
	posts chan clientPost // client notifications and answers, POSTed in order

	// sess is the 2025 session: its id and version on every request, a
	// generation per (re-)initialization.
	sess *routing.LegacySession

	mu          sync.Mutex
	initFrame   []byte // the client's initialize, replayed on re-initialization
	initialized bool   // the client sent notifications/initialized
	level       []byte // the params of the last logging/setLevel that succeeded
	subs        map[string]bool
	getCancel   context.CancelFunc // the GET stream of the current session
	// getReady is closed once the first GET stream is open, refused or
	// given up (or at once, for a carrier without one): see GetReady.
	getReady     chan struct{}
	getReadyOnce sync.Once
	ownID        int64
	car          carrier // how messages travel: Streamable HTTP or HTTP+SSE

	lastPost chan struct{} // the reader's own: closed when the last queued client message is POSTed

	// deliver, when set, takes the server's requests and notifications
	// instead of the client (see Open).
	deliver func(frame []byte, op string)

	reinitMu sync.Mutex // one re-initialization at a time
}

// clientPost is one client message to POST without an answer.
type clientPost struct {
	body   []byte
	method string // "" for an answer to a server request
	op     string
	after  func() // runs once the POST is done (cancellation)
	done   chan struct{}
}

// errExpired: the server answered 404 to a request that named a session.
var errExpired = errors.New("the server ended the MCP session (HTTP 404 for its Mcp-Session-Id)")

// SSEFirst tries the HTTP+SSE transport before Streamable HTTP under
// --transport sse-first and sse-only. done is false when Streamable HTTP
// is to be tried: the default, or sse-first against a server whose GET
// opened no event stream with an endpoint event.
func SSEFirst(ctx context.Context, e *link.Env, c *link.Call, f *rewrite.Frame) (out link.Outcome, done bool) {
	only := e.Cfg.Transport == link.TransportSSEOnly
	if !only && (e.Cfg.Transport != link.TransportSSEFirst || e.Cfg.Protocol == link.ProtocolModern) {
		return link.Outcome{}, false // --protocol modern: a 2024-11-05 server is not wanted first
	}
	url := e.URL()
	if only && e.Cfg.Protocol == link.ProtocolModern {
		return link.FrameOnly(e.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInvalidRequest, link.ErrorData(url, 0, "", ""),
			"%s sse-only reaches only old HTTP+SSE servers (MCP 2024-11-05), but %s modern demands a 2026-07-28 server; drop one of them", rewrite.HintTransport, rewrite.HintProtocol))), true
	}
	out, err := sseInit(ctx, e, c, f, nil)
	switch {
	case err == nil:
		return out, true
	case only || capabilities.IsAuthError(err):
		e.Warn("no HTTP+SSE stream", zap.String("url", url), zap.Error(err))
		data := link.ErrorData(url, 0, "transport", "sse")
		msg := rewrite.Errorf(protocol.CodeInternalError, data, "cannot initialize: %s; the next initialize will try again", err)
		if only {
			msg = rewrite.Errorf(protocol.CodeInternalError, data, "cannot initialize: %s; %s sse-only allows only the old HTTP+SSE transport (MCP 2024-11-05): for a Streamable HTTP server drop it, or use %[2]s http-first", err, rewrite.HintTransport)
		}
		return link.FrameOnly(e.ErrorFrame(c.ID, msg)), true
	}
	e.Info("no HTTP+SSE stream; trying Streamable HTTP", zap.Error(err))
	return link.Outcome{}, false
}

// Init forwards the client's initialize to a legacy server over
// Streamable HTTP. When the server refuses the POST the way a 2024-11-05
// HTTP+SSE server does (400, 404 or 405 without a JSON-RPC message), it
// tries the old transport, as mcp-remote does, unless --transport
// http-only (or sse-first, which has tried it already) rules it out. The
// error of a refused POST says so in its data (cause "not streamable
// http"), and, when the old transport failed too, why.
func Init(ctx context.Context, e *link.Env, c *link.Call, f *rewrite.Frame) link.Outcome {
	return Open(ctx, e, c, f, nil)
}

// Open is Init for the reverse bridge, which speaks 2025 to the server in
// a modern client's name: f is the proxy's own initialize, and the
// server's requests and notifications go to deliver (with the op of the
// request whose stream carried them, "" for none) instead of the client.
// The passthrough is the outcome's Next.
func Open(ctx context.Context, e *link.Env, c *link.Call, f *rewrite.Frame, deliver func(frame []byte, op string)) link.Outcome {
	out, refused := start(ctx, e, c, f, deliver, func(p *passthrough) carrier { return &streamable{p: p} })
	if !refused {
		return out
	}
	msg := gjson.GetBytes(out.Frame, "error.message").String()
	data, _ := sjson.SetBytes([]byte(gjson.GetBytes(out.Frame, "error.data").Raw), "cause", "not streamable http")
	switch e.Cfg.Transport {
	case link.TransportHTTPOnly:
		return link.FrameOnly(e.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInternalError, data,
			"%s; if it is an old HTTP+SSE server (MCP 2024-11-05), drop %s http-only (or use %[2]s sse-only)", msg, rewrite.HintTransport)))
	case link.TransportSSEFirst:
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, msg, data))
	}
	e.Info("the upstream server refused the initialize POST; trying the HTTP+SSE transport (2024-11-05)", zap.Int("httpStatus", int(gjson.GetBytes(data, "httpStatus").Int())))
	sout, err := sseInit(ctx, e, c, f, deliver)
	if err == nil {
		return sout
	}
	e.Warn("the upstream server is not an HTTP+SSE server either", zap.Error(err))
	return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, fmt.Sprintf("%s, and %v", msg, err), data))
}

// start forwards the client's initialize over the carrier mk makes and,
// when it succeeds, returns the passthrough as the outcome's Next. refused
// reports a POST refused the way a 2024-11-05 server refuses it (the frame
// is then the proxy's error for it).
func start(ctx context.Context, e *link.Env, c *link.Call, f *rewrite.Frame, deliver func([]byte, string), mk func(*passthrough) carrier) (out link.Outcome, refused bool) {
	p := &passthrough{s: e, sess: e.Client.LegacySession(), posts: make(chan clientPost, 64), subs: map[string]bool{}, initFrame: f.Raw, deliver: deliver,
		getReady: make(chan struct{})}
	p.car = mk(p)
	res := p.car.exchange(ctx, c, f.Raw, p.sess.Stamp())
	frame := res.frame
	if frame == nil && res.err != nil && ctx.Err() == nil {
		// An HTTP+SSE session that ended during its own handshake (404).
		frame = rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
			fmt.Sprintf("cannot initialize: %v during the handshake; the next initialize will try again", res.err),
			link.ErrorData(e.URL(), http.StatusNotFound, "cause", "session expired"))
	}
	if res.err != nil || frame == nil || gjson.GetBytes(frame, "error").Exists() {
		// The server refused the handshake: the client sees why.
		p.car.end()
		return link.FrameOnly(frame), res.refused
	}
	version := gjson.GetBytes(frame, "result.protocolVersion").String()
	p.sess.Begin(res.sessionID, version)
	p.car.started()
	e.BG.Start(func() { p.poster(e.Ctx) })
	e.Info("passthrough session started", zap.String("transport", p.car.name()), zap.String("protocolVersion", version), zap.Bool("sessionId", res.sessionID != ""))
	return link.Outcome{Frame: frame, Rewrites: link.RwPass, Next: p, Era: version}, false
}

// passResult is the outcome of one passthrough exchange.
type passResult struct {
	frame     []byte         // the client's answer: the server's, verbatim, or a proxy-made error
	again     link.RetryKind // whether a failure may be retried
	sessionID string         // the Mcp-Session-Id the answer carried
	err       error          // errExpired, or why there is no frame
	// refused: the POST was answered 400, 404 or 405 without a JSON-RPC
	// message, which is how a 2024-11-05 HTTP+SSE server answers a POST to
	// its stream's URL (mcp-remote's cue to try the old transport).
	refused bool
}

// Request forwards one client request to its one answer under the retry
// policy (link.Retry); an expired session is re-initialized, and the
// request is sent again only when it is safe to repeat.
func (p *passthrough) Request(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	return link.Outcome{Frame: p.forward(ctx, c, f), Rewrites: link.RwPass}
}

func (p *passthrough) forward(ctx context.Context, c *link.Call, f *rewrite.Frame) []byte {
	s := p.s
	if frame, ok := p.car.wait(ctx, c); !ok {
		return frame
	}
	for reinit := false; ; reinit = true {
		var res passResult
		var gen int
		frame := s.Attempt(ctx, c, f.Method, func() link.Result {
			st := p.sess.Stamp()
			gen = st.Gen
			res = p.car.exchange(ctx, c, f.Raw, st)
			return link.Failed(res.frame, res.again)
		}).Frame
		if !errors.Is(res.err, errExpired) {
			p.remember(f, frame)
			return frame
		}
		if err := p.reinit(ctx, gen); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
				fmt.Sprintf("the upstream server ended the MCP session, and starting a new one failed: %v; restart the client session", err),
				link.ErrorData(s.URL(), http.StatusNotFound, "cause", "session expired"))
		}
		if reinit || !protocol.Repeatable(f.Method) {
			why := "it is not safe to repeat"
			if reinit {
				why = "the new session expired too"
			}
			return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
				fmt.Sprintf("the upstream server ended the MCP session while %s was sent (HTTP 404); the proxy started a new session, but did not send %s again because %s: send it again if it should run", f.Method, f.Method, why),
				link.ErrorData(s.URL(), http.StatusNotFound, "cause", "session expired"))
		}
		s.Info("session re-initialized; repeating the request", zap.String("method", f.Method), zap.ByteString("id", c.ID))
	}
}

// remember keeps what a new session must be told again after an expiry:
// the log level and the resource subscriptions, once the server accepted
// them. Other answers are not looked at (a large result is not scanned).
func (p *passthrough) remember(f *rewrite.Frame, answer []byte) {
	if !slices.Contains([]string{"logging/setLevel", "resources/subscribe", "resources/unsubscribe"}, f.Method) || answer == nil || gjson.GetBytes(answer, "error").Exists() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch f.Method {
	case "logging/setLevel":
		p.level = []byte(f.Params.Raw)
	case "resources/subscribe":
		p.subs[f.Params.Get("uri").String()] = true
	case "resources/unsubscribe":
		delete(p.subs, f.Params.Get("uri").String())
	}
}

// exchange POSTs one message and reads the answer to c.id. Server requests
// and notifications on the stream go to the client as they come; a stream
// that drops before the answer is resumed with GET and Last-Event-ID.
func (t *streamable) exchange(ctx context.Context, c *link.Call, body []byte, st routing.Stamp) passResult {
	p := t.p
	s := p.s
	actx, dl := s.Deadlines(ctx, c)
	defer dl.Stop()
	start := time.Now()
	resp, err := p.sess.Post(s.Observed(actx, c.Op, link.RwPass), st, body)
	if err != nil {
		frame, again := s.SendFailed(ctx, actx, c, err)
		return passResult{frame: frame, again: again, err: err}
	}
	res := passResult{sessionID: resp.SessionID()}
	last := ""                  // the id of the last event seen, over the resumptions
	delay := defaultResumeDelay // the last retry: the stream named
	for resumes := 0; ; resumes++ {
		frame, done, server := t.read(actx, c, resp, dl.Touch)
		resp.Close()
		if done || ctx.Err() != nil {
			res.frame = frame
			switch resp.Status {
			case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
				res.refused = !server
			}
			if frame == nil && ctx.Err() == nil {
				res.frame = s.TimedOut(actx, c)
			}
			if st.Expired(resp.Status) {
				res.frame, res.err = nil, errExpired
			}
			s.LogExchange(c, nil, resp.Status, start, len(body), len(res.frame))
			return res
		}
		// The stream ended before the answer: resume it if it can be, as
		// long as resuming brings new events.
		if id := resp.LastEventID(); id != "" && id != last {
			last, resumes = id, 0
		}
		if last == "" || resumes >= MaxResumes {
			res.frame, res.again = link.NoAnswer(s.URL(), c, resp, ""), link.RetryBroken
			return res
		}
		if r := resp.Retry(); r > 0 {
			delay = r
		}
		s.Info("upstream stream dropped before the answer; resuming", zap.ByteString("id", c.ID), zap.String("lastEventId", last), zap.Duration("after", delay))
		if !link.Sleep(actx, delay) {
			res.frame = s.TimedOut(actx, c)
			return res
		}
		gst := p.sess.Stamp()
		resp, err = p.sess.Stream(s.Observed(actx, c.Op, link.RwResume), gst, last)
		switch {
		case err != nil:
			res.frame, _ = s.SendFailed(ctx, actx, c, err)
			return res
		case gst.Expired(resp.Status):
			res.err = errExpired
		case resp.Status != http.StatusOK || !resp.IsSSE():
			res.frame = link.HTTPFailure(s.URL(), c.ID, c.Method+" (resuming its dropped stream)", resp, nil)
		default:
			continue
		}
		resp.Close()
		return res
	}
}

// read reads one answer body or stream. It returns the client's answer and
// true, or false when an event stream ended before the answer; server is
// true when the answer is the server's own JSON-RPC message (false for an
// error the proxy made of an HTTP failure).
func (t *streamable) read(ctx context.Context, c *link.Call, resp *routing.Response, touch func()) (frame []byte, done, server bool) {
	p := t.p
	s := p.s
	for {
		msg, err := resp.Next()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil, true, false
			case errors.Is(err, io.EOF):
				if resp.IsSSE() && resp.Status < 300 {
					return nil, false, false
				}
				return link.NoAnswer(s.URL(), c, resp, ""), true, false
			case errors.Is(err, routing.ErrContentType):
				return link.HTTPFailure(s.URL(), c.ID, c.Method, resp, msg), true, false
			case errors.Is(err, routing.ErrTooLarge):
				return s.TooLargeAnswer(c, resp.Status), true, false
			}
			if resp.IsSSE() {
				return nil, false, false // a broken stream: resumable like an ended one
			}
			return link.BrokenRead(s.URL(), c, resp.Status, err), true, false
		}
		touch()
		m, perr := rewrite.Parse(rewrite.TrimFrame(msg))
		switch {
		case perr != nil && !resp.IsSSE():
			if resp.Status < 300 {
				return link.InvalidBody(s.URL(), c, resp, msg, perr), true, false
			}
			return link.HTTPFailure(s.URL(), c.ID, c.Method, resp, msg), true, false
		case perr != nil:
			s.Warn("upstream stream event skipped", zap.Error(perr), zap.ByteString("event", s.LogFrame(msg)))
		case m.Kind == rewrite.KindResponse && m.ID.Raw == string(c.ID):
			return link.Clone(m.Raw), true, true
		case m.Kind == rewrite.KindResponse && m.ID.Type == gjson.Null && m.Error.Exists():
			// An error about an unreadable request: it is this one's.
			return rewrite.ErrorFrameRaw(c.ID, []byte(m.Error.Raw)), true, true
		case m.Kind == rewrite.KindResponse:
			s.Warn("upstream response with an unexpected id", zap.String("got", m.ID.Raw), zap.ByteString("want", c.ID))
			if !resp.IsSSE() {
				return link.WrongID(s.URL(), c, resp.Status, m.ID.Raw, c.ID), true, false
			}
		default:
			p.toClient(m.Raw, c.Op) // a server request or notification
		}
	}
}

// toClient delivers a server request or notification (a copy: the stream
// reader reuses its buffer).
func (p *passthrough) toClient(raw []byte, op string) {
	if p.deliver != nil {
		p.deliver(link.Clone(raw), op)
		return
	}
	p.s.Send(link.Clone(raw), op, nil)
}

// Notified POSTs a client notification, in order with the others.
// A cancel also closes the request's own stream once it is sent: 2025
// cancels with the notification, not by disconnecting.
func (p *passthrough) Notified(f *rewrite.Frame, op string, cancel func()) {
	j := clientPost{body: f.Raw, method: f.Method, op: op} // a fresh line, never reused
	switch f.Method {
	case "notifications/initialized":
		p.mu.Lock()
		p.initialized = true
		p.mu.Unlock()
		j.after = func() { p.car.openGet(p.s.Ctx) }
	case "notifications/cancelled":
		j.after = cancel // once the server has the cancel
	}
	p.enqueue(j)
}

func (p *passthrough) Answered(f *rewrite.Frame, op string) bool {
	p.enqueue(clientPost{body: f.Raw, op: op})
	return true
}

// Every message goes to the server: nothing is answered locally, and the
// upstream's file state belongs to the modern bridge.
func (p *passthrough) Open()                                         {}
func (p *passthrough) Local(*rewrite.Frame) ([]byte, []string, bool) { return nil, nil, false }

func (p *passthrough) Reached() (era, transport string) { return p.sess.Version(), p.car.name() }
func (p *passthrough) Close()                           { p.car.end() }

// GetReady is closed once the server can reach the session outside any
// request: the first GET stream is open, or the server offers none (a 405,
// or the HTTP+SSE transport, whose stream is the session), or its first
// try failed. The reverse bridge waits for it before it answers, so that
// what its client does next cannot outrun the stream its notifications
// come on.
func (p *passthrough) GetReady() <-chan struct{} { return p.getReady }

func (p *passthrough) getSettled() { p.getReadyOnce.Do(func() { close(p.getReady) }) }

// Flush sends, now, the client messages still queued, within
// drainTimeout: the reverse bridge's last answers and cancels, queued as
// the session ends, when the poster may have stopped already.
func (p *passthrough) Flush() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.s.Ctx), drainTimeout)
	defer cancel()
	for {
		select {
		case j := <-p.posts:
			p.send(ctx, j)
			close(j.done)
			if j.after != nil {
				j.after()
			}
		default:
			return
		}
	}
}

// enqueue queues a client message for the poster. Called by the reader
// only, so the queue is in the client's order.
func (p *passthrough) enqueue(j clientPost) {
	j.done = make(chan struct{})
	if p.deliver == nil {
		p.lastPost = j.done // the reader's (the reverse bridge posts from several goroutines, and needs no barrier)
	}
	select {
	case p.posts <- j: // while there is room, even at the end: the poster sends what is queued
		return
	default:
	}
	select {
	case p.posts <- j:
	case <-p.s.Ctx.Done():
	}
}

// Barrier is closed once every client message queued so far is POSTed: a
// request waits for it, so a server never sees a request before a
// notification the client sent first (a strict 2025 server refuses
// requests before notifications/initialized).
func (p *passthrough) Barrier() <-chan struct{} { return p.lastPost }

// poster POSTs the client's notifications and answers one at a time, so the
// server sees them in the client's order. When the session ends (stdin
// closed) it still sends what the client wrote before, within
// drainTimeout: a cancel or a last answer is not lost on exit.
func (p *passthrough) poster(session context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(session))
	defer cancel()
	stop := context.AfterFunc(session, func() { time.AfterFunc(drainTimeout, cancel) })
	defer stop()
	for {
		var j clientPost
		select {
		case j = <-p.posts:
		case <-session.Done():
			select {
			case j = <-p.posts:
			default:
				return
			}
		}
		p.send(ctx, j)
		close(j.done)
		if j.after != nil {
			j.after()
		}
	}
}

// send POSTs one notification or answer. After an expiry it re-initializes
// and sends a notification again; an answer to a request of the old session
// has no one left to read it.
func (p *passthrough) send(ctx context.Context, j clientPost) {
	s := p.s
	what := cmp.Or(j.method, "an answer to a server request")
	if _, ok := p.car.wait(ctx, nil); !ok {
		if ctx.Err() == nil {
			s.Warn("the upstream connection is down; a client message was dropped", zap.String("message", what))
		}
		return
	}
	for attempt := 0; attempt < 2; attempt++ {
		st := p.sess.Stamp()
		status, err := p.car.fire(ctx, j.op, j.body, st)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errExpired):
			if rerr := p.reinit(ctx, st.Gen); rerr != nil {
				s.Warn("cannot start a new MCP session", zap.Error(rerr))
				return
			}
			switch j.method {
			case "", "notifications/cancelled", "notifications/initialized":
				s.Warn("the session expired before the server got this message; dropped", zap.String("message", what))
				return
			}
			continue
		case err != nil:
			s.Warn("posting a client message upstream failed", zap.String("message", what), zap.Error(err))
		case status >= 300:
			s.Warn("the upstream server refused a client message", zap.String("message", what), zap.Int("httpStatus", status))
		}
		return
	}
}

// fire POSTs a message that expects no answer (202 Accepted) and returns
// the status. A body that comes anyway is read for server messages.
func (t *streamable) fire(ctx context.Context, op string, body []byte, st routing.Stamp) (int, error) {
	p := t.p
	s := p.s
	pctx, cancel := context.WithTimeout(ctx, s.Cfg.IdleTimeout)
	defer cancel()
	resp, err := p.sess.Post(s.Observed(pctx, op, link.RwPass), st, body)
	if err != nil {
		return 0, err
	}
	defer resp.Close()
	if resp.IsSSE() {
		t.relay(pctx, op, resp)
	}
	if st.Expired(resp.Status) {
		return resp.Status, errExpired
	}
	return resp.Status, nil
}

// relay delivers the server requests and notifications of a stream that
// answers no client request (the GET stream), until it ends.
func (t *streamable) relay(ctx context.Context, op string, resp *routing.Response) {
	p := t.p
	s := p.s
	for {
		msg, err := resp.Next()
		if err != nil {
			return
		}
		m, perr := rewrite.Parse(rewrite.TrimFrame(msg))
		switch {
		case perr != nil:
			s.Warn("upstream stream event skipped", zap.Error(perr), zap.ByteString("event", s.LogFrame(msg)))
		case m.Kind == rewrite.KindResponse:
			s.Debug("upstream response on a stream without a request dropped", zap.String("id", m.ID.Raw))
		case ctx.Err() == nil:
			p.toClient(m.Raw, op)
		}
	}
}

// openGet opens the GET stream of the current session, on which the server
// sends requests and notifications outside of any client request. A 405
// means the server offers none. A dropped stream is reopened, with
// Last-Event-ID when it had event ids, after the server's retry delay or a
// bounded backoff.
func (t *streamable) openGet(ctx context.Context) {
	p := t.p
	p.mu.Lock()
	if p.getCancel != nil {
		p.getCancel()
	}
	gctx, cancel := context.WithCancel(ctx)
	p.getCancel = cancel
	p.mu.Unlock()
	p.s.BG.Start(func() { t.get(gctx) })
}

func (t *streamable) get(ctx context.Context) {
	p := t.p
	s := p.s
	op := "get-stream"
	last := ""
	backoff := link.BackoffMin
	defer p.getSettled()
	for ctx.Err() == nil {
		st := p.sess.Stamp()
		// No sign-in for a stream the client did not ask for.
		resp, err := p.sess.Stream(routing.Unattended(s.Observed(ctx, op, nil)), st, last)
		var delay time.Duration
		if err != nil || resp.Status != http.StatusOK || !resp.IsSSE() {
			p.getSettled() // its first try failed, or it is refused: nothing to wait for
		}
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			s.Debug("the upstream GET stream failed; retrying", zap.Error(err), zap.Duration("after", backoff))
		case resp.Status == http.StatusMethodNotAllowed:
			resp.Close()
			s.Info("the upstream server offers no GET stream (HTTP 405); server messages come only on request streams")
			return
		case st.Expired(resp.Status):
			resp.Close()
			// The session expired; the next request or message re-initializes,
			// which reopens this stream.
			s.Info("the upstream session expired; the GET stream waits for the next message to start a new one")
			return
		case resp.Status != http.StatusOK || !resp.IsSSE():
			resp.Close()
			s.Warn("the upstream GET stream was refused; retrying", zap.Int("httpStatus", resp.Status), zap.String("contentType", resp.ContentType), zap.Duration("after", backoff))
		default:
			p.getSettled()
			t.relay(ctx, op, resp)
			resp.Close()
			if id := resp.LastEventID(); id != "" {
				last = id
			}
			delay = resp.Retry()
			backoff = link.BackoffMin // it was up: start over
		}
		if delay <= 0 {
			delay = backoff
			backoff = min(backoff*2, link.BackoffMax)
		}
		if !link.Sleep(ctx, delay) {
			return
		}
	}
}

// reinit starts a new session after the one of generation gen expired: it
// replays the client's initialize (under a proxy-made id) and, if the client
// had sent it, notifications/initialized, then the log level and the
// resource subscriptions, and reopens the GET stream. Concurrent callers
// that saw the same expiry wait for one re-initialization.
func (p *passthrough) reinit(ctx context.Context, gen int) error {
	p.reinitMu.Lock()
	defer p.reinitMu.Unlock()
	if p.sess.Gen() != gen {
		return nil // another caller has already started a new session
	}
	p.mu.Lock()
	if p.getCancel != nil {
		p.getCancel()
	}
	oldVersion := p.sess.Version()
	initialized, level := p.initialized, p.level
	subs := slices.Collect(maps.Keys(p.subs))
	p.mu.Unlock()
	s := p.s
	op := "reinit-" + strconv.Itoa(gen) // generations count from 1: the first re-initialization is reinit-1
	s.Info("the upstream MCP session ended; starting a new one with the client's initialize", zap.String("transport", p.car.name()))

	if err := p.car.connect(ctx); err != nil {
		return err
	}
	// The proxy's own messages get ids no client uses.
	own := func(method string) *link.Call {
		p.mu.Lock()
		p.ownID++
		id := rewrite.AppendString(nil, "mcp-tasks-proxy-"+strconv.FormatInt(p.ownID, 10))
		p.mu.Unlock()
		return &link.Call{ID: id, Method: method, Op: op, Start: time.Now()}
	}
	c := own("initialize")
	body, err := sjson.SetRawBytes(link.Clone(p.initFrame), "id", c.ID)
	if err != nil {
		return err
	}
	res := p.car.exchange(ctx, c, body, routing.Stamp{Header: http.Header{}})
	if res.err != nil {
		return res.err
	}
	if e := gjson.GetBytes(res.frame, "error"); e.Exists() || res.frame == nil {
		return fmt.Errorf("the server refused the new initialize: %s", e.Get("message").String())
	}
	version := gjson.GetBytes(res.frame, "result.protocolVersion").String()
	if version != oldVersion {
		s.Warn("the new MCP session negotiated another protocol version than the client's", zap.String("was", oldVersion), zap.String("now", version))
	}
	p.sess.Begin(res.sessionID, version)
	st := p.sess.Stamp()
	if initialized {
		if status, err := p.car.fire(ctx, op, rewrite.NotificationFrame("notifications/initialized", nil), st); err != nil || status >= 300 {
			return fmt.Errorf("the server refused notifications/initialized (HTTP %d, %v)", status, err)
		}
	}
	replay := func(method string, params []byte) {
		c := own(method)
		res := p.car.exchange(ctx, c, rewrite.RequestFrame(c.ID, method, params), st)
		if res.frame == nil || gjson.GetBytes(res.frame, "error").Exists() {
			s.Warn("replaying session state in the new MCP session failed", zap.String("method", method), zap.ByteString("answer", s.LogFrame(res.frame)))
		}
	}
	if level != nil {
		replay("logging/setLevel", level)
	}
	for _, u := range subs {
		replay("resources/subscribe", append(rewrite.AppendString([]byte(`{"uri":`), u), '}'))
	}
	p.car.started()
	if initialized {
		p.car.openGet(s.Ctx)
	}
	s.Info("new MCP session started", zap.String("protocolVersion", version))
	return nil
}

// end ends the session with DELETE on exit; a 405 (the server does not let
// clients end sessions) is fine.
func (t *streamable) end() {
	s := t.p.s
	// The session's context has ended: keep its values (the Observer), not
	// its end. The records' op names the cause: the client's session ended.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.Ctx), deleteTimeout)
	defer cancel()
	status, err := t.p.sess.End(s.Observed(ctx, "session-end", nil))
	switch {
	case err != nil:
		s.Debug("ending the upstream MCP session failed", zap.Error(err))
	case status != 0:
		s.Debug("upstream MCP session ended", zap.Int("httpStatus", status))
	}
}
