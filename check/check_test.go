package check

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// A 2025 server that asks the client for its roots, and pings it, while it
// answers tools/list: the check answers as a client does, and the list
// completes with what the server learned.
func TestServerRequestsAnswered(t *testing.T) {
	answers := make(chan gjson.Result, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := gjson.ParseBytes(body)
		switch {
		case r.Method != http.MethodPost:
			http.Error(w, "no GET stream", http.StatusMethodNotAllowed)
		case m.Get("method").Str == "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"asks","version":"1"}}}`, m.Get("id").Raw)
		case m.Get("method").Str == "tools/list":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"roots/list\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s2\",\"method\":\"ping\"}\n\n")
			w.(http.Flusher).Flush()
			got := map[string]gjson.Result{}
			for range 2 {
				select {
				case a := <-answers:
					got[a.Get("id").Str] = a
				case <-time.After(10 * time.Second):
					return
				}
			}
			tools := `{"name":"a","inputSchema":{"type":"object"}}`
			if !got["s1"].Get("result.roots").IsArray() || !got["s2"].Get("result").IsObject() {
				tools = "" // a wrong answer lists no tools
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"tools\":[%s]}}\n\n", m.Get("id").Raw, tools)
		case m.Get("id").Exists() && !m.Get("method").Exists():
			answers <- m
			w.WriteHeader(http.StatusAccepted)
		case m.Get("method").Str == "server/discover":
			http.Error(w, "unknown method", http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	auth := NewAuth(nil)
	client, err := routing.New(routing.Config{URL: srv.URL, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := Run(ctx, Config{Bridge: bridge.Config{Client: client, Protocol: bridge.ProtocolLegacy}, Auth: auth, Version: "test", TimeoutText: "the bound"})
	if !r.Usable || r.Era != "2025-11-25" || r.Tools == nil || r.Tools.Count != 1 || r.Tools.Error != "" {
		t.Fatalf("usable %v era %q tools %+v reason %q; want the one tool the server lists once answered", r.Usable, r.Era, r.Tools, r.Reason)
	}
}
