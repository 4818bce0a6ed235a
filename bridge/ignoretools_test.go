package bridge

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestMatchTool(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"create*", "createTask", true},
		{"create*", "getTask", false},
		{"*account", "getAccount", true}, // case-insensitive, as mcp-remote
		{"*account", "account", true},
		{"exactTool", "exactTool", true},
		{"exactTool", "exactTool2", false},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"*", "anything", true},
		{"del?", "del?", true}, // only * is special
		{"del?", "dele", false},
		{"a.b", "axb", false},
		{"(x)+", "(X)+", true},
		{"a*", "a\nb", true},
		{"", "", true},
		{"", "x", false},
	} {
		if got := toolPattern(tc.pattern).MatchString(tc.name); got != tc.want {
			t.Errorf("toolPattern(%q) matches %q: %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

// TestIgnoreToolHidesAndRefuses: --ignore-tool leaves the tool out of
// tools/list (the others keep their bytes) and answers a tools/call of it
// with an error, without a request upstream.
func TestIgnoreToolHidesAndRefuses(t *testing.T) {
	u := newUpstream(t)
	u.tools = `[{"name":"echo","inputSchema":{"type":"object"}},{"name":"deleteAll","inputSchema":{"type":"object"}},{"name":"DELETE_one","inputSchema":{"type":"object"}}]`
	h := initialized(t, u, Config{IgnoreTools: []string{"delete*"}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	list := h.next()
	var names []string
	for _, n := range gjson.Get(list, "result.tools.#.name").Array() {
		names = append(names, n.Str)
	}
	if strings.Join(names, ",") != "echo" {
		t.Errorf("tools/list names %q, want only echo (%s)", names, list)
	}
	if !strings.Contains(list, `"tools":[{"name":"echo","inputSchema":{"type":"object"}`) {
		t.Errorf("tools/list %s: the kept tool's bytes changed", list)
	}
	before := u.count("tools/call")
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deleteAll","arguments":{}}}`)
	r := h.next()
	if gjson.Get(r, "id").Raw != "2" || gjson.Get(r, "error.code").Int() != -32602 ||
		!strings.Contains(gjson.Get(r, "error.message").Str, "--ignore-tool delete*") || gjson.Get(r, "error.data.tool").Str != "deleteAll" {
		t.Errorf("tools/call of a hidden tool: %s, want -32602 naming the pattern", r)
	}
	if n := u.count("tools/call"); n != before {
		t.Errorf("%d tools/call went upstream for a hidden tool", n-before)
	}
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if r := h.next(); !gjson.Get(r, "result").Exists() {
		t.Errorf("tools/call of a kept tool: %s, want a result", r)
	}
}

// TestIgnoreToolInPassthrough: a 2025 server's tools are hidden and
// refused the same way.
func TestIgnoreToolInPassthrough(t *testing.T) {
	f := newLegacyFake(t)
	f.setHandle(func(w http.ResponseWriter, r *http.Request, body string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo"}, {"name":"rm_rf"}],"nextCursor":"c"}}`, gjson.Get(body, "id").Raw)
	})
	h := passSession(t, f, Config{IgnoreTools: []string{"RM_*"}})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm_rf"}}`)
	got := h.answers("1", "2")
	if want := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo"}],"nextCursor":"c"}}`; got["1"] != want {
		t.Errorf("tools/list: %s, want %s", got["1"], want)
	}
	if gjson.Get(got["2"], "error.code").Int() != -32602 {
		t.Errorf("tools/call of a hidden tool: %s, want -32602", got["2"])
	}
	if n := len(f.seen("tools/call")); n != 0 {
		t.Errorf("%d tools/call reached the server", n)
	}
}
