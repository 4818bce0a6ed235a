package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// sseUpstream is a go-sdk v1.8.0 server on the old HTTP+SSE transport
// (2024-11-05, mcp.SSEHandler) on 127.0.0.1, which records every HTTP
// request it gets.
type sseUpstream struct {
	*httptest.Server
	server *mcp.Server

	mu        sync.Mutex
	seen      []string      // "METHOD path X-Test", in order
	blocked   chan struct{} // a "block" call started
	cancelled chan struct{} // a "block" call's context ended
	release   chan struct{} // ends "block" calls
}

type sseText struct {
	Text string `json:"text"`
}

func newSSEUpstream(t *testing.T) *sseUpstream {
	u := &sseUpstream{blocked: make(chan struct{}, 8), cancelled: make(chan struct{}, 8), release: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "e2e-sse", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, r *mcp.CallToolRequest, in sseText) (*mcp.CallToolResult, any, error) {
		if tok := r.Params.GetProgressToken(); tok != nil {
			_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		return text("echo: " + in.Text), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Proceed?", RequestedSchema: map[string]any{"type": "object",
			"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("confirmed: %s %v", res.Action, res.Content["ok"])), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		u.blocked <- struct{}{}
		select {
		case <-ctx.Done():
			u.cancelled <- struct{}{}
			return nil, nil, ctx.Err()
		case <-u.release:
			return text("released"), nil, nil
		}
	})
	u.server = s
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil)
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-Test"))
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		close(u.release)
		u.Server.CloseClientConnections()
		u.Server.Close()
	})
	return u
}

// dropStreams breaks every connection to the server, the GET stream's
// included. (ServerSession.Close would wait for the blocked tool calls.)
func (u *sseUpstream) dropStreams() { u.Server.CloseClientConnections() }

func (u *sseUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

func (u *sseUpstream) count(prefix string) int {
	n := 0
	for _, r := range u.requests() {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func waitChan(t *testing.T, ch <-chan struct{}, desc string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", desc)
	}
}

// TestSSEPassthrough: the default --transport (http-first) against an
// HTTP+SSE server: the POST is refused, the GET opens the stream, and every
// kind of message travels through it, the user's header on every request.
func TestSSEPassthrough(t *testing.T) {
	t.Parallel()
	u := newSSEUpstream(t)
	p := startProxy(t, []string{"--log-level", "info", "--log-format", "json", "--header", "X-Test: yes", u.URL}).passthrough()

	init := resultOf(t, p.call(`"init"`, "initialize", passInitParams))
	if v := init.Get("protocolVersion").String(); v != legacyVersion && v != "2024-11-05" {
		t.Errorf("protocolVersion = %q, want the server's answer", v)
	}
	if init.Get("serverInfo.name").String() != "e2e-sse" {
		t.Errorf("serverInfo = %s, want the SSE server's own", init.Get("serverInfo").Raw)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if !strings.Contains(p.stderr.String(), "legacy-sse") {
		t.Errorf("no legacy-sse verdict logged; stderr:\n%s", p.stderr.String())
	}

	t.Run("tools", func(t *testing.T) {
		p := p.bind(t)
		tools := resultOf(t, p.call(`2`, "tools/list", `{}`)).Get("tools.#.name").Raw
		if tools != `["block","confirm","echo"]` {
			t.Errorf("tools = %s", tools)
		}
		from := p.mark()
		res := resultOf(t, p.call(`3`, "tools/call", `{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":"pt"}}`))
		if got := res.Get("content.0.text").String(); got != "echo: hi" {
			t.Errorf("echo = %q", got)
		}
		p.waitLine(from, "the progress notification", func(_ int, l outLine) bool {
			return strings.Contains(string(l.raw), `"notifications/progress"`) && strings.Contains(string(l.raw), `"pt"`)
		})
		if r := p.call(`"ping-1"`, "ping", ``); !gjson.GetBytes(r, "result").IsObject() {
			t.Errorf("ping = %s", r)
		}
	})

	t.Run("elicitation", func(t *testing.T) {
		p := p.bind(t)
		from := p.mark()
		p.request(`4`, "tools/call", `{"name":"confirm","arguments":{}}`)
		_, ask := p.waitLine(from, "elicitation/create", func(_ int, l outLine) bool {
			return strings.Contains(string(l.raw), `"elicitation/create"`)
		})
		id := gjson.GetBytes(ask, "id").Raw
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"accept","content":{"ok":true}}}`)
		if got := resultOf(t, p.expect(`4`)).Get("content.0.text").String(); got != "confirmed: accept true" {
			t.Errorf("confirm = %q", got)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		p := p.bind(t)
		p.request(`5`, "tools/call", `{"name":"block","arguments":{}}`)
		waitChan(t, u.blocked, "the block call upstream")
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"e2e"}}`)
		waitChan(t, u.cancelled, "the server to see the cancel")
		from := p.mark()
		resultOf(t, p.call(`6`, "tools/call", `{"name":"echo","arguments":{"text":"after"}}`))
		p.waitLine(0, "nothing for id 5", func(i int, l outLine) bool {
			if l.id == "5" {
				t.Errorf("the cancelled request was answered: %s", l.raw)
			}
			return i >= from
		})
	})

	t.Run("drop", func(t *testing.T) {
		p := p.bind(t)
		gets := u.count("GET ")
		p.request(`7`, "tools/call", `{"name":"block","arguments":{}}`)
		p.request(`8`, "tools/call", `{"name":"block","arguments":{}}`)
		waitChan(t, u.blocked, "the first block call")
		waitChan(t, u.blocked, "the second block call")
		u.dropStreams()
		for _, id := range []string{`7`, `8`} {
			// The stream dropped; or, when the drop closed a POST before
			// its 202 was read, that POST broke: either way one error that
			// says the call may or may not have run.
			e := errorOf(t, p.expect(id))
			msg := e.Get("message").String()
			dropped := strings.Contains(msg, "HTTP+SSE event stream from the upstream server dropped") && e.Get("data.cause").String() == "stream dropped"
			broke := strings.Contains(msg, "the connection to the upstream server broke during tools/call") && e.Get("data.cause").String() == "network"
			if !dropped && !broke || !strings.Contains(msg, "may or may not have run") {
				t.Errorf("id %s: error = %s, want one naming the dropped stream or the broken POST", id, e.Raw)
			}
		}
		// A later request waits for the new session (a new GET, the
		// client's initialize replayed) and works.
		res := resultOf(t, p.call(`9`, "tools/call", `{"name":"echo","arguments":{"text":"again"}}`))
		if got := res.Get("content.0.text").String(); got != "echo: again" {
			t.Errorf("echo after the drop = %q", got)
		}
		if n := u.count("GET "); n != gets+1 {
			t.Errorf("%d GETs after the drop, want %d (one reconnect)", n, gets+1)
		}
	})

	for _, r := range u.requests() {
		if !strings.HasSuffix(r, " yes") {
			t.Errorf("upstream request %q without the user's --header", r)
		}
	}
	p.closeStdin()
	if code := p.waitExit(exitWait); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// exitWait bounds the exit on stdin EOF: the process is gone within 5 s.
const exitWait = 5 * time.Second

// TestSSETransportFlag: --transport values against both kinds of server.
func TestSSETransportFlag(t *testing.T) {
	t.Parallel()
	sse := newSSEUpstream(t)
	// A plain 2025 server: the checks of legacyUpstream would take the
	// GET that sse-first and sse-only try for a session's GET stream.
	streamable := httptest.NewServer(demo.NewLegacy())
	defer streamable.Close()

	t.Run("sse-first", func(t *testing.T) {
		p := startProxy(t, []string{"--transport", "sse-first", sse.URL}).passthrough()
		resultOf(t, p.call(`1`, "initialize", passInitParams))
		if r := sse.requests(); len(r) == 0 || !strings.HasPrefix(r[0], "GET ") {
			t.Errorf("first upstream request %v, want the GET (sse-first)", r)
		}
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		resultOf(t, p.call(`2`, "tools/list", `{}`))
	})
	t.Run("sse-first falls back to Streamable HTTP", func(t *testing.T) {
		p := startProxy(t, []string{"--transport", "sse-first", streamable.URL}).passthrough()
		resultOf(t, p.call(`1`, "initialize", passInitParams))
	})
	t.Run("sse-only against Streamable HTTP", func(t *testing.T) {
		p := startProxy(t, []string{"--transport", "sse-only", streamable.URL}).passthrough()
		msg := errorOf(t, p.call(`1`, "initialize", passInitParams)).Get("message").String()
		if !strings.Contains(msg, "did not open an HTTP+SSE") || !strings.Contains(msg, "--transport sse-only") {
			t.Errorf("error %q: want it to say there is no HTTP+SSE stream and name --transport sse-only", msg)
		}
	})
	t.Run("http-only against HTTP+SSE", func(t *testing.T) {
		gets := sse.count("GET ")
		p := startProxy(t, []string{"--transport", "http-only", sse.URL}).passthrough()
		msg := errorOf(t, p.call(`1`, "initialize", passInitParams)).Get("message").String()
		if !strings.Contains(msg, "HTTP 400") || !strings.Contains(msg, "--transport http-only") {
			t.Errorf("error %q: want the refusal and a hint naming --transport http-only", msg)
		}
		if n := sse.count("GET "); n != gets {
			t.Errorf("http-only sent a GET")
		}
	})
}

// TestSSEEndpointOtherOrigin: an endpoint event naming another origin is
// refused, and that origin gets nothing.
func TestSSEEndpointOtherOrigin(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var hits int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "use the endpoint", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: "+other.URL+"/messages?sessionId=s3cret\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer func() { evil.CloseClientConnections(); evil.Close() }()
	for _, transport := range []string{"http-first", "sse-only"} {
		p := startProxy(t, []string{"--transport", transport, "--header", "Authorization: Bearer tok", evil.URL}).passthrough()
		msg := errorOf(t, p.call(`1`, "initialize", passInitParams)).Get("message").String()
		if !strings.Contains(msg, "another origin") || strings.Contains(msg, "s3cret") {
			t.Errorf("%s: error %q: want the endpoint refused as on another origin, its query redacted", transport, msg)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Errorf("the other origin got %d requests", hits)
	}
}

// TestSSEReconnectFails: the server is gone after the stream dropped; a
// later request waits --discover-timeout for a new session, then gets one
// error that says so, and the proxy still exits cleanly.
func TestSSEReconnectFails(t *testing.T) {
	t.Parallel()
	u := newSSEUpstream(t)
	p := startProxy(t, []string{"--discover-timeout", "1s", "--log-format", "json", u.URL}).passthrough()
	resultOf(t, p.call(`1`, "initialize", passInitParams))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resultOf(t, p.call(`2`, "tools/list", `{}`))
	u.CloseClientConnections()
	u.Close()
	waitLog(t, p.stderr, "the drop logged", func(l gjson.Result) bool {
		return strings.Contains(l.Get("msg").String(), "HTTP+SSE stream dropped")
	})
	e := errorOf(t, p.call(`3`, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`))
	msg := e.Get("message").String()
	if !strings.Contains(msg, "could not start a new session within 1s") || !strings.Contains(msg, "dropped") {
		t.Errorf("error %q: want it to name the dropped stream and the failed reconnect", msg)
	}
	p.closeStdin()
	if code := p.waitExit(exitWait); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
