package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// forward sends one client request upstream and returns its one answer for
// the client, or nil when the client cancelled it or the session is ending.
//
// Between attempts come MRTR rounds (the server asked for client input),
// and one recovery from either of two upstream errors (docs/reliability.md,
// Retries): a -32020 (header mismatch) on tools/call refreshes the x-mcp-header
// annotations from tools/list and retries; a -32022 (unsupported version)
// probes the server again and retries if it is still modern. Before those,
// a -32020 to a request whose headers carried a value in the Base64 form is
// retried once with raw UTF-8 values: some servers (go-sdk v1.8.0) compare
// the header with the body without decoding the form the spec asks for.
// All of these are answered by the server before it runs anything, so the
// retry is safe.
func (s *modern) forward(ctx context.Context, c *call, f *rewrite.Frame) outcome {
	if s.meta.Load() == nil {
		return frameOnly(notInitialized(c, f.Method))
	}
	if f.Method == "tools/call" {
		if err := s.tools.ensure(ctx); refused(err) {
			return frameOnly(s.transportError(c.id, f.Method, err))
		}
	}
	var t tries
	r := s.modernAttempt(ctx, c, f, &t)
	recovered := false
	for round := 0; ; {
		switch {
		case r.input != nil:
			// The server needs input from the client: ask it, then retry
			// with the answers (MRTR, multi round-trip requests).
			if round >= s.cfg.MaxRounds {
				return frameOnly(s.errorFrame(c.id, rewrite.Errorf(protocol.CodeInternalError, errorData(s.client.URL(), 0, "", ""),
					"the server asked for client input %d times for %s without finishing; giving up (raise %s)", round, f.Method, rewrite.HintMaxMRTRRounds)))
			}
			retry, failed := s.mrtrRound(ctx, c, f, r.input, round)
			if retry == nil {
				return frameOnly(failed)
			}
			round++
			t.retry = retry
		case ctx.Err() != nil:
			return r.outcome()
		case r.code == protocol.CodeHeaderMismatch && t.sentBase64 && !t.rawHeaders:
			t.rawHeaders = true
			s.rawHeadersNoted.Do(func() {
				s.info("the server refused a header in the Base64 form the spec asks for (-32020 header mismatch); such a request is retried once with the raw UTF-8 value",
					zap.String("method", f.Method), zap.ByteString("id", c.id))
			})
		case recovered:
			return r.outcome()
		case r.code == protocol.CodeHeaderMismatch && f.Method == "tools/call":
			recovered = true
			s.info("header mismatch: refreshing tools/list and retrying once", zap.ByteString("id", c.id))
			_ = s.tools.fetch(ctx) // a failure leaves the annotations as they were
		case r.code == protocol.CodeUnsupportedProtocolVersion:
			recovered = true
			if !s.stillModern(ctx, c) {
				return frameOnly(s.versionGone(c, f.Method, r.frame))
			}
		default:
			return r.outcome()
		}
		r = s.modernAttempt(ctx, c, f, &t)
		if recovered && r.code == protocol.CodeUnsupportedProtocolVersion && r.input == nil {
			return frameOnly(s.versionGone(c, f.Method, r.frame))
		}
	}
}

// tries is what one request carries from one attempt to the next.
type tries struct {
	// retry holds the params members of the next MRTR retry.
	retry []byte
	// sentBase64 is set when the server refused the headers with -32020
	// and they carried a value in the Base64 form; rawHeaders, once the
	// request is retried with raw UTF-8 values instead (for good).
	sentBase64, rawHeaders bool
}

// result is what one upstream exchange of a client request came to.
type result struct {
	frame    []byte    // the client's answer (nil: none, or input below)
	rewrites []string  // what the answer's rewrite changed, for the Observer
	code     int       // the code of the server's JSON-RPC error, if any
	again    retryKind // whether a failure may be retried
	input    []byte    // an InputRequiredResult: ask the client, then retry
	after    func()    // runs once the answer is queued
}

// failed is a result of an answer made by the proxy.
func failed(frame []byte, again retryKind) result { return result{frame: frame, again: again} }

func (r result) outcome() outcome {
	return outcome{frame: r.frame, rewrites: r.rewrites, after: r.after}
}

// modernAttempt is one attempt of a request to a modern server.
func (s *modern) modernAttempt(ctx context.Context, c *call, f *rewrite.Frame, t *tries) result {
	return s.attempt(ctx, c, f.Method, func() result { return s.exchange(ctx, c, f, t) })
}

func notInitialized(c *call, method string) []byte {
	return rewrite.ErrorFrame(c.id, protocol.CodeInvalidRequest,
		fmt.Sprintf("the session is not initialized: send initialize and wait for its answer before %s", method), nil)
}

// stillModern probes the server again after a -32022 on a request.
func (s *modern) stillModern(ctx context.Context, c *call) bool {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.DiscoverTimeout)
	defer cancel()
	prober := s.prober()
	if v := prober.Probe(s.observed(pctx, "", rwOwn), *s.meta.Load()); v.Era == capabilities.Modern {
		s.info("unsupported protocol version on a request; the server is still modern, retrying once", zap.ByteString("id", c.id))
		return true
	}
	return false
}

// versionGone answers a request the server rejected with -32022 for good:
// -32603, carrying the server's original error data.
func (s *modern) versionGone(c *call, method string, frame []byte) []byte {
	if frame == nil {
		return nil
	}
	data := gjson.GetBytes(frame, "error.data").Raw
	return rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
		fmt.Sprintf("the upstream server at %s no longer accepts protocol %s for %s (%s); restart the client session so the proxy detects the server again",
			s.client.URL(), protocol.ModernVersion, method, gjson.GetBytes(frame, "error.message").String()),
		[]byte(orEmptyObject(data)))
}

func orEmptyObject(raw string) string {
	if raw == "" {
		return "{}"
	}
	return raw
}

// attempt makes one upstream exchange for a client request, and repeats it
// under the retry policy below. It returns the client's answer, the code of
// the server's JSON-RPC error if any, and why the last exchange failed.
func (s *env) attempt(ctx context.Context, c *call, method string, exchange func() result) result {
	dials, breaks := 0, 0
	backoff := retryBackoff
	for {
		r := exchange()
		switch {
		case r.again == retryDial && dials < maxDialRetries:
			dials++ // nothing was sent: always safe
		case r.again == retryBroken && protocol.Repeatable(method) && breaks < maxBrokenRetries:
			breaks++ // bytes may have left, but repeating this method is harmless
		default:
			return r
		}
		s.info("retrying the upstream request", zap.String("method", method), zap.ByteString("id", c.id), zap.Duration("after", backoff))
		if !sleep(ctx, backoff) {
			return result{}
		}
		backoff *= 2
	}
}

// The retry policy (docs/reliability.md, Retries): a request that could not be
// sent (a dial error) is retried whatever its method; once bytes have left,
// only methods that are safe to repeat are, each time with a new upstream
// id, as 2026 requires after a broken stream. A tools/call is never
// replayed.
const (
	maxDialRetries   = 3
	maxBrokenRetries = 2
	retryBackoff     = 200 * time.Millisecond
)

// retryKind says whether and why a failed exchange may be retried.
type retryKind int

const (
	retryNone   retryKind = iota
	retryDial             // the connection was never made
	retryBroken           // the exchange broke before its response
)

// exchange makes one upstream exchange for a client request.
func (s *modern) exchange(ctx context.Context, c *call, f *rewrite.Frame, t *tries) result {
	upID := s.nextUpstreamID()
	mb := s.meta.Load()
	up := rewrite.UpFor(f, upID, *mb, t.retry)
	if c.task.Exists() {
		if !s.tasksEnabled() {
			s.warn("task-augmented tools/call processed normally: the server does not support the tasks extension, so no tasks capability was advertised",
				zap.ByteString("id", c.id))
		}
	}
	body, err := rewrite.RequestUp(f, up)
	if err != nil {
		return failed(rewrite.ErrorFrame(c.id, rewrite.Code(err), invalidMessage(err), nil), retryNone)
	}
	actx, dl := s.deadlines(ctx, c)
	defer dl.stop()
	if t.rawHeaders {
		actx = routing.WithRawUTF8Headers(actx)
	}

	params := s.tools.headers(f)
	if s.cfg.Observer != nil {
		rw := slices.Clip(rwForward) // shared: an append below copies it first
		if c.task.Exists() {
			rw = append(rw, "task.drop")
		}
		if t.retry != nil {
			rw = append(rw, "mrtr.retry")
		}
		if t.rawHeaders {
			rw = append(rw, "headers.raw")
		}
		actx = s.observed(actx, c.op, rw)
	}
	start := time.Now()
	resp, err := s.client.Post(actx, body, params)
	if err != nil {
		return failed(s.sendFailed(ctx, actx, c, f.Method, err))
	}
	defer resp.Close()
	r := s.answer(actx, c, f, upID, resp, dl.touch)
	if r.frame == nil && r.input == nil && ctx.Err() == nil {
		r.frame = s.timedOut(actx, c, f.Method)
	}
	if r.code == protocol.CodeHeaderMismatch && !t.rawHeaders {
		// Read only on the rare refusal: may a raw retry change anything?
		t.sentBase64 = routing.UsesBase64(body, params)
	}
	s.logExchange(c.op, f.Method, c.id, upID, resp.Status, start, len(body), len(r.frame))
	return r
}

// deadlines bounds one upstream exchange of c with one timer, set to the
// sooner of two deadlines: the idle one, which touch restarts on every
// message from the server (progress keeps a long call alive), and the
// request's hard maximum, what is left of its --request-timeout (see
// requestBound), which nothing moves. When the timer fires, actx ends with
// errIdle or errHardMax, whichever deadline has passed. stop releases the
// timer.
func (s *env) deadlines(ctx context.Context, c *call) (actx context.Context, d *deadline) {
	actx, cancel := context.WithCancelCause(ctx)
	d = &deadline{cancel: cancel, idle: s.cfg.IdleTimeout}
	if s.cfg.RequestTimeout > 0 {
		d.hard = c.start.Add(s.cfg.RequestTimeout)
	}
	d.timer = time.AfterFunc(d.wait(), d.fire)
	return actx, d
}

// deadline is the timer of one exchange (see deadlines).
type deadline struct {
	cancel context.CancelCauseFunc
	idle   time.Duration
	hard   time.Time // zero for none
	timer  *time.Timer
}

// wait is how long from now the timer is to be set for.
func (d *deadline) wait() time.Duration {
	if d.hard.IsZero() {
		return d.idle
	}
	return min(d.idle, time.Until(d.hard))
}

func (d *deadline) fire() {
	if !d.hard.IsZero() && !time.Now().Before(d.hard) {
		d.cancel(errHardMax)
		return
	}
	d.cancel(errIdle)
}

// touch restarts the idle deadline.
func (d *deadline) touch() { d.timer.Reset(d.wait()) }

func (d *deadline) stop() {
	d.timer.Stop()
	d.cancel(nil)
}

// requestBound bounds a wait that is part of request c by what is left of
// --request-timeout, counted from when the request was read: its upstream
// exchanges and the waits for the client's answers to what the server asked
// (MRTR) together never take longer. Following a task the server made of
// the call is governed by the task instead.
func (s *env) requestBound(ctx context.Context, c *call) (context.Context, context.CancelFunc) {
	if s.cfg.RequestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, c.start.Add(s.cfg.RequestTimeout), errHardMax)
}

// sendFailed is the answer for an exchange that failed before any status,
// and whether it may be retried: a dial error always, a broken connection
// for methods safe to repeat, a timeout never (it would only multiply the
// wait). It is nil when the client cancelled or the session is ending.
func (s *env) sendFailed(ctx, actx context.Context, c *call, method string, err error) ([]byte, retryKind) {
	if ctx.Err() != nil {
		return nil, retryNone
	}
	if frame := s.timedOut(actx, c, method); frame != nil {
		return frame, retryNone
	}
	s.warn("upstream request failed", zap.String("method", method), zap.ByteString("id", c.id), zap.Error(err))
	again := retryBroken
	var te *routing.TransportError
	if errors.As(err, &te) {
		switch te.Kind {
		case routing.KindDial:
			again = retryDial
		case routing.KindTimeout, routing.KindRedirect, routing.KindAuth:
			again = retryNone
		}
	}
	return s.transportError(c.id, method, err), again
}

// tooLargeAnswer is the error for an upstream answer over the message size
// limit.
func (s *env) tooLargeAnswer(c *call, method string, status int) []byte {
	return s.errorFrame(c.id, rewrite.Errorf(protocol.CodeInternalError, errorData(s.client.URL(), status, "", ""),
		"the upstream answer to %s is larger than the message size limit; raise %s", method, rewrite.HintMaxMessageSize))
}

// Timeout causes of one upstream exchange.
var (
	errIdle    = errors.New("idle timeout")
	errHardMax = errors.New("request timeout")
)

// timedOut is the answer for an exchange a timeout ended (its stream is
// closed, which cancels it upstream), or nil when no timeout did.
func (s *env) timedOut(actx context.Context, c *call, method string) []byte {
	data := errorData(s.client.URL(), 0, "cause", "timeout")
	var e rewrite.Error
	switch context.Cause(actx) {
	case errIdle:
		e = rewrite.Errorf(protocol.CodeInternalError, data, "the upstream server sent nothing for %v while answering %s, so the proxy gave up (raise %s if the tool is that slow)", s.cfg.IdleTimeout, method, rewrite.HintIdleTimeout)
	case errHardMax:
		e = rewrite.Errorf(protocol.CodeInternalError, data, "%s took longer than %v, so the proxy gave up (raise %s for longer calls)", method, s.cfg.RequestTimeout, rewrite.HintRequestTimeout)
	default:
		return nil
	}
	s.warn("upstream request timed out", zap.String("method", method), zap.ByteString("id", c.id), zap.String("why", context.Cause(actx).Error()))
	return s.errorFrame(c.id, e)
}

// answer reads the upstream messages of one request: notifications go to the
// client as they come, and the response for upID becomes the client's answer.
func (s *modern) answer(ctx context.Context, c *call, f *rewrite.Frame, upID []byte, resp *routing.Response, touch func()) result {
	var skipped string // why the last unusable stream event was skipped
	for {
		msg, err := resp.Next()
		if err != nil {
			if ctx.Err() != nil {
				return result{}
			}
			switch {
			case errors.Is(err, io.EOF):
				again := retryNone
				if resp.IsSSE() && resp.Status < 300 {
					again = retryBroken // the stream ended before the response
				}
				return failed(s.noAnswer(c, f.Method, resp, skipped), again)
			case errors.Is(err, routing.ErrContentType):
				return failed(s.httpFailure(c.id, f.Method, resp, msg), retryNone)
			case errors.Is(err, routing.ErrTooLarge):
				return failed(s.tooLargeAnswer(c, f.Method, resp.Status), retryNone)
			}
			return failed(rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
				fmt.Sprintf("the connection to the upstream server broke while reading the answer to %s (%v); the request may or may not have run", f.Method, err),
				errorData(s.client.URL(), resp.Status, "", "")), retryBroken)
		}
		touch()
		raw := rewrite.TrimFrame(msg)
		m, perr := rewrite.Parse(raw)
		if perr != nil {
			if !resp.IsSSE() {
				if resp.Status < 300 {
					return failed(s.invalidBody(c.id, f.Method, resp, msg, perr), retryNone)
				}
				return failed(s.httpFailure(c.id, f.Method, resp, msg), retryNone)
			}
			skipped = "an event that is not a JSON-RPC message (" + perr.Error() + ")"
			s.warn("upstream stream event skipped", zap.Error(perr), zap.ByteString("event", s.logFrame(msg)))
			continue
		}
		switch m.Kind {
		case rewrite.KindNotification:
			s.streamNotification(c, &m)
			continue
		case rewrite.KindRequest:
			// 2026-07-28 forbids server requests on a response stream.
			s.warn("upstream sent a request on a response stream; ignored", zap.String("method", m.Method))
			continue
		}
		if m.ID.Raw != string(upID) && m.ID.Type != gjson.Null { // a null id: an error about an unreadable request
			skipped = "a response for another id (" + m.ID.Raw + ")"
			s.warn("upstream response with an unexpected id", zap.String("got", m.ID.Raw), zap.ByteString("want", upID))
			if resp.IsSSE() {
				continue
			}
			return failed(rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
				fmt.Sprintf("the upstream server answered %s with a response for id %s instead of %s; the server is misbehaving", f.Method, m.ID.Raw, upID),
				errorData(s.client.URL(), resp.Status, "", "")), retryNone)
		}
		r := s.down(ctx, c, f.Method, &m, resp.Status, resp.Room())
		if m.Error.Exists() {
			r.code = int(m.Error.Get("code").Int())
		}
		return r
	}
}

// down rewrites the upstream response for the client. room, when not nil, is
// the buffer m was read into with spare bytes in front (a large JSON body):
// a plain result is then rewritten in place, so that only one copy of it is
// ever in memory.
func (s *modern) down(ctx context.Context, c *call, method string, m *rewrite.Frame, status int, room []byte) result {
	tasks := s.tasksEnabled()
	augmented := protocol.MayBecomeTask(method) && c.task.Exists() && tasks
	if augmented || method == "tools/list" {
		// m is read after the rewrite. (An Observer is no reason: it
		// keeps nothing of the frame past its call.)
		room = nil
	}
	d, err := rewrite.ResponseDown(m, rewrite.Down{ID: c.id, Method: method, HTTPStatus: status, TaskSupport: tasks, Room: room})
	if err != nil {
		s.warn("invalid upstream result", zap.String("method", method), zap.Error(err), zap.ByteString("frame", s.logFrame(m.Raw)))
		return failed(rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
			fmt.Sprintf("invalid upstream result for %s: %v", method, err), errorData(s.client.URL(), status, "", "")), retryNone)
	}
	switch d.ResultType {
	case protocol.ResultComplete:
		switch {
		case method == "tools/list":
			s.tools.remember(d)
		case augmented && !d.IsError:
			return s.tasks.taskCreated(c, m)
		}
		return result{frame: d.Frame, rewrites: d.Rewrites}
	case protocol.ResultTask:
		if !protocol.MayBecomeTask(method) {
			break // only tools/call may become a task (2026 tasks extension)
		}
		if augmented {
			return s.tasks.taskCreated(c, m)
		}
		t := rewrite.ReadTask(m.Result)
		s.info("the server made a task of a plain tools/call; following it", zap.ByteString("id", c.id), zap.String("taskId", t.ID))
		return s.tasks.follow(ctx, c, t)
	case protocol.ResultInputRequired:
		if protocol.InputRequired(method) {
			// A copy: forward asks the client, then retries.
			return result{input: []byte(m.Result.Raw), rewrites: d.Rewrites}
		}
	}
	s.warn("invalid upstream resultType", zap.String("method", method), zap.String("resultType", d.ResultType),
		zap.ByteString("frame", s.logFrame(m.Raw)))
	return failed(rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
		fmt.Sprintf("invalid upstream result for %s: unrecognized or misplaced resultType %q", method, d.ResultType),
		errorData(s.client.URL(), status, "resultType", d.ResultType)), retryNone)
}

// mrtrRound asks the client for one InputRequiredResult's inputRequests,
// in document order, and returns the params members of the retry:
// inputResponses, and requestState echoed byte for byte. When the round
// cannot go on it returns nil and the client's answer (nil when the client
// cancelled).
func (s *modern) mrtrRound(ctx context.Context, c *call, f *rewrite.Frame, ir []byte, round int) ([]byte, []byte) {
	wctx, cancel := s.requestBound(ctx, c)
	defer cancel()
	retry, failed := s.mrtrAsk(wctx, c, f, ir, round)
	if retry == nil && failed == nil && ctx.Err() == nil {
		// The request's time ran out while the client was deciding: its
		// asks are cancelled (wait told the client), and the request ends.
		failed = s.timedOut(wctx, c, f.Method)
	}
	return retry, failed
}

// mrtrAsk is one MRTR round; wctx bounds its waits. It returns nil and nil
// when a wait ended with wctx.
func (s *modern) mrtrAsk(wctx context.Context, c *call, f *rewrite.Frame, ir []byte, round int) ([]byte, []byte) {
	res := gjson.ParseBytes(ir)
	reqs := inputRequests(res.Get("inputRequests"))
	state := res.Get("requestState")
	var answers []rewrite.InputAnswer
	switch {
	case len(reqs) == 0 && !state.Exists():
		return nil, rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
			fmt.Sprintf("invalid upstream result for %s: input_required without inputRequests or requestState", f.Method), nil)
	case len(reqs) == 0:
		// requestState only: an out-of-band step is still running. Pace
		// the retries (250 ms, doubling, at most 4 s).
		if !sleep(wctx, 250*time.Millisecond<<min(round, 4)) {
			return nil, nil
		}
	default:
		if err := s.firstUnaskable(reqs); err != nil {
			// The server asked for what the client cannot give (a 2026
			// server MUST NOT): the round cannot be completed, and the
			// request ends with the error a capability check gives.
			s.warn("input request not sent", zap.ByteString("id", c.id), zap.Error(err))
			return nil, err.frame(c.id, f.Method, "")
		}
		pend := make([]*pendingAsk, len(reqs))
		for i, in := range reqs {
			pend[i] = s.askStart(c.op, in.method, s.inputParams(in, ""))
		}
		answers = make([]rewrite.InputAnswer, 0, len(reqs))
		for i, in := range reqs {
			answer, err := s.inputAnswer(wctx, in, pend[i])
			if err != nil {
				for _, p := range pend[i+1:] {
					p.abandon()
				}
				if wctx.Err() != nil {
					return nil, nil
				}
				return nil, s.inputFailed(c, f.Method, in, err)
			}
			answers = append(answers, rewrite.InputAnswer{Key: in.key, Answer: answer})
		}
	}
	var echo []byte // requestState, byte for byte
	if state.Exists() {
		echo = []byte(state.Raw)
	}
	return rewrite.RetryParams(answers, echo), nil
}

// inputFailed is the answer when the client failed a sampling or roots
// request (docs/policies.md, Client input): a tool reports it as a tool error
// the model can read; other methods get -32603.
func (s *modern) inputFailed(c *call, method string, in inputRequest, err error) []byte {
	msg := fmt.Sprintf("the client could not answer %s, which the server needs to finish %s: %v", in.method, method, err)
	if method == "tools/call" {
		return rewrite.ResultFrame(c.id, rewrite.ToolErrorResult(msg))
	}
	return rewrite.ErrorFrame(c.id, protocol.CodeInternalError, msg, nil)
}

// streamNotification forwards request-scoped notifications (progress, log
// messages) to the client before the response.
func (s *modern) streamNotification(c *call, m *rewrite.Frame) {
	switch m.Method {
	case "notifications/progress":
		// 2025 requires progress to increase; a server may restart its
		// count on an MRTR retry, so a value that does not is dropped.
		p := m.Params.Get("progress")
		if p.Type == gjson.Number {
			if c.progressSeen && p.Num <= c.lastProgress {
				s.debug("non-increasing progress dropped", zap.ByteString("id", c.id), zap.Float64("progress", p.Num))
				return
			}
			c.progressSeen, c.lastProgress = true, p.Num
		}
	case "notifications/message":
	default:
		s.debug("upstream notification on a response stream dropped", zap.String("method", m.Method))
		return
	}
	if c.cancelled.Load() {
		return
	}
	s.sendOp(clone(m.Raw), c.op, nil) // the stream reader reuses its buffer
}

// noAnswer is the error for a body or stream that ended without a response.
func (s *env) noAnswer(c *call, method string, resp *routing.Response, skipped string) []byte {
	if resp.Status >= 300 {
		return s.httpFailure(c.id, method, resp, nil)
	}
	msg := fmt.Sprintf("the upstream server answered HTTP %d with no JSON-RPC response to %s", resp.Status, method)
	if resp.IsSSE() {
		msg = fmt.Sprintf("the upstream event stream for %s ended before the response", method)
		if skipped != "" {
			msg += "; it carried " + skipped
		}
		if method != "tools/call" {
			msg += "; retrying the request is safe"
		} else {
			msg += "; the tool may or may not have run"
		}
	}
	return rewrite.ErrorFrame(c.id, protocol.CodeInternalError, msg, errorData(s.client.URL(), resp.Status, "", ""))
}

// httpFailure is the error for an HTTP answer that carries no usable
// JSON-RPC response: its message names the status and the likely fix, and
// error.data holds the status, the URL and the start of the body.
func (s *env) httpFailure(id []byte, method string, resp *routing.Response, body []byte) []byte {
	url := s.client.URL()
	st := resp.Status
	var hint string
	switch {
	case st == http.StatusUnauthorized:
		hint = "authentication required: " + capabilities.AuthHint(url)
	case st == http.StatusForbidden:
		hint = "access denied: " + capabilities.ForbiddenHint(url, resp.Header)
	case st == http.StatusNotFound:
		hint = "endpoint not found: check the URL path (MCP endpoints often end in /mcp)"
	case st == http.StatusTooManyRequests:
		hint = "rate limited: try again later"
	case st >= 500:
		hint = "the server or a gateway in front of it is failing: try again later or check the server's logs"
	case st >= 400:
		hint = "the server rejected the request"
	default:
		hint = "the URL may point at a web page rather than an MCP endpoint"
	}
	ct := resp.ContentType
	if ct == "" {
		ct = "no content type"
	}
	msg := fmt.Sprintf("upstream %s answered %s with HTTP %d (%s): %s", url, method, st, ct, hint)
	data := []byte(`{"url":`)
	data = rewrite.AppendString(data, url)
	data = fmt.Appendf(data, `,"httpStatus":%d,"contentType":`, st)
	data = rewrite.AppendString(data, resp.ContentType)
	if len(body) > 0 {
		data = append(data, `,"body":`...)
		data = rewrite.AppendString(data, string(capSnippet(body)))
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		data = append(data, `,"retryAfter":`...)
		data = rewrite.AppendString(data, ra)
	}
	data = append(data, '}')
	return rewrite.ErrorFrame(id, protocol.CodeInternalError, msg, data)
}

// invalidBody is the error for a successful HTTP answer whose body is not a
// JSON-RPC message.
func (s *env) invalidBody(id []byte, method string, resp *routing.Response, body []byte, err error) []byte {
	data := errorData(s.client.URL(), resp.Status, "contentType", resp.ContentType)
	data = append(data[:len(data)-1], `,"body":`...)
	data = append(rewrite.AppendString(data, string(capSnippet(body))), '}')
	return rewrite.ErrorFrame(id, protocol.CodeInternalError,
		fmt.Sprintf("the upstream server answered %s with HTTP %d but an invalid JSON-RPC body (%v); the server is misbehaving: check its logs", method, resp.Status, err), data)
}

// capSnippet is the start of a body for error.data.
func capSnippet(b []byte) []byte { return b[:min(len(b), 256)] }

// refused reports a request the proxy did not send on: a redirect it does
// not follow, or a sign-in that did not complete. Repeating it cannot help.
func refused(err error) bool {
	if err == nil {
		return false // and no TransportError to escape to the heap
	}
	var te *routing.TransportError
	return errors.As(err, &te) && (te.Kind == routing.KindRedirect || te.Kind == routing.KindAuth)
}

// transportError is the error for an exchange that failed before any status.
func (s *env) transportError(id []byte, method string, err error) []byte {
	var te *routing.TransportError
	msg := fmt.Sprintf("the request %s to the upstream server failed: %v", method, err)
	cause := "network"
	if errors.As(err, &te) {
		switch te.Kind {
		case routing.KindDial:
			cause = "connect"
			msg = fmt.Sprintf("cannot reach the upstream server for %s: %v; is the server running, and is the URL right?", method, err)
		case routing.KindTimeout:
			cause = "timeout"
			msg = fmt.Sprintf("the upstream server did not answer %s in time: %v; raise %s if the server is that slow to start answering", method, err, s.hint(rewrite.HintResponseHeaderTimeout))
		case routing.KindRedirect:
			cause = "redirect"
			msg = fmt.Sprintf("%s was not sent: %v", method, te.Err)
		case routing.KindAuth:
			// The hook's text: it names the server, what did not happen
			// and the way out (mcp-tasks-proxy auth login URL).
			cause = "auth"
			msg = te.Err.Error()
		default:
			msg = fmt.Sprintf("the connection to the upstream server broke during %s: %v; the request may or may not have run", method, err)
		}
	}
	return rewrite.ErrorFrame(id, protocol.CodeInternalError, msg, errorData(s.client.URL(), 0, "cause", cause))
}
