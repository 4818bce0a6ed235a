package rewrite_test

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// TestResponseDownFollowsTheAnswerRule holds ResponseDown to the method
// table: for every method it knows (and one it does not), what goes from a
// complete result is what the method's answer rule says.
func TestResponseDownFollowsTheAnswerRule(t *testing.T) {
	const frame = `{"jsonrpc":"2.0","id":9,"result":{"resultType":"complete","ttlMs":5,"cacheScope":"public","structuredContent":[1],"tools":[{"name":"t","inputSchema":{"type":"object"}}],"x":1}}`
	methods := append(protocol.Methods(), protocol.Method{Name: "custom/method"})
	for _, m := range methods {
		f, err := rewrite.Parse([]byte(frame))
		if err != nil {
			t.Fatal(err)
		}
		d, err := rewrite.ResponseDown(&f, rewrite.Down{ID: []byte(`1`), Method: m.Name, TaskSupport: true})
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		got := gjson.GetBytes(d.Frame, "result")
		a := protocol.AnswerOf(m.Name)
		cache := a == protocol.AnswerCacheable || a == protocol.AnswerToolsList
		if got.Get("ttlMs").Exists() == cache || got.Get("cacheScope").Exists() == cache {
			t.Errorf("%s (%v): cache fields in %s", m.Name, a, d.Frame)
		}
		if got.Get("structuredContent").Exists() == (a == protocol.AnswerToolCall) {
			t.Errorf("%s (%v): structuredContent in %s", m.Name, a, d.Frame)
		}
		if got.Get("tools.0.execution").Exists() != (a == protocol.AnswerToolsList) {
			t.Errorf("%s (%v): tools in %s", m.Name, a, d.Frame)
		}
		if got.Get("resultType").Exists() || got.Get("x").Raw != "1" || gjson.GetBytes(d.Frame, "id").Raw != "1" {
			t.Errorf("%s (%v): the common edits are not made: %s", m.Name, a, d.Frame)
		}
	}
}
