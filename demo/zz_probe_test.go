package demo_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

func post(t *testing.T, url, method, name, body string, hdr ...string) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	if method != "" {
		req.Header.Set("Mcp-Method", method)
	}
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("== %s %s -> %d %s\n%s\n", method, name, resp.StatusCode, resp.Header.Get("Content-Type"), b)
}

const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}`

func TestProbe(t *testing.T) {
	url, stop, err := demo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	post(t, url, "server/discover", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}}`)
	post(t, url, "tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta+`}}}`)
	post(t, url, "tools/list", "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	post(t, url, "tools/call", "echo", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},`+meta+`}}}`)
	post(t, url, "tools/call", "slow_count", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":2},`+meta+`,"progressToken":"p1","io.modelcontextprotocol/logLevel":"debug"}}}`)
	post(t, url, "tools/call", "slow_count", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":2},`+meta+`,"io.modelcontextprotocol/logLevel":"warning"}}}`)
	post(t, url, "tools/call", "slow_count", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":99},`+meta+`}}}`)
	post(t, url, "tools/call", "whoami", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami",`+meta+`,"progressToken":7,"io.modelcontextprotocol/logLevel":"bogus"}}}`)
	post(t, url, "resources/read", "demo://readme", `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"demo://readme",`+meta+`}}}`)
	post(t, url, "resources/read", "demo://nope", `{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"demo://nope",`+meta+`}}}`)
	post(t, url, "resources/read", "demo://other", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"demo://readme",`+meta+`}}}`)
	post(t, url, "resources/read", "=?base64?ZGVtbzovL2VjaG8vaMOp?=", `{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"demo://echo/hé",`+meta+`}}}`)
	post(t, url, "resources/read", "=?base64?ZGVtbzovL2VjaG8vaMOp?", `{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"demo://echo/hé",`+meta+`}}}`)
	post(t, url, "resources/read", "=?base64?!!!?=", `{"jsonrpc":"2.0","id":"x","method":"resources/read","params":{"uri":"demo://echo/hé",`+meta+`}}}`)
	post(t, url, "resources/templates/list", "", `{"jsonrpc":"2.0","id":9,"method":"resources/templates/list","params":{`+meta+`}}}`)
	post(t, url, "resources/list", "", `{"jsonrpc":"2.0","id":9,"method":"resources/list","params":{`+meta+`}}}`)
	post(t, url, "prompts/get", "greeting", `{"jsonrpc":"2.0","id":10,"method":"prompts/get","params":{"name":"greeting","arguments":{"name":"Ada"},`+meta+`}}}`)
	post(t, url, "prompts/get", "greeting", `{"jsonrpc":"2.0","id":10,"method":"prompts/get","params":{"name":"greeting",`+meta+`}}}`)
	post(t, url, "prompts/list", "", `{"jsonrpc":"2.0","id":11,"method":"prompts/list","params":{`+meta+`}}}`)
	post(t, url, "foo/bar", "", `{"jsonrpc":"2.0","id":12,"method":"foo/bar","params":{`+meta+`}}}`)
	post(t, url, "initialize", "", `{"jsonrpc":"2.0","id":13,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, "MCP-Protocol-Version", "")
	post(t, url, "tools/list", "", `{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{}}`, "MCP-Protocol-Version", "2025-11-25")
	post(t, url, "tools/list", "", `{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	post(t, url, "server/discover", "", `{"jsonrpc":"2.0","id":16,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, "MCP-Protocol-Version", "2027-01-01")
	post(t, url, "subscriptions/listen", "", `{"jsonrpc":"2.0","id":17,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta+`}}}`, "X", "")
}
