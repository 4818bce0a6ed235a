package demo_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

func b64(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }

func TestWeatherParamHeaders(t *testing.T) {
	c := newMRTRClient(t)
	ok := []struct {
		name string
		args map[string]any
		hdr  []string
		want string
	}{
		{"plain", map[string]any{"city": "Paris", "days": 3}, []string{"Mcp-Param-City", "Paris", "Mcp-Param-Days", "3"}, "weather for Paris (3 days)"},
		{"Base64 non-ASCII city", map[string]any{"city": "Zürich", "days": 2}, []string{"Mcp-Param-City", b64("Zürich"), "Mcp-Param-Days", "2"}, "weather for Zürich (2 days)"},
		{"Base64 plain city", map[string]any{"city": "Oslo"}, []string{"Mcp-Param-City", b64("Oslo")}, "weather for Oslo (1 days)"},
		{"leading space", map[string]any{"city": " Rome"}, []string{"Mcp-Param-City", b64(" Rome")}, "weather for  Rome (1 days)"},
		{"days compared numerically", map[string]any{"city": "Lima", "days": 4}, []string{"Mcp-Param-City", "Lima", "Mcp-Param-Days", "4.0"}, "weather for Lima (4 days)"},
		{"Base64 Mcp-Name", map[string]any{"city": "Bern"}, []string{"Mcp-Param-City", "Bern", "Mcp-Name", b64("weather")}, "weather for Bern (1 days)"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			body := mrtrBody(t, "w", "weather", tc.args, "", "", nil)
			if err := c.v.ValidateUpstream(body); err != nil {
				t.Error(err)
			}
			r := c.postRaw(t, "weather", body, tc.hdr...)
			var m message
			decode(t, r.body, &m)
			if got := c.complete(t, round{reply: r, msg: m}); got != tc.want {
				t.Errorf("text %q, want %q", got, tc.want)
			}
		})
	}

	// A null argument needs no header; the schema then rejects the null
	// (a tool error, not a header mismatch).
	r := c.postRaw(t, "weather", mrtrBody(t, "w-null", "weather", map[string]any{"city": "Kyiv", "days": nil}, "", "", nil),
		"Mcp-Param-City", "Kyiv")
	if r.status != http.StatusOK || !gjson.GetBytes(r.body, "result.isError").Bool() {
		t.Errorf("days null: status %d, body %s; want 200 and an isError result", r.status, r.body)
	}

	bad := []struct {
		name string
		args map[string]any
		hdr  []string
		want string // in the error message
	}{
		{"missing City", map[string]any{"city": "Paris"}, nil, "missing Mcp-Param-City"},
		{"missing Days", map[string]any{"city": "Paris", "days": 3}, []string{"Mcp-Param-City", "Paris"}, "missing Mcp-Param-Days"},
		{"wrong City", map[string]any{"city": "Paris"}, []string{"Mcp-Param-City", "Lyon"}, "does not match"},
		{"wrong Days", map[string]any{"city": "Paris", "days": 3}, []string{"Mcp-Param-City", "Paris", "Mcp-Param-Days", "4"}, "does not match"},
		{"Days not a number", map[string]any{"city": "Paris", "days": 3}, []string{"Mcp-Param-City", "Paris", "Mcp-Param-Days", "three"}, "does not match"},
		{"unexpected Days", map[string]any{"city": "Paris"}, []string{"Mcp-Param-City", "Paris", "Mcp-Param-Days", "3"}, "unexpected Mcp-Param-Days"},
		{"raw UTF-8 value", map[string]any{"city": "Zürich"}, []string{"Mcp-Param-City", "Zürich"}, "requires Base64"},
		{"Base64 of another city", map[string]any{"city": "Zürich"}, []string{"Mcp-Param-City", b64("Zurich")}, "does not match"},
		{"unpadded Base64", map[string]any{"city": "Zürich"}, []string{"Mcp-Param-City", strings.TrimRight(b64("Zürich"), "=?") + "?="}, "invalid Base64"},
		{"base64url", map[string]any{"city": "??>"}, []string{"Mcp-Param-City", "=?base64?" + base64.URLEncoding.EncodeToString([]byte("??>")) + "?="}, "invalid Base64"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			body := mrtrBody(t, "w-bad", "weather", tc.args, "", "", nil)
			r := c.postRaw(t, "weather", body, tc.hdr...)
			if err := c.v.Validate(schematest.Schema2026, "HeaderMismatchError", r.body); err != nil {
				t.Error(err)
			}
			var m message
			decode(t, r.body, &m)
			rpcError(t, round{reply: r, msg: m}, http.StatusBadRequest, -32020, "Header mismatch: ")
			if !strings.HasPrefix(m.Error.Message, "Header mismatch: ") || !strings.Contains(m.Error.Message, tc.want) {
				t.Errorf("message %q, want \"Header mismatch: ...%s...\"", m.Error.Message, tc.want)
			}
			if string(m.ID) != `"w-bad"` {
				t.Errorf("id %s, want \"w-bad\"", m.ID)
			}
		})
	}
}

// TestToolsListAnnotations: weather carries its x-mcp-header annotations
// and the raw tools/list includes bad_header_tool with its invalid one.
func TestToolsListAnnotations(t *testing.T) {
	c := newMRTRClient(t)
	body := []byte(`{"jsonrpc":"2.0","id":"tl","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	r := c.postRaw(t, "", body, "Mcp-Method", "tools/list", "Mcp-Name", "")
	if err := c.v.ValidateUpstreamResult(r.body, "tools/list"); err != nil {
		t.Error(err)
	}
	if r.status != http.StatusOK {
		t.Fatalf("tools/list: %d %s", r.status, r.body)
	}
	tools := gjson.GetBytes(r.body, "result.tools")
	weather := tools.Get(`#(name=="weather").inputSchema`)
	if weather.Get("properties.city.x-mcp-header").Str != "City" || weather.Get("properties.days.x-mcp-header").Str != "Days" {
		t.Errorf("weather inputSchema %s lacks its annotations", weather.Raw)
	}
	bad := tools.Get(`#(name=="` + demo.BadHeaderTool + `")`)
	if !bad.Exists() || bad.Get("inputSchema.properties.q.x-mcp-header").Str != "Bad Header" {
		t.Errorf("tools/list %s lacks %s with x-mcp-header \"Bad Header\"", tools.Raw, demo.BadHeaderTool)
	}
}
