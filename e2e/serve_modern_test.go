package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// serveModernMeta is the _meta every request of the 2026 HTTP client
// carries.
const serveModernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw-http","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// serveModernPost POSTs one 2026 request to serve as a stateless 2026
// client does (MCP-Protocol-Version, no Mcp-Session-Id), and returns the
// response with every JSON-RPC frame of its body (a JSON body, or each SSE
// event), each validated against the 2026 schema for method.
func serveModernPost(t *testing.T, ctx context.Context, url, method, body string, extra http.Header) (*http.Response, [][]byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	var frames [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		r := newSSEReader(resp.Body)
		for {
			ev, err := r.next()
			if err != nil {
				break
			}
			if len(ev.data) > 0 {
				frames = append(frames, ev.data)
			}
		}
	} else if b, _ := io.ReadAll(resp.Body); resp.StatusCode == http.StatusOK {
		frames = append(frames, bytes.TrimSpace(b))
	}
	v := schematest.Load(t)
	for _, f := range frames {
		if err := v.ValidateUpstreamResult(f, method); err != nil {
			t.Errorf("%s: a frame serve sent does not validate against 2026-07-28: %v", method, err)
		}
	}
	return resp, frames
}

// TestServeModernClient: serve relays a 2026-07-28 client's stateless
// POSTs to a 2026 server as they are (no session: no Mcp-Session-Id),
// with SSE notifications before the answer, under the same Origin rule as
// a 2025 session; against a 2025 server it refuses them with an error that
// says why.
func TestServeModernClient(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	up := newDemoUpstream(t)
	s := startServe(t, up.URL)

	resp, frames := serveModernPost(t, ctx, s.URL, "server/discover", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+serveModernMeta+`}}`, nil)
	if resp.StatusCode != http.StatusOK || len(frames) != 1 || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("discover: HTTP %d, session id %q, frames %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), frames)
	}
	if got := gjson.GetBytes(frames[0], "result.supportedVersions.0").Str; got != "2026-07-28" || gjson.GetBytes(frames[0], "id").Raw != "1" {
		t.Errorf("discover answer: %s", frames[0])
	}

	call := `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"stateless"},` + serveModernMeta + `}}`
	_, frames = serveModernPost(t, ctx, s.URL, "tools/call", call, http.Header{"Mcp-Name": {"echo"}})
	if len(frames) != 1 || gjson.GetBytes(frames[0], "result.content.0.text").Str != "stateless" || gjson.GetBytes(frames[0], "id").Raw != `"c-1"` {
		t.Errorf("echo: %q", frames)
	}
	ex := up.waitRequest(t, "the echo call", func(ex *exchange) bool { return ex.RPCMethod == "tools/call" })
	if got, want := gjson.GetBytes(ex.Body, "params").Raw, gjson.Get(call, "params").Raw; got != want {
		t.Errorf("the upstream params differ from the client's:\n got %s\nwant %s", got, want)
	}

	progress := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":2},` +
		strings.Replace(serveModernMeta, `"_meta":{`, `"_meta":{"progressToken":"p-1",`, 1) + `}}`
	_, frames = serveModernPost(t, ctx, s.URL, "tools/call", progress, http.Header{"Mcp-Name": {"slow_count"}})
	if len(frames) < 2 || gjson.GetBytes(frames[0], "method").Str != "notifications/progress" || gjson.GetBytes(frames[0], "params.progressToken").Str != "p-1" ||
		gjson.GetBytes(frames[len(frames)-1], "id").Raw != "2" {
		t.Errorf("slow_count: want progress for p-1 and then the answer, got %q", frames)
	}

	resp, _ = serveModernPost(t, ctx, s.URL, "tools/call", call, http.Header{"Origin": {"https://evil.example"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Origin: HTTP %d, want 403 as for any request", resp.StatusCode)
	}

	legacy := newLegacyUpstream(t, demo.NewLegacy())
	ls := startServe(t, legacy.URL)
	_, frames = serveModernPost(t, ctx, ls.URL, "tools/call", call, nil)
	if len(frames) != 1 || gjson.GetBytes(frames[0], "error.code").Int() != -32601 || !strings.Contains(gjson.GetBytes(frames[0], "error.message").Str, "2025") {
		t.Errorf("against a 2025 server: want -32601 saying it speaks 2025, got %q", frames)
	}
}
