package bridge

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Requests from the proxy to the legacy client (eras.md §5.4): the 2025
// face of 2026 input requests. Their ids live in the proxy's own space
// ("mtp-N"), apart from the client's ids.

// clientError is a JSON-RPC error the client answered with.
type clientError struct{ raw gjson.Result }

func (e *clientError) Error() string {
	return fmt.Sprintf("the client answered with error %d: %s", e.raw.Get("code").Int(), e.raw.Get("message").String())
}

// pendingAsk is a request sent to the client, awaiting its answer.
type pendingAsk struct {
	s  *env
	id []byte
	op string // the trace op of the request that needs the answer
	ch chan []byte
}

// askStart sends a request to the client without waiting, so several can be
// sent in a fixed order and then awaited together.
func (s *env) askStart(op, method string, params []byte) *pendingAsk {
	p := &pendingAsk{s: s, id: append(strconv.AppendInt([]byte(`"mtp-`), s.asks.next.Add(1), 10), '"'), op: op, ch: make(chan []byte, 1)}
	s.asks.mu.Lock()
	s.asks.m[string(p.id)] = p
	s.asks.mu.Unlock()
	s.sendOp(rewrite.RequestFrame(p.id, method, params), op, rwAsk)
	return p
}

// askOp is the op of a pending request to the client, for its answer.
func (s *env) askOp(id string) string {
	s.asks.mu.Lock()
	defer s.asks.mu.Unlock()
	if p := s.asks.m[id]; p != nil {
		return p.op
	}
	return ""
}

// abandon gives up on the answer and tells the client so.
func (p *pendingAsk) abandon() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = p.wait(ctx)
}

// wait returns the client's raw result, a *clientError, or ctx's error; on
// ctx's end the client is told with notifications/cancelled.
func (p *pendingAsk) wait(ctx context.Context) (gjson.Result, error) {
	s := p.s
	select {
	case resp := <-p.ch:
		f, err := rewrite.Parse(resp)
		if err != nil {
			return gjson.Result{}, err
		}
		if f.Error.Exists() {
			return gjson.Result{}, &clientError{raw: f.Error}
		}
		return f.Result, nil
	case <-ctx.Done():
		s.asks.mu.Lock()
		delete(s.asks.m, string(p.id))
		s.asks.mu.Unlock()
		if s.ctx.Err() == nil {
			s.sendOp(rewrite.NotificationFrame("notifications/cancelled", rewrite.CancelledParams(p.id, "no longer needed")), p.op, nil)
		}
		return gjson.Result{}, ctx.Err()
	}
}

// clientAnswered routes a response from the client to the request waiting
// for it. It reports false for an id nobody waits for.
func (s *env) clientAnswered(f *rewrite.Frame) bool {
	s.asks.mu.Lock()
	p, ok := s.asks.m[f.ID.Raw]
	delete(s.asks.m, f.ID.Raw)
	s.asks.mu.Unlock()
	if ok {
		p.ch <- clone(f.Raw)
	}
	return ok
}

// clientCan reports whether the client declared the capability an input
// request needs, and names it when not (2025 servers send only what the
// client declared).
func (s *modern) clientCan(method string, params gjson.Result) (bool, string) {
	var caps gjson.Result
	if st := s.state.Load(); st != nil {
		caps = gjson.ParseBytes(st.legacyCaps)
	}
	switch method {
	case "elicitation/create":
		if !caps.Get("elicitation").Exists() {
			return false, "elicitation"
		}
		if params.Get("mode").String() == "url" && !caps.Get("elicitation.url").Exists() {
			return false, "elicitation.url"
		}
		return true, ""
	case "sampling/createMessage":
		return caps.Get("sampling").Exists(), "sampling"
	case "roots/list":
		return caps.Get("roots").Exists(), "roots"
	}
	return false, method
}

// inputRequest is one entry of a modern inputRequests map.
type inputRequest struct {
	key    string
	method string
	params gjson.Result
}

func inputRequests(m gjson.Result) []inputRequest {
	var out []inputRequest
	m.ForEach(func(k, v gjson.Result) bool {
		out = append(out, inputRequest{key: k.String(), method: v.Get("method").String(), params: v.Get("params")})
		return true
	})
	return out
}

// askInput sends one input request to the client and returns the answer
// for inputResponses. relatedTask ties it to a task the client knows.
func (s *modern) askInput(ctx context.Context, in inputRequest, relatedTask string) ([]byte, error) {
	if ok, missing := s.clientCan(in.method, in.params); !ok {
		return nil, missingCapability(in.method, missing)
	}
	return s.inputAnswer(ctx, in, s.askStart(opOf(ctx), in.method, s.inputParams(in, relatedTask)))
}

// missingCapabilityError is an input request the client cannot be sent.
type missingCapabilityError struct{ method, capability string }

func (e *missingCapabilityError) Error() string {
	return fmt.Sprintf("the server needs %s from the client, but the client did not declare the %s capability in initialize", e.method, e.capability)
}

func missingCapability(method, capability string) error {
	return &missingCapabilityError{method: method, capability: capability}
}

// inputParams prepares an input request's params for the client.
func (s *modern) inputParams(in inputRequest, relatedTask string) []byte {
	var elicitationID string
	if in.method == "elicitation/create" && in.params.Get("mode").String() == "url" {
		elicitationID = "mtp-elicitation-" + randomHex(12)
	}
	if !in.params.Exists() && relatedTask == "" {
		return nil // e.g. roots/list: no params at all
	}
	return rewrite.InputRequestParams(in.params, relatedTask, elicitationID)
}

// inputAnswer waits for the client's answer to an input request.
func (s *modern) inputAnswer(ctx context.Context, in inputRequest, p *pendingAsk) ([]byte, error) {
	res, err := p.wait(ctx)
	if err != nil {
		if _, ok := err.(*clientError); ok && in.method == "elicitation/create" {
			// POLICY (eras.md §8.3, tasks.md §13.3): an elicitation the
			// client failed becomes a cancel, so the server can move on.
			s.warn("the client answered an elicitation with an error; sending cancel", zap.Error(err))
			return []byte(`{"action":"cancel"}`), nil
		}
		return nil, err
	}
	return rewrite.InputResponse(res), nil
}
