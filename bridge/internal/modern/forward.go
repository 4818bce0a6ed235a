package modern

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// outOfBandDoublings bounds how often the wait between retries of a round
// that carries only requestState doubles.
const outOfBandDoublings = 4

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
func (s *modern) forward(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	if f.Method == "tools/call" {
		if err := s.tools.ensure(ctx); refused(err) {
			return link.FrameOnly(s.env.TransportError(c.ID, f.Method, err))
		}
	}
	var t tries
	r := s.env.Attempt(ctx, c, f.Method, func() link.Result { return s.exchange(ctx, c, f, &t) })
	for round := 0; ; {
		switch {
		case r.Input != nil:
			// The server needs input from the client: ask it, then retry
			// with the answers (MRTR, multi round-trip requests).
			if round >= s.env.Cfg.MaxRounds {
				return link.FrameOnly(s.env.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInternalError, link.ErrorData(s.env.URL(), 0, "", ""),
					"the server asked for client input %d times for %s without finishing; giving up (raise %s)", round, f.Method, rewrite.HintMaxMRTRRounds)))
			}
			retry, failed := s.mrtrRound(ctx, c, f, r.Input, round)
			if retry == nil {
				return link.FrameOnly(failed)
			}
			round++
			t.retry = retry
		case ctx.Err() != nil:
			return r.Outcome()
		case r.Code == protocol.CodeHeaderMismatch && s.tools.headerRetry(ctx, c, f, &t):
		case r.Code == protocol.CodeUnsupportedProtocolVersion && !t.recovered:
			t.recovered = true
			if s.probe(ctx, s.srv.state.Load().meta, nil).Era != capabilities.Modern {
				return link.FrameOnly(s.versionGone(c, f.Method, r.Frame))
			}
			s.env.Info("unsupported protocol version on a request; the server is still modern, retrying once", zap.ByteString("id", c.ID))
		default:
			return r.Outcome()
		}
		r = s.env.Attempt(ctx, c, f.Method, func() link.Result { return s.exchange(ctx, c, f, &t) })
		if t.recovered && r.Code == protocol.CodeUnsupportedProtocolVersion && r.Input == nil {
			return link.FrameOnly(s.versionGone(c, f.Method, r.Frame))
		}
	}
}

// tries is what one request carries from one attempt to the next.
type tries struct {
	retry []byte // the params members of the next MRTR retry
	// sentBase64: the server refused headers that carried a value in the
	// Base64 form (-32020); rawHeaders: retried with raw UTF-8 values (for good).
	sentBase64, rawHeaders bool
	// recovered: the one retry after refreshing the tools' annotations
	// (-32020) or probing the server again (-32022) was made.
	recovered bool
}

// probe runs the server/discover probe, bounded by --discover-timeout.
// body, when set, makes the probe's request (see capabilities.Prober).
func (s *modern) probe(ctx context.Context, meta rewrite.MetaBlock, body func(id []byte) []byte) capabilities.Verdict {
	pctx, cancel := context.WithTimeout(ctx, s.env.Cfg.DiscoverTimeout)
	defer cancel()
	return (&capabilities.Prober{Client: s.env.Client, NextID: s.env.NextUpstreamID, Body: body}).Probe(s.env.Observed(pctx, "", link.RwOwn), meta)
}

// versionGone answers a request the server rejected with -32022 for good:
// -32603, with the server's error data.
func (s *modern) versionGone(c *link.Call, method string, frame []byte) []byte {
	if frame == nil {
		return nil
	}
	data := []byte(gjson.GetBytes(frame, "error.data").Raw)
	if len(data) == 0 {
		data = []byte(`{}`)
	}
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("the upstream server at %s no longer accepts protocol %s for %s (%s); restart the client session so the proxy detects the server again",
			s.env.URL(), protocol.ModernVersion, method, gjson.GetBytes(frame, "error.message").String()), data)
}

func (s *modern) exchange(ctx context.Context, c *link.Call, f *rewrite.Frame, t *tries) link.Result {
	upID := s.env.NextUpstreamID()
	if c.Task.Exists() && !s.srv.tasksEnabled() {
		s.env.Warn("task-augmented tools/call processed normally: the server does not support the tasks extension, so no tasks capability was advertised",
			zap.ByteString("id", c.ID))
	}
	body, err := rewrite.RequestUp(f, rewrite.UpFor(f, upID, s.srv.state.Load().meta, t.retry))
	if err != nil {
		return link.Failed(rewrite.ErrorFrame(c.ID, rewrite.Code(err), link.InvalidMessage(err), nil), link.RetryNone)
	}
	var rw []string
	if s.env.Cfg.Observer != nil {
		rw = slices.Clip(link.RwForward) // shared: an append below copies it first
		if c.Task.Exists() {
			rw = append(rw, "task.drop")
		}
		if t.retry != nil {
			rw = append(rw, "mrtr.retry")
		}
	}
	return post(ctx, s.env, c, body, upID, s.tools.headers(f), rw, t, func(actx context.Context, resp *routing.Response, touch func()) link.Result {
		return readAnswer(actx, s.env, c, f.Method, upID, resp, touch, func(m *rewrite.Frame) { s.streamNotification(c, m) },
			func(m *rewrite.Frame, status int, room []byte) link.Result {
				return s.down(actx, c, f.Method, m, status, room)
			})
	})
}

// post sends body, the request of c under the upstream id upID, and reads
// its answer with read: the part of an exchange that both faces of the
// modern bridge share (the exchange's deadlines, raw header values once a
// server refused the Base64 form, the Observer's hop, the answers for a
// failure and a timeout, and the log line). rw names the request's
// rewrites for the Observer.
func post(ctx context.Context, e *link.Env, c *link.Call, body, upID []byte, params []protocol.ParamHeader, rw []string, t *tries,
	read func(actx context.Context, resp *routing.Response, touch func()) link.Result) link.Result {
	actx, dl := e.Deadlines(ctx, c)
	defer dl.Stop()
	if t.rawHeaders {
		actx = routing.WithRawUTF8Headers(actx)
		rw = append(rw, "headers.raw")
	}
	if e.Cfg.Observer != nil {
		actx = e.Observed(actx, c.Op, rw)
	}
	start := time.Now()
	resp, err := e.Client.Post(actx, body, params)
	if err != nil {
		return link.Failed(e.SendFailed(ctx, actx, c, err))
	}
	defer resp.Close()
	r := read(actx, resp, dl.Touch)
	if r.Frame == nil && r.Input == nil && ctx.Err() == nil {
		r.Frame = e.TimedOut(actx, c)
	}
	if r.Code == protocol.CodeHeaderMismatch && !t.rawHeaders {
		// Read only on the rare refusal: may a raw retry change anything?
		t.sentBase64 = routing.UsesBase64(body, params)
	}
	e.LogExchange(c, upID, resp.Status, start, len(body), len(r.Frame))
	return r
}

// readAnswer reads the upstream messages of one request of c: each
// notification goes to note as it comes, and the response for upID to
// done, whose result is the answer. Every way the answer can fail to come
// is an error answer of its own.
func readAnswer(ctx context.Context, e *link.Env, c *link.Call, method string, upID []byte, resp *routing.Response, touch func(),
	note func(m *rewrite.Frame), done func(m *rewrite.Frame, status int, room []byte) link.Result) link.Result {
	var skipped string // why the last unusable stream event was skipped
	for {
		msg, err := resp.Next()
		if err != nil {
			if ctx.Err() != nil {
				return link.Result{}
			}
			switch {
			case errors.Is(err, io.EOF):
				again := link.RetryNone
				if resp.IsSSE() && resp.Status < 300 {
					again = link.RetryBroken // the stream ended before the response
				}
				return link.Failed(link.NoAnswer(e.URL(), c, resp, skipped), again)
			case errors.Is(err, routing.ErrContentType):
				return link.Failed(link.HTTPFailure(e.URL(), c.ID, method, resp, msg), link.RetryNone)
			case errors.Is(err, routing.ErrTooLarge):
				return link.Failed(e.TooLargeAnswer(c, resp.Status), link.RetryNone)
			}
			return link.Failed(link.BrokenRead(e.URL(), c, resp.Status, err), link.RetryBroken)
		}
		touch()
		raw := rewrite.TrimFrame(msg)
		m, perr := rewrite.Parse(raw)
		if perr != nil {
			if !resp.IsSSE() {
				if resp.Status < 300 {
					return link.Failed(link.InvalidBody(e.URL(), c, resp, msg, perr), link.RetryNone)
				}
				return link.Failed(link.HTTPFailure(e.URL(), c.ID, method, resp, msg), link.RetryNone)
			}
			skipped = "an event that is not a JSON-RPC message (" + perr.Error() + ")"
			e.Warn("upstream stream event skipped", zap.Error(perr), zap.ByteString("event", e.LogFrame(msg)))
			continue
		}
		switch m.Kind {
		case rewrite.KindNotification:
			note(&m)
			continue
		case rewrite.KindRequest:
			// 2026-07-28 forbids server requests on a response stream.
			e.Warn("upstream sent a request on a response stream; ignored", zap.String("method", m.Method))
			continue
		}
		if m.ID.Raw != string(upID) && m.ID.Type != gjson.Null { // a null id: an error about an unreadable request
			skipped = "a response for another id (" + m.ID.Raw + ")"
			e.Warn("upstream response with an unexpected id", zap.String("got", m.ID.Raw), zap.ByteString("want", upID))
			if resp.IsSSE() {
				continue
			}
			return link.Failed(link.WrongID(e.URL(), c, resp.Status, m.ID.Raw, upID), link.RetryNone)
		}
		r := done(&m, resp.Status, resp.Room())
		if m.Error.Exists() {
			r.Code = int(m.Error.Get("code").Int())
		}
		return r
	}
}

// down rewrites the upstream response for the client. room, when not nil, is
// the buffer m was read into with spare bytes in front (a large JSON body):
// a plain result is then rewritten in place, so that only one copy of it is
// ever in memory.
func (s *modern) down(ctx context.Context, c *link.Call, method string, m *rewrite.Frame, status int, room []byte) link.Result {
	tasks := s.srv.tasksEnabled()
	augmented := protocol.MayBecomeTask(method) && c.Task.Exists() && tasks
	if augmented || method == "tools/list" {
		// m is read after the rewrite. (An Observer is no reason: it
		// keeps nothing of the frame past its call.)
		room = nil
	}
	d, err := rewrite.ResponseDown(m, rewrite.Down{ID: c.ID, Method: method, HTTPStatus: status, TaskSupport: tasks, Room: room})
	if err != nil {
		s.env.Warn("invalid upstream result", zap.String("method", method), zap.Error(err), zap.ByteString("frame", s.env.LogFrame(m.Raw)))
		return link.Failed(rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
			fmt.Sprintf("invalid upstream result for %s: %v", method, err), link.ErrorData(s.env.URL(), status, "", "")), link.RetryNone)
	}
	switch d.ResultType {
	case protocol.ResultComplete:
		switch {
		case method == "tools/list":
			s.tools.remember(d)
		case augmented && !d.IsError:
			return s.tasks.taskCreated(c, m)
		}
		return link.Result{Frame: d.Frame, Rewrites: d.Rewrites}
	case protocol.ResultTask:
		if !protocol.MayBecomeTask(method) {
			break // only tools/call may become a task (2026 tasks extension)
		}
		if augmented {
			return s.tasks.taskCreated(c, m)
		}
		t := rewrite.ReadTask(m.Result)
		s.env.Info("the server made a task of a plain tools/call; following it", zap.ByteString("id", c.ID), zap.String("taskId", t.ID))
		return link.Result{Frame: s.tasks.follow(ctx, c, t), Rewrites: []string{"task.follow"}}
	case protocol.ResultInputRequired:
		if protocol.InputRequired(method) {
			// A copy: forward asks the client, then retries.
			return link.Result{Input: []byte(m.Result.Raw), Rewrites: d.Rewrites}
		}
	}
	s.env.Warn("invalid upstream resultType", zap.String("method", method), zap.String("resultType", d.ResultType),
		zap.ByteString("frame", s.env.LogFrame(m.Raw)))
	return link.Failed(rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("invalid upstream result for %s: unrecognized or misplaced resultType %q", method, d.ResultType),
		link.ErrorData(s.env.URL(), status, "resultType", d.ResultType)), link.RetryNone)
}

// mrtrRound asks the client for one InputRequiredResult's inputRequests,
// in document order, and returns the params members of the retry:
// inputResponses, and requestState echoed byte for byte. When the round
// cannot go on it returns nil and the client's answer (nil when the client
// cancelled).
func (s *modern) mrtrRound(ctx context.Context, c *link.Call, f *rewrite.Frame, ir []byte, round int) ([]byte, []byte) {
	wctx, cancel := s.env.RequestBound(ctx, c)
	defer cancel()
	timedOut := func() []byte {
		if ctx.Err() != nil {
			return nil
		}
		// The request's time ran out while the client was deciding: its
		// asks are cancelled (wait told the client), and the request ends.
		return s.env.TimedOut(wctx, c)
	}
	res := gjson.ParseBytes(ir)
	reqs := inputRequests(res.Get("inputRequests"))
	state := res.Get("requestState")
	var answers []rewrite.InputAnswer
	switch {
	case len(reqs) == 0 && !state.Exists():
		return nil, rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
			fmt.Sprintf("invalid upstream result for %s: input_required without inputRequests or requestState", f.Method), nil)
	case len(reqs) == 0:
		// requestState only: an out-of-band step is still running. Pace
		// the retries: link.BackoffMin, doubling, outOfBandDoublings times
		// at most.
		if !link.Sleep(wctx, link.BackoffMin<<min(round, outOfBandDoublings)) {
			return nil, timedOut()
		}
	default:
		if err := s.srv.firstUnaskable(reqs); err != nil {
			// The server asked for what the client cannot give (a 2026
			// server MUST NOT): the round cannot be completed, and the
			// request ends with the error a capability check gives.
			s.env.Warn("input request not sent", zap.ByteString("id", c.ID), zap.Error(err))
			return nil, err.rpcError(f.Method, "").Frame(c.ID, nil)
		}
		pend := make([]*link.PendingAsk, len(reqs))
		for i, in := range reqs {
			pend[i] = s.env.AskStart(c.Op, in.method, s.srv.inputParams(in, ""))
		}
		answers = make([]rewrite.InputAnswer, 0, len(reqs))
		for i, in := range reqs {
			answer, err := s.srv.inputAnswer(wctx, in, pend[i])
			if err != nil {
				for _, p := range pend[i+1:] {
					p.Abandon()
				}
				if wctx.Err() != nil {
					return nil, timedOut()
				}
				// The client failed a sampling or roots request
				// (docs/policies.md, Client input): a tool reports it as a
				// tool error the model can read; other methods get -32603.
				msg := fmt.Sprintf("the client could not answer %s, which the server needs to finish %s: %v", in.method, f.Method, err)
				if f.Method == "tools/call" {
					return nil, rewrite.ResultFrame(c.ID, rewrite.ToolErrorResult(msg))
				}
				return nil, rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, msg, nil)
			}
			answers = append(answers, rewrite.InputAnswer{Key: in.key, Answer: answer})
		}
	}
	return rewrite.RetryParams(answers, []byte(state.Raw)), nil // requestState, byte for byte
}

// streamNotification forwards request-scoped notifications (progress, log
// messages) to the client before the response.
func (s *modern) streamNotification(c *link.Call, m *rewrite.Frame) {
	switch m.Method {
	case "notifications/progress":
		// 2025 requires progress to increase; a server may restart its
		// count on an MRTR retry, so a value that does not is dropped.
		p := m.Params.Get("progress")
		if p.Type == gjson.Number {
			if c.ProgressSeen && p.Num <= c.LastProgress {
				s.env.Debug("non-increasing progress dropped", zap.ByteString("id", c.ID), zap.Float64("progress", p.Num))
				return
			}
			c.ProgressSeen, c.LastProgress = true, p.Num
		}
	case "notifications/message":
	default:
		s.env.Debug("upstream notification on a response stream dropped", zap.String("method", m.Method))
		return
	}
	if c.Cancelled.Load() {
		return
	}
	s.env.Send(link.Clone(m.Raw), c.Op, nil) // the stream reader reuses its buffer
}

// refused reports a request the proxy did not send on: a redirect it does
// not follow, or a sign-in that did not complete. Repeating it cannot help.
func refused(err error) bool {
	if err == nil {
		return false // and no TransportError to escape to the heap
	}
	var te *routing.TransportError
	return errors.As(err, &te) && (te.Kind == routing.KindRedirect || te.Kind == routing.KindAuth)
}
