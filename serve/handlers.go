package serve

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// keepAlive is how often an idle SSE stream gets a comment, so that
// intermediaries do not close it.
var keepAlive = 25 * time.Second

// post takes one JSON-RPC message. A notification or a response is
// accepted (202); a request is answered on this POST.
func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	jsonOK, sseOK := accepts(r.Header.Get("Accept"))
	if !jsonOK && !sseOK {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: the client must accept application/json or text/event-stream")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "Unsupported Media Type: the body must be application/json")
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	// The session's own reading of the message (rewrite.Parse, as the
	// bridge reads it) says whether it will be answered: a request, or a
	// malformed message that is not a notification (it gets an error).
	f, perr := rewrite.Parse(body)
	switch {
	case errors.Is(perr, rewrite.ErrParse):
		rpcError(w, http.StatusBadRequest, protocol.CodeParseError, "Parse error: the body is not valid JSON")
		return
	case errors.Is(perr, rewrite.ErrBatch):
		rpcError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Invalid Request: batches are not part of MCP 2025-11-25; send one JSON-RPC message per POST")
		return
	case errors.Is(perr, rewrite.ErrNotObject):
		rpcError(w, http.StatusBadRequest, protocol.CodeInvalidRequest, "Invalid Request: the body must be one JSON-RPC message (an object)")
		return
	case errors.Is(perr, rewrite.ErrDuplicateKey) && r.Header.Get("Mcp-Session-Id") == "":
		// No session to answer it (an initialize, most likely): say what
		// is wrong with it, not that it lacks a session. In a session, the
		// session answers it, with its id when that can be read.
		what := "Invalid Request: "
		if errors.Is(perr, rewrite.ErrParams) {
			what = "Invalid params: "
		}
		rpcError(w, http.StatusBadRequest, rewrite.Code(perr), what+perr.Error())
		return
	}
	isRequest := f.Kind == rewrite.KindRequest || perr != nil && f.Kind != rewrite.KindNotification
	if r.Header.Get("Mcp-Session-Id") == "" && protocol.IsModernVersion(r.Header.Get("Mcp-Protocol-Version")) {
		s.postModern(w, r, body, &f, isRequest, jsonOK, sseOK)
		return
	}
	isInit := perr == nil && isRequest && f.Method == "initialize"
	sess, ok := s.postSession(w, r, isInit)
	if !ok {
		return
	}
	sess.begin()
	defer sess.finish()
	if !isRequest {
		if perr == nil && f.Method == "notifications/cancelled" {
			sess.cancelled(f.Params.Get("requestId").Raw)
		}
		if !sess.deliver(bridge.In{Frame: body}, r.Context().Done()) {
			httpError(w, http.StatusNotFound, "Not Found: the session has ended; initialize a new one")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	id := cmp.Or(f.ID.Raw, "null") // a malformed request is answered with a null id
	st := newPostStream([]byte(id), f.Method, sseOK)
	defer sess.track(st)()
	if !sess.deliver(bridge.In{Frame: body, Stream: st}, r.Context().Done()) {
		s.abandoned(sess, st)
		httpError(w, http.StatusNotFound, "Not Found: the session has ended; initialize a new one")
		return
	}
	s.answer(w, r, sess, st, jsonOK)
}

// abandoned ends the session of an initialize whose POST ended before its
// answer: nobody got its id, and it would hold a place under
// --max-sessions until it idled out.
func (s *Server) abandoned(sess *session, st *postStream) {
	if st.method == "initialize" {
		s.forget(sess)
		sess.end("its initialize was abandoned")
	}
}

// readBody reads the body, or answers the error: 413 past the maximum
// message size (at once when its Content-Length says so), 408 when it did
// not arrive within ReadTimeout, 503 when the bodies in progress hold the
// body memory. ServeHTTP's bound gives the body's memory back.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := s.cfg.Bridge.MaxMessageBytes // New set the default
	if r.ContentLength > int64(limit) {
		tooLarge(w, limit)
		return nil, false
	}
	var held int64
	at := &held
	if b, ok := r.Body.(*reqBody); ok {
		at = &b.held // given back when the handler returns
	} else {
		defer func() { s.bodies.release(held) }()
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, int64(limit)), r.ContentLength, limit, &s.bodies, at)
	var overLimit *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &overLimit):
		tooLarge(w, limit)
		return nil, false
	case errors.Is(err, errBodyMemory):
		s.metrics.refused.WithLabelValues("busy").Inc()
		w.Header().Set("Retry-After", retryAfter)
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("Service Unavailable: the request bodies in progress hold the proxy's %d bytes of body memory (%v); retry later", s.bodies.max, rewrite.HintMaxBodyMemory))
		return nil, false
	case errors.As(err, &netErr) && netErr.Timeout():
		s.metrics.refused.WithLabelValues("timeout").Inc()
		httpError(w, http.StatusRequestTimeout, fmt.Sprintf("Request Timeout: the body did not arrive within %v of the headers (the proxy's %v)", s.cfg.ReadTimeout, rewrite.HintReadTimeout))
		return nil, false
	case err != nil:
		httpError(w, http.StatusBadRequest, "Bad Request: reading the body failed: "+err.Error())
		return nil, false
	}
	return bytes.TrimSpace(body), true
}

func tooLarge(w http.ResponseWriter, limit int) {
	httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request Entity Too Large: the message is over %d bytes (the proxy's %v)", limit, rewrite.HintMaxMessageSize))
}

// postSession is the session a POST belongs to: a new one for an
// initialize without Mcp-Session-Id, else the one it names. It answers the
// error otherwise.
func (s *Server) postSession(w http.ResponseWriter, r *http.Request, isInit bool) (*session, bool) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" && isInit {
		sess, ok := s.startSession(w, false)
		if ok {
			w.Header().Set("Mcp-Session-Id", sess.id)
		}
		return sess, ok
	}
	if isInit {
		httpError(w, http.StatusBadRequest, "Bad Request: initialize starts a session and must not carry Mcp-Session-Id")
		return nil, false
	}
	return s.session(w, r)
}

// startSession starts a session, or answers 503 when the proxy is full or
// closing.
func (s *Server) startSession(w http.ResponseWriter, stateless bool) (*session, bool) {
	sess, err := s.newSession(stateless)
	switch {
	case errors.Is(err, errFull):
		s.metrics.refused.WithLabelValues("full").Inc()
		w.Header().Set("Retry-After", retryAfter)
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("Service Unavailable: the proxy holds its maximum of %d sessions (%v); retry later", s.cfg.MaxSessions, rewrite.HintMaxSessions))
		return nil, false
	case err != nil:
		w.Header().Set("Retry-After", retryAfter)
		httpError(w, http.StatusServiceUnavailable, "Service Unavailable: "+err.Error())
		return nil, false
	}
	return sess, true
}

// postModern serves a POST of a 2026-07-28 client (MCP-Protocol-Version
// 2026-07-28, no Mcp-Session-Id): stateless, each request in a session of
// its own that ends with its answer, where the bridge relays it to a 2026
// server as it is (against a 2025 server it is refused with an error that
// says so: the reverse bridge's input rounds need a session). The POST's end before the answer is the request's cancellation. A
// notification is accepted and dropped: a 2026 client sends none over HTTP.
func (s *Server) postModern(w http.ResponseWriter, r *http.Request, body []byte, f *rewrite.Frame, isRequest, jsonOK, sseOK bool) {
	if !isRequest {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	sess, ok := s.startSession(w, true)
	if !ok {
		return
	}
	defer func() {
		s.forget(sess)
		sess.end("")
	}()
	sess.begin()
	defer sess.finish()
	st := newPostStream([]byte(cmp.Or(f.ID.Raw, "null")), f.Method, sseOK)
	defer sess.track(st)()
	if !sess.deliver(bridge.In{Frame: body, Stream: st}, r.Context().Done()) {
		return // the client went away first
	}
	s.answer(w, r, sess, st, jsonOK)
	if _, _, done := st.take(); !done && f.ID.Exists() {
		sess.deliver(bridge.In{Frame: rewrite.NotificationFrame("notifications/cancelled",
			rewrite.CancelledParams(st.id, "the client closed its POST"))}, nil)
	}
}

// session is the session a request after initialize names, checked; or it
// answers 400 (no id, or a protocol version the proxy does not speak) or
// 404 (an unknown or ended session).
func (s *Server) session(w http.ResponseWriter, r *http.Request) (*session, bool) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		httpError(w, http.StatusBadRequest, "Bad Request: Mcp-Session-Id header is required")
		return nil, false
	}
	// MCP-Protocol-Version: absent (2025-03-26 clients), or a 2025 version.
	if v := r.Header.Get("Mcp-Protocol-Version"); v != "" && !slices.Contains(protocol.LegacyVersions, v) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("Bad Request: unsupported MCP-Protocol-Version %s (supported: %s)",
			quoteShort(r.Header.Get("Mcp-Protocol-Version")), strings.Join(protocol.LegacyVersions, ", ")))
		return nil, false
	}
	sess := s.lookup(sid)
	if sess == nil {
		httpError(w, http.StatusNotFound, "Not Found: no such session (unknown, ended or expired); initialize a new one")
		return nil, false
	}
	return sess, true
}

// answer writes a request's frames on its POST: the answer alone as
// application/json when nothing comes before it and the client takes
// JSON, else a text/event-stream that ends with the answer. When the
// session ends before answering, the answer is an error.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, sess *session, st *postStream, jsonOK bool) {
	defer st.leave()
	streaming, ended, keep := false, false, false
	// A client that takes SSE gets a comment (keep) every keepAlive while
	// the request runs, so that it and the intermediaries keep the POST
	// open; the first one turns a pending JSON answer into a stream.
	var tick <-chan time.Time
	if st.sse {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		frames, final, done := st.take()
		writing(w)
		if !done && ended {
			msg := fmt.Sprintf("the session ended before %s was answered (deleted, expired or the proxy is shutting down); initialize a new session and try again", st.method)
			final, done = rewrite.ErrorFrame(st.id, protocol.CodeInternalError, msg, nil), true
			if st.cancelled.Load() {
				final = nil // nothing more for a cancelled request
			}
		}
		if !streaming && !keep && done && len(frames) == 0 && jsonOK && final != nil {
			if s.settled(sess, st, final) {
				w.Header().Del("Mcp-Session-Id") // no session came of it
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(final)
			return
		}
		// A request cancelled before anything was sent gets a stream too
		// (a request is answered with JSON or an event stream, never 202),
		// which ends without its response.
		if !streaming && (len(frames) > 0 || done || keep) {
			if startSSE(w, postEventPrefix+strconv.FormatInt(sess.nextID.Add(1), 10)) != nil {
				return
			}
			streaming = true
		}
		if keep {
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			keep = false
		}
		for _, f := range frames {
			if writeEvent(w, postEventPrefix, sess.nextID.Add(1), f) != nil {
				return
			}
		}
		if done {
			s.settled(sess, st, final)
			if final != nil {
				_ = writeEvent(w, postEventPrefix, sess.nextID.Add(1), final)
			}
			flush(w)
			return
		}
		if streaming {
			flush(w)
		}
		select {
		case <-st.wake:
		case <-tick:
			keep = true
		case <-sess.done:
			ended = true
		case <-r.Context().Done():
			sess.log.Debug("the client closed the POST before its answer", zap.ByteString("id", st.id), zap.String("method", st.method))
			s.metrics.requests.WithLabelValues(methodLabel(st.method), "disconnected").Inc()
			s.abandoned(sess, st)
			return
		}
	}
}

// settled counts a request's outcome, and reads the upstream's health off
// an initialize answer. A failed initialize ends its session at once (a
// client retrying would otherwise fill the table), reporting true.
func (s *Server) settled(sess *session, st *postStream, final []byte) (failedInit bool) {
	outcome := "cancelled"
	switch {
	case final == nil:
	case rewrite.IsError(final): // stops before a result: a large one is not read
		outcome = "error"
	default:
		outcome = "result"
	}
	s.metrics.requests.WithLabelValues(methodLabel(st.method), outcome).Inc()
	if st.method != "initialize" || final == nil {
		return false
	}
	if e := gjson.GetBytes(final, "error"); e.Exists() {
		s.forget(sess)
		sess.end("its initialize failed")
		switch e.Get("code").Int() {
		case protocol.CodeParseError, protocol.CodeInvalidRequest, protocol.CodeInvalidParams:
			return true // the client's mistake says nothing of the upstream
		}
		select {
		case <-sess.done: // the proxy's own error: the session ended first
		default:
			s.initFailed()
		}
		return true
	}
	s.health.Store(&health{ok: true})
	sess.log.Info("session initialized")
	return false
}

// get opens the session's stream, for the frames of no request.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if _, sseOK := accepts(r.Header.Get("Accept")); !sseOK {
		httpError(w, http.StatusNotAcceptable, "Not Acceptable: the GET stream is text/event-stream")
		return
	}
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	cursor, resume, post := lastEventID(r.Header.Get("Last-Event-ID"))
	if post {
		// A POST stream is not resumable (its request's answer went to
		// that POST, or nowhere): the stream ends at once, and nothing of
		// the GET stream is sent on it.
		_ = startSSE(w, "")
		return
	}
	if !resume {
		cursor = sess.events.start()
	}
	kicked, release, ok := sess.openGet(resume)
	if !ok {
		httpError(w, http.StatusConflict, "Conflict: only one GET stream is allowed per session")
		return
	}
	defer release()
	sess.begin()
	defer sess.finish()
	writing(w)
	// The priming id names the stream's position, cursor (the last event
	// before what this connection sends), then a new id of the session that
	// keeps it unique: "12.40". A GET with it as Last-Event-ID resumes after
	// cursor, so that the events the connection had yet to send are not
	// skipped (their ids are below the new one).
	if startSSE(w, strconv.FormatInt(cursor, 10)+"."+strconv.FormatInt(sess.nextID.Add(1), 10)) != nil {
		return
	}
	flush(w)
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		events, lost, wake := sess.events.after(cursor)
		writing(w)
		if lost {
			sess.log.Warn("a GET stream missed events dropped from the session's event log for its bound", zap.Int64("after", cursor), zap.Int("bytes", s.cfg.EventLogBytes))
			if _, err := fmt.Fprintf(w, ": events after id %d were dropped from this session's event log (it keeps the newest %d bytes, %v); the replay starts at the oldest event kept\n\n",
				cursor, s.cfg.EventLogBytes, rewrite.HintEventLogBytes); err != nil {
				return
			}
		}
		for _, e := range events {
			if writeEvent(w, "", e.id, e.frame) != nil {
				return
			}
			cursor = e.id
		}
		if len(events) > 0 || lost {
			flush(w)
			sess.events.sent(cursor)
		}
		select {
		case <-wake:
		case <-tick.C:
			writing(w)
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
			flush(w)
		case <-sess.inEnd:
			return
		case <-kicked:
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(w, r)
	if !ok {
		return
	}
	s.forget(sess)
	sess.end("the client deleted it")
	w.WriteHeader(http.StatusOK)
}

// accepts reads an Accept header: whether it takes application/json and
// text/event-stream. No header, or */*, takes both.
func accepts(h string) (jsonOK, sseOK bool) {
	if strings.TrimSpace(h) == "" {
		return true, true
	}
	for _, part := range strings.Split(h, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch mt {
		case "*/*":
			jsonOK, sseOK = true, true
		case "application/*", "application/json":
			jsonOK = true
		case "text/*", "text/event-stream":
			sseOK = true
		}
	}
	return jsonOK, sseOK
}

// ioTimeout bounds each write to a client: one that stops reading its
// stream is let go rather than holding a goroutine and its session's place.
var ioTimeout = 2 * time.Minute

// writing arms the write deadline for what is written next.
func writing(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(ioTimeout))
}

// startSSE answers with an event stream primed as 2025-11-25 asks
// (SEP-1699): an event with id and empty data, so that the client holds an
// id to resume from before any frame comes, and the retry field; id ""
// for a stream that ends at once, with nothing to resume.
func startSSE(w http.ResponseWriter, id string) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if id == "" {
		return nil
	}
	_, err := fmt.Fprintf(w, "id: %s\nretry: %d\ndata:\n\n", id, retryMillis)
	return err
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

// httpError answers a transport error with a JSON-RPC error body (id null),
// as the 2025 SDKs do.
func httpError(w http.ResponseWriter, status int, msg string) {
	rpcError(w, status, -32000, msg)
}

func rpcError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(rewrite.ErrorFrame([]byte("null"), code, msg, nil))
}

// methodLabel bounds the metrics' method label to the methods the proxy
// knows.
func methodLabel(m string) string {
	if _, ok := protocol.Lookup(m); ok || m == "initialize" {
		return m
	}
	return "other"
}
