package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// harness is a Server in front of the demo server, on an httptest server.
type harness struct {
	t   *testing.T
	srv *Server
	url string // the /mcp endpoint
}

func newHarness(t *testing.T, mod func(*Config)) *harness {
	t.Helper()
	upURL, stop, err := demo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return newHarnessFor(t, upURL, mod)
}

func newHarnessFor(t *testing.T, upURL string, mod func(*Config)) *harness {
	t.Helper()
	client, err := routing.New(routing.Config{URL: upURL})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Bridge: bridge.Config{Client: client, DrainTimeout: time.Second}}
	if mod != nil {
		mod(&cfg)
	}
	srv := New(cfg)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
		client.CloseIdle()
	})
	return &harness{t: t, srv: srv, url: hs.URL + Path}
}

// reply is what came back for one HTTP request.
type reply struct {
	status int
	header http.Header
	body   string   // a JSON body
	frames []string // the SSE events' data
	ids    []string // the SSE events' ids
}

// answer is the JSON-RPC answer: the JSON body, or the last SSE frame.
func (r reply) answer() gjson.Result {
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		if len(r.frames) == 0 {
			return gjson.Result{}
		}
		return gjson.Parse(r.frames[len(r.frames)-1])
	}
	return gjson.Parse(r.body)
}

// do sends one request; hdr are name, value pairs.
func (h *harness) do(method, sid, body string, hdr ...string) reply {
	h.t.Helper()
	r, err := h.try(method, sid, body, hdr...)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// readEvents reads SSE events until the end, or until n of them.
func readEvents(body io.Reader, n int) (frames, ids []string) {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	id := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			frames = append(frames, strings.TrimPrefix(line, "data: "))
			ids = append(ids, id)
			if len(frames) == n {
				return frames, ids
			}
		}
	}
	return frames, ids
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"test","version":"0"}}}`

// initialize starts a session and returns its id.
func (h *harness) initialize() string {
	h.t.Helper()
	r := h.do("POST", "", initBody)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" || !r.answer().Get("result.protocolVersion").Exists() {
		h.t.Fatalf("initialize: %d %q %s %v", r.status, sid, r.body, r.frames)
	}
	if r := h.do("POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		h.t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	return sid
}

func callBody(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

func TestInitializeAndEchoAsJSON(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	if len(sid) != 32 {
		t.Errorf("session id %q: want 128 random bits in hex", sid)
	}
	r := h.do("POST", sid, callBody(2, "echo", `{"text":"hi"}`))
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("echo: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if got := r.answer().Get("result.content.0.text").String(); got != "hi" || r.answer().Get("id").Raw != "2" {
		t.Errorf("echo answered %s", r.body)
	}
	if h.srv.Sessions() != 1 {
		t.Errorf("%d sessions, want 1", h.srv.Sessions())
	}
}

// TestProgressMakesAStream: frames before the answer make the POST's answer
// a text/event-stream, whose events carry increasing ids and end with the
// answer.
func TestProgressMakesAStream(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	r := h.do("POST", sid, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow_count","arguments":{"n":2},"_meta":{"progressToken":"p"}}}`)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("slow_count with a progress token: %q, want text/event-stream", r.header.Get("Content-Type"))
	}
	var progress int
	for _, f := range r.frames {
		if gjson.Get(f, "method").String() == "notifications/progress" {
			progress++
		}
	}
	if progress != 2 || r.answer().Get("id").Raw != `"c"` || !r.answer().Get("result").Exists() {
		t.Errorf("frames %v", r.frames)
	}
	seen := map[string]bool{}
	for _, id := range r.ids {
		if !strings.HasPrefix(id, postEventPrefix) || seen[id] {
			t.Errorf("event ids %v: each must be a POST stream's, and unique", r.ids)
		}
		seen[id] = true
	}
}

// TestJSONOnlyClient: a client that accepts only JSON gets the answer as
// JSON; what would have come before it goes to the GET stream.
func TestJSONOnlyClient(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	r := h.do("POST", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":1},"_meta":{"progressToken":"p"}}}`, "Accept", "application/json")
	if r.header.Get("Content-Type") != "application/json" || !r.answer().Get("result").Exists() {
		t.Fatalf("%d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	frames := h.getEvents(sid, "", 1)
	if len(frames) != 1 || gjson.Get(frames[0], "method").String() != "notifications/progress" {
		t.Errorf("GET stream: %v, want the progress", frames)
	}
}

// getEvents opens the GET stream and reads n events (bounded).
func (h *harness) getEvents(sid, lastEventID string, n int) []string {
	h.t.Helper()
	frames, _ := h.getEventsIDs(sid, lastEventID, n, wait)
	return frames
}

func (h *harness) getEventsIDs(sid, lastEventID string, n int, bound time.Duration) (frames, ids []string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET: %d", resp.StatusCode)
	}
	return readEvents(resp.Body, n)
}

func TestSessionIDRules(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	for _, tc := range []struct {
		name, method, sid, body string
		hdr                     []string
		want                    int
	}{
		{"no session id", "POST", "", callBody(2, "echo", `{"text":"x"}`), nil, http.StatusBadRequest},
		{"unknown session", "POST", "0123456789abcdef0123456789abcdef", callBody(2, "echo", `{"text":"x"}`), nil, http.StatusNotFound},
		{"GET without session", "GET", "", "", nil, http.StatusBadRequest},
		{"DELETE unknown", "DELETE", "nope", "", nil, http.StatusNotFound},
		{"bad protocol version", "POST", sid, callBody(2, "echo", `{"text":"x"}`), []string{"Mcp-Protocol-Version", "1999-01-01"}, http.StatusBadRequest},
		{"batch", "POST", sid, "[" + callBody(2, "echo", `{"text":"x"}`) + "]", nil, http.StatusBadRequest},
		{"not JSON", "POST", sid, "{nope", nil, http.StatusBadRequest},
		{"initialize in a session", "POST", sid, initBody, nil, http.StatusBadRequest},
		{"not acceptable", "POST", sid, callBody(2, "echo", `{"text":"x"}`), []string{"Accept", "text/html"}, http.StatusNotAcceptable},
		{"PUT", "PUT", sid, "", nil, http.StatusMethodNotAllowed},
		{"not JSON content", "POST", sid, callBody(2, "echo", `{"text":"x"}`), []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
	} {
		r := h.do(tc.method, tc.sid, tc.body, tc.hdr...)
		if r.status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.status, r.body, tc.want)
		}
		if r.status >= 400 && !gjson.Get(r.body, "error.message").Exists() {
			t.Errorf("%s: body %q is not a JSON-RPC error", tc.name, r.body)
		}
	}
	// A malformed message with an id is answered on its POST.
	if r := h.do("POST", sid, `{"jsonrpc":"2.0","id":42}`); r.status != http.StatusOK || r.answer().Get("id").Raw != "42" || !r.answer().Get("error.code").Exists() {
		t.Errorf("a message with an id and no method: %d %s", r.status, r.body)
	}
	// DELETE ends it; then 404.
	if r := h.do("DELETE", sid, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	if r := h.do("POST", sid, callBody(3, "echo", `{"text":"x"}`)); r.status != http.StatusNotFound {
		t.Errorf("after DELETE: %d, want 404", r.status)
	}
}

// countingUpstream counts the requests that reach it.
func countingUpstream(t *testing.T) (string, *atomic.Int64) {
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	t.Cleanup(up.Close)
	return up.URL, &n
}

func TestOriginAndHost(t *testing.T) {
	upURL, hits := countingUpstream(t)
	h := newHarnessFor(t, upURL, func(c *Config) { c.AllowOrigins = []string{"https://app.example.com"} })
	for _, tc := range []struct {
		hdr  []string
		want int
	}{
		{[]string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{[]string{"Origin", "null"}, http.StatusForbidden},
		{[]string{"Host", "evil.example"}, http.StatusForbidden},
		{[]string{"Origin", "http://localhost:3000"}, 0},
		{[]string{"Origin", "https://app.example.com"}, 0},
		{[]string{"Origin", "HTTPS://APP.example.com:443"}, 0},
	} {
		r := h.doHost("POST", initBody, tc.hdr...)
		if tc.want != 0 && r.status != tc.want {
			t.Errorf("%v: %d, want %d", tc.hdr, r.status, tc.want)
		}
		if tc.want == 0 && r.status == http.StatusForbidden {
			t.Errorf("%v: refused: %s", tc.hdr, r.body)
		}
		if tc.want == 0 && r.header.Get("Access-Control-Allow-Origin") == "" {
			t.Errorf("%v: no CORS headers for an accepted origin", tc.hdr)
		}
		if tc.want == http.StatusForbidden && (hits.Load() != 0 || r.header.Get("Access-Control-Allow-Origin") != "") {
			t.Fatalf("%v: the upstream was reached, or CORS allowed it", tc.hdr)
		}
	}
}

// doHost is do, where a "Host" pair sets the request's Host.
func (h *harness) doHost(method, body string, hdr ...string) reply {
	h.t.Helper()
	var rest []string
	host := ""
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			host = hdr[i+1]
			continue
		}
		rest = append(rest, hdr[i], hdr[i+1])
	}
	if host == "" {
		return h.do(method, "", body, rest...)
	}
	req, _ := http.NewRequest(method, h.url, strings.NewReader(body))
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestToken(t *testing.T) {
	upURL, hits := countingUpstream(t)
	h := newHarnessFor(t, upURL, func(c *Config) { c.Token = "s3cret" })
	for _, auth := range []string{"", "Bearer nope", "Basic s3cret", "Bearer s3cret0"} {
		r := h.do("POST", "", initBody, "Authorization", auth)
		if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: %d, want 401 with WWW-Authenticate", auth, r.status)
		}
	}
	if hits.Load() != 0 {
		t.Error("the upstream was reached without the token")
	}
	if r := h.do("POST", "", initBody, "Authorization", "Bearer s3cret"); r.status == http.StatusUnauthorized {
		t.Errorf("with the token: %d", r.status)
	}
	// A browser's preflight carries no token.
	if r := h.do("OPTIONS", "", "", "Origin", "http://localhost:3000"); r.status != http.StatusNoContent || r.header.Get("Access-Control-Expose-Headers") != "Mcp-Session-Id" {
		t.Errorf("preflight: %d %v", r.status, r.header)
	}
	// /healthz stays open.
	resp, err := testClient.Get(strings.TrimSuffix(h.url, Path) + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		t.Error("/healthz asks for the token")
	}
	// /metrics needs the token, as the README says.
	for token, want := range map[string]int{"": http.StatusUnauthorized, "s3cret": http.StatusOK} {
		req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(h.url, Path)+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := testClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/metrics with token %q: %d, want %d", token, resp.StatusCode, want)
		}
	}
	if !bearerMatches("bearer s3cret", "s3cret") || bearerMatches("Bearer", "s3cret") {
		t.Error("bearerMatches")
	}
}

func TestMaxSessions(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxSessions = 1 })
	h.initialize()
	r := h.do("POST", "", initBody)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("one past the bound: %d, Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
}

// TestGetStreamResumes: frames of no request reach the GET stream with
// ids; a second GET at once is refused; a GET with Last-Event-ID gets what
// came after that id, and a GET without one only what no GET was sent.
func TestGetStreamResumes(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	sess := h.srv.lookup(sid)
	c := &conn{sess: sess}
	for i := 1; i <= 2; i++ {
		_ = c.Write(bridge.Out{Frame: fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":%d}}`, i)})
	}
	frames, ids := h.getEventsIDs(sid, "", 2, wait)
	if len(frames) != 2 {
		t.Fatalf("GET: %v", frames)
	}
	_ = c.Write(bridge.Out{Frame: []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":3}}`)})
	got, _ := h.getEventsIDs(sid, ids[0], 2, wait)
	if len(got) != 2 || gjson.Get(got[0], "params.n").Int() != 2 || gjson.Get(got[1], "params.n").Int() != 3 {
		t.Errorf("resumed after %s: %v, want n=2 and n=3", ids[0], got)
	}
	// Everything was sent: a fresh GET has nothing (bounded wait), once
	// the server has seen the last one go.
	waitGetClosed(t, sess)
	if got, _ := h.getEventsIDs(sid, "", 1, 300*time.Millisecond); len(got) != 0 {
		t.Errorf("a fresh GET replayed %v", got)
	}
	// One GET stream at a time. The fresh GET's client gave up; its
	// handler lets go of the stream once it sees that.
	waitGetClosed(t, sess)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a GET with no other open: %d, want 200", resp.StatusCode)
	}
	if r := h.do("GET", sid, "", "Accept", "text/event-stream"); r.status != http.StatusConflict {
		t.Errorf("a second GET: %d, want 409", r.status)
	}
}

// TestTasksListIsPerSession: a task made in one session is listed there
// only.
func TestTasksListIsPerSession(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Token = "tok" })
	auth := []string{"Authorization", "Bearer tok"}
	init := func() string {
		r := h.do("POST", "", initBody, auth...)
		sid := r.header.Get("Mcp-Session-Id")
		h.do("POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth...)
		return sid
	}
	a, b := init(), init()
	r := h.do("POST", a, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"ms":50},"task":{"ttl":60000}}}`, auth...)
	taskID := r.answer().Get("result.task.taskId").String()
	if taskID == "" {
		t.Fatalf("no task: %s %v", r.body, r.frames)
	}
	list := func(sid string) string {
		return h.do("POST", sid, `{"jsonrpc":"2.0","id":3,"method":"tasks/list"}`, auth...).answer().Get("result.tasks.#.taskId").Raw
	}
	if got := list(a); !strings.Contains(got, taskID) {
		t.Errorf("session a lists %s, want %s", got, taskID)
	}
	if got := list(b); got != "[]" {
		t.Errorf("session b lists %s, want none", got)
	}
}

func TestIdleSessionExpires(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 50 * time.Millisecond })
	sid := h.initialize()
	deadline := time.Now().Add(wait)
	for h.srv.lookup(sid) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the idle session did not expire")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := h.do("POST", sid, callBody(2, "echo", `{"text":"x"}`)); r.status != http.StatusNotFound {
		t.Errorf("after expiry: %d, want 404", r.status)
	}
}

// TestShutdownAnswersInFlight: a request in flight when the server shuts
// down gets exactly one answer.
func TestShutdownAnswersInFlight(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Bridge.DrainTimeout = 100 * time.Millisecond })
	sid := h.initialize()
	got := make(chan reply, 1)
	go func() {
		got <- h.do("POST", sid, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":50,"delay_ms":200}}}`, "Accept", "application/json")
	}()
	deadline := time.Now().Add(wait)
	for h.srv.lookup(sid).activeCount() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	select {
	case r := <-got:
		a := r.answer()
		if a.Get("id").Raw != "9" || !(a.Get("result").Exists() || a.Get("error").Exists()) {
			t.Errorf("in flight at shutdown: %d %s", r.status, r.body)
		}
	case <-time.After(wait):
		t.Fatal("no answer after shutdown")
	}
	if r := h.do("POST", "", initBody); r.status != http.StatusServiceUnavailable {
		t.Errorf("initialize after shutdown: %d, want 503", r.status)
	}
}

func TestHealthz(t *testing.T) {
	upURL, _ := countingUpstream(t)
	h := newHarnessFor(t, upURL, nil)
	base := strings.TrimSuffix(h.url, Path)
	status := func() int {
		resp, err := testClient.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status() != http.StatusServiceUnavailable {
		t.Error("healthy before any probe")
	}
	h.srv.health.Store(&health{ok: true})
	if status() != http.StatusOK {
		t.Error("not healthy after a probe succeeded")
	}
	// An initialize the upstream fails (HTTP 500) makes it unhealthy, once
	// the proxy's own probe confirms it, and leaves no session behind.
	if r := h.do("POST", "", initBody); r.header.Get("Mcp-Session-Id") != "" || !r.answer().Get("error").Exists() {
		t.Errorf("failed initialize: %s, session %q", r.body, r.header.Get("Mcp-Session-Id"))
	}
	for deadline := time.Now().Add(wait); status() != http.StatusServiceUnavailable; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("healthy %v after a failed initialize", wait)
		}
	}
	if n := h.srv.Sessions(); n != 0 {
		t.Errorf("%d sessions after a failed initialize", n)
	}
}

func TestMetrics(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	h.do("POST", sid, callBody(2, "echo", `{"text":"x"}`))
	resp, err := testClient.Get(strings.TrimSuffix(h.url, Path) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		"mcp_tasks_proxy_sessions 1",
		`mcp_tasks_proxy_requests_total{method="tools/call",outcome="result"} 1`,
		"mcp_tasks_proxy_upstream_latency_seconds_count",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// waitGetClosed waits (bounded) until no GET stream holds the session.
func waitGetClosed(t *testing.T, sess *session) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		sess.mu.Lock()
		closed := sess.getKick == nil
		sess.mu.Unlock()
		if closed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a GET stream still holds the session after %v", wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openStream POSTs a request and returns its SSE reader (the caller
// closes the body).
func (h *harness) openStream(sid, body string) (*http.Response, *bufio.Scanner) {
	h.t.Helper()
	req, _ := http.NewRequest("POST", h.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := testClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body.Close()
		h.t.Fatalf("%s: %d %q, want a stream", body, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return resp, sc
}

// nextFrame reads the stream's next data line.
func nextFrame(t *testing.T, sc *bufio.Scanner) gjson.Result {
	t.Helper()
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return gjson.Parse(d)
		}
	}
	t.Fatalf("the stream ended: %v", sc.Err())
	return gjson.Result{}
}

// TestElicitationOnThePOSTStream: the proxy's request to the client (MRTR)
// travels on the call's POST stream; the client's answer, POSTed as a
// response, reaches the session; the call's answer ends the stream.
func TestElicitationOnThePOSTStream(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	resp, sc := h.openStream(sid, callBody(5, "ask_name", `{}`))
	defer resp.Body.Close()
	ask := nextFrame(t, sc)
	if ask.Get("method").String() != "elicitation/create" || !ask.Get("id").Exists() {
		t.Fatalf("first frame %s, want elicitation/create", ask.Raw)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Ada"}}}`, ask.Get("id").Raw)
	if r := h.do("POST", sid, answer); r.status != http.StatusAccepted {
		t.Fatalf("the client's answer: %d %s", r.status, r.body)
	}
	final := nextFrame(t, sc)
	if final.Get("id").Raw != "5" || !strings.Contains(final.Get("result.content.0.text").String(), "Ada") {
		t.Errorf("answer %s", final.Raw)
	}
}

// TestCancelEndsThePOST: notifications/cancelled ends the call's stream
// with no answer.
func TestCancelEndsThePOST(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	resp, sc := h.openStream(sid, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":50,"delay_ms":200},"_meta":{"progressToken":"p"}}}`)
	defer resp.Body.Close()
	if f := nextFrame(t, sc); f.Get("method").String() != "notifications/progress" {
		t.Fatalf("first frame %s", f.Raw)
	}
	if r := h.do("POST", sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d", r.status)
	}
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && gjson.Get(d, "id").Raw == "6" {
			t.Errorf("an answer after the cancel: %s", d)
		}
	}
}

// TestDeleteAnswersInFlight: DELETE ends the session; a call in flight
// still gets its one answer, and the session is gone at once.
func TestDeleteAnswersInFlight(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Bridge.DrainTimeout = 100 * time.Millisecond })
	sid := h.initialize()
	resp, sc := h.openStream(sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":50,"delay_ms":200},"_meta":{"progressToken":"p"}}}`)
	defer resp.Body.Close()
	nextFrame(t, sc)
	if r := h.do("DELETE", sid, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: %d", r.status)
	}
	if h.srv.lookup(sid) != nil {
		t.Error("the session is still in the table")
	}
	answers := 0
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && gjson.Get(d, "id").Raw == "7" {
			answers++
			if !gjson.Get(d, "error.message").Exists() {
				t.Errorf("answer %s, want an error", d)
			}
		}
	}
	if answers != 1 {
		t.Errorf("%d answers, want 1", answers)
	}
}

// TestLegacyUpstream: a 2025 upstream is passed through, session by
// session.
func TestLegacyUpstream(t *testing.T) {
	upURL, _, stop, err := demo.StartLegacy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	h := newHarnessFor(t, upURL, nil)
	a, b := h.initialize(), h.initialize()
	for i, sid := range []string{a, b} {
		r := h.do("POST", sid, callBody(2, "echo", fmt.Sprintf(`{"text":"s%d"}`, i)))
		if got := r.answer().Get("result.content.0.text").String(); got != fmt.Sprintf("s%d", i) {
			t.Errorf("session %d: echo answered %s %v", i, r.body, r.frames)
		}
	}
}

// TestGetStreamCarriesUpdates: a resources/updated the upstream sends for
// a subscription reaches the session's GET stream.
func TestGetStreamCarriesUpdates(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	if r := h.do("POST", sid, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"demo://readme"}}`); !r.answer().Get("result").Exists() {
		t.Fatalf("subscribe: %d %s %v", r.status, r.body, r.frames)
	}
	got := make(chan []string, 1)
	go func() { got <- h.getEvents(sid, "", 1) }()
	// The listen stream opens in the background: touch until the update
	// comes (bounded).
	deadline := time.After(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 3; ; i++ {
		h.do("POST", sid, callBody(i, "touch", `{"what":"resource","uri":"demo://readme"}`))
		select {
		case frames := <-got:
			if len(frames) != 1 || gjson.Get(frames[0], "method").String() != "notifications/resources/updated" {
				t.Errorf("GET stream: %v", frames)
			}
			return
		case <-deadline:
			t.Fatal("no update on the GET stream")
		case <-tick.C:
		}
	}
}

// TestConcurrentSessions: sessions side by side, each with a call, a task
// and an elicitation, see only their own answers.
func TestConcurrentSessions(t *testing.T) {
	h := newHarness(t, nil)
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- h.session(i) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// session runs one session's script; it reports what went wrong.
func (h *harness) session(i int) error {
	r, err := h.try("POST", "", initBody)
	if err != nil {
		return err
	}
	sid := r.header.Get("Mcp-Session-Id")
	if _, err := h.try("POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	text := fmt.Sprintf("s%d", i)
	if r, err := h.try("POST", sid, callBody(2, "echo", fmt.Sprintf(`{"text":%q}`, text))); err != nil || r.answer().Get("result.content.0.text").String() != text {
		return fmt.Errorf("session %d: echo: %v %s", i, err, r.body)
	}
	r, err = h.try("POST", sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"ms":10},"task":{"ttl":60000}}}`)
	task := r.answer().Get("result.task.taskId").String()
	if err != nil || task == "" {
		return fmt.Errorf("session %d: task: %v %s", i, err, r.body)
	}
	if r, err := h.try("POST", sid, `{"jsonrpc":"2.0","id":4,"method":"tasks/list"}`); err != nil || r.answer().Get("result.tasks.#.taskId").Raw != `["`+task+`"]` {
		return fmt.Errorf("session %d: tasks/list: %v %s", i, err, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait) // bounds the stream's reads
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.url, strings.NewReader(callBody(5, "ask_name", `{}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := testClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	frames := make(chan string, 64) // never blocks the reader: it ends with the body
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				frames <- d
			}
		}
	}()
	ask := gjson.Parse(<-frames)
	if ask.Get("method").String() != "elicitation/create" {
		return fmt.Errorf("session %d: %s, want elicitation/create", i, ask.Raw)
	}
	if _, err := h.try("POST", sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":%q}}}`, ask.Get("id").Raw, text)); err != nil {
		return err
	}
	if got := gjson.Get(<-frames, "result.content.0.text").String(); !strings.Contains(got, text) {
		return fmt.Errorf("session %d: ask_name answered %q", i, got)
	}
	return nil
}

// try is do for other goroutines: an error instead of a fatal test.
func (h *harness) try(method, sid, body string, hdr ...string) (reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r.frames, r.ids = readEvents(resp.Body, -1)
		return r, nil
	}
	b, err := io.ReadAll(resp.Body)
	r.body = string(b)
	return r, err
}

// testClient bounds every exchange of these tests, streams included.
var testClient = &http.Client{Timeout: wait}

func TestTooLarge(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Bridge.MaxMessageBytes = 1024 })
	sid := h.initialize()
	r := h.do("POST", sid, callBody(2, "echo", `{"text":"`+strings.Repeat("x", 2000)+`"}`))
	if r.status != http.StatusRequestEntityTooLarge || !gjson.Get(r.body, "error.message").Exists() {
		t.Errorf("%d %s, want 413 with a JSON-RPC error", r.status, r.body)
	}
	if r := h.do("POST", sid, callBody(3, "echo", `{"text":"small"}`)); r.answer().Get("result.content.0.text").String() != "small" {
		t.Errorf("after a refused message: %s", r.body)
	}
}

// TestCancelledThenEnded: a request the client cancelled gets nothing when
// its session ends before the session said so, not even the error of the
// end: an event stream (a request is never answered 202) that ends without
// a frame.
func TestCancelledThenEnded(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	sess := h.srv.lookup(sid)
	cancelled := newPostStream([]byte("9"), "tools/call", true)
	other := newPostStream([]byte("10"), "tools/call", true)
	defer sess.track(cancelled)()
	defer sess.track(other)()
	sess.cancelled("9")
	h.srv.Close()
	for _, tc := range []struct {
		st   *postStream
		want string // the Content-Type
	}{{cancelled, "text/event-stream"}, {other, "application/json"}} {
		rec := httptest.NewRecorder()
		h.srv.answer(rec, httptest.NewRequest("POST", Path, nil), sess, tc.st, true)
		body := rec.Body.String()
		frames, _ := readEvents(strings.NewReader(body), -1)
		answered := strings.Contains(body, `"error"`)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != tc.want || len(frames) != 0 || answered != (tc.st == other) {
			t.Errorf("request %s: %d %s %q, want 200 %s, answered only if not cancelled", tc.st.id, rec.Code, rec.Header().Get("Content-Type"), body, tc.want)
		}
	}
}

// TestKeepAliveOnAPOST: a long request of a client that takes SSE gets
// keep-alive comments while it runs (its pending JSON answer becomes a
// stream at the first), then its one answer. A client that takes only JSON
// gets none: its answer stays JSON.
func TestKeepAliveOnAPOST(t *testing.T) {
	saved := keepAlive
	keepAlive = 20 * time.Millisecond
	t.Cleanup(func() { keepAlive = saved })
	h := newHarness(t, nil)
	sid := h.initialize()
	const call = `{"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":"slow_count","arguments":{"n":3,"delay_ms":100}}}`
	resp, sc := h.openStream(sid, call)
	defer resp.Body.Close()
	comments, answers := 0, 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == ": keep-alive":
			if answers > 0 {
				t.Error("a keep-alive after the answer")
			}
			comments++
		case strings.HasPrefix(line, "data: "):
			if gjson.Get(strings.TrimPrefix(line, "data: "), "id").Raw == `"k"` {
				answers++
			}
		}
	}
	if comments == 0 || answers != 1 {
		t.Errorf("%d keep-alive comments and %d answers, want some and one", comments, answers)
	}
	if r := h.do("POST", sid, call, "Accept", "application/json"); !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") || r.answer().Get("id").Raw != `"k"` {
		t.Errorf("a JSON-only client's long call: %q %s", r.header.Get("Content-Type"), r.body)
	}
}

// activeCount is the number of HTTP requests open on the session.
func (sess *session) activeCount() int {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.active
}

// TestRequestWithResultMember: a request that also carries a "result"
// member is a request to the session (rewrite.Parse), so it is answered on
// its POST, not accepted as a notification with its answer lost.
func TestRequestWithResultMember(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	r := h.do("POST", sid, `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}},"result":null}`)
	if r.status != http.StatusOK || r.answer().Get("id").Raw != "41" {
		t.Errorf("status %d, answer %s; want 200 and the answer to id 41", r.status, r.answer().Raw)
	}
}
