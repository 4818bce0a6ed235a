package reverse

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// held is a call open on the 2025 server across the modern client's input
// rounds: the server's requests on its stream are put to the client in an
// input_required answer, and the client's retry answers them.
type held struct {
	uc     *link.Call
	cancel context.CancelFunc // ends the call's upstream exchange
	done   chan []byte        // the call's answer (nil: it ended without one)
	wake   chan struct{}      // a server request came

	mu    sync.Mutex
	asks  []rewrite.Frame          // server requests not yet put to the client
	given map[string]rewrite.Frame // those put to it in the last round, by key
	keys  int
	token string      // the requestState of the round the client holds
	timer *time.Timer // abandons the call when no retry comes in time
}

func (h *held) add(m *rewrite.Frame) {
	h.mu.Lock()
	h.asks = append(h.asks, *m)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// round takes the server requests not yet put to the client, under keys
// of their own.
func (h *held) round() []rewrite.InputRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	reqs := make([]rewrite.InputRequest, 0, len(h.asks))
	for _, a := range h.asks {
		h.keys++
		key := a.Method + "-" + strconv.Itoa(h.keys)
		h.given[key] = a
		reqs = append(reqs, rewrite.InputRequest{Key: key, Method: a.Method, Params: a.Params})
	}
	h.asks = nil
	return reqs
}

// call sends a request that may need the client's input (tools/call,
// prompts/get, resources/read) and answers it: with the call's result, or
// with the input the server asked for meanwhile. The upstream exchange
// runs on its own, since it outlives this request when input is asked.
func (r *reverse) call(ctx context.Context, c *link.Call, f *rewrite.Frame) []byte {
	uc := r.upCall(c, f.Method)
	uf, err := rewrite.Parse(rewrite.LegacyRequest(f, uc.ID))
	if err == nil && f.Method == "tools/call" && r.augment(ctx, c, f) {
		uf, err = rewrite.Parse(rewrite.WithTask(&uf))
	}
	if err != nil {
		return rewrite.ErrorFrame(c.ID, rewrite.Code(err), link.InvalidMessage(err), nil)
	}
	hctx, cancel := context.WithCancel(link.WithOp(r.env.Ctx, c.Op))
	h := &held{uc: uc, cancel: cancel, done: make(chan []byte, 1), wake: make(chan struct{}, 1), given: map[string]rewrite.Frame{}}
	r.mu.Lock()
	r.byOp[uc.Op] = h
	r.mu.Unlock()
	if !r.env.BG.Start(func() { h.done <- r.up.Request(hctx, uc, &uf).Frame }) {
		r.release(h)
		return nil // the session is ending
	}
	return r.wait(ctx, c, f, h)
}

// wait answers c, the request f of the held call h: with its result, or
// with the server's requests as one input round.
func (r *reverse) wait(ctx context.Context, c *link.Call, f *rewrite.Frame, h *held) []byte {
	defer r.await(h.uc.Op, c, f)()
	method := f.Method
	for {
		select {
		case frame := <-h.done:
			r.release(h)
			return r.down(c, method, frame) // nil: the session is ending
		case <-h.wake:
			reqs := h.round()
			if len(reqs) == 0 {
				continue
			}
			t, ok := r.park(h)
			if !ok {
				r.abandon(h, "too many input rounds wait for the client")
				return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
					fmt.Sprintf("%s needs input, but %d input rounds already wait for this client's retry; answer or cancel those first", method, r.env.Cfg.MaxQueued), nil)
			}
			return rewrite.InputRequired(c.ID, reqs, t)
		case <-ctx.Done():
			r.abandon(h, "the client cancelled it")
			return nil
		}
	}
}

// park holds h for the client's retry under a new requestState; a retry
// that does not come within the idle timeout abandons it. Parked rounds
// hold no in-flight slot, so their number is bounded on its own (by the
// queue's bound): ok is false past it.
func (r *reverse) park(h *held) (state string, ok bool) {
	t := token()
	r.mu.Lock()
	if len(r.held) >= r.env.Cfg.MaxQueued {
		r.mu.Unlock()
		return "", false
	}
	r.held[t] = h
	r.mu.Unlock()
	h.mu.Lock()
	h.token = t
	h.timer = time.AfterFunc(r.env.Cfg.IdleTimeout, func() {
		r.mu.Lock()
		mine := r.held[t] == h
		delete(r.held, t)
		r.mu.Unlock()
		if mine {
			r.abandon(h, fmt.Sprintf("the client did not retry within %v", r.env.Cfg.IdleTimeout))
		}
	})
	h.mu.Unlock()
	return t, true
}

// resume answers the retry c of a held call: the server's requests get
// the client's inputResponses, and the call goes on.
func (r *reverse) resume(ctx context.Context, c *link.Call, f *rewrite.Frame, state string) []byte {
	r.mu.Lock()
	h := r.held[state]
	delete(r.held, state)
	r.mu.Unlock()
	if h == nil {
		return rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams,
			"Invalid params: requestState is unknown or was used already (the input round it named was answered, cancelled, or not retried in time); send the request again without inputResponses and requestState", nil)
	}
	h.mu.Lock()
	h.timer.Stop()
	h.mu.Unlock()
	r.answerAsks(h, f.Params.Get("inputResponses"), true)
	return r.wait(ctx, c, f, h)
}

// answerAsks answers the server's requests put to the client with its
// responses, by key. With all, every one is answered (an MRTR retry ends
// its round): one the client left out as a user who did not go on would,
// or with an error; else only those it answered (tasks/update), and the
// others stay outstanding.
func (r *reverse) answerAsks(h *held, responses gjson.Result, all bool) {
	h.mu.Lock()
	var results [][]byte
	for key, ask := range h.given {
		id := []byte(ask.ID.Raw)
		switch resp := responses.Get(gjson.Escape(key)); {
		case resp.IsObject():
			results = append(results, rewrite.ResultFrame(id, []byte(resp.Raw)))
		case !all:
			continue
		case ask.Method == "elicitation/create":
			results = append(results, rewrite.ResultFrame(id, []byte(`{"action":"cancel"}`)))
		default:
			results = append(results, rewrite.ErrorFrame(id, protocol.CodeInternalError, "the client gave no answer to "+ask.Method, nil))
		}
		delete(h.given, key)
	}
	h.mu.Unlock()
	for _, frame := range results {
		r.answerServer(h.uc.Op, frame)
	}
}

// abandon ends a held call: the server is told with the 2025 cancel, its
// requests still open are answered, and the exchange ends.
func (r *reverse) abandon(h *held, why string) {
	r.release(h)
	r.env.Info("a call of a 2026-07-28 client ended upstream", zap.ByteString("upstreamId", h.uc.ID), zap.String("reason", why))
	// Even as the session ends (the poster sends what is queued): a
	// server whose handler waits for an answer may not end otherwise.
	h.mu.Lock()
	open := append(h.asks, mapValues(h.given)...)
	h.asks, h.given = nil, map[string]rewrite.Frame{}
	h.mu.Unlock()
	for _, a := range open {
		r.answerServer(h.uc.Op, rewrite.ErrorFrame([]byte(a.ID.Raw), protocol.CodeInternalError, "the request it belongs to was cancelled", nil))
	}
	if n, err := rewrite.Parse(rewrite.NotificationFrame("notifications/cancelled", rewrite.CancelledParams(h.uc.ID, why))); err == nil {
		r.up.Notified(&n, h.uc.Op, h.cancel) // the stream closes once the server has the cancel
		if r.env.Ctx.Err() == nil {
			return
		}
	}
	h.cancel() // the session is ending: at once
}

// release forgets h.
func (r *reverse) release(h *held) {
	r.mu.Lock()
	if r.byOp[h.uc.Op] == h {
		delete(r.byOp, h.uc.Op)
	}
	h.mu.Lock()
	if r.held[h.token] == h {
		delete(r.held, h.token)
	}
	if h.timer != nil {
		h.timer.Stop()
	}
	h.mu.Unlock()
	r.mu.Unlock()
}

func mapValues(m map[string]rewrite.Frame) []rewrite.Frame {
	out := make([]rewrite.Frame, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
