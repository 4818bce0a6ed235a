package bridge

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// drainSendGrace bounds the wait for room on stdout for the drain's error
// answers: a client that stopped reading must not hold the exit.
const drainSendGrace = time.Second

// drain runs at the end of input: the requests already read, in flight or
// still waiting for a slot, keep running and are answered as usual, for at
// most DrainTimeout. Whatever is still unanswered then gets one error
// answer naming the bound (every request id gets exactly one answer), and Run
// cancels it. A request the client cancelled gets nothing, as always. A signal
// (ctx) ends the drain at once.
func (s *Session) drain(ctx context.Context) {
	if s.cfg.DrainTimeout <= 0 {
		return
	}
	s.draining.Store(true)
	s.mu.Lock()
	s.drainWait = make(chan struct{})
	s.drainedLocked()
	wait, n := s.drainWait, len(s.inflight)
	s.mu.Unlock()
	if n > 0 {
		s.info("end of input: answering the requests already read", zap.Int("requests", n), zap.Duration("drainTimeout", s.cfg.DrainTimeout))
	}
	bound := time.NewTimer(s.cfg.DrainTimeout)
	defer bound.Stop()
	select {
	case <-wait:
		return
	case <-ctx.Done():
		return
	case <-bound.C:
	}
	s.mu.Lock()
	left := make([]*call, 0, len(s.inflight))
	for _, c := range s.inflight {
		left = append(left, c)
	}
	s.mu.Unlock()
	slices.SortFunc(left, func(a, b *call) int { return a.start.Compare(b.start) })
	grace := time.NewTimer(drainSendGrace)
	defer grace.Stop()
	for _, c := range left {
		if c.cancelled.Load() || !c.answered.CompareAndSwap(false, true) {
			continue
		}
		frame := s.errorFrame(c.id, rewrite.Errorf(protocol.CodeInternalError, fmt.Appendf(nil, `{"drainTimeoutMs":%d}`, s.cfg.DrainTimeout.Milliseconds()),
			"the session ended (the client's input closed, the session was deleted, or the proxy is stopping) and %s was not answered within %s %v; it was cancelled", c.method, rewrite.HintDrainTimeout, s.cfg.DrainTimeout))
		s.warn("request cancelled at the end of input: not answered within the drain bound", zap.ByteString("id", c.id), zap.String("method", c.method), zap.Duration("drainTimeout", s.cfg.DrainTimeout))
		s.logRequest(c.op, c.method, c.id, c.start, frame, false)
		select {
		case s.out <- outFrame{Out: Out{Frame: frame, Op: c.op, Stream: c.stream, Final: true}}:
		case <-ctx.Done():
			return
		case <-grace.C:
			s.warn("the client is not reading its answers; the remaining drain answers are dropped")
			return
		}
	}
}

// drainedLocked closes drainWait once the input has ended and no request
// is left unanswered. s.mu is held.
func (s *Session) drainedLocked() {
	if s.drainWait == nil || len(s.inflight) > 0 {
		return
	}
	select {
	case <-s.drainWait:
	default:
		close(s.drainWait)
	}
}
