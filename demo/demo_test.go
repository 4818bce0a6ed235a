package demo_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// testTimeout bounds every exchange with the demo server. It is a safety net
// against hangs, never a synchronization device.
const testTimeout = 20 * time.Second

// peer is a running demo server and a raw HTTP client of its own.
type peer struct {
	url    string
	client *http.Client
}

// startPeer starts the demo server for one test and registers its shutdown
// and a goroutine leak check, which runs after everything else is closed.
func startPeer(t *testing.T) *peer {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	url, stop, err := demo.Start(ctx)
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		stop()
		cancel()
	})
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("Start returned URL %q, want http://127.0.0.1:PORT/mcp", url)
	}
	return &peer{url: url, client: &http.Client{Transport: tr}}
}

// meta returns the 2026-07-28 request _meta with extra keys added.
func meta(extra map[string]any) map[string]any {
	m := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "demo-test", "version": "1"},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// request builds a 2026-07-28 POST. params gets the standard _meta unless it
// already has one; mcpName, when not empty, is sent as Mcp-Name; hdr holds
// further header name/value pairs (an empty value deletes the header).
func (p *peer) request(ctx context.Context, t *testing.T, id any, method, mcpName string, params map[string]any, hdr ...string) *http.Request {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = meta(nil)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if mcpName != "" {
		req.Header.Set("Mcp-Name", mcpName)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	return req
}

// reply is one complete HTTP exchange.
type reply struct {
	status      int
	contentType string
	body        []byte
}

func (p *peer) post(t *testing.T, id any, method, mcpName string, params map[string]any, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := p.client.Do(p.request(ctx, t, id, method, mcpName, params, hdr...))
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s response: %v", method, err)
	}
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: body}
}

// message is the part of a JSON-RPC message the tests look at.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decode(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
}

// jsonReply checks that r is one application/json JSON-RPC message with the
// given status and returns it.
func jsonReply(t *testing.T, r reply, status int) message {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if !strings.HasPrefix(r.contentType, "application/json") {
		t.Fatalf("Content-Type %q, want application/json; body %s", r.contentType, r.body)
	}
	var m message
	decode(t, r.body, &m)
	return m
}

// sseEvents reads a text/event-stream and returns the data of each event, in
// order. Comment lines and fields other than data are ignored.
func sseEvents(r io.Reader) ([][]byte, error) {
	var (
		events [][]byte
		data   []string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != nil {
				events = append(events, []byte(strings.Join(data, "\n")))
				data = nil
			}
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	if data != nil {
		events = append(events, []byte(strings.Join(data, "\n")))
	}
	return events, sc.Err()
}

type callResult struct {
	ResultType string `json:"resultType"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// text returns the text of a result holding exactly one TextContent.
func (r callResult) text(t *testing.T) string {
	t.Helper()
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("content %+v, want one text block", r.Content)
	}
	return r.Content[0].Text
}

func TestDiscover(t *testing.T) {
	p := startPeer(t)
	m := jsonReply(t, p.post(t, 1, "server/discover", "", nil), http.StatusOK)
	if string(m.ID) != "1" || m.Error != nil {
		t.Fatalf("id %s, error %+v; want id 1 and a result", m.ID, m.Error)
	}
	var res struct {
		ResultType        string          `json:"resultType"`
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      map[string]any  `json:"capabilities"`
		Instructions      string          `json:"instructions"`
		TTLMs             *int            `json:"ttlMs"`
		CacheScope        string          `json:"cacheScope"`
		Meta              map[string]any  `json:"_meta"`
		ServerInfo        json.RawMessage `json:"serverInfo"`
	}
	decode(t, m.Result, &res)
	if len(res.SupportedVersions) != 1 || res.SupportedVersions[0] != "2026-07-28" {
		t.Errorf("supportedVersions %q, want [2026-07-28]", res.SupportedVersions)
	}
	info, _ := res.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
	if info["name"] != demo.ServerName || info["version"] != demo.ServerVersion {
		t.Errorf("_meta serverInfo %v, want %s %s", info, demo.ServerName, demo.ServerVersion)
	}
	if res.ServerInfo != nil {
		t.Errorf("top-level serverInfo %s present; 2026-07-28 has it only in _meta", res.ServerInfo)
	}
	for _, c := range []string{"tools", "prompts", "resources", "logging"} {
		if _, ok := res.Capabilities[c]; !ok {
			t.Errorf("capabilities %v lack %q", res.Capabilities, c)
		}
	}
	if res.ResultType != "complete" || res.TTLMs == nil || res.CacheScope == "" || res.Instructions == "" {
		t.Errorf("result %s: want resultType complete, ttlMs, cacheScope and instructions", m.Result)
	}
}

func TestEcho(t *testing.T) {
	p := startPeer(t)
	const text = "hi <&> \"quoted\" ☃\n"
	m := jsonReply(t, p.post(t, "e-1", "tools/call", "echo", map[string]any{
		"name": "echo", "arguments": map[string]any{"text": text},
	}), http.StatusOK)
	if string(m.ID) != `"e-1"` {
		t.Errorf("id %s, want \"e-1\"", m.ID)
	}
	var res callResult
	decode(t, m.Result, &res)
	if got := res.text(t); got != text || res.IsError || res.ResultType != "complete" {
		t.Errorf("echo result %s, want text %q, no error, resultType complete", m.Result, text)
	}
}

func TestEchoRejectsMissingText(t *testing.T) {
	p := startPeer(t)
	m := jsonReply(t, p.post(t, 2, "tools/call", "echo", map[string]any{
		"name": "echo", "arguments": map[string]any{},
	}), http.StatusOK)
	var res callResult
	decode(t, m.Result, &res)
	if !res.IsError {
		t.Errorf("echo without text: result %s, want isError", m.Result)
	}
}

// slowCount calls slow_count and returns the JSON-RPC messages of its SSE
// response, in order.
func slowCount(t *testing.T, p *peer, args map[string]any, extraMeta map[string]any) []message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := p.client.Do(p.request(ctx, t, 7, "tools/call", "slow_count", map[string]any{
		"name": "slow_count", "arguments": args, "_meta": meta(extraMeta),
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, Content-Type %q, want 200 text/event-stream; body %s",
			resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	events, err := sseEvents(resp.Body)
	if err != nil {
		t.Fatalf("reading SSE: %v", err)
	}
	msgs := make([]message, len(events))
	for i, e := range events {
		decode(t, e, &msgs[i])
	}
	if len(msgs) == 0 {
		t.Fatal("empty event stream")
	}
	final := msgs[len(msgs)-1]
	if string(final.ID) != "7" || final.Result == nil {
		t.Fatalf("last event %+v, want the result for id 7", final)
	}
	for _, m := range msgs[:len(msgs)-1] {
		if m.ID != nil || !strings.HasPrefix(m.Method, "notifications/") {
			t.Fatalf("event before the result is not a notification: %+v", m)
		}
	}
	return msgs
}

func TestSlowCountStreamsProgressBeforeResult(t *testing.T) {
	p := startPeer(t)
	for _, tc := range []struct {
		name  string
		token any
		want  string // raw JSON of the token in each notification
	}{
		{"string token", "tok-1", `"tok-1"`},
		{"integer token", 42, `42`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := slowCount(t, p, map[string]any{"n": 3}, map[string]any{"progressToken": tc.token})
			if len(msgs) != 4 {
				t.Fatalf("got %d messages, want 3 progress notifications and a result: %+v", len(msgs), msgs)
			}
			for i, m := range msgs[:3] {
				var prog struct {
					ProgressToken json.RawMessage `json:"progressToken"`
					Progress      float64         `json:"progress"`
					Total         float64         `json:"total"`
					Message       string          `json:"message"`
				}
				decode(t, m.Params, &prog)
				step := i + 1
				if m.Method != "notifications/progress" || string(prog.ProgressToken) != tc.want ||
					prog.Progress != float64(step) || prog.Total != 3 {
					t.Errorf("message %d: %s %s, want progress %d of 3 for token %s", i, m.Method, m.Params, step, tc.want)
				}
				if want := fmt.Sprintf("step %d of 3", step); prog.Message != want {
					t.Errorf("message %d: progress message %q, want %q", i, prog.Message, want)
				}
			}
			var res callResult
			decode(t, msgs[3].Result, &res)
			if got := res.text(t); got != "counted to 3" {
				t.Errorf("result text %q, want %q", got, "counted to 3")
			}
		})
	}
}

// TestSlowCountDefaults also covers "arguments": null, which crashes a bare
// go-sdk v1.8.0 server for any tool with schema defaults.
func TestSlowCountDefaults(t *testing.T) {
	p := startPeer(t)
	for _, tc := range []struct {
		name string
		args map[string]any // the "arguments" member; nil means null
	}{
		{"null arguments", nil},
		{"empty arguments", map[string]any{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs := slowCount(t, p, tc.args, nil)
			if len(msgs) != 1 {
				t.Fatalf("got %+v, want only the result (no token, no log level)", msgs)
			}
			var res callResult
			decode(t, msgs[0].Result, &res)
			if got := res.text(t); got != "counted to 3" {
				t.Errorf("result text %q, want the default n=3", got)
			}
		})
	}
}

func TestSlowCountRejectsOutOfRangeN(t *testing.T) {
	p := startPeer(t)
	for _, n := range []int{0, 51} {
		msgs := slowCount(t, p, map[string]any{"n": n}, nil)
		var res callResult
		decode(t, msgs[len(msgs)-1].Result, &res)
		if !res.IsError {
			t.Errorf("n=%d: result %s, want isError", n, msgs[len(msgs)-1].Result)
		}
	}
}

func TestSlowCountLogFollowsRequestLogLevel(t *testing.T) {
	p := startPeer(t)
	for _, tc := range []struct {
		level any // nil: no logLevel in _meta
		logs  int
	}{
		{nil, 0},
		{"debug", 1},
		{"info", 1},
		{"warning", 0},
	} {
		extra := map[string]any{}
		if tc.level != nil {
			extra["io.modelcontextprotocol/logLevel"] = tc.level
		}
		msgs := slowCount(t, p, map[string]any{"n": 2}, extra)
		var logs []message
		for _, m := range msgs {
			if m.Method == "notifications/message" {
				logs = append(logs, m)
			}
		}
		if len(logs) != tc.logs {
			t.Errorf("logLevel %v: %d log messages, want %d: %+v", tc.level, len(logs), tc.logs, msgs)
			continue
		}
		if tc.logs == 1 {
			var lp struct {
				Level string `json:"level"`
				Data  string `json:"data"`
			}
			decode(t, logs[0].Params, &lp)
			if lp.Level != "info" || lp.Data != "counting to 2" {
				t.Errorf("log %s, want level info and data %q", logs[0].Params, "counting to 2")
			}
		}
	}
}

// TestSlowCountStopsWhenStreamCloses closes the response stream after the
// first progress notification. The tool is then waiting out a long delay; the
// leak check in startPeer fails if closing the stream did not cancel it.
func TestSlowCountStopsWhenStreamCloses(t *testing.T) {
	p := startPeer(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	reqCtx, closeStream := context.WithCancel(ctx)
	defer closeStream()
	resp, err := p.client.Do(p.request(reqCtx, t, 9, "tools/call", "slow_count", map[string]any{
		"name":      "slow_count",
		"arguments": map[string]any{"n": 3, "delay_ms": 10000},
		"_meta":     meta(map[string]any{"progressToken": "cancel-me"}),
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data:") && strings.Contains(sc.Text(), `"step 1 of 3"`) {
			break
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading first progress event: %v", err)
	}
	closeStream()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading after close: %v, want context.Canceled", err)
	}
}

func TestWhoami(t *testing.T) {
	p := startPeer(t)
	m := jsonReply(t, p.post(t, 3, "tools/call", "whoami", map[string]any{
		"name": "whoami",
		"_meta": meta(map[string]any{
			"io.modelcontextprotocol/logLevel": "notice",
			"progressToken":                    "w",
		}),
	}, "Authorization", "Bearer secret-token"), http.StatusOK)
	var res callResult
	decode(t, m.Result, &res)
	if bytes.Contains(m.Result, []byte("secret-token")) {
		t.Errorf("whoami leaked the Authorization header: %s", m.Result)
	}
	var who demo.WhoAmI
	decode(t, res.StructuredContent, &who)
	var fromText demo.WhoAmI
	decode(t, []byte(res.text(t)), &fromText)
	if who.ProtocolVersion != "2026-07-28" || who.LogLevel != "notice" || who.ProgressToken != "w" {
		t.Errorf("whoami %+v: want protocolVersion, logLevel and progressToken echoed", who)
	}
	if info, _ := who.ClientInfo.(map[string]any); info["name"] != "demo-test" {
		t.Errorf("clientInfo %v, want name demo-test", who.ClientInfo)
	}
	if _, ok := who.ClientCapabilities.(map[string]any); !ok {
		t.Errorf("clientCapabilities %v, want an object", who.ClientCapabilities)
	}
	if who.Headers["Mcp-Method"] != "tools/call" || who.Headers["Mcp-Name"] != "whoami" ||
		who.Headers["Mcp-Protocol-Version"] != "2026-07-28" {
		t.Errorf("headers %v, want the Mcp-* headers of the request", who.Headers)
	}
	if fromText.ProtocolVersion != who.ProtocolVersion || len(fromText.Meta) != len(who.Meta) {
		t.Errorf("text content %+v differs from structuredContent %+v", fromText, who)
	}
}

func TestGreetingPrompt(t *testing.T) {
	p := startPeer(t)
	m := jsonReply(t, p.post(t, 4, "prompts/get", "greeting", map[string]any{
		"name": "greeting", "arguments": map[string]any{"name": "Ada"},
	}), http.StatusOK)
	var res struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	decode(t, m.Result, &res)
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" || res.Messages[0].Content.Text != "Hello, Ada!" {
		t.Errorf("prompt result %s, want one user message \"Hello, Ada!\"", m.Result)
	}

	m = jsonReply(t, p.post(t, 5, "prompts/get", "greeting", map[string]any{"name": "greeting"}), http.StatusBadRequest)
	if m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("greeting without name: %+v, want error -32602", m)
	}
}

type readResult struct {
	Contents []struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType"`
		Text     string `json:"text"`
	} `json:"contents"`
	TTLMs      *int   `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

func TestReadResources(t *testing.T) {
	p := startPeer(t)
	for _, tc := range []struct {
		name, uri, mcpName, mime, text string
	}{
		{"readme", "demo://readme", "demo://readme", "text/markdown", ""},
		{"readme, Base64 Mcp-Name", "demo://readme",
			"=?base64?" + base64.StdEncoding.EncodeToString([]byte("demo://readme")) + "?=", "text/markdown", ""},
		{"template", "demo://echo/h%C3%A9llo", "demo://echo/h%C3%A9llo", "text/plain", "héllo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := jsonReply(t, p.post(t, 6, "resources/read", tc.mcpName, map[string]any{"uri": tc.uri}), http.StatusOK)
			var res readResult
			decode(t, m.Result, &res)
			if len(res.Contents) != 1 || res.Contents[0].URI != tc.uri || res.Contents[0].MIMEType != tc.mime {
				t.Fatalf("contents %s, want one %s item for %s", m.Result, tc.mime, tc.uri)
			}
			if tc.text != "" && res.Contents[0].Text != tc.text {
				t.Errorf("text %q, want %q", res.Contents[0].Text, tc.text)
			}
			if res.Contents[0].Text == "" || res.TTLMs == nil || res.CacheScope == "" {
				t.Errorf("result %s: want text, ttlMs and cacheScope", m.Result)
			}
		})
	}
}

// TestRejectsBadHeaders proves the server checks the standard headers
// against the body, so tests that pass against it mean the proxy sent them
// right.
func TestRejectsBadHeaders(t *testing.T) {
	p := startPeer(t)
	for _, tc := range []struct {
		name    string
		method  string
		mcpName string
		params  map[string]any
		hdr     []string
		status  int
		code    int64
	}{
		{"wrong Mcp-Name", "resources/read", "demo://other", map[string]any{"uri": "demo://readme"}, nil, 400, -32020},
		{"missing Mcp-Name", "tools/call", "", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}, nil, 400, -32020},
		{"bad Base64 Mcp-Name", "resources/read", "=?base64?!!!?=", map[string]any{"uri": "demo://readme"}, nil, 400, -32020},
		{"Mcp-Method case", "tools/list", "", nil, []string{"Mcp-Method", "TOOLS/LIST"}, 400, -32020},
		{"missing MCP-Protocol-Version", "tools/list", "", nil, []string{"MCP-Protocol-Version", ""}, 400, -32020},
		{"header and _meta versions differ", "tools/list", "", map[string]any{"_meta": meta(map[string]any{
			"io.modelcontextprotocol/protocolVersion": "2027-01-01"})}, nil, 400, -32020},
		{"missing clientCapabilities", "tools/list", "", map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}, nil, 400, -32602},
		{"unknown method", "no/such", "", nil, nil, 404, -32601},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := jsonReply(t, p.post(t, 11, tc.method, tc.mcpName, tc.params, tc.hdr...), tc.status)
			if m.Error == nil || m.Error.Code != tc.code || string(m.ID) != "11" {
				t.Errorf("got %+v, want error %d for id 11", m, tc.code)
			}
		})
	}
}

func TestUnsupportedVersion(t *testing.T) {
	p := startPeer(t)
	m := jsonReply(t, p.post(t, 12, "server/discover", "", map[string]any{"_meta": meta(map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2027-01-01"})}, "MCP-Protocol-Version", "2027-01-01"), http.StatusBadRequest)
	if m.Error == nil || m.Error.Code != -32022 {
		t.Fatalf("got %+v, want -32022", m)
	}
	var data struct {
		Supported []string `json:"supported"`
		Requested string   `json:"requested"`
	}
	decode(t, m.Error.Data, &data)
	if len(data.Supported) != 1 || data.Supported[0] != "2026-07-28" || data.Requested != "2027-01-01" {
		t.Errorf("error data %s, want supported [2026-07-28], requested 2027-01-01", m.Error.Data)
	}

	// A legacy (2025-11-25) request is refused: the demo is modern-only.
	r := p.post(t, 13, "tools/list", "", map[string]any{}, "MCP-Protocol-Version", "2025-11-25")
	if r.status != http.StatusBadRequest {
		t.Errorf("legacy tools/list: status %d, want 400; body %s", r.status, r.body)
	}
}

func TestStopIsIdempotentAndCtxStops(t *testing.T) {
	defer goleak.VerifyNone(t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: testTimeout}

	url, stop, err := demo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(stop)
	}
	wg.Wait()
	stop()
	if resp, err := client.Post(url, "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("POST after stop succeeded with %s", resp.Status)
	}

	ctx, cancel := context.WithCancel(context.Background())
	url, stop, err = demo.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	stop() // waits for the shutdown that cancel started
	if resp, err := client.Post(url, "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
		t.Fatalf("POST after ctx cancel succeeded with %s", resp.Status)
	}
}

func TestStartFailsOnDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, stop, err := demo.Start(ctx); err == nil {
		stop()
		t.Fatal("Start with a done context succeeded")
	}
}
