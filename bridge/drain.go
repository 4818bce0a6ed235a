package bridge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// drainSendGrace bounds the wait for room on stdout for the drain's error
// answers: a client that stopped reading must not hold the exit.
const drainSendGrace = time.Second

// drain runs at the end of input: a standing request (a listen) ends,
// unanswered; the requests already read, in flight or
// still waiting for a slot, keep running and are answered as usual, for at
// most DrainTimeout. Whatever is still unanswered then gets one error
// answer naming the bound (every request id gets exactly one answer), and Run
// cancels it. A request the client cancelled gets nothing, as always. A signal
// (ctx) ends the drain at once.
func (s *Session) drain(ctx context.Context) {
	if s.env.Cfg.DrainTimeout <= 0 {
		return
	}
	s.draining.Store(true)
	s.mu.Lock()
	for _, c := range s.inflight {
		if protocol.Standing(c.Method) {
			// Open until its client ends it, and the client has gone.
			c.Cancelled.Store(true)
			c.Cancel()
		}
	}
	s.drainWait = make(chan struct{})
	s.drainedLocked()
	wait, n := s.drainWait, len(s.inflight)
	s.mu.Unlock()
	if n > 0 {
		s.env.Info("end of input: answering the requests already read", zap.Int("requests", n), zap.Duration("drainTimeout", s.env.Cfg.DrainTimeout))
	}
	select {
	case <-wait:
		return
	case <-ctx.Done():
		return
	case <-time.After(s.env.Cfg.DrainTimeout):
	}
	s.mu.Lock()
	left := slices.Collect(maps.Values(s.inflight))
	s.mu.Unlock()
	slices.SortFunc(left, func(a, b *link.Call) int { return a.Start.Compare(b.Start) })
	grace := time.After(drainSendGrace)
	for _, c := range left {
		if c.Cancelled.Load() || !c.Answered.CompareAndSwap(false, true) {
			continue
		}
		frame := s.env.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInternalError, fmt.Appendf(nil, `{"drainTimeoutMs":%d}`, s.env.Cfg.DrainTimeout.Milliseconds()),
			"the session ended (the client's input closed, the session was deleted, or the proxy is stopping) and %s was not answered within %s %v; it was cancelled", c.Method, rewrite.HintDrainTimeout, s.env.Cfg.DrainTimeout))
		s.env.Warn("request cancelled at the end of input: not answered within the drain bound", zap.ByteString("id", c.ID), zap.String("method", c.Method), zap.Duration("drainTimeout", s.env.Cfg.DrainTimeout))
		s.logRequest(c.Op, c.Method, c.ID, c.Start, frame, false)
		select {
		case s.env.Out <- Out{Frame: frame, Op: c.Op, Stream: c.Stream, Final: true}:
		case <-ctx.Done():
			return
		case <-grace:
			s.env.Warn("the client is not reading its answers; the remaining drain answers are dropped")
			return
		}
	}
}

// drainedLocked closes drainWait once the input has ended and no request
// is left unanswered. s.mu is held.
func (s *Session) drainedLocked() {
	if s.drainWait == nil || len(s.inflight) > 0 || s.finishing.Load() > 0 {
		return
	}
	select {
	case <-s.drainWait:
	default:
		close(s.drainWait)
	}
}
