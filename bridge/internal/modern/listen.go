package modern

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Subscriptions: the legacy client's unsolicited list_changed and
// resources/subscribe map onto 2026 subscriptions/listen streams.
//
//   - After notifications/initialized, one stream asks for the list changes
//     the server declared (listChanged in discover). None is opened when
//     the server declares none.
//   - All of the session's resource subscriptions share one more stream,
//     whose filter lists every subscribed URI. When the set
//     changes, one goroutine (reconcile) opens a stream for the new set
//     and, once the server acknowledges it, closes the old one: make before
//     break. A subscribe is answered once an acknowledgement lists its URI;
//     an unsubscribe once the stream without it has taken over (or has
//     failed to: the old stream then stays, and its updates of that URI
//     are dropped). A session so holds at most two listen streams for its
//     resources, whatever the number of URIs, and at most
//     Config.MaxSubscriptions URIs; one more subscribe is refused.
//   - Notifications across a swap: the server sends nothing on the new
//     stream before its acknowledgement, and from then on sends there
//     whatever concerns the new set. The old stream delivers until the
//     proxy reads that acknowledgement and is then closed, its unread
//     events dropped, so nothing reaches the client twice. What can be
//     lost is only what the server wrote on the old stream before
//     acknowledging the new one and the proxy had not read yet: the
//     window of one network delivery, less than the reconnect after a drop
//     that 2026 subscriptions/listen allows loses.
//   - Acknowledgements and listen results are consumed; notifications are
//     forwarded with the subscriptionId removed.
//   - A stream that drops is reopened with bounded backoff, which starts
//     again from the minimum only after a stream that stayed up for
//     ListenStableAfter. The list-change stream then tells the client each
//     kind may have changed, since changes may have been missed.

// ListenStableAfter is how long a stream must have stayed up, from its
// acknowledgement, for the reopening delay to start again from the
// minimum. A server that acknowledges each stream and closes it at once is
// so reopened ever more slowly, up to link.BackoffMax, instead of four
// times a second (each reopening sends the client list_changed).
const ListenStableAfter = 30 * time.Second

// nextListenDelay is the delay before reopening a listen stream, after prev
// (0 for none) and a stream that stayed up for up after its acknowledgement.
func nextListenDelay(prev, up time.Duration) time.Duration {
	if prev <= 0 || up >= ListenStableAfter {
		return link.BackoffMin
	}
	return min(prev*2, link.BackoffMax)
}

var errListenUnsupported = errors.New("subscriptions/listen is not implemented by the server")

// listener is one subscriptions/listen stream, reopened until stopped.
type listener struct {
	filter []byte             // params.notifications
	op     string             // the trace op of every record the stream causes
	cancel context.CancelFunc // set at creation, never changed
	acked  chan gjson.Result  // the first acknowledgement's notifications
	failed chan error         // the first attempt failed (resource subscriptions)
	done   chan struct{}      // closed when the stream's loop has ended
	kinds  []string           // the list_changed methods to emit after a reconnect
	uris   []string           // the resource URIs asked for, sorted (nil: list changes)
}

// listens are the modern session's subscriptions/listen streams, run in
// the session's background group.
type listens struct {
	env       *link.Env
	srv       *server
	mu        sync.Mutex
	listening atomic.Bool // the list-change stream was started

	// The resource subscriptions, under mu. want is the set the client
	// asked for; gen counts its changes, op is the trace op of the latest
	// (the next stream's); changed wakes reconcile. applied is the gen
	// reconcile last acted on; appliedCh is closed (and replaced) when it moves.
	want        map[string]*subEntry
	gen         uint64
	op          string
	changed     chan struct{}
	reconciling bool
	applied     uint64
	appliedCh   chan struct{}
}

// subEntry is one subscribed URI. done is closed once it is settled:
// acknowledged by the server (refused nil) or refused (and out of want).
type subEntry struct {
	done    chan struct{}
	settled bool              // under listens.mu
	waiters []context.Context // of the subscribes waiting for it, under listens.mu
	refused *rewrite.Error    // the client's answer, set before done is closed
}

// openListChanged opens the list-change stream for the kinds the server
// declared, once, after notifications/initialized.
func (s *listens) openListChanged() {
	caps := gjson.ParseBytes(s.srv.state.Load().serverCaps) // after a successful initialize
	filter := []byte(`{`)
	var kinds []string
	for _, k := range []string{"tools", "prompts", "resources"} {
		if caps.Get(k + ".listChanged").Bool() {
			filter = append(filter, `"`+k+`ListChanged":true,`...)
			kinds = append(kinds, "notifications/"+k+"/list_changed")
		}
	}
	if len(kinds) == 0 {
		return
	}
	filter[len(filter)-1] = '}' // the last ','
	// Caused by notifications/initialized: its records get an op of their own.
	s.startListener(filter, kinds, nil, s.env.NextOp())
}

// startListener starts a stream that ends with the session or with its
// cancel, or returns nil when the session is closing. A resource stream
// (uris) reports its first attempt's failure, which a subscribe waits for.
func (s *listens) startListener(filter []byte, kinds, uris []string, op string) *listener {
	ctx, cancel := context.WithCancel(link.WithOp(s.env.Ctx, op))
	l := &listener{filter: filter, kinds: kinds, uris: uris, op: op, cancel: cancel, acked: make(chan gjson.Result, 1), done: make(chan struct{})}
	if uris != nil {
		l.failed = make(chan error, 1)
	}
	if !s.env.BG.Start(func() { defer close(l.done); s.listenLoop(ctx, l) }) {
		cancel()
		return nil
	}
	return l
}

// listenLoop keeps one listen stream open until ctx ends.
func (s *listens) listenLoop(ctx context.Context, l *listener) {
	var delay time.Duration
	first := true
	for ctx.Err() == nil {
		ackedAt, err := s.listenOnce(ctx, l, first)
		opened := !ackedAt.IsZero()
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
			s.env.Warn("the server declares change notifications but does not implement subscriptions/listen; no change notifications will reach the client")
			return
		}
		var up time.Duration
		if opened {
			first, up = false, s.env.Now().Sub(ackedAt)
		}
		delay = nextListenDelay(delay, up)
		s.env.Warn("subscriptions/listen stream ended; reconnecting", zap.ByteString("filter", l.filter), zap.Error(err),
			zap.Duration("up", up), zap.Duration("after", delay))
		if !s.env.Sleep(ctx, delay) {
			return
		}
	}
}

// listenOnce opens the stream and forwards its notifications until it
// ends; ackedAt is when it was first acknowledged (zero: never).
func (s *listens) listenOnce(ctx context.Context, l *listener, first bool) (ackedAt time.Time, err error) {
	body, _, err := s.srv.ownRequest("subscriptions/listen", append(append([]byte(`{"notifications":`), l.filter...), '}'))
	if err != nil {
		return ackedAt, err
	}
	pctx := s.env.Observed(ctx, "", link.RwOwn)
	if !first || l.failed == nil {
		// No request of the client's waits for this stream: it may not
		// start a sign-in (a tab per reconnect); a refreshed token it uses.
		pctx = routing.Unattended(pctx)
	}
	resp, err := s.env.Client.Post(pctx, body, nil)
	if err != nil {
		return ackedAt, err
	}
	defer resp.Close()
	if resp.Status >= 300 {
		msg, _ := resp.Next()
		if gjson.GetBytes(msg, "error.code").Int() == protocol.CodeMethodNotFound {
			return ackedAt, errListenUnsupported
		}
		return ackedAt, fmt.Errorf("HTTP %d: %.200s", resp.Status, msg)
	}
	for {
		msg, err := resp.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the stream closed")
			}
			return ackedAt, err
		}
		m, perr := rewrite.Parse(rewrite.TrimFrame(msg))
		if perr != nil {
			s.env.Warn("listen stream event skipped", zap.Error(perr))
			continue
		}
		switch {
		case m.Kind == rewrite.KindResponse:
			// A listen result (graceful end) or an error: the stream is over.
			if m.Error.Exists() {
				return ackedAt, fmt.Errorf("the server refused subscriptions/listen: %s", m.Error.Raw)
			}
			return ackedAt, errors.New("the server ended the subscription")
		case m.Method == "notifications/subscriptions/acknowledged":
			if ackedAt.IsZero() {
				ackedAt = s.env.Now()
			}
			if first {
				select {
				case l.acked <- m.Params.Get("notifications"):
				default:
				}
			} else {
				// Reconnected: changes may have been missed while the
				// stream was down.
				for _, k := range l.kinds {
					s.env.Send(rewrite.NotificationFrame(k, nil), l.op, []string{"listen.reconnected"})
				}
			}
		case m.Method == "notifications/cancelled":
			return ackedAt, errors.New("the server cancelled the subscription")
		case m.Kind == rewrite.KindNotification:
			if ctx.Err() != nil {
				// Replaced by a newer stream (which delivers from its
				// acknowledgement on), or ended: nothing more from here.
				return ackedAt, ctx.Err()
			}
			if l.uris != nil && m.Method == "notifications/resources/updated" && s.unsubscribed(l, m.Params.Get("uri").String()) {
				s.env.Debug("resources/updated of an unsubscribed URI dropped", zap.String("uri", m.Params.Get("uri").String()))
				continue
			}
			s.env.Send(rewrite.ListenNotification(&m), l.op, []string{"subscriptionId.strip"})
		}
	}
}

func (s *listens) subscription(ctx context.Context, c *link.Call, f *rewrite.Frame) []byte {
	uri := f.Params.Get("uri")
	if uri.Type != gjson.String {
		return rewrite.ErrorFrame(c.ID, protocol.CodeInvalidParams, fmt.Sprintf("Invalid params: %s needs params.uri, a string", f.Method), nil)
	}
	if !gjson.GetBytes(s.srv.state.Load().serverCaps, "resources.subscribe").Bool() {
		return rewrite.ErrorFrame(c.ID, protocol.CodeMethodNotFound,
			fmt.Sprintf("Method not found: the server at %s does not support resource subscriptions", s.env.URL()), nil)
	}
	if f.Method == "resources/unsubscribe" {
		return s.unsubscribe(ctx, c, uri.Str)
	}
	return s.subscribe(ctx, c, uri.Str)
}

// subscribe adds uri to the set and answers once the server acknowledged a
// stream that lists it, or refused it. A URI already subscribed (or on its
// way) is not asked for again.
func (s *listens) subscribe(ctx context.Context, c *link.Call, uri string) []byte {
	s.mu.Lock()
	e := s.want[uri]
	if e == nil {
		if len(s.want) >= s.env.Cfg.MaxSubscriptions {
			s.dropCancelledLocked(c.Op)
		}
		if n, limit := len(s.want), s.env.Cfg.MaxSubscriptions; n >= limit {
			s.mu.Unlock()
			s.env.Warn("resources/subscribe refused: the session holds its maximum of subscriptions", zap.String("uri", uri), zap.Int("max", limit))
			return s.env.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInternalError,
				fmt.Appendf(nil, `{"subscriptions":%d,"maxSubscriptions":%d}`, n, limit),
				"the proxy refused resources/subscribe of %s: this session already holds %d resource subscriptions, its maximum; unsubscribe from one first (resources/unsubscribe), or raise %v",
				uri, limit, rewrite.HintMaxSubscriptions))
		}
		if !s.reconciling {
			if !s.env.BG.Start(s.reconcile) {
				s.mu.Unlock()
				return nil // the session is ending
			}
			s.reconciling = true
		}
		e = &subEntry{done: make(chan struct{})}
		uri = strings.Clone(uri) // kept: not a view of the client's frame
		s.want[uri] = e
		s.changeLocked(c.Op)
	}
	e.waiters = append(e.waiters, ctx)
	s.mu.Unlock()
	select {
	case <-e.done:
		if r := e.refused; r != nil {
			return rewrite.ErrorFrame(c.ID, r.Code, r.Message, r.Data)
		}
		return rewrite.ResultFrame(c.ID, []byte(`{}`))
	case <-ctx.Done():
		// Cancelled (or the session is ending): the subscription goes too,
		// unless the server acknowledged it meanwhile or another subscribe
		// of the URI still waits for it.
		s.mu.Lock()
		e.waiters = slices.DeleteFunc(e.waiters, func(w context.Context) bool { return w == ctx })
		if s.want[uri] == e && !e.settled && len(e.waiters) == 0 {
			delete(s.want, uri)
			s.settleLocked(e, errSubscribeCancelled)
			s.changeLocked(c.Op)
		}
		s.mu.Unlock()
		return nil
	}
}

var errSubscribeCancelled = &rewrite.Error{Code: protocol.CodeInternalError, Message: "the subscribe was cancelled"}

// dropCancelledLocked frees the slots of subscribes every waiter of which
// was cancelled: the client's cancel ends the wait on the reader, before
// the next request is read, while the waiting goroutine may not have run
// yet, and a subscribe read after the cancel must find the slot free.
func (s *listens) dropCancelledLocked(op string) {
	for uri, e := range s.want {
		if !e.settled && len(e.waiters) > 0 && !slices.ContainsFunc(e.waiters, func(w context.Context) bool { return w.Err() == nil }) {
			delete(s.want, uri)
			s.settleLocked(e, errSubscribeCancelled)
			s.changeLocked(op)
		}
	}
}

// unsubscribe takes uri out of the set and answers once the stream without
// it has taken over (or failed to: its updates are dropped all the same).
func (s *listens) unsubscribe(ctx context.Context, c *link.Call, uri string) []byte {
	s.mu.Lock()
	e := s.want[uri]
	if e == nil {
		s.mu.Unlock()
		return rewrite.ResultFrame(c.ID, []byte(`{}`)) // not subscribed
	}
	delete(s.want, uri)
	if !e.settled {
		s.settleLocked(e, &rewrite.Error{Code: protocol.CodeInternalError,
			Message: fmt.Sprintf("subscribing to %s failed: unsubscribed before the server acknowledged the subscription", uri),
			Data:    link.ErrorData(s.env.URL(), 0, "", "")})
	}
	gen := s.changeLocked(c.Op)
	for s.applied < gen {
		ch := s.appliedCh
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
	return rewrite.ResultFrame(c.ID, []byte(`{}`))
}

// changeLocked records a change of the set made by the request op, wakes
// reconcile and returns the change's generation.
func (s *listens) changeLocked(op string) uint64 {
	s.gen++
	s.op = op
	s.wake() // if already woken, it reads the set afresh all the same
	return s.gen
}

// settleLocked settles a pending entry: acknowledged (r nil) or refused.
func (s *listens) settleLocked(e *subEntry, r *rewrite.Error) {
	e.settled, e.refused = true, r
	close(e.done)
}

// unsubscribed reports whether uri is one that l asks for but the client
// no longer wants: l is the stream an unsubscribe could not replace.
func (s *listens) unsubscribed(l *listener, uri string) bool {
	if _, ok := slices.BinarySearch(l.uris, uri); !ok {
		return false // another URI, or a sub-resource: the server's word
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.want[uri] == nil
}

// reconcile keeps one stream serving the set of subscribed URIs (make
// before break, as the overview above says), until the session ends. It is
// started by the first subscribe.
func (s *listens) reconcile() {
	var cur *listener   // the acknowledged stream, or nil
	var curSet []string // the URIs cur serves, sorted
	defer func() {
		if cur != nil {
			cur.cancel() // the session ends: nothing waits for it
		}
	}()
	for {
		select {
		case <-s.env.Ctx.Done():
			return
		case <-s.changed:
		}
		s.mu.Lock()
		gen, op := s.gen, s.op
		set := slices.Sorted(maps.Keys(s.want))
		s.mu.Unlock()
		var refusal *rewrite.Error // why the new stream did not take over
		var accepted map[string]bool
		switch {
		case slices.Equal(set, curSet):
		case len(set) == 0:
			s.stop(cur)
			cur, curSet = nil, nil
		default:
			added := slices.DeleteFunc(slices.Clone(set), func(u string) bool { _, ok := slices.BinarySearch(curSet, u); return ok })
			l, ack, r, superseded := s.openResources(set, added, op)
			if s.env.Ctx.Err() != nil {
				return
			}
			if superseded {
				continue // woken: start over with the set as it is now
			}
			if r != nil {
				refusal = r
				s.env.Warn("the stream of the new resource subscriptions failed; the previous one stays", zap.Int("uris", len(set)), zap.String("error", r.Message))
				break
			}
			accepted = map[string]bool{}
			for _, u := range ack.Get("resourceSubscriptions").Array() {
				accepted[u.String()] = true
			}
			if cur != nil {
				s.stop(cur) // replaced: it delivers nothing more
			}
			cur, curSet = l, slices.DeleteFunc(slices.Clone(set), func(u string) bool { return !accepted[u] })
			if len(curSet) == 0 {
				s.stop(cur)
				cur, curSet = nil, nil
			}
		}
		s.settle(gen, set, curSet, accepted, refusal)
	}
}

// stop ends a resource stream and waits until its loop has let go of the
// connection, so that a session never holds more than two of them and an
// answer that follows the change follows the close. Only a client that
// stopped reading its frames could make the wait long (until the session ends).
func (s *listens) stop(l *listener) {
	l.cancel()
	select {
	case <-l.done:
	case <-s.env.Ctx.Done():
	}
}

func (s *listens) wake() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// settle answers the pending subscriptions after reconcile acted on the
// set of generation gen: tried is the set it asked for, curSet what the
// current stream serves, accepted the URIs its acknowledgement listed (nil
// when no new stream was acknowledged), refusal why a new stream failed.
func (s *listens) settle(gen uint64, tried, curSet []string, accepted map[string]bool, refusal *rewrite.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uri, e := range s.want {
		if e.settled {
			if accepted != nil && !accepted[uri] {
				s.env.Warn("the server no longer acknowledges a resource subscription", zap.String("uri", uri))
			}
			continue
		}
		if _, ok := slices.BinarySearch(curSet, uri); ok {
			s.settleLocked(e, nil)
			continue
		}
		if _, ok := slices.BinarySearch(tried, uri); !ok {
			continue // added since: the next round asks for it
		}
		r := &rewrite.Error{Code: protocol.CodeInvalidParams, Message: fmt.Sprintf("subscription not accepted: the server did not acknowledge %s", uri)}
		if refusal != nil {
			r = &rewrite.Error{Code: refusal.Code, Message: fmt.Sprintf("subscribing to %s failed: %s", uri, refusal.Message), Data: refusal.Data}
		}
		delete(s.want, uri)
		s.settleLocked(e, r)
	}
	if gen > s.applied {
		s.applied = gen
		close(s.appliedCh)
		s.appliedCh = make(chan struct{})
	}
}

// openResources opens a stream for the sorted URIs in set and waits for its
// acknowledgement (within the idle timeout), or its first attempt's
// failure. It returns the running stream and the acknowledged
// notifications, or why it failed (the stream is then stopped). A change
// of the set that drops one of the URIs added supersedes it (stopped too);
// any other change is left for the next round.
func (s *listens) openResources(set, added []string, op string) (l *listener, ack gjson.Result, r *rewrite.Error, superseded bool) {
	filter := []byte(`{"resourceSubscriptions":[`)
	for _, u := range set {
		filter = append(rewrite.AppendString(filter, u), ',')
	}
	filter = append(filter[:len(filter)-1], "]}"...) // set is never empty
	ending := &rewrite.Error{Code: protocol.CodeInternalError, Message: "the session is ending"}
	if l = s.startListener(filter, nil, set, op); l == nil {
		return nil, ack, ending, false
	}
	timer := time.NewTimer(s.env.Cfg.IdleTimeout)
	defer timer.Stop()
	changed := false
	defer func() {
		if changed {
			s.wake() // for the next round (or a superseded one's restart)
		}
	}()
	for r == nil && !superseded {
		select {
		case ack := <-l.acked:
			return l, ack, nil, false
		case err := <-l.failed:
			r = &rewrite.Error{Code: protocol.CodeInternalError, Message: err.Error(), Data: link.ErrorData(s.env.URL(), 0, "", "")}
		case <-s.changed:
			// Superseded when a URI added is no longer wanted (its subscribe
			// was cancelled, or it was unsubscribed).
			s.mu.Lock()
			superseded = slices.ContainsFunc(added, func(u string) bool { return s.want[u] == nil })
			s.mu.Unlock()
			changed = true
		case <-s.env.Ctx.Done():
			r = ending
		case <-timer.C:
			r = &rewrite.Error{Code: protocol.CodeInternalError,
				Message: fmt.Sprintf("the server did not acknowledge the subscription within %v (%s)", s.env.Cfg.IdleTimeout, s.env.Hint(rewrite.HintIdleTimeout))}
		}
	}
	s.stop(l)
	return nil, ack, r, superseded
}
