package bridge

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/passthrough"
	"github.com/tidwall/gjson"
)

// legacyFake is a scriptable 2025 Streamable HTTP server with sessions: an
// initialize starts session "s-N" (Mcp-Session-Id), a request naming any
// other session gets 404, notifications and answers get 202, GET gets 405
// unless getHandler is set, and DELETE ends the session.
type legacyFake struct {
	*httptest.Server
	mu      sync.Mutex
	session string // the live session id
	n       int
	reqs    []legacyReq
	// handle answers POSTed requests other than initialize; nil echoes the
	// method in a JSON result.
	handle func(w http.ResponseWriter, r *http.Request, body string)
	get    func(w http.ResponseWriter, r *http.Request)
}

type legacyReq struct {
	httpMethod, method, id, body string
	header                       http.Header
}

func newLegacyFake(t *testing.T) *legacyFake {
	f := &legacyFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := string(b)
		f.mu.Lock()
		f.reqs = append(f.reqs, legacyReq{r.Method, gjson.Get(body, "method").Str, gjson.Get(body, "id").Raw, body, r.Header.Clone()})
		live, handle, get := f.session, f.handle, f.get
		f.mu.Unlock()
		sid := r.Header.Get("Mcp-Session-Id")
		method := gjson.Get(body, "method").Str
		switch {
		case r.Method == http.MethodPost && method == "initialize":
			f.mu.Lock()
			f.n++
			f.session = fmt.Sprintf("s-%d", f.n)
			w.Header().Set("Mcp-Session-Id", f.session)
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, gjson.Get(body, "id").Raw)
		case sid == "":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Mcp-Session-Id header is required"}}`)
		case sid != live:
			http.Error(w, "session not found", http.StatusNotFound)
		case r.Method == http.MethodGet && get != nil:
			get(w, r)
		case r.Method == http.MethodGet:
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
		case r.Method == http.MethodDelete:
			f.mu.Lock()
			f.session = ""
			f.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		case !gjson.Get(body, "id").Exists() || method == "":
			w.WriteHeader(http.StatusAccepted) // a notification or an answer
		case handle != nil:
			handle(w, r, body)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"method":%q}}`, gjson.Get(body, "id").Raw, method)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *legacyFake) setHandle(h func(w http.ResponseWriter, r *http.Request, body string)) {
	f.mu.Lock()
	f.handle = h
	f.mu.Unlock()
}

// expire forgets the live session, as a server restart would.
func (f *legacyFake) expire() {
	f.mu.Lock()
	f.session = "expired"
	f.mu.Unlock()
}

// seen returns the requests so far with the given JSON-RPC method (or, for
// "GET" and "DELETE", that HTTP method).
func (f *legacyFake) seen(method string) []legacyReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []legacyReq
	for _, r := range f.reqs {
		if r.method == method || (r.method == "" && r.httpMethod == method) {
			out = append(out, r)
		}
	}
	return out
}

const legacyInit = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`

// passSession starts a session against f and completes the handshake.
func passSession(t *testing.T, f *legacyFake, cfg Config) *harness {
	t.Helper()
	h := start(t, f.URL, cfg)
	h.send(legacyInit)
	if r := h.next(); gjson.Get(r, "result.serverInfo.name").Str != "legacy" || gjson.Get(r, "id").Raw != `"init"` {
		t.Fatalf("initialize answer: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

// answers reads frames until every id in ids has its response, and returns
// them by id; any id answered twice fails the test.
func (h *harness) answers(ids ...string) map[string]string {
	h.t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]string{}
	for len(got) < len(ids) {
		l := h.next()
		id := gjson.Get(l, "id").Raw
		if gjson.Get(l, "method").Exists() || !want[id] {
			continue
		}
		if _, dup := got[id]; dup {
			h.t.Fatalf("id %s answered twice: %s", id, l)
		}
		got[id] = l
	}
	return got
}

func TestPassthroughForwardsVerbatim(t *testing.T) {
	f := newLegacyFake(t)
	f.setHandle(func(w http.ResponseWriter, r *http.Request, body string) {
		if gjson.Get(body, "method").Str != "tools/call" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"method":%q}}`, gjson.Get(body, "id").Raw, gjson.Get(body, "method").Str)
			return
		}
		// A tool call that asks the client a question on its stream.
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{\"message\":\"ok?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}}}}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[],\"extra\":\"kept\"}}\n\n", gjson.Get(body, "id").Raw)
	})
	h := passSession(t, f, Config{})
	if len(f.seen("server/discover")) != 1 {
		t.Errorf("want one server/discover probe before passthrough")
	}
	if got := f.seen("initialize"); len(got) != 1 || got[0].body != legacyInit {
		t.Fatalf("the client's initialize was not forwarded verbatim: %+v", got)
	}
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	ask := h.next()
	if gjson.Get(ask, "method").Str != "elicitation/create" || gjson.Get(ask, "id").Raw != "7" {
		t.Fatalf("server request not delivered verbatim: %s", ask)
	}
	h.send(`{"jsonrpc":"2.0","id":7,"result":{"action":"accept","content":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	if r := h.next(); r != `{"jsonrpc":"2.0","id":1,"result":{"content":[],"extra":"kept"}}` {
		t.Errorf("tools/call answer changed in passthrough: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if r := h.next(); gjson.Get(r, "result.method").Str != "ping" {
		t.Errorf("ping was not forwarded in passthrough: %s", r)
	}
	// The GET stream opens on its own goroutine once notifications/initialized
	// is POSTed; wait for its attempt (bounded) before ending the session.
	for deadline := time.Now().Add(wait); len(f.seen("GET")) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	h.stop()

	// Order, headers and the end of the session.
	var order []string
	f.mu.Lock()
	for _, r := range f.reqs {
		switch {
		case r.method == "server/discover":
			continue
		case r.method == "initialize":
			if r.header.Get("Mcp-Session-Id") != "" || r.header.Get("Mcp-Protocol-Version") != "" {
				t.Errorf("initialize carried session headers: %v", r.header)
			}
		default:
			if r.header.Get("Mcp-Session-Id") != "s-1" || r.header.Get("Mcp-Protocol-Version") != "2025-11-25" {
				t.Errorf("%s %s: session headers %q %q", r.httpMethod, r.method, r.header.Get("Mcp-Session-Id"), r.header.Get("Mcp-Protocol-Version"))
			}
			if r.header.Get("Mcp-Method") != "" {
				t.Errorf("%s: a 2026 header reached a 2025 server", r.method)
			}
		}
		name := r.method
		if name == "" {
			name = r.httpMethod
			if r.httpMethod == http.MethodPost {
				name = "answer " + r.id
			}
		}
		order = append(order, name)
	}
	f.mu.Unlock()
	joined := strings.Join(order, ",")
	for _, want := range []string{"initialize", "notifications/initialized", "tools/call", "answer 7", "notifications/roots/list_changed", "ping", "DELETE"} {
		if !strings.Contains(joined, want) {
			t.Errorf("upstream never saw %s; saw %s", want, joined)
		}
	}
	if i, j := strings.Index(joined, "answer 7"), strings.Index(joined, "notifications/roots/list_changed"); i > j {
		t.Errorf("client messages were POSTed out of order: %s", joined)
	}
	if !strings.HasSuffix(joined, "DELETE") {
		t.Errorf("the session was not ended with DELETE last: %s", joined)
	}
	if len(f.seen("GET")) == 0 {
		t.Errorf("no GET stream was tried after notifications/initialized: %s", joined)
	}
}

func TestPassthroughExpiredSession(t *testing.T) {
	f := newLegacyFake(t)
	h := passSession(t, f, Config{})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)
	h.answers("1", "2")
	f.expire()
	h.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":13,"method":"ping"}`)
	got := h.answers("10", "11", "12", "13")
	for _, id := range []string{"11", "12", "13"} {
		if !gjson.Get(got[id], "result.method").Exists() {
			t.Errorf("safe request %s not repeated in the new session: %s", id, got[id])
		}
	}
	// The tools/call either raced after the new session (a result) or got
	// the error that says it was not repeated.
	if r := got["10"]; !gjson.Get(r, "result").Exists() {
		msg := gjson.Get(r, "error.message").Str
		if !strings.Contains(msg, "ended the MCP session") || !strings.Contains(msg, "send it again") {
			t.Errorf("unsafe request after expiry: %s", r)
		}
	}
	inits := f.seen("initialize")
	if len(inits) != 2 {
		t.Fatalf("want exactly one replayed initialize, got %d", len(inits)-1)
	}
	replay := inits[1]
	if !strings.HasPrefix(gjson.Get(replay.body, "id").Str, "mcp-tasks-proxy-") ||
		gjson.Get(replay.body, "params").Raw != gjson.Get(legacyInit, "params").Raw {
		t.Errorf("replayed initialize: %s", replay.body)
	}
	h.send(`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"x","arguments":{}}}`)
	if r := h.answers("14")["14"]; gjson.Get(r, "result.method").Str != "tools/call" {
		t.Errorf("the new session does not serve: %s", r)
	}
	h.stop()
	if n := len(f.seen("notifications/initialized")); n != 2 {
		t.Errorf("notifications/initialized sent %d times, want 2 (the client's and the replay)", n)
	}
	levels, subs := f.seen("logging/setLevel"), f.seen("resources/subscribe")
	if len(levels) != 2 || gjson.Get(levels[1].body, "params.level").Str != "debug" || levels[1].header.Get("Mcp-Session-Id") != "s-2" {
		t.Errorf("the log level was not replayed in the new session: %+v", levels)
	}
	if len(subs) != 2 || gjson.Get(subs[1].body, "params.uri").Str != "file:///a" || subs[1].header.Get("Mcp-Session-Id") != "s-2" {
		t.Errorf("the subscription was not replayed in the new session: %+v", subs)
	}
}

func TestPassthroughResumesDroppedStream(t *testing.T) {
	f := newLegacyFake(t)
	f.setHandle(func(w http.ResponseWriter, r *http.Request, body string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: e1\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n")
		// and the stream ends without the answer
	})
	f.mu.Lock()
	f.get = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") != "e1" {
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: e2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n")
	}
	f.mu.Unlock()
	h := passSession(t, f, Config{})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long","arguments":{},"_meta":{"progressToken":"p"}}}`)
	if r := h.next(); gjson.Get(r, "method").Str != "notifications/progress" {
		t.Fatalf("progress before the drop: %s", r)
	}
	if r := h.answers("1")["1"]; gjson.Get(r, "result.content.0.text").Str != "done" {
		t.Fatalf("answer after resumption: %s", r)
	}
	h.stop()
	if n := len(f.seen("tools/call")); n != 1 {
		t.Errorf("tools/call POSTed %d times; resumption must not repeat it", n)
	}
	resumed := false
	for _, g := range f.seen("GET") {
		resumed = resumed || g.header.Get("Last-Event-ID") == "e1"
	}
	if !resumed {
		t.Error("no GET with Last-Event-ID: e1")
	}
}

func TestPassthroughStreamWithoutIDs(t *testing.T) {
	f := newLegacyFake(t)
	var calls, lists int
	f.setHandle(func(w http.ResponseWriter, r *http.Request, body string) {
		f.mu.Lock()
		method := gjson.Get(body, "method").Str
		n := 0
		if method == "tools/call" {
			calls++
		} else {
			lists++
			n = lists
		}
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		if method == "tools/list" && n > 1 {
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[]}}\n\n", gjson.Get(body, "id").Raw)
		}
		// otherwise the stream ends at once, with no event id to resume from
	})
	h := passSession(t, f, Config{})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	got := h.answers("1", "2")
	if msg := gjson.Get(got["1"], "error.message").Str; !strings.Contains(msg, "ended before the response") || !strings.Contains(msg, "may or may not have run") {
		t.Errorf("tools/call on a dropped stream: %s", got["1"])
	}
	if !gjson.Get(got["2"], "result.tools").Exists() {
		t.Errorf("tools/list was not retried after the dropped stream: %s", got["2"])
	}
	h.stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	if calls != 1 || lists != 2 {
		t.Errorf("tools/call sent %d times (want 1: never repeated), tools/list %d (want 2)", calls, lists)
	}
}

func TestProtocolFlag(t *testing.T) {
	t.Run("modern refuses a legacy server", func(t *testing.T) {
		f := newLegacyFake(t)
		h := start(t, f.URL, Config{Protocol: ProtocolModern})
		h.send(legacyInit)
		r := h.next()
		msg := gjson.Get(r, "error.message").Str
		if !strings.Contains(msg, "2025") || !strings.Contains(msg, "--protocol modern") || gjson.Get(r, "error.data.upstreamEra").Str != "legacy" {
			t.Errorf("initialize with --protocol modern against a 2025 server: %s", r)
		}
		if len(f.seen("initialize")) != 0 {
			t.Error("the initialize was forwarded despite --protocol modern")
		}
		h.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if r := h.next(); !gjson.Get(r, "result").Exists() {
			t.Errorf("the session stopped serving: %s", r)
		}
	})
	t.Run("legacy skips the probe", func(t *testing.T) {
		f := newLegacyFake(t)
		h := passSession(t, f, Config{Protocol: ProtocolLegacy})
		h.stop()
		if n := len(f.seen("server/discover")); n != 0 {
			t.Errorf("--protocol legacy still probed %d times", n)
		}
		if len(f.seen("initialize")) != 1 {
			t.Error("initialize was not passed through")
		}
	})
}

// Resuming stops after passthrough.MaxResumes resumptions in a row that bring no new
// event; the request gets one error and is never POSTed twice.
func TestPassthroughResumptionGivesUp(t *testing.T) {
	f := newLegacyFake(t)
	f.setHandle(func(w http.ResponseWriter, r *http.Request, body string) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "id: e1\nretry: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n")
	})
	f.mu.Lock()
	f.get = func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") == "" {
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream") // and nothing more
	}
	f.mu.Unlock()
	h := passSession(t, f, Config{})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`)
	if r := h.answers("1")["1"]; !strings.Contains(gjson.Get(r, "error.message").Str, "ended before the response") {
		t.Errorf("answer after fruitless resumptions: %s", r)
	}
	h.stop()
	resumes := 0
	for _, g := range f.seen("GET") {
		if g.header.Get("Last-Event-ID") == "e1" {
			resumes++
		}
	}
	if resumes != passthrough.MaxResumes || len(f.seen("tools/call")) != 1 {
		t.Errorf("%d resumptions (want %d) and %d tools/call POSTs (want 1)", resumes, passthrough.MaxResumes, len(f.seen("tools/call")))
	}
}

// The GET stream reconnects after it drops, with Last-Event-ID when it had
// event ids, and server messages from both connections reach the client.
func TestPassthroughGetStreamReconnects(t *testing.T) {
	f := newLegacyFake(t)
	f.mu.Lock()
	f.get = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get("Last-Event-ID") == "" {
			fmt.Fprint(w, "id: g1\nretry: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
			return // the stream drops
		}
		fmt.Fprintf(w, "id: g2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":%q}}\n\n", r.Header.Get("Last-Event-ID"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	f.mu.Unlock()
	h := passSession(t, f, Config{})
	if r := h.next(); gjson.Get(r, "method").Str != "notifications/tools/list_changed" {
		t.Fatalf("first GET stream message: %s", r)
	}
	if r := h.next(); gjson.Get(r, "method").Str != "notifications/message" || gjson.Get(r, "params.data").Str != "g1" {
		t.Fatalf("after the reconnect, want the log the server sent for Last-Event-ID g1: %s", r)
	}
	h.stop()
}
