package e2e

import (
	"net/http"
	"slices"
	"testing"
)

// TestDemoToolsList: the demo's tools/list, as the legacy client gets it,
// is a valid 2025-11-25 ListToolsResult (checked by the stdout validator)
// with the demo's tools.
func TestDemoToolsList(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{up.URL})
	p.initialize()
	res := resultOf(t, p.call("1", "tools/list", `{}`))
	var names []string
	for _, tool := range res.Get("tools").Array() {
		names = append(names, tool.Get("name").String())
	}
	for _, want := range []string{"echo", "slow_count", "whoami"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list = %v, missing %s", names, want)
		}
	}
}

// TestToolSchemaDeltas: tool shapes legal in 2026-07-28 but not in
// 2025-11-25 reach the legacy client in a 2025-valid form (output schemas,
// structuredContent, x-mcp-header); the stdout validator checks each frame
// against the 2025 schema.
func TestToolSchemaDeltas(t *testing.T) {
	t.Parallel()
	list := func(tools string) map[string]string {
		return map[string]string{"tools/list": `{"resultType":"complete","tools":[` + tools + `],"ttlMs":0,"cacheScope":"private"}`}
	}
	run := func(t *testing.T, fs *fakeServer) (*rawProc, *upstream) {
		t.Helper()
		up := newUpstream(t, fs)
		p := startProxy(t, []string{up.URL})
		p.initialize()
		return p, up
	}

	t.Run("outputSchema not of type object is dropped", func(t *testing.T) {
		t.Parallel()
		p, _ := run(t, &fakeServer{Results: list(`{"name":"arr","inputSchema":{"type":"object"},"outputSchema":{"type":"array","items":{"type":"integer"}}}`)})
		tool := resultOf(t, p.call("1", "tools/list", `{}`)).Get("tools.0")
		if tool.Get("name").String() != "arr" || tool.Get("outputSchema").Exists() {
			t.Errorf("tool = %s, want arr without outputSchema", tool.Raw)
		}
	})

	t.Run("boolean property schemas", func(t *testing.T) {
		t.Parallel()
		// JSON Schema 2020-12 allows true/false as subschemas, and 2026
		// tools may use them (go-sdk infers `true` for fields of type any,
		// as in the demo's whoami outputSchema). The 2025 schema requires
		// every member of inputSchema.properties and outputSchema.properties
		// to be an object.
		p, _ := run(t, &fakeServer{Results: list(`{"name":"loose","inputSchema":{"type":"object","properties":{"a":true,"b":{"type":"string"}}},` +
			`"outputSchema":{"type":"object","properties":{"x":true,"y":false}}}`)})
		tools := resultOf(t, p.call("1", "tools/list", `{}`)).Get("tools")
		if n := len(tools.Array()); n != 1 {
			t.Errorf("tools = %s: the tool should be kept, in a 2025-valid form", tools.Raw)
		}
	})

	t.Run("invalid x-mcp-header tools are removed", func(t *testing.T) {
		t.Parallel()
		p, _ := run(t, &fakeServer{Results: list(
			`{"name":"good","inputSchema":{"type":"object","properties":{"city":{"type":"string","x-mcp-header":"City"}}}},` +
				`{"name":"bad-number","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}},` +
				`{"name":"bad-token","inputSchema":{"type":"object","properties":{"s":{"type":"string","x-mcp-header":"Bad Name"}}}}`)})
		var names []string
		for _, tool := range resultOf(t, p.call("1", "tools/list", `{}`)).Get("tools").Array() {
			names = append(names, tool.Get("name").String())
		}
		if !slices.Equal(names, []string{"good"}) {
			t.Errorf("tools/list names = %v, want [good] (tools with invalid x-mcp-header are excluded)", names)
		}
	})

	t.Run("x-mcp-header becomes Mcp-Param", func(t *testing.T) {
		t.Parallel()
		p, up := run(t, &fakeServer{Results: list(`{"name":"weather","inputSchema":{"type":"object","properties":{` +
			`"city":{"type":"string","x-mcp-header":"City"},"days":{"type":"integer","x-mcp-header":"Days"}}}}`)})
		resultOf(t, p.call("1", "tools/list", `{}`))
		resultOf(t, p.call("2", "tools/call", `{"name":"weather","arguments":{"city":"Zürich","days":3}}`))
		calls := up.requests("tools/call")
		if len(calls) != 1 {
			t.Fatalf("upstream saw %d tools/call", len(calls))
		}
		h := calls[0].Header
		if city, err := decodeHeaderValue(h.Get("Mcp-Param-City")); err != nil || city != "Zürich" || h.Get("Mcp-Param-City") == "Zürich" {
			t.Errorf("Mcp-Param-City = %q, want the Base64 sentinel of Zürich", h.Get("Mcp-Param-City"))
		}
		if got := h.Get("Mcp-Param-Days"); got != "3" {
			t.Errorf("Mcp-Param-Days = %q, want 3", got)
		}
	})

	t.Run("non-object structuredContent is dropped", func(t *testing.T) {
		t.Parallel()
		p, _ := run(t, &fakeServer{Call: func(w http.ResponseWriter, _ *http.Request, _, id string, _ []byte) {
			writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","content":[{"type":"text","text":"[1,2]"}],"structuredContent":[1,2]}}`)
		}})
		res := resultOf(t, p.call("1", "tools/call", `{"name":"list","arguments":{}}`))
		if res.Get("structuredContent").Exists() || res.Get("content.0.text").String() != "[1,2]" {
			t.Errorf("result = %s, want the content without structuredContent", res.Raw)
		}
	})

	t.Run("cache fields and resultType are stripped", func(t *testing.T) {
		t.Parallel()
		p, _ := run(t, &fakeServer{Results: list(`{"name":"x","inputSchema":{"type":"object"}}`)})
		res := resultOf(t, p.call("1", "tools/list", `{}`))
		for _, k := range []string{"ttlMs", "cacheScope", "resultType"} {
			if res.Get(k).Exists() {
				t.Errorf("tools/list result keeps %s: %s", k, res.Raw)
			}
		}
	})
}
