package bridge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// TestMain installs the flag names the command layer installs, so that
// messages are checked as users read them.
func TestMain(m *testing.M) {
	rewrite.SetHintText(flagHints)
	goleak.VerifyTestMain(m)
}

// wait bounds every wait in these tests; nothing here depends on speed.
const wait = 10 * time.Second

// upstream is a scriptable modern server.
type testUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  []string
	headers []http.Header
	handle  func(w http.ResponseWriter, r *http.Request, body string) // for everything but discover
	disc    string                                                    // discover result
	tools   string                                                    // tools/list tools array
}

func (u *testUpstream) toolsJSON() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tools == "" {
		return "[]"
	}
	return u.tools
}

const discoverResult = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}}},"instructions":"hi","ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"9"}}}`

func newUpstream(t *testing.T) *testUpstream {
	u := &testUpstream{disc: discoverResult}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.headers = append(u.headers, r.Header.Clone())
		h := u.handle
		disc := u.disc
		u.mu.Unlock()
		id := gjson.Get(body, "id").Raw
		switch gjson.Get(body, "method").Str {
		case "server/discover":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, disc)
			return
		case "subscriptions/listen": // the list-change stream: acknowledged, then quiet
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s},\"notifications\":%s}}\n\n",
				id, gjson.Get(body, "params.notifications").Raw)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		case "tools/list": // also the proxy's own lazy listing before a first tools/call
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":%s,"ttlMs":0,"cacheScope":"public"}}`, id, u.toolsJSON())
			return
		}
		if h == nil {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","echo":%s}}`, id, orNull(gjson.Get(body, "params.arguments").Raw))
			return
		}
		h(w, r, body)
	}))
	t.Cleanup(u.Close)
	return u
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

func (u *testUpstream) setHandler(h func(w http.ResponseWriter, r *http.Request, body string)) {
	u.mu.Lock()
	u.handle = h
	u.mu.Unlock()
}

// hold makes u hold each request, unanswered, until release is closed
// (nil: never) or the request is cancelled. arrived is closed when the
// first request arrives; started counts them all.
func (u *testUpstream) hold(release <-chan struct{}) (arrived <-chan struct{}, started *atomic.Int32) {
	first := make(chan struct{})
	var once sync.Once
	started = new(atomic.Int32)
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		started.Add(1)
		once.Do(func() { close(first) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	return first, started
}

func (u *testUpstream) lastBody(method string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := len(u.bodies) - 1; i >= 0; i-- {
		if gjson.Get(u.bodies[i], "method").Str == method {
			return u.bodies[i]
		}
	}
	return ""
}

// harness runs a Session over pipes.
type harness struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan string
	done   chan error
	cancel context.CancelFunc
}

func start(t *testing.T, url string, cfg Config) *harness {
	t.Helper()
	client, err := routing.New(routing.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = client
	if cfg.Hints == nil {
		cfg.Hints = flagHints
	}
	return run(t, New(cfg), client)
}

// run serves s over pipes: stdin is h.in, stdout lines come on h.lines.
func run(t *testing.T, s *Session, client *routing.Client) *harness {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, in: inW, lines: make(chan string, 1024), done: make(chan error, 1), cancel: cancel}
	go func() {
		h.done <- s.Run(ctx, inR, outW)
		outW.Close()
		client.CloseIdle()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() { h.stop(); cancel() })
	return h
}

func (h *harness) send(lines ...string) {
	h.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(h.in, l+"\n"); err != nil {
			h.t.Fatalf("write: %v", err)
		}
	}
}

// next returns the next frame the session wrote.
func (h *harness) next() string {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if !ok {
			h.t.Fatal("stdout closed")
		}
		if !gjson.Valid(l) {
			h.t.Fatalf("stdout line is not JSON: %q", l)
		}
		return l
	case <-time.After(wait):
		h.t.Fatal("no frame from the session")
	}
	return ""
}

// stop ends stdin and waits for Run; every remaining line is returned.
func (h *harness) stop() []string {
	h.in.Close()
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
		h.done <- nil
	case <-time.After(wait):
		h.t.Fatal("Run did not return after stdin EOF")
	}
	var rest []string
	for l := range h.lines {
		rest = append(rest, l)
	}
	return rest
}

const initReq = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true},"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`

func initialized(t *testing.T, u *testUpstream, cfg Config) *harness {
	h := start(t, u.URL, cfg)
	h.send(initReq)
	if r := h.next(); gjson.Get(r, "result.protocolVersion").Str != "2025-06-18" {
		t.Fatalf("initialize answer: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

func TestInitializeFromDiscover(t *testing.T) {
	u := newUpstream(t)
	h := start(t, u.URL, Config{})
	h.send(initReq)
	r := h.next()
	// The tasks extension becomes the legacy tasks capability.
	want := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"up","version":"9"},"instructions":"hi"}}`
	if r != want {
		t.Errorf("initialize\n got: %s\nwant: %s", r, want)
	}
	d := u.lastBody("server/discover")
	caps := gjson.Get(d, `params._meta.io\.modelcontextprotocol/clientCapabilities`).Raw
	if caps != `{"roots":{},"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}` {
		t.Errorf("discover clientCapabilities = %s", caps)
	}
	if ci := gjson.Get(d, `params._meta.io\.modelcontextprotocol/clientInfo`).Raw; ci != `{"name":"c","version":"1"}` {
		t.Errorf("discover clientInfo = %s", ci)
	}
}

func TestInitializeSynthesizesServerInfoAndVersion(t *testing.T) {
	u := newUpstream(t)
	u.disc = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"public"}`
	h := start(t, u.URL, Config{})
	h.send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2099-01-01","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	r := h.next()
	if gjson.Get(r, "result.protocolVersion").Str != "2025-11-25" {
		t.Errorf("protocolVersion for an unknown request: %s", r)
	}
	if gjson.Get(r, "result.serverInfo").Raw != `{"name":"127.0.0.1","version":"unknown"}` {
		t.Errorf("serverInfo not synthesized: %s", r)
	}
}

func TestLocalPingAndSetLevel(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	// The list-change stream opens on its own schedule: it is not counted.
	requests := func() int { return len(u.allBut("subscriptions/listen")) }
	before := requests()
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if r := h.next(); r != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("ping: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"bogus"}}`)
	if r := h.next(); gjson.Get(r, "error.code").Int() != -32602 {
		t.Errorf("bad level: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"notice"}}`)
	if r := h.next(); r != `{"jsonrpc":"2.0","id":3,"result":{}}` {
		t.Errorf("setLevel: %s", r)
	}
	after := requests()
	if after != before {
		t.Errorf("ping/setLevel reached the upstream (%d requests)", after-before)
	}
	h.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	h.next()
	if lv := gjson.Get(u.lastBody("tools/list"), `params._meta.io\.modelcontextprotocol/logLevel`).Str; lv != "notice" {
		t.Errorf("logLevel in upstream _meta = %q, want notice", lv)
	}
}

func TestRequestBeforeInitialize(t *testing.T) {
	u := newUpstream(t)
	h := start(t, u.URL, Config{})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	r := h.next()
	if gjson.Get(r, "error.code").Int() != -32600 || !strings.Contains(r, "initialize") {
		t.Errorf("request before initialize: %s", r)
	}
}

func TestDuplicateInFlightID(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, gjson.Get(body, "id").Raw)
	})
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
	if r := h.next(); gjson.Get(r, "error.code").Int() != -32600 || gjson.Get(r, "id").Raw != "7" {
		t.Errorf("duplicate id: %s", r)
	}
	close(release)
	if r := h.next(); r != `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}` {
		t.Errorf("first request: %s", r)
	}
}

func TestCancelledRequestGetsNoAnswer(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	arrived := make(chan struct{})
	upstreamGone := make(chan struct{})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		if gjson.Get(body, "params.name").Str != "slow" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, gjson.Get(body, "id").Raw)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		close(arrived)
		<-r.Context().Done()
		close(upstreamGone)
	})
	h.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":1}}}`)
	if r := h.next(); gjson.Get(r, "method").Str != "notifications/progress" {
		t.Fatalf("want progress first, got %s", r)
	}
	<-arrived
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}`)
	select {
	case <-upstreamGone:
	case <-time.After(wait):
		t.Fatal("the upstream request was not cancelled")
	}
	h.send(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"fast"}}`)
	if r := h.next(); gjson.Get(r, "id").Str != "after" {
		t.Errorf("after the cancel, got %s", r)
	}
	for _, l := range h.stop() {
		if gjson.Get(l, "id").Str == "slow" {
			t.Errorf("an answer was sent for the cancelled id: %s", l)
		}
	}
}

func TestInFlightBound(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{MaxInFlight: 2})
	var active, peak atomic.Int32
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		n := active.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		arrived <- struct{}{}
		<-release
		active.Add(-1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, gjson.Get(body, "id").Raw)
	})
	// stdin is a synchronous pipe: with the bound reached the session stops
	// reading, so the writes block until answers free a slot.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 8 {
			io.WriteString(h.in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`+"\n", 100+i))
		}
	}()
	<-arrived
	<-arrived
	close(release)
	seen := map[string]bool{}
	for range 8 {
		seen[gjson.Get(h.next(), "id").Raw] = true
	}
	if len(seen) != 8 {
		t.Errorf("answers for %d distinct ids, want 8", len(seen))
	}
	<-sent
	if p := peak.Load(); p > 2 {
		t.Errorf("%d requests were in flight upstream at once; the bound is 2", p)
	}
}

func TestExitOnEOFWithWorkInFlight(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	arrived, _ := u.hold(nil)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	h.stop() // fails the test if Run does not return within the bound
}

func TestBadInputKeepsServing(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{MaxMessageBytes: 1 << 20})
	h.send("this is not json")
	if r := h.next(); r != `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not valid JSON; send one JSON-RPC message per line"}}` {
		t.Errorf("parse error: %s", r)
	}
	h.send(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)
	if r := h.next(); gjson.Get(r, "error.code").Int() != -32600 || gjson.Get(r, "id").Raw != "null" {
		t.Errorf("batch: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":"r","result":{}}`) // a response nobody asked for: ignored
	h.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}`)
	if r := h.next(); gjson.Get(r, "error.code").Int() != -32602 || gjson.Get(r, "id").Raw != "5" {
		t.Errorf("array params: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\r")
	if r := h.next(); r != `{"jsonrpc":"2.0","id":6,"result":{}}` {
		t.Errorf("CRLF line: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"t":"` + strings.Repeat("a", 2<<20) + `"}}}`)
	if r := h.next(); gjson.Get(r, "id").Raw != "null" || !strings.Contains(r, "--max-message-size") {
		t.Errorf("oversized line: %.200s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if r := h.next(); r != `{"jsonrpc":"2.0","id":8,"result":{}}` {
		t.Errorf("after bad input: %s", r)
	}
}

func TestUpstreamFailuresAnswerOnce(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	cases := []struct {
		name    string
		handler func(w http.ResponseWriter, r *http.Request, id string)
		status  int64
		code    int64
		text    string
	}{
		{"500 html", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(500)
			io.WriteString(w, "<h1>oops</h1>")
		}, 500, -32603, "HTTP 500"},
		{"502 empty", func(w http.ResponseWriter, r *http.Request, id string) { w.WriteHeader(502) }, 502, -32603, "HTTP 502"},
		{"200 html", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html></html>")
		}, 200, -32603, "web page"},
		{"400 json-rpc", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"Unknown tool"}}`, id)
		}, 400, -32602, "Unknown tool"},
		{"404 plain", func(w http.ResponseWriter, r *http.Request, id string) { http.NotFound(w, r) }, 404, -32603, "check the URL path"},
		{"401", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(401)
		}, 401, -32603, "Authorization"},
		{"invalid json", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`)
		}, 200, -32603, "HTTP 200"},
		{"wrong id", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":999999,"result":{}}`)
		}, 200, -32603, "instead of"},
		{"sse ends early", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
		}, 200, -32603, "ended before the response"},
		{"reset", func(w http.ResponseWriter, r *http.Request, id string) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, 0, -32603, "broke"},
		{"unknown resultType", func(w http.ResponseWriter, r *http.Request, id string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"mystery"}}`, id)
		}, 200, -32603, "unrecognized or misplaced resultType"},
	}
	for i, c := range cases {
		u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) { c.handler(w, r, gjson.Get(body, "id").Raw) })
		id := fmt.Sprintf(`"case-%d"`, i)
		h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"x"}}`)
		var r string
		for {
			r = h.next()
			if gjson.Get(r, "method").Exists() {
				continue // a forwarded notification
			}
			break
		}
		if gjson.Get(r, "id").Raw != id {
			t.Errorf("%s: answer for %s, want %s", c.name, gjson.Get(r, "id").Raw, id)
		}
		if got := gjson.Get(r, "error.code").Int(); got != c.code {
			t.Errorf("%s: code %d, want %d: %s", c.name, got, c.code, r)
		}
		if c.status != 0 && gjson.Get(r, "error.data.httpStatus").Int() != c.status {
			t.Errorf("%s: error.data.httpStatus missing: %s", c.name, r)
		}
		if !strings.Contains(r, c.text) {
			t.Errorf("%s: message does not say %q: %s", c.name, c.text, r)
		}
	}
	// Still serving, and nothing more was sent for any case.
	u.setHandler(nil)
	h.send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	if r := h.next(); gjson.Get(r, "id").Str != "last" {
		t.Errorf("after the faults: %s", r)
	}
}

// allBut returns the bodies of every request except those of one method.
func (u *testUpstream) allBut(method string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for _, b := range u.bodies {
		if gjson.Get(b, "method").Str != method {
			out = append(out, b)
		}
	}
	return out
}

func (u *testUpstream) count(method string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, b := range u.bodies {
		if gjson.Get(b, "method").Str == method {
			n++
		}
	}
	return n
}

const weatherTool = `[{"name":"get_weather","inputSchema":{"type":"object","properties":{"city":{"type":"string","x-mcp-header":"City"}}}}]`

func TestLazyToolsListGivesParamHeaders(t *testing.T) {
	u := newUpstream(t)
	u.tools = weatherTool
	h := initialized(t, u, Config{})
	var city atomic.Value
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		city.Store(r.Header.Get("Mcp-Param-City"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, gjson.Get(body, "id").Raw)
	})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Zürich"}}}`)
	if r := h.next(); gjson.Get(r, "result").Raw != `{"content":[]}` {
		t.Fatalf("call: %s", r)
	}
	if got := city.Load(); got != "=?base64?WsO8cmljaA==?=" {
		t.Errorf("Mcp-Param-City = %v, want the Base64 sentinel of Zürich", got)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Paris"}}}`)
	h.next()
	if got := city.Load(); got != "Paris" {
		t.Errorf("Mcp-Param-City = %v, want Paris", got)
	}
	if n := u.count("tools/list"); n != 1 {
		t.Errorf("the proxy listed tools %d times, want once", n)
	}
}

func TestHeaderMismatchRefreshesToolsAndRetriesOnce(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	h.send(`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`) // the client lists: no annotation yet
	h.next()
	u.mu.Lock()
	u.tools = weatherTool // the server adds one
	u.mu.Unlock()
	var calls atomic.Int32
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		id := gjson.Get(body, "id").Raw
		if r.Header.Get("Mcp-Param-City") == "" {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":"Header mismatch: missing Mcp-Param-City"}}`, id)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, id)
	})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Paris"}}}`)
	if r := h.next(); gjson.Get(r, "result.content.0.text").Str != "ok" {
		t.Fatalf("after the refresh: %s", r)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("tools/call reached the server %d times, want 2 (one rejected, one retry)", n)
	}
	// A mismatch that a refresh cannot fix is passed through after one retry.
	calls.Store(0)
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32020,"message":"Header mismatch"}}`, gjson.Get(body, "id").Raw)
	})
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{"city":"Paris"}}}`)
	r := h.next()
	if gjson.Get(r, "error.code").Int() != -32020 || gjson.Get(r, "error.data.httpStatus").Int() != 400 {
		t.Errorf("persistent mismatch: %s", r)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("tools/call reached the server %d times, want 2", n)
	}
}

func TestUnsupportedVersionReprobes(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	var calls atomic.Int32
	reject := func(w http.ResponseWriter, id string, supported string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":%s,"requested":"2026-07-28"}}}`, id, supported)
	}
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		id := gjson.Get(body, "id").Raw
		if calls.Add(1) == 1 {
			reject(w, id, `["2026-07-28"]`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"prompts":[]}}`, id)
	})
	discovers := u.count("server/discover")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`)
	if r := h.next(); gjson.Get(r, "result").Raw != `{"prompts":[]}` {
		t.Fatalf("after the re-probe: %s", r)
	}
	if u.count("server/discover") != discovers+1 {
		t.Errorf("no re-probe after -32022")
	}
	// The server turned legacy: -32603 carrying the server's data.
	u.mu.Lock()
	u.disc = `{"resultType":"complete","supportedVersions":["2025-11-25"],"capabilities":{}}`
	u.mu.Unlock()
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		reject(w, gjson.Get(body, "id").Raw, `["2025-11-25"]`)
	})
	h.send(`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`)
	r := h.next()
	if gjson.Get(r, "error.code").Int() != -32603 || gjson.Get(r, "error.data.supported").Raw != `["2025-11-25"]` {
		t.Errorf("version rejected for good: %s", r)
	}
}

func TestIdleTimeoutAnswersOnce(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{IdleTimeout: 300 * time.Millisecond})
	gone := make(chan struct{})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		<-r.Context().Done() // a silent server
		close(gone)
	})
	h.send(`{"jsonrpc":"2.0","id":"slow","method":"prompts/get","params":{"name":"p"}}`)
	r := h.next()
	if gjson.Get(r, "id").Str != "slow" || gjson.Get(r, "error.code").Int() != -32603 || !strings.Contains(r, "--idle-timeout") {
		t.Errorf("idle timeout: %s", r)
	}
	select {
	case <-gone:
	case <-time.After(wait):
		t.Fatal("the upstream stream was not closed after the timeout")
	}
}

func TestProgressNeverGoesBack(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, p := range []int{1, 3, 2, 3, 4} {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":%d}}\n\n", p)
		}
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", gjson.Get(body, "id").Raw)
	})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"t"}}}`)
	var got []int64
	for {
		r := h.next()
		if gjson.Get(r, "id").Exists() {
			break
		}
		got = append(got, gjson.Get(r, "params.progress").Int())
	}
	if fmt.Sprint(got) != "[1 3 4]" {
		t.Errorf("progress sent %v, want [1 3 4]", got)
	}
}

func TestMRTRMissingCapabilityAndFailedInput(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{}) // declares roots and elicitation, not sampling
	var calls atomic.Int32
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		method := gjson.Get(body, "params.arguments.need").String()
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"k":{"method":%q,"params":{"messages":[],"maxTokens":5}}},"requestState":"s"}}`,
			gjson.Get(body, "id").Raw, method)
	})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"need":"sampling/createMessage"}}}`)
	r := h.next()
	if gjson.Get(r, "error.code").Int() != -32021 || gjson.Get(r, "error.data.missingCapability").Str != "sampling" {
		t.Errorf("missing capability: %s", r)
	}
	// roots/list is declared; the client fails it: a tool reports that as
	// a tool error the model can read.
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"need":"roots/list"}}}`)
	ask := h.next()
	if gjson.Get(ask, "method").Str != "roots/list" {
		t.Fatalf("want a roots/list request, got %s", ask)
	}
	h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"no roots here"}}`, gjson.Get(ask, "id").Raw))
	r = h.next()
	if gjson.Get(r, "id").Int() != 2 || !gjson.Get(r, "result.isError").Bool() || !strings.Contains(r, "no roots here") {
		t.Errorf("failed input: %s", r)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the server saw %d calls, want 2 (no retry after a failed round)", n)
	}
}

func TestBrokenStreamRetriedOnlyWhenSafe(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	var mu sync.Mutex
	seen := map[string][]string{} // method -> upstream ids
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		method, id := gjson.Get(body, "method").Str, gjson.Get(body, "id").Raw
		mu.Lock()
		seen[method] = append(seen[method], id)
		n := len(seen[method])
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if n == 1 { // the first stream of each method breaks before its response
			io.WriteString(w, ": keep-alive\n\n")
			return
		}
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"prompts\":[]}}\n\n", id)
	})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"prompts/list"}`)
	if r := h.next(); gjson.Get(r, "result").Raw != `{"prompts":[]}` {
		t.Errorf("prompts/list after a broken stream: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	if r := h.next(); gjson.Get(r, "error.code").Int() != -32603 || !strings.Contains(r, "may or may not have run") {
		t.Errorf("tools/call after a broken stream: %s", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if ids := seen["prompts/list"]; len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("prompts/list upstream ids %v: want a retry with a new id", ids)
	}
	if ids := seen["tools/call"]; len(ids) != 1 {
		t.Errorf("tools/call reached the server %d times: it must never be replayed", len(ids))
	}
}

func TestLogsNeverCarrySecrets(t *testing.T) {
	u := newUpstream(t)
	core, logs := observer.New(zapcore.DebugLevel)
	h := initialized(t, u, Config{Logger: zap.New(core)})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":"hunter2","apiKey":"k-123"}}}`)
	h.next()
	h.send(`not json, password=hunter2`)
	h.next()
	h.stop()
	for _, e := range logs.All() {
		for _, f := range e.Context {
			text := f.String
			if b, ok := f.Interface.([]byte); ok {
				text = string(b) // zap.ByteString
			} else if f.Interface != nil {
				text += fmt.Sprint(f.Interface)
			}
			if strings.Contains(text, "hunter2") || strings.Contains(text, "k-123") {
				t.Errorf("log %q field %s carries a secret: %s", e.Message, f.Key, text)
			}
		}
	}
	if logs.FilterMessage("frame from client").Len() == 0 {
		t.Error("no debug frame logs at all: the test proves nothing")
	}
}

func TestTraceLinksEveryHopOfARequest(t *testing.T) {
	u := newUpstream(t)
	var buf syncBuf
	tw := trace.New(&buf, trace.Options{})
	h := initialized(t, u, Config{Observer: tw})
	h.send(`{"jsonrpc":"2.0","id":"c1","method":"prompts/list","params":{"_meta":{"progressToken":"p"},"password":"hunter2"}}`)
	h.next()
	h.stop()
	if dropped, err := tw.Close(); dropped != 0 || err != nil {
		t.Fatalf("Close: %d dropped, %v", dropped, err)
	}
	var op string
	dirs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(line, "hunter2") {
			t.Errorf("a secret reached the trace: %s", line)
		}
		r := gjson.Parse(line)
		if r.Get("dir").Str == "client->proxy" && r.Get("id").Raw == `"c1"` {
			op = r.Get("op").Str
		}
	}
	if op == "" {
		t.Fatalf("no client->proxy record for the request:\n%s", buf.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if r := gjson.Parse(line); r.Get("op").Str == op {
			dirs[r.Get("dir").Str] = true
			if r.Get("dir").Str == "proxy->server" && !strings.Contains(r.Get("rewrites").Raw, "meta.inject") {
				t.Errorf("proxy->server record without its rewrites: %s", line)
			}
		}
	}
	for _, d := range []string{"client->proxy", "proxy->server", "server->proxy", "proxy->client"} {
		if !dirs[d] {
			t.Errorf("op %s has no %s record", op, d)
		}
	}
}

// syncBuf is a bytes.Buffer safe for the trace goroutine and the test.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLargeResultsRewrittenInPlace: results large enough to be rewritten in
// the buffer they were read into (a JSON body, an SSE event of one long
// line, after a progress notification) reach the client intact, with the
// client's id, whether that id is shorter or longer than the proxy's, and
// the 2026 members gone. Calls run concurrently so that buffers in flight
// side by side must not bleed into each other. With a trace, the in-place
// rewrite must not reach the records: each server->proxy record shows the
// upstream's bytes as they came (the proxy's id, resultType).
func TestLargeResultsRewrittenInPlace(t *testing.T) {
	for _, traced := range []bool{false, true} {
		t.Run(fmt.Sprintf("trace=%v", traced), func(t *testing.T) {
			u := newUpstream(t)
			text := func(n int) string { return strings.Repeat(string(rune('a'+n%26)), 200<<10+n) }
			u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
				id := gjson.Get(body, "id").Raw
				n := int(gjson.Get(body, "params.arguments.n").Int())
				msg := `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"complete","content":[{"type":"text","text":"` + text(n) +
					`"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"9"}}}}`
				if n%2 == 1 {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%d,\"progress\":1}}\n\n", n)
					fmt.Fprintf(w, "data: %s\n\n", msg)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, msg)
			})
			var buf syncBuf
			cfg := Config{}
			var tw *trace.Writer
			if traced {
				tw = trace.New(&buf, trace.Options{})
				cfg.Observer = tw
			}
			h := initialized(t, u, cfg)
			ids := []string{`1`, `"a-client-id-much-longer-than-any-upstream-id-0123456789"`, `2`, `"x"`, `3`, `"é\"quoted\""`}
			for n, id := range ids {
				h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"big","arguments":{"n":` + fmt.Sprint(n) + `},"_meta":{"progressToken":` + fmt.Sprint(n) + `}}}`)
			}
			got := map[string]string{}
			for len(got) < len(ids) {
				l := h.next()
				if gjson.Get(l, "method").Exists() {
					continue // progress
				}
				got[gjson.Get(l, "id").Raw] = l
			}
			for n, id := range ids {
				l, ok := got[id]
				if !ok {
					t.Fatalf("no answer for id %s; got ids %v", id, slices.Collect(maps.Keys(got)))
				}
				res := gjson.Get(l, "result")
				if res.Get("content.0.text").Str != text(n) {
					t.Errorf("id %s: the text came back changed (%d bytes)", id, len(res.Get("content.0.text").Str))
				}
				if res.Get("resultType").Exists() || res.Get("_meta").Exists() {
					t.Errorf("id %s: 2026 members left: %.200s", id, res.Raw)
				}
			}
			if !traced {
				return
			}
			h.stop()
			if dropped, err := tw.Close(); dropped != 0 || err != nil {
				t.Fatalf("trace Close: %d dropped, %v", dropped, err)
			}
			results := 0
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				r := gjson.Parse(line)
				head := r.Get("frame.head").Str // a large frame is cut to its head
				if r.Get("dir").Str != "server->proxy" || !strings.Contains(head, `"content"`) {
					continue
				}
				results++
				if !strings.Contains(head, `"resultType":"complete"`) || strings.Contains(head, "a-client-id") {
					t.Errorf("a server->proxy record shows rewritten bytes: %.200s", head)
				}
			}
			if results != len(ids) {
				t.Errorf("%d server->proxy result records, want %d", results, len(ids))
			}
		})
	}
}

// flagHints names settings as the command layer does: by their flags.
func flagHints(h rewrite.Hint) string { return "--" + string(h) }

// The bridge never names a flag itself: an error's fix is a setting that
// the Hints of the Config name, and without them it is named neutrally.
func TestErrorsNameSettingsThroughHints(t *testing.T) {
	u := newUpstream(t)
	for _, tc := range []struct {
		hints rewrite.HintText
		want  string
	}{
		{func(h rewrite.Hint) string { return "<" + string(h) + ">" }, "raise <max-message-size>"},
		{nil, "raise the max-message-size setting"},
	} {
		client, err := routing.New(routing.Config{URL: u.URL})
		if err != nil {
			t.Fatal(err)
		}
		h := run(t, New(Config{Client: client, MaxMessageBytes: 64, Hints: tc.hints}), client)
		h.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 100) + `"}}`)
		msg := gjson.Get(h.next(), "error.message").Str
		if !strings.Contains(msg, tc.want) || strings.Contains(msg, "--") {
			t.Errorf("oversized message: %q, want %q and no flag", msg, tc.want)
		}
		h.stop()
	}
}
