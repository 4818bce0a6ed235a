package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// Serve protocol cases of the fault suite: what the 2025 transport asks of
// a POST that carries a request (JSON or an event stream, never 202), the
// priming event every stream starts with (SEP-1699), the GET stream's
// byte-bounded event log, and /healthz as the upstream's health alone.

// spRead reads an SSE body's events (comment-only blocks included, with no
// data), to its end or n of them.
func spRead(r io.Reader, n int) (evs []sseEvent) {
	sr := newSSEReader(r)
	for n < 0 || len(evs) < n {
		ev, err := sr.next()
		if err != nil {
			break
		}
		evs = append(evs, ev)
	}
	return evs
}

// spPrimed checks that ev is a priming event: an id, empty data, and the
// retry field.
func spPrimed(t *testing.T, where string, ev sseEvent) {
	t.Helper()
	if !ev.hasID || ev.id == "" || len(ev.data) != 0 || ev.retryMS == "" {
		t.Errorf("%s: first event id %q data %q retry %q, want a priming event (an id, empty data, retry)", where, ev.id, ev.data, ev.retryMS)
	}
}

// TestFaultSuiteServeProtoCancel: a request cancelled before its answer
// started is answered 200 text/event-stream (a POST that carries a request
// gets JSON or an event stream, never 202), primed, and ending without a
// response; a request's stream and the GET stream start with a priming
// event; every frame is schema-checked by the session's client.
func TestFaultSuiteServeProtoCancel(t *testing.T) {
	t.Parallel()
	hold, url, _ := startHeld(t, "demo")
	_, _, c := serveAt(t, url, false)

	type posted struct {
		resp   *http.Response
		cancel context.CancelFunc
	}
	out := make(chan posted, 1)
	go func() {
		// The answer's headers wait for its first frame: the POST runs on
		// its own goroutine.
		resp, cancel := c.do(http.MethodPost, serveRequest(`"doomed"`, "tools/call", `{"name":"echo","arguments":{"text":"`+serveHoldMark+`"}}`), nil)
		out <- posted{resp, cancel}
	}()
	hold.wait(t, 1)
	c.notify("notifications/cancelled", `{"requestId":"doomed","reason":"changed my mind"}`)
	var p posted
	select {
	case p = <-out:
	case <-time.After(waitTimeout):
		t.Fatalf("the cancelled request's POST had no answer within %v", waitTimeout)
	}
	defer p.cancel()
	defer p.resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(p.resp.Header.Get("Content-Type"))
	if p.resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		b, _ := io.ReadAll(p.resp.Body)
		t.Fatalf("the cancelled request's POST: %d %q %q, want 200 text/event-stream (a request is never answered 202)", p.resp.StatusCode, mt, b)
	}
	evs := spRead(p.resp.Body, -1)
	if len(evs) == 0 {
		t.Fatal("the cancelled request's stream is empty: want its priming event")
	}
	spPrimed(t, "the cancelled request's stream", evs[0])
	for _, ev := range evs {
		if len(ev.data) > 0 {
			t.Errorf("the cancelled request's stream carried %s: nothing is sent for a cancelled request", shortBytes(ev.data))
		}
	}
	hold.waitEnded(t, 1)

	// A request whose progress comes first: its stream is primed, with a
	// POST stream's id, and ends with the response.
	resp, cancel := c.do(http.MethodPost, serveRequest(`"counted"`, "tools/call", `{"name":"slow_count","arguments":{"n":2},"_meta":{"progressToken":"pt"}}`), nil)
	defer cancel()
	evs = spRead(resp.Body, -1)
	resp.Body.Close()
	if len(evs) < 2 {
		t.Fatalf("slow_count's stream: %d events", len(evs))
	}
	spPrimed(t, "slow_count's stream", evs[0])
	if last := evs[len(evs)-1]; gjson.GetBytes(last.data, "id").Raw != `"counted"` {
		t.Errorf("slow_count's stream ends with %s, want its response", shortBytes(last.data))
	}
	// The GET stream too.
	resp, cancel = c.do(http.MethodGet, nil, nil)
	defer cancel()
	defer resp.Body.Close()
	evs = spRead(resp.Body, 1)
	if len(evs) != 1 {
		t.Fatal("the GET stream sent no priming event")
	}
	spPrimed(t, "the GET stream", evs[0])
	serveEcho(t, c, `"after"`, "the session goes on")
}

// spHealth is GET /healthz: its status and body.
func spHealth(t *testing.T, base string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// spHealthWait waits (bounded) until /healthz answers want.
func spHealthWait(t *testing.T, base string, want int) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		st, body := spHealth(t, base)
		if st == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz = %d %q for %v, want %d", st, body, waitTimeout, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// spBreakable passes requests to next until broken; then it answers every
// one 502 with a body that quotes the request. It counts the
// server/discover POSTs it gets. It checks nothing of what it gets: a
// client's malformed initialize is passed to it as it is.
type spBreakable struct {
	next     http.Handler
	broken   atomic.Bool
	discover atomic.Int64
}

const spUpstreamWords = "UPSTREAM-SAYS"

func (b *spBreakable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if gjson.GetBytes(body, "method").String() == "server/discover" {
		b.discover.Add(1)
	}
	if b.broken.Load() {
		http.Error(w, spUpstreamWords+": "+string(body), http.StatusBadGateway)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	b.next.ServeHTTP(w, r)
}

// spUpstream serves b on a local HTTP server and returns its MCP URL.
func spUpstream(t *testing.T, b *spBreakable) string {
	t.Helper()
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestFaultSuiteServeProtoHealth: one client's initialize that the
// upstream refuses for that client's params leaves /healthz at 200; an
// upstream that fails (502) turns it 503 once a failed initialize had the
// proxy look again, and the 503 body says what failed in the proxy's own
// words: no client data, not the upstream's text or URL.
func TestFaultSuiteServeProtoHealth(t *testing.T) {
	t.Parallel()
	const marker = "CLIENT-MARKER-7f3a"
	bad := `{"protocolVersion":"2025-11-25","capabilities":"` + marker + `","clientInfo":{"name":"` + marker + `","version":"1"}}`

	t.Run("a client's bad initialize", func(t *testing.T) {
		t.Parallel()
		up := &spBreakable{next: demo.NewLegacy()}
		s := startServe(t, spUpstream(t, up))
		spHealthWait(t, s.Base, http.StatusOK)
		probes := up.discover.Load()
		c := s.rawSession(t, newServeFrames(t, true))
		a := c.send(http.MethodPost, serveRequest(`"bad"`, "initialize", bad), nil)
		if !gjson.GetBytes(a.body, "error").IsObject() {
			t.Fatalf("the bad initialize: %d %s, want a JSON-RPC error", a.status, shortBytes(a.body))
		}
		if st, body := spHealth(t, s.Base); st != http.StatusOK || strings.Contains(body, marker) {
			t.Fatalf("/healthz right after one client's bad initialize = %d %q, want 200 (the upstream is fine)", st, body)
		}
		// The proxy's own look at the upstream after the failed initialize
		// (the session's probe and the proxy's make two): /healthz is then
		// the verdict of that look.
		for deadline := time.Now().Add(waitTimeout); up.discover.Load() < probes+2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the upstream got %d server/discover after the failed initialize within %v, want 2", up.discover.Load()-probes, waitTimeout)
			}
		}
		if st, body := spHealth(t, s.Base); st != http.StatusOK || strings.Contains(body, marker) {
			t.Errorf("/healthz after one client's bad initialize = %d %q, want 200 (the upstream is fine)", st, body)
		}
	})

	t.Run("an upstream that fails", func(t *testing.T) {
		t.Parallel()
		b := &spBreakable{next: demo.NewLegacy()}
		upURL := spUpstream(t, b)
		s := startServe(t, upURL)
		spHealthWait(t, s.Base, http.StatusOK)
		b.broken.Store(true)
		c := s.rawSession(t, newServeFrames(t, true))
		a := c.send(http.MethodPost, serveRequest(`"init"`, "initialize", strings.Replace(serveInit, "e2e-serve", marker, 1)), nil)
		if !gjson.GetBytes(a.body, "error").IsObject() {
			t.Fatalf("initialize against a failing upstream: %d %s, want a JSON-RPC error", a.status, shortBytes(a.body))
		}
		body := spHealthWait(t, s.Base, http.StatusServiceUnavailable)
		u, _ := url.Parse(upURL)
		for _, leak := range []string{marker, spUpstreamWords, u.Host} {
			if strings.Contains(body, leak) {
				t.Errorf("/healthz body %q quotes %q: it says what failed in the proxy's own words only", body, leak)
			}
		}
		if !strings.Contains(body, "502") {
			t.Errorf("/healthz body %q does not name the upstream's status 502", body)
		}
		// Back up: the next initialize that succeeds makes it healthy.
		b.broken.Store(false)
		c.initialize(serveInit)
		spHealthWait(t, s.Base, http.StatusOK)
	})
}

// TestFaultSuiteServeProtoEventLog: --event-log-bytes bounds what a
// session keeps of its GET stream. Events sent while no GET was open,
// more than the bound holds: a GET resuming from the priming id before
// them is told, in a comment, that events were dropped and gets the
// newest ones only; a resume from a kept id gets what followed, with no
// such comment.
func TestFaultSuiteServeProtoEventLog(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	s := startServe(t, "--event-log-bytes", "1KiB", up.URL)
	c := s.rawSession(t, newServeFrames(t, true))
	c.initialize(serveInit)
	up.wait(t, "the proxy's GET stream", isGetStream(up.sessionOf(t, 1)))

	// The GET stream's priming id, then no GET open.
	resp, cancel := c.do(http.MethodGet, nil, nil)
	evs := spRead(resp.Body, 1)
	resp.Body.Close()
	cancel()
	if len(evs) != 1 {
		t.Fatal("the GET stream sent no priming event")
	}
	spPrimed(t, "the GET stream", evs[0])
	primed := evs[0].id

	// Six updates of some 400 bytes each: 1 KiB keeps two.
	const n = 6
	uri := func(i int) string { return fmt.Sprintf("legacy://%d/%s", i, strings.Repeat("x", 300)) }
	for i := 1; i <= n; i++ {
		resultOf(t, c.call(fmt.Sprintf(`"sub-%d"`, i), "resources/subscribe", `{"uri":"`+uri(i)+`"}`))
	}
	for i := 1; i <= n; i++ {
		resultOf(t, c.call(fmt.Sprintf(`"touch-%d"`, i), "tools/call", `{"name":"touch","arguments":{"uri":"`+uri(i)+`"}}`))
	}
	updated := func(ev sseEvent) int {
		u := gjson.GetBytes(ev.data, "params.uri").String()
		var i int
		if _, err := fmt.Sscanf(u, "legacy://%d/", &i); err != nil || gjson.GetBytes(ev.data, "method").String() != "notifications/resources/updated" {
			return 0
		}
		return i
	}
	// resume reads a GET from last until the last update (bounded).
	resume := func(last string) (evs []sseEvent, body string) {
		t.Helper()
		resp, cancel := c.do(http.MethodGet, nil, http.Header{"Last-Event-ID": {last}})
		defer cancel()
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET with Last-Event-ID %s: %d", last, resp.StatusCode)
		}
		var raw bytes.Buffer
		sr := newSSEReader(io.TeeReader(resp.Body, &raw))
		for {
			ev, err := sr.next()
			if err != nil {
				t.Fatalf("the GET from %s ended (%v) before the update of %d; it sent:\n%s", last, err, n, raw.String())
			}
			evs = append(evs, ev)
			if updated(ev) == n {
				return evs, raw.String()
			}
		}
	}
	// The first resume waits for the last update to reach the log (it
	// comes on another upstream stream than the touch's answer); the same
	// resume again is then deterministic.
	resume(primed)
	evs, raw := resume(primed)
	var got []int
	var ids []string
	for _, ev := range evs {
		if i := updated(ev); i > 0 {
			got = append(got, i)
			ids = append(ids, ev.id)
		}
	}
	if !strings.Contains(raw, "\n: events after id") && !strings.HasPrefix(raw, ": events after id") || !strings.Contains(raw, "--event-log-bytes") {
		t.Errorf("a resume from before the dropped events carries no comment naming the loss and --event-log-bytes:\n%s", raw)
	}
	if len(got) == 0 || len(got) >= n || got[len(got)-1] != n {
		t.Fatalf("resumed from %s past the bound: updates %v, want the newest few of 1..%d", primed, got, n)
	}
	for k, i := range got {
		if i != n-len(got)+1+k {
			t.Errorf("resumed past the bound: updates %v, want the newest in order", got)
			break
		}
	}
	if len(got) < 2 {
		return
	}
	// Within the log: what followed, and no comment.
	evs, raw = resume(ids[0])
	var within []int
	for _, ev := range evs {
		if i := updated(ev); i > 0 {
			within = append(within, i)
		}
	}
	if strings.Contains(raw, "dropped") || len(within) != len(got)-1 || within[0] != got[1] {
		t.Errorf("resumed from kept id %s: updates %v (comment %v), want %v", ids[0], within, strings.Contains(raw, "dropped"), got[1:])
	}
}
