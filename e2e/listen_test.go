package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/tidwall/gjson"
)

// Subscriptions and list changes: subscriptions/listen streams, their acknowledgement,
// reconnection and unsubscribe.

// erListenWatch sits between the recorder and a handler and records every
// subscriptions/listen request: its filter, when the acknowledgement was
// written, and when its request context ended (the proxy closed the stream,
// or the handler returned).
type erListenWatch struct {
	next http.Handler
	// hold, when set, picks listen requests the server never answers: it
	// only waits for the client to close them (a slow acknowledgement).
	hold func(*erListen) bool

	changes
	listens []*erListen
}

type erListen struct {
	id     string        // the raw upstream JSON-RPC id
	filter gjson.Result  // params.notifications
	acked  chan struct{} // closed once the acknowledgement was written
	done   chan struct{} // closed when the request's context ended
	once   sync.Once
	// drop ends the stream from the server side: the handler's context is
	// cancelled, so the go-sdk ends the listen with its result.
	drop context.CancelFunc
}

func newERListenWatch(next http.Handler) *erListenWatch {
	return &erListenWatch{next: next}
}

func (w *erListenWatch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Method") != "subscriptions/listen" {
		w.next.ServeHTTP(rw, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	l := &erListen{
		id:     gjson.GetBytes(body, "id").Raw,
		filter: gjson.GetBytes(body, "params.notifications"),
		acked:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	go func() {
		<-r.Context().Done()
		close(l.done)
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	l.drop = cancel
	w.mu.Lock()
	w.listens = append(w.listens, l)
	w.notifyLocked()
	w.mu.Unlock()
	if w.hold != nil && w.hold(l) {
		<-ctx.Done()
		return
	}
	w.next.ServeHTTP(&erAckWriter{ResponseWriter: rw, l: l}, r.WithContext(ctx))
}

// wait returns the first listen request that satisfies pred.
func (w *erListenWatch) wait(t *testing.T, desc string, pred func(*erListen) bool) *erListen {
	t.Helper()
	var found *erListen
	w.until(t, func() bool {
		for _, l := range w.listens {
			if pred(l) {
				found = l
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("upstream never received %s within %v", desc, waitTimeout) })
	return found
}

func (w *erListenWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.listens)
}

// erAckWriter notices the acknowledgement in a listen response.
type erAckWriter struct {
	http.ResponseWriter
	l    *erListen
	seen []byte
}

func (a *erAckWriter) Write(b []byte) (int, error) {
	n, err := a.ResponseWriter.Write(b)
	if len(a.seen) < 1<<16 {
		a.seen = append(a.seen, b...)
		if bytes.Contains(a.seen, []byte("notifications/subscriptions/acknowledged")) {
			a.l.once.Do(func() { close(a.l.acked) })
		}
	}
	return n, err
}

func (a *erAckWriter) Flush() { _ = http.NewResponseController(a.ResponseWriter).Flush() }

func (a *erAckWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// isListChange reports whether a listen request is the list-change stream.
func (l *erListen) isListChange() bool { return !l.filter.Get("resourceSubscriptions").Exists() }

// TestEraSubscriptions: list changes and resource subscriptions over
// subscriptions/listen, as a raw client sees them.
func TestEraSubscriptions(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	up := newUpstream(t, lw)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)

	lc := lw.wait(t, "the list-change subscriptions/listen", (*erListen).isListChange)
	for _, k := range []string{"toolsListChanged", "promptsListChanged", "resourcesListChanged"} {
		if !lc.filter.Get(k).Bool() {
			t.Errorf("list-change filter %s: %s is not true (the demo declares listChanged)", lc.filter.Raw, k)
		}
	}
	erWait(t, lc.acked, "the acknowledgement of the list-change stream")

	mark := p.mark()
	resultOf(t, p.call(`"touch-tools"`, "tools/call", `{"name":"touch","arguments":{"what":"tools"}}`))
	_, l := p.waitLine(mark, "notifications/tools/list_changed", func(_ int, l outLine) bool {
		return l.method == "notifications/tools/list_changed"
	})
	if gjson.GetBytes(l, erSubscriptionID).Exists() {
		t.Errorf("list_changed keeps the 2026 subscriptionId: %s", l)
	}
	if n := lw.count(); n != 1 {
		t.Errorf("%d listen streams before any subscribe, want 1", n)
	}

	res := resultOf(t, p.call(`"sub"`, "resources/subscribe", `{"uri":"demo://readme"}`))
	if res.Raw != "{}" {
		t.Errorf("resources/subscribe = %s, want {}", res.Raw)
	}
	rl := lw.wait(t, "the listen request for demo://readme", func(l *erListen) bool { return !l.isListChange() })
	if got := rl.filter.Get("resourceSubscriptions").Raw; got != `["demo://readme"]` {
		t.Errorf("resource listen filter %s, want resourceSubscriptions [demo://readme]", rl.filter.Raw)
	}
	// A second subscribe to the same URI opens nothing new.
	resultOf(t, p.call(`"sub-again"`, "resources/subscribe", `{"uri":"demo://readme"}`))

	mark = p.mark()
	resultOf(t, p.call(`"touch-res"`, "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"demo://readme"}}`))
	_, l = p.waitLine(mark, "notifications/resources/updated", func(_ int, l outLine) bool {
		return l.method == "notifications/resources/updated"
	})
	if got := gjson.GetBytes(l, "params.uri").String(); got != "demo://readme" {
		t.Errorf("resources/updated %s, want uri demo://readme", l)
	}
	if gjson.GetBytes(l, erSubscriptionID).Exists() {
		t.Errorf("resources/updated keeps the 2026 subscriptionId: %s", l)
	}
	if n := lw.count(); n != 2 {
		t.Errorf("%d listen streams after two subscribes to one URI, want 2 (list changes + one per URI)", n)
	}

	res = resultOf(t, p.call(`"unsub"`, "resources/unsubscribe", `{"uri":"demo://readme"}`))
	if res.Raw != "{}" {
		t.Errorf("resources/unsubscribe = %s, want {}", res.Raw)
	}
	erWait(t, rl.done, "the server seeing the demo://readme listen stream closed after unsubscribe")
	ex := up.waitRequest(t, "the demo://readme listen", func(ex *exchange) bool { return ex.ID == rl.id })
	up.response(t, ex) // the handler has returned: the server dropped the subscription
	select {
	case <-lc.done:
		t.Errorf("unsubscribe closed the list-change stream too")
	default:
	}

	// No more updates reach the client; list changes still do.
	resultOf(t, p.call(`"touch-res-2"`, "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"demo://readme"}}`))
	mark = p.mark()
	resultOf(t, p.call(`"touch-prompts"`, "tools/call", `{"name":"touch","arguments":{"what":"prompts"}}`))
	p.waitLine(mark, "notifications/prompts/list_changed", func(_ int, l outLine) bool {
		return l.method == "notifications/prompts/list_changed"
	})
	resultOf(t, p.call(`"last-ping"`, "ping", ""))
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d", code)
	}
	updated := 0
	for _, l := range p.all() {
		if gjson.GetBytes(l, "method").String() == "notifications/resources/updated" {
			updated++
		}
	}
	if updated != 1 {
		t.Errorf("the client got %d resources/updated, want 1 (none after unsubscribe)", updated)
	}
	for _, l := range p.all() {
		if m := gjson.GetBytes(l, "method").String(); m == "notifications/subscriptions/acknowledged" || m == "subscriptions/listen" {
			t.Errorf("a listen message reached the client: %s", l)
		}
	}
	if n := lw.count(); n != 2 {
		t.Errorf("%d listen streams over the session, want 2 (no reconnects, nothing reopened)", n)
	}
	erWait(t, lc.done, "the list-change stream closing when the session ends")
}

// TestEraListenReconnect: a listen stream the server ends is reopened with
// the same filter (and a new upstream id); after the list-change stream
// comes back the client is told that each kind may have changed (README,
// "Change notifications"), and both streams carry notifications again.
func TestEraListenReconnect(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	up := newUpstream(t, lw)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	first := lw.wait(t, "the list-change subscriptions/listen", (*erListen).isListChange)
	erWait(t, first.acked, "the acknowledgement of the list-change stream")
	resultOf(t, p.call(`"sub"`, "resources/subscribe", `{"uri":"demo://readme"}`))
	res1 := lw.wait(t, "the demo://readme listen", func(l *erListen) bool { return !l.isListChange() })

	t.Run("list-change stream", func(t *testing.T) {
		p := p.bind(t)
		mark := p.mark()
		first.drop()
		second := lw.wait(t, "the reopened list-change listen", func(l *erListen) bool { return l != first && l.isListChange() })
		if !erJSONEqual(second.filter.Raw, first.filter.Raw) {
			t.Errorf("reopened with filter %s, want %s", second.filter.Raw, first.filter.Raw)
		}
		if second.id == first.id {
			t.Errorf("reopened with the same upstream id %s", first.id)
		}
		erWait(t, second.acked, "the acknowledgement of the reopened list-change stream")
		// The proxy tells the client once per kind, on the stream's own
		// goroutine, before it forwards anything the reopened stream
		// carries; so by the time a change made after the reconnect
		// arrives, the "may have changed" notifications are on stdout
		// before it. touch resources makes a resources/list_changed; tools
		// and prompts can only come from the reconnect.
		resultOf(t, p.call(`"touch-resources"`, "tools/call", `{"name":"touch","arguments":{"what":"resources"}}`))
		i, _ := p.waitLine(mark, "notifications/resources/list_changed", func(_ int, l outLine) bool {
			return l.method == "notifications/resources/list_changed"
		})
		seen := map[string]bool{}
		for _, l := range p.all()[mark:i] {
			seen[gjson.GetBytes(l, "method").String()] = true
		}
		for _, m := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed"} {
			if !seen[m] {
				t.Errorf("after the list-change stream was reopened the client was not sent %s (changes may have been missed while it was down); stdout so far:\n%s", m, p.dump())
			}
		}
		if t.Failed() {
			return
		}
		p.waitLine(i+1, "the resources/list_changed that touch made", func(_ int, l outLine) bool {
			return l.method == "notifications/resources/list_changed"
		})
	})

	t.Run("resource stream", func(t *testing.T) {
		p := p.bind(t)
		res1.drop()
		res2 := lw.wait(t, "the reopened demo://readme listen", func(l *erListen) bool { return l != res1 && !l.isListChange() })
		if !erJSONEqual(res2.filter.Raw, res1.filter.Raw) {
			t.Errorf("reopened with filter %s, want %s", res2.filter.Raw, res1.filter.Raw)
		}
		erWait(t, res2.acked, "the acknowledgement of the reopened demo://readme stream")
		mark := p.mark()
		resultOf(t, p.call(`"touch-res"`, "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"demo://readme"}}`))
		p.waitLine(mark, "notifications/resources/updated from the reopened stream", func(_ int, l outLine) bool {
			return l.method == "notifications/resources/updated"
		})
	})
}

// TestEraUnsubscribeBeforeAck: an unsubscribe that arrives while the
// subscribe for the same URI still waits for the server's acknowledgement
// closes the pending stream, and both requests get their one answer.
func TestEraUnsubscribeBeforeAck(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	lw.hold = func(l *erListen) bool { return !l.isListChange() }
	up := newUpstream(t, lw)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	p.request(`"sub"`, "resources/subscribe", `{"uri":"demo://readme"}`)
	rl := lw.wait(t, "the demo://readme listen", func(l *erListen) bool { return !l.isListChange() })
	res := resultOf(t, p.call(`"unsub"`, "resources/unsubscribe", `{"uri":"demo://readme"}`))
	if res.Raw != "{}" {
		t.Errorf("resources/unsubscribe = %s, want {}", res.Raw)
	}
	erWait(t, rl.done, "the server seeing the pending demo://readme stream closed")
	// The subscribe must not wait for an acknowledgement that can no
	// longer come (--idle-timeout, 10 min by default): an error or {}.
	sub := p.expect(`"sub"`)
	if !gjson.GetBytes(sub, "error").Exists() && gjson.GetBytes(sub, "result").Raw != "{}" {
		t.Errorf("resources/subscribe answered %s", sub)
	}
	resultOf(t, p.call(`"after"`, "ping", ""))
}
