package bridge

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/modern"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// listenClock is a fake clock for the listen loop. Every reading advances
// it by step, so a stream appears to stay up step long; sleep records each
// delay, lets plan set the step for the next stream, and after limit
// delays blocks until the session ends.
type listenClock struct {
	mu     sync.Mutex
	t      time.Time
	step   time.Duration
	delays []time.Duration
	plan   func(n int) time.Duration // the step after the n-th delay
	limit  int
	full   chan struct{} // closed at the limit-th delay
}

func (c *listenClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.step)
	return c.t
}

func (c *listenClock) sleep(ctx context.Context, d time.Duration) bool {
	c.mu.Lock()
	c.delays = append(c.delays, d)
	n := len(c.delays)
	c.step = c.plan(n)
	if n == c.limit {
		close(c.full)
	}
	c.mu.Unlock()
	if n < c.limit {
		return true
	}
	<-ctx.Done()
	return false
}

// TestListenBackoffFlappingServer runs a session against a server that
// acknowledges every subscriptions/listen stream and closes it at once. On
// the fake clock the reconnect delays grow to the cap, start again after one
// stream that stayed up for modern.ListenStableAfter, and grow again; each
// reconnect is one stream at the server and one list_changed at the client.
func TestListenBackoffFlappingServer(t *testing.T) {
	var listens atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id := gjson.GetBytes(b, "id").Raw
		switch gjson.GetBytes(b, "method").Str {
		case "server/discover":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, discoverResult)
		case "subscriptions/listen": // acknowledged, then closed
			listens.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s},\"notifications\":%s}}\n\n",
				id, gjson.GetBytes(b, "params.notifications").Raw)
		default:
			if id == "" {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete"}}`, id)
		}
	}))
	t.Cleanup(srv.Close)

	const stable = 9 // the stream after the 9th delay stays up
	clock := &listenClock{
		t:     time.Date(2026, 7, 28, 0, 0, 0, 0, time.UTC),
		limit: 11,
		full:  make(chan struct{}),
		plan: func(n int) time.Duration {
			if n == stable {
				return modern.ListenStableAfter + time.Second
			}
			return 0
		},
	}
	client, err := routing.New(routing.Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Client: client, Hints: flagHints})
	s.env.Sleep, s.env.Now = clock.sleep, clock.now
	h := run(t, s, client)
	h.send(initReq)
	if r := h.next(); !gjson.Get(r, "result.capabilities.tools.listChanged").Bool() {
		t.Fatalf("initialize answer: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	select {
	case <-clock.full:
	case <-time.After(wait):
		clock.mu.Lock()
		delays := slices.Clone(clock.delays)
		clock.mu.Unlock()
		t.Fatalf("only %d reconnect delays within %v: %v", len(delays), wait, delays)
	}
	// The client hears of each reconnect (streams 2 to 11), nothing else.
	for i := 0; i < clock.limit-1; i++ {
		if r := h.next(); gjson.Get(r, "method").Str != "notifications/tools/list_changed" {
			t.Fatalf("frame %d to the client: %s", i, r)
		}
	}
	clock.mu.Lock()
	delays := slices.Clone(clock.delays)
	clock.mu.Unlock()
	want := []time.Duration{
		250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, link.BackoffMax, link.BackoffMax, // flapping: to the cap
		link.BackoffMin, 2 * link.BackoffMin, // after a stream that stayed up
	}
	if !slices.Equal(delays, want) {
		t.Errorf("reconnect delays %v, want %v", delays, want)
	}
	if n := listens.Load(); n != int32(clock.limit) {
		t.Errorf("%d listen streams at the server, want %d (the first and one per reconnect)", n, clock.limit)
	}
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("more frames to the client: %q", rest)
	}
}
