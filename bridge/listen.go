package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Subscriptions (eras.md §9): the legacy client's unsolicited list_changed
// and resources/subscribe map onto 2026 subscriptions/listen streams.
//
//   - After notifications/initialized, one stream asks for the list changes
//     the server declared (listChanged in discover). None is opened when
//     the server declares none.
//   - Each resources/subscribe opens a stream for that URI, answered once
//     the acknowledgement lists it; resources/unsubscribe closes it.
//   - Acknowledgements and listen results are consumed; notifications are
//     forwarded with the subscriptionId removed.
//   - A stream that drops is reopened with bounded backoff, which starts
//     again from the minimum only after a stream that stayed up for
//     listenStableAfter. The list-change stream then tells the client each
//     kind may have changed, since changes may have been missed.

// The reconnect delays of a dropped listen stream (nextListenDelay).
const (
	listenBackoffMin = 250 * time.Millisecond
	listenBackoffMax = 30 * time.Second
	// listenStableAfter is how long a stream must have stayed up, from its
	// acknowledgement, for its end to count as a fresh failure rather than
	// one more of a run: only then does the delay start again from the
	// minimum. A server that acknowledges each stream and closes it at once
	// is so reopened ever more slowly, up to listenBackoffMax, instead of
	// four times a second (each reopening sends the client list_changed).
	listenStableAfter = 30 * time.Second
)

// nextListenDelay returns the delay before reopening a listen stream: prev
// is the delay before the previous attempt (0 when there was none) and up
// how long the stream that just ended stayed up after its acknowledgement
// (0 when it was never acknowledged). The delay doubles from
// listenBackoffMin up to listenBackoffMax, and starts again from the
// minimum after a stream that stayed up for listenStableAfter.
func nextListenDelay(prev, up time.Duration) time.Duration {
	if prev <= 0 || up >= listenStableAfter {
		return listenBackoffMin
	}
	return min(prev*2, listenBackoffMax)
}

// errListenUnsupported: the server answered -32601 to subscriptions/listen.
var errListenUnsupported = errors.New("subscriptions/listen is not implemented by the server")

// listener is one subscriptions/listen stream, reopened until stopped.
type listener struct {
	filter []byte             // params.notifications
	op     string             // the trace op of every record the stream causes
	cancel context.CancelFunc // set at creation, never changed
	acked  chan gjson.Result  // the first acknowledgement's notifications
	failed chan error         // the first attempt failed (resource subscriptions)
	// kinds are the list_changed methods to emit after a reconnect.
	kinds []string
}

// listens are the modern session's subscriptions/listen streams: the
// list-change stream, and one per resources/subscribe. They run in the
// session's background group.
type listens struct {
	*modern
	mu        sync.Mutex
	byURI     map[string]*listener
	listening bool // the list-change stream was started
	// sleep and now are the listen loops' clock, the real one when nil.
	// Tests set them before the session runs; they are not changed after.
	sleep func(ctx context.Context, d time.Duration) bool
	now   func() time.Time
}

// wait waits d before a reconnect, or until ctx ends (false).
func (l *listens) wait(ctx context.Context, d time.Duration) bool {
	if l.sleep != nil {
		return l.sleep(ctx, d)
	}
	return sleep(ctx, d)
}

// clock is the time, for how long a stream stayed up.
func (l *listens) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// openListChanged opens the list-change stream for the kinds the server
// declared. It runs once, after notifications/initialized.
func (s *listens) openListChanged() {
	caps := gjson.ParseBytes(s.state.Load().serverCaps) // after a successful initialize
	filter := []byte(`{`)
	var kinds []string
	for _, k := range []struct{ cap, field, method string }{
		{"tools", "toolsListChanged", "notifications/tools/list_changed"},
		{"prompts", "promptsListChanged", "notifications/prompts/list_changed"},
		{"resources", "resourcesListChanged", "notifications/resources/list_changed"},
	} {
		if caps.Get(k.cap + ".listChanged").Bool() {
			if len(kinds) > 0 {
				filter = append(filter, ',')
			}
			filter = append(filter, `"`+k.field+`":true`...)
			kinds = append(kinds, k.method)
		}
	}
	if len(kinds) == 0 {
		return // nothing to listen for: no stream
	}
	// The stream is caused by notifications/initialized: its records get an
	// op of their own.
	l, ctx := s.newListener(append(filter, '}'), kinds, false, s.nextOp())
	s.runListener(ctx, l)
}

// newListener prepares a listener whose stream ends with the session or
// with its cancel. Callers that publish it do so under s.mu.
func (s *listens) newListener(filter []byte, kinds []string, waited bool, op string) (*listener, context.Context) {
	ctx, cancel := context.WithCancel(withOp(s.ctx, op))
	l := &listener{filter: filter, kinds: kinds, op: op, cancel: cancel, acked: make(chan gjson.Result, 1)}
	if waited {
		l.failed = make(chan error, 1)
	}
	return l, ctx
}

// runListener starts l's loop; false when the session is closing.
func (s *listens) runListener(ctx context.Context, l *listener) bool {
	ok := s.bg.start(func() { s.listenLoop(ctx, l) })
	if !ok {
		l.cancel()
	}
	return ok
}

// listenLoop keeps one listen stream open until ctx ends.
func (s *listens) listenLoop(ctx context.Context, l *listener) {
	var delay time.Duration
	first := true
	for ctx.Err() == nil {
		opened, up, err := s.listenOnce(ctx, l, first)
		if first && !opened && l.failed != nil {
			// A subscribe waits for this: report, do not retry.
			if ctx.Err() != nil {
				err = errors.New("unsubscribed before the server acknowledged the subscription")
			}
			l.failed <- err
			return
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errListenUnsupported) {
			s.warn("the server declares change notifications but does not implement subscriptions/listen; no change notifications will reach the client")
			return
		}
		if opened {
			first = false
		}
		delay = nextListenDelay(delay, up)
		s.warn("subscriptions/listen stream ended; reconnecting", zap.ByteString("filter", l.filter), zap.Error(err),
			zap.Duration("up", up), zap.Duration("after", delay))
		if !s.wait(ctx, delay) {
			return
		}
	}
}

// listenOnce opens the stream and forwards its notifications until it
// ends. opened reports whether it was acknowledged, and up how long it
// stayed open after that.
func (s *listens) listenOnce(ctx context.Context, l *listener, first bool) (opened bool, up time.Duration, err error) {
	var ackedAt time.Time
	defer func() {
		if opened {
			up = s.clock().Sub(ackedAt)
		}
	}()
	frame := rewrite.RequestFrame([]byte("0"), "subscriptions/listen", append(append([]byte(`{"notifications":`), l.filter...), '}'))
	f, err := rewrite.Parse(frame)
	if err != nil {
		return false, 0, err
	}
	id := s.nextUpstreamID()
	body, err := rewrite.RequestUp(&f, rewrite.Up{ID: id, Meta: *s.meta.Load()})
	if err != nil {
		return false, 0, err
	}
	op := l.op
	pctx := s.traced(ctx, rwOwn)
	if !first || l.failed == nil {
		// No request of the client's waits for this stream: it may not
		// start a sign-in (a tab per reconnect); a refreshed token it uses.
		pctx = routing.Unattended(pctx)
	}
	resp, err := s.client.Post(pctx, body, nil)
	if err != nil {
		return false, 0, err
	}
	defer resp.Close()
	if resp.Status >= 300 {
		msg, _ := resp.Next()
		if gjson.GetBytes(msg, "error.code").Int() == protocol.CodeMethodNotFound {
			return false, 0, errListenUnsupported
		}
		return false, 0, fmt.Errorf("HTTP %d: %.200s", resp.Status, msg)
	}
	for {
		msg, err := resp.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream closed")
			}
			return opened, 0, err
		}
		m, perr := rewrite.Parse(rewrite.TrimFrame(msg))
		if perr != nil {
			s.warn("listen stream event skipped", zap.Error(perr))
			continue
		}
		switch {
		case m.Kind == rewrite.KindResponse:
			// A listen result (graceful end) or an error: the stream is over.
			if m.Error.Exists() {
				return opened, 0, fmt.Errorf("the server refused subscriptions/listen: %s", m.Error.Raw)
			}
			return opened, 0, errors.New("the server ended the subscription")
		case m.Method == "notifications/subscriptions/acknowledged":
			if !opened {
				ackedAt = s.clock()
			}
			opened = true
			if first {
				select {
				case l.acked <- m.Params.Get("notifications"):
				default:
				}
			} else {
				// Reconnected: changes may have been missed while the
				// stream was down.
				for _, k := range l.kinds {
					s.sendOp(rewrite.NotificationFrame(k, nil), op, []string{"listen.reconnected"})
				}
			}
		case m.Method == "notifications/cancelled":
			return opened, 0, errors.New("the server cancelled the subscription")
		case m.Kind == rewrite.KindNotification:
			s.sendOp(rewrite.ListenNotification(&m), op, []string{"subscriptionId.strip"})
		}
	}
}

// subscription answers resources/subscribe and resources/unsubscribe.
func (s *listens) subscription(ctx context.Context, c *call, f *rewrite.Frame) []byte {
	if s.meta.Load() == nil {
		return notInitialized(c, f.Method)
	}
	uri := f.Params.Get("uri")
	if uri.Type != gjson.String {
		return rewrite.ErrorFrame(c.id, protocol.CodeInvalidParams, fmt.Sprintf("Invalid params: %s needs params.uri, a string", f.Method), nil)
	}
	canSubscribe := gjson.GetBytes(s.state.Load().serverCaps, "resources.subscribe").Bool() // meta is set: initialized
	if !canSubscribe {
		return rewrite.ErrorFrame(c.id, protocol.CodeMethodNotFound,
			fmt.Sprintf("Method not found: the server at %s does not support resource subscriptions", s.client.URL()), nil)
	}
	s.mu.Lock()
	l := s.byURI[uri.Str]
	var lctx context.Context
	switch {
	case f.Method == "resources/unsubscribe":
		delete(s.byURI, uri.Str)
	case l == nil:
		// Registered, with its cancel, before it opens: a second subscribe
		// to the same URI opens no second stream, and an unsubscribe that
		// comes first still stops it.
		filter := append(rewrite.AppendString([]byte(`{"resourceSubscriptions":[`), uri.Str), "]}"...)
		l, lctx = s.newListener(filter, nil, true, c.op)
		s.byURI[uri.Str] = l
	default:
		s.mu.Unlock()
		return rewrite.ResultFrame(c.id, []byte(`{}`)) // already subscribed
	}
	s.mu.Unlock()
	if f.Method == "resources/unsubscribe" {
		if l != nil {
			l.cancel() // closing the stream ends the subscription
		}
		return rewrite.ResultFrame(c.id, []byte(`{}`))
	}
	drop := func() {
		s.mu.Lock()
		if s.byURI[uri.Str] == l {
			delete(s.byURI, uri.Str)
		}
		s.mu.Unlock()
		l.cancel()
	}
	if !s.runListener(lctx, l) {
		drop()
		return nil // the session is ending
	}
	select {
	case err := <-l.failed:
		drop()
		return rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
			fmt.Sprintf("subscribing to %s failed: %v", uri.Str, err), errorData(s.client.URL(), 0, "", ""))
	case ack := <-l.acked:
		for _, u := range ack.Get("resourceSubscriptions").Array() {
			if u.String() == uri.Str {
				return rewrite.ResultFrame(c.id, []byte(`{}`))
			}
		}
		drop()
		return rewrite.ErrorFrame(c.id, protocol.CodeInvalidParams,
			fmt.Sprintf("subscription not accepted: the server did not acknowledge %s", uri.Str), nil)
	case <-ctx.Done():
		drop()
		return nil
	case <-time.After(s.cfg.IdleTimeout):
		drop()
		return rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
			fmt.Sprintf("the server did not acknowledge the subscription to %s within %v", uri.Str, s.cfg.IdleTimeout), nil)
	}
}
