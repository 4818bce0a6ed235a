package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// fakeServer is a minimal hand-written 2026-07-28 server: a valid
// DiscoverResult for server/discover, an echo for tools/call, and -32601 for
// anything else. Discover and Call replace the defaults.
type fakeServer struct {
	Discover func(w http.ResponseWriter, r *http.Request, id string)
	Call     func(w http.ResponseWriter, r *http.Request, name, id string, body []byte)
	// Results answers other methods with a raw result object.
	Results map[string]string
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := gjson.ParseBytes(body)
	id := req.Get("id").Raw
	switch req.Get("method").String() {
	case "server/discover":
		if f.Discover != nil {
			f.Discover(w, r, id)
			return
		}
		writeJSON(w, http.StatusOK, discoverResult(id))
	case "tools/call":
		if f.Call != nil {
			f.Call(w, r, req.Get("params.name").String(), id, body)
			return
		}
		text := req.Get("params.arguments.text").Raw // raw JSON string, echoed unchanged
		if text == "" {
			text = `""`
		}
		writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","content":[{"type":"text","text":`+text+`}]}}`)
	default:
		if res, ok := f.Results[req.Get("method").String()]; ok {
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":`+res+`}`)
			return
		}
		writeJSON(w, http.StatusNotFound, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"Method not found"}}`)
	}
}

// discoverResult is a minimal valid DiscoverResult answering id.
func discoverResult(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],` +
		`"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private",` +
		`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fault","version":"1"}}}}`
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// closedURL returns an http URL on a loopback port that nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr + "/mcp"
}

// TestUpstreamDownAtInitialize: with nothing listening, each initialize gets
// exactly one error naming the URL, and the process keeps serving.
func TestUpstreamDownAtInitialize(t *testing.T) {
	t.Parallel()
	url := closedURL(t)
	p := startProxy(t, []string{url})
	for _, id := range []string{"1", "2"} {
		e := errorOf(t, p.call(id, "initialize", initParams))
		if msg := e.Get("message").String(); !strings.Contains(msg, url) {
			t.Errorf("initialize %s: message %q does not name the URL %s", id, msg, url)
		}
		if got := e.Get("data.url").String(); got != url {
			t.Errorf("initialize %s: error.data.url = %q, want %s (error %s)", id, got, url, e.Raw)
		}
	}
	// Still up, and no request can be forwarded without a session.
	resultOf(t, p.call(`"still-up"`, "ping", ""))
	errorOf(t, p.call(`"no-session"`, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
	p.closeStdin()
	if code := p.waitExit(waitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	counts := map[string]int{}
	for _, l := range p.all() {
		counts[gjson.GetBytes(l, "id").Raw]++
	}
	for _, id := range []string{"1", "2", `"still-up"`, `"no-session"`} {
		if counts[id] != 1 {
			t.Errorf("id %s answered %d times over the whole run, want exactly 1", id, counts[id])
		}
	}
}

// TestUpstreamGoesDown: after a good initialize the server disappears; five
// concurrent calls each get exactly one error.
func TestUpstreamGoesDown(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{up.URL})
	p.initialize()
	resultOf(t, p.call(`"warm"`, "tools/call", `{"name":"echo","arguments":{"text":"warm"}}`))
	up.srv.CloseClientConnections()
	up.srv.Close()

	ids := []string{"10", "11", "12", "13", "14"}
	for _, id := range ids {
		p.request(id, "tools/call", `{"name":"echo","arguments":{"text":"lost"}}`)
	}
	for _, id := range ids {
		e := errorOf(t, p.expect(id))
		if got := e.Get("data.url").String(); got != up.URL {
			t.Errorf("id %s: error.data.url = %q, want %s (error %s)", id, got, up.URL, e.Raw)
		}
	}
	// All five are answered; the next line must be this ping's answer, not
	// a second answer for any of them.
	mark := p.mark()
	p.request(`"after-down"`, "ping", "")
	if next := p.line(mark); gjson.GetBytes(next, "id").Raw != `"after-down"` {
		t.Errorf("after all five errors the next line is %s, want the ping's answer", next)
	}
	p.closeStdin()
	if code := p.waitExit(waitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	counts := map[string]int{}
	for _, l := range p.all() {
		counts[gjson.GetBytes(l, "id").Raw]++
	}
	for _, id := range ids {
		if counts[id] != 1 {
			t.Errorf("id %s answered %d times, want exactly 1", id, counts[id])
		}
	}
}

// TestHTTPFaults: each kind of broken HTTP answer to a tools/call becomes
// exactly one well-formed JSON-RPC error for that id, with the HTTP status in
// error.data when there was one; the call is never replayed; the proxy
// keeps serving.
func TestHTTPFaults(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	hits := map[string]int{}
	fs := &fakeServer{Call: func(w http.ResponseWriter, r *http.Request, name, id string, body []byte) {
		mu.Lock()
		hits[name]++
		mu.Unlock()
		switch name {
		case "html500":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, "<html><body>Internal Server Error</body></html>")
		case "bare502":
			w.WriteHeader(http.StatusBadGateway)
		case "html200":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<!doctype html><title>login</title>")
		case "rpc400":
			writeJSON(w, http.StatusBadRequest, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"Invalid params: x is required","data":{"field":"x"}}}`)
		case "json-garbage":
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":`)
		case "wrong-id":
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":"not-yours","result":{"resultType":"complete","content":[]}}`)
		case "reset":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // RST instead of FIN
			}
			_ = conn.Close()
		case "sse-cut", "sse-partial":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			tok := gjson.GetBytes(body, "params._meta.progressToken").Raw
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":1}}\n\n", tok)
			if name == "sse-partial" {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"comp", id)
			}
			_ = http.NewResponseController(w).Flush()
			// Returning ends the stream before the final response.
		default:
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}]}}`)
		}
	}}
	up := newUpstream(t, fs)
	p := startProxy(t, []string{up.URL})
	init := p.initialize()
	if got := gjson.GetBytes(init, "result.serverInfo.name").String(); got != "fault" {
		t.Errorf("serverInfo.name = %q, want fault (from discover _meta)", got)
	}

	cases := []struct {
		name   string
		status int // error.data.httpStatus; 0: no HTTP status existed
		code   int64
	}{
		{"html500", 500, -32603},
		{"bare502", 502, -32603},
		{"html200", 200, -32603},
		{"rpc400", 400, -32602},
		{"json-garbage", 200, -32603},
		{"wrong-id", 200, -32603},
		{"reset", 0, -32603},
		{"sse-cut", 200, -32603},
		{"sse-partial", 200, -32603},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := p.bind(t)
			id := `"` + tc.name + `"`
			e := errorOf(t, p.call(id, "tools/call", `{"name":"`+tc.name+`","arguments":{},"_meta":{"progressToken":"`+tc.name+`"}}`))
			if c := e.Get("code").Int(); c != tc.code {
				t.Errorf("code = %d, want %d (error %s)", c, tc.code, e.Raw)
			}
			if e.Get("message").String() == "" {
				t.Errorf("empty message: %s", e.Raw)
			}
			if tc.status != 0 {
				if got := e.Get("data.httpStatus"); got.Int() != int64(tc.status) {
					t.Errorf("error.data.httpStatus = %s, want %d (error %s)", got.Raw, tc.status, e.Raw)
				}
			}
			if tc.name == "rpc400" {
				if e.Get("message").String() != "Invalid params: x is required" || e.Get("data.field").String() != "x" {
					t.Errorf("the server's own error was not passed through: %s", e.Raw)
				}
			} else if got := e.Get("data.url").String(); got != up.URL {
				t.Errorf("error.data.url = %q, want %s (error %s)", got, up.URL, e.Raw)
			}
			resultOf(t, p.call(`"ping-after-`+tc.name+`"`, "ping", ""))
		})
	}
	resultOf(t, p.call(`"healthy"`, "tools/call", `{"name":"fine","arguments":{}}`))

	mu.Lock()
	defer mu.Unlock()
	for _, tc := range cases {
		if hits[tc.name] != 1 {
			t.Errorf("tools/call %s reached the server %d times, want 1 (a tools/call is never replayed)", tc.name, hits[tc.name])
		}
	}
}

// TestLegacyVerdictUnderProtocolModern: with --protocol modern, a 2025
// server's answer to the discover probe makes initialize fail with a
// message that names the era and the flag; nothing is forwarded, and the
// process keeps serving. (Without the flag it is passed through; see
// passthrough_test.go.)
func TestLegacyVerdictUnderProtocolModern(t *testing.T) {
	t.Parallel()
	fs := &fakeServer{Discover: func(w http.ResponseWriter, _ *http.Request, _ string) {
		writeJSON(w, http.StatusBadRequest, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Mcp-Session-Id header is required"}}`)
	}}
	up := newUpstream(t, fs)
	p := startProxy(t, []string{"--protocol", "modern", up.URL})
	e := errorOf(t, p.call("1", "initialize", initParams))
	msg := e.Get("message").String()
	if !strings.Contains(msg, "2025") || !strings.Contains(msg, "--protocol modern") {
		t.Errorf("message %q does not say the server speaks 2025 and name --protocol modern", msg)
	}
	if got := e.Get("data.upstreamEra").String(); got != "legacy" {
		t.Errorf("error.data.upstreamEra = %q, want legacy", got)
	}
	if n := len(up.requests("initialize")); n != 0 {
		t.Errorf("the legacy initialize was forwarded %d times", n)
	}
	resultOf(t, p.call(`"still-up"`, "ping", ""))
}

// TestNotEvidenceVerdict: a 503 to the probe says nothing about the era:
// initialize fails naming the URL and the status, and the next initialize
// probes again and succeeds once the server is healthy.
func TestNotEvidenceVerdict(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	fs := &fakeServer{Discover: func(w http.ResponseWriter, _ *http.Request, id string) {
		if !healthy.Load() {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "upstream overloaded")
			return
		}
		writeJSON(w, http.StatusOK, discoverResult(id))
	}}
	up := newUpstream(t, fs)
	p := startProxy(t, []string{up.URL})
	e := errorOf(t, p.call("1", "initialize", initParams))
	msg := e.Get("message").String()
	if !strings.Contains(msg, up.URL) || !strings.Contains(msg, "503") {
		t.Errorf("message %q should name the URL %s and the status 503", msg, up.URL)
	}
	if got := e.Get("data.httpStatus").Int(); got != 503 {
		t.Errorf("error.data.httpStatus = %d, want 503 (error %s)", got, e.Raw)
	}
	healthy.Store(true)
	res := resultOf(t, p.call("2", "initialize", initParams))
	if got := res.Get("serverInfo.name").String(); got != "fault" {
		t.Errorf("second initialize: serverInfo.name = %q, want fault", got)
	}
	resultOf(t, p.call(`"works"`, "tools/call", `{"name":"echo","arguments":{"text":"ok"}}`))
	if n := len(up.requests("server/discover")); n != 2 {
		t.Errorf("upstream saw %d discover probes, want 2 (a failed probe is not cached)", n)
	}
}

// cancelWatch wraps the demo: ctxDone is closed when the request context of
// a tools/call slow_count ends.
type cancelWatch struct {
	next    http.Handler
	once    sync.Once
	ctxDone chan struct{}
}

func newCancelWatch() *cancelWatch {
	return &cancelWatch{next: demo.Handler(), ctxDone: make(chan struct{})}
}

func (c *cancelWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Method") == "tools/call" && r.Header.Get("Mcp-Name") == "slow_count" {
		go func() {
			<-r.Context().Done()
			c.once.Do(func() { close(c.ctxDone) })
		}()
	}
	c.next.ServeHTTP(w, r)
}

// startSlowCount sends a slow_count that would run for minutes and waits for
// its first progress notification, so the call is surely in flight upstream.
// Once that notification has arrived the demo handler is inside its
// counting loop, which ends early only when its context is cancelled.
func startSlowCount(p *rawProc, id string) {
	p.t.Helper()
	mark := p.mark()
	p.request(id, "tools/call", `{"name":"slow_count","arguments":{"n":50,"delay_ms":10000},"_meta":{"progressToken":"slow"}}`)
	p.waitLine(mark, "the first progress notification of slow_count", func(_ int, l outLine) bool {
		return l.method == "notifications/progress" && l.token == `"slow"`
	})
}

// waitClosed waits (bounded) for ch to close.
func waitClosed(t *testing.T, ch <-chan struct{}, desc string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not happen within %v", desc, waitTimeout)
	}
}

// TestCancel: notifications/cancelled for an in-flight call closes its
// upstream request, and no answer is ever written for that id.
func TestCancel(t *testing.T) {
	t.Parallel()
	cw := newCancelWatch()
	up := newUpstream(t, cw)
	p := startProxy(t, []string{up.URL})
	p.initialize()
	startSlowCount(p, `"slow"`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"user"}}`)
	waitClosed(t, cw.ctxDone, "cancellation of the upstream slow_count request")
	resultOf(t, p.call(`"after-cancel"`, "ping", ""))
	resultOf(t, p.call(`"next-call"`, "tools/call", `{"name":"echo","arguments":{"text":"still serving"}}`))
	p.closeStdin()
	if code := p.waitExit(waitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	for _, l := range p.all() {
		if isResponse(l) && gjson.GetBytes(l, "id").Raw == `"slow"` {
			t.Errorf("a response was written for the cancelled id: %s", l)
		}
	}
	if n := len(up.requests("notifications/cancelled")); n != 0 {
		t.Errorf("notifications/cancelled was POSTed upstream %d times; 2026 cancels by closing the stream", n)
	}
}

// TestCancelWhileSaturated: with --max-in-flight reached, the client can
// still cancel an in-flight request (to make room) and ping: a cancellation
// must be seen before the queue, and a ping is answered at once.
func TestCancelWhileSaturated(t *testing.T) {
	t.Parallel()
	cw := newCancelWatch()
	up := newUpstream(t, cw)
	p := startProxy(t, []string{"--max-in-flight", "1", up.URL})
	p.initialize()
	startSlowCount(p, `"slow"`) // takes the only slot
	p.request(`"queued"`, "tools/call", `{"name":"echo","arguments":{"text":"queued"}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"slow","reason":"make room"}}`)
	p.request(`"ping-while-full"`, "ping", "")
	waitClosed(t, cw.ctxDone, "cancellation of the slow_count that holds the only slot")
	resultOf(t, p.expect(`"ping-while-full"`))
	if got := resultOf(t, p.expect(`"queued"`)).Get("content.0.text").String(); got != "queued" {
		t.Errorf("queued call answered %q", got)
	}
	p.closeStdin()
	if code := p.waitExit(waitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	for _, l := range p.all() {
		if isResponse(l) && gjson.GetBytes(l, "id").Raw == `"slow"` {
			t.Errorf("a response was written for the cancelled id: %s", l)
		}
	}
}

// TestFramingNewlines: JSON that the server spreads over several lines (a
// pretty-printed body, SSE data split over several data: lines joined with
// "\n") is legal, since a newline outside a string is JSON whitespace; the
// proxy must still write each message to stdout as exactly one line
// (stdout carries only complete JSON-RPC lines).
func TestFramingNewlines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		call func(w http.ResponseWriter, body []byte, id string)
	}{
		{"pretty-printed JSON body", func(w http.ResponseWriter, _ []byte, id string) {
			writeJSON(w, http.StatusOK, "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": "+id+",\n  \"result\": {\n    \"resultType\": \"complete\",\n"+
				"    \"content\": [\n      {\"type\": \"text\", \"text\": \"framed ok\"}\n    ]\n  }\n}\n")
		}},
		{"SSE data over several lines", func(w http.ResponseWriter, body []byte, id string) {
			// Also legal SSE framing: CRLF line ends, a comment, id and
			// retry fields.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			tok := gjson.GetBytes(body, "params._meta.progressToken").Raw
			fmt.Fprintf(w, ": keep-alive\r\n\r\nretry: 1000\r\nid: 1\r\nevent: message\r\n"+
				"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\r\n"+
				"data: \"params\":{\"progressToken\":%s,\"progress\":1}}\r\n\r\n", tok)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\r\n"+
				"data: \"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"framed ok\"}]}}\r\n\r\n", id)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, _ *http.Request, _, id string, body []byte) {
				tc.call(w, body, id)
			}})
			p := startProxy(t, []string{up.URL})
			p.initialize()
			mark := p.mark()
			res := resultOf(t, p.call(`"framed"`, "tools/call", `{"name":"framed","arguments":{},"_meta":{"progressToken":"f"}}`))
			if got := res.Get("content.0.text").String(); got != "framed ok" {
				t.Errorf("result text %q, want framed ok", got)
			}
			for _, l := range p.all()[mark:] {
				if !gjson.ValidBytes(l) {
					t.Errorf("stdout line is not a whole JSON message: %q", l)
				}
			}
		})
	}
}
