package rewrite_test

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

func TestUpFor(t *testing.T) {
	retry := rewrite.RetryParams([]rewrite.InputAnswer{{Key: "k", Answer: []byte(`{}`)}}, []byte(`"s"`))
	tests := []struct {
		frame string
		retry []byte
		want  string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":5}}}`, nil,
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"a"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"a","task":{"ttl":5}}}`, nil,
			`{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"a","task":{"ttl":5}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","requestState":"old","task":{}}}`, retry,
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"a","inputResponses":{"k":{}},"requestState":"s"}}`},
	}
	for _, tt := range tests {
		f, err := rewrite.Parse([]byte(tt.frame))
		if err != nil {
			t.Fatal(err)
		}
		got, err := rewrite.RequestUp(&f, rewrite.UpFor(&f, []byte(`9`), testMeta, tt.retry))
		if err != nil || string(got) != tt.want {
			t.Errorf("RequestUp(UpFor(%s)) = %v\n got %s\nwant %s", tt.frame, err, got, tt.want)
		}
	}
}

func TestCheckNameParam(t *testing.T) {
	tests := []struct {
		frame string
		msg   string // "" when the request passes
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, "Invalid params: tools/call needs params.name, a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"prompts/get"}`, "Invalid params: prompts/get needs params.name, a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"name":"x"}}`, "Invalid params: resources/read needs params.uri, a string"},
		{`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`, ""}, // its Mcp-Name is not checked before sending
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, ""},
	}
	for _, tt := range tests {
		f, err := rewrite.Parse([]byte(tt.frame))
		if err != nil {
			t.Fatal(err)
		}
		e, ok := rewrite.CheckNameParam(&f)
		if ok != (tt.msg == "") || !ok && (e.Text(nil) != tt.msg || e.Code != protocol.CodeInvalidParams) {
			t.Errorf("CheckNameParam(%s) = %+v, %v; want %q", tt.frame, e, ok, tt.msg)
		}
	}
}

func FuzzUpFor(f *testing.F) {
	for _, fr := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":5}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x","requestState":1}}`,
		`{"jsonrpc":"2.0","id":"q","method":"ping"}`,
	} {
		f.Add([]byte(fr), []byte(`"state"`))
	}
	f.Fuzz(func(t *testing.T, frame, state []byte) {
		fr, err := rewrite.Parse(rewrite.TrimFrame(frame))
		if err != nil || fr.Kind != rewrite.KindRequest {
			return
		}
		e, ok := rewrite.CheckNameParam(&fr)
		if p := protocol.RequiredParam(fr.Method); ok != (p == "" || fr.Params.Get(p).Type == gjson.String) || !ok && e.Code != protocol.CodeInvalidParams {
			t.Fatalf("CheckNameParam(%s) = %+v, %v", frame, e, ok)
		}
		var retry []byte
		if s := rawOrDefault(state, ""); len(s) > 0 {
			retry = rewrite.RetryParams(nil, s)
		}
		up, err := rewrite.RequestUp(&fr, rewrite.UpFor(&fr, []byte(`42`), testMeta, retry))
		if err != nil {
			return
		}
		got := gjson.ParseBytes(up)
		if fr.Method == "tools/call" && got.Get("params.task").Exists() && fr.Params.Get("task").Exists() {
			t.Fatalf("params.task kept: %s", up)
		}
		if len(retry) > 0 && got.Get("params.requestState").Raw != string(rawOrDefault(state, "")) {
			t.Fatalf("requestState not echoed: %s", up)
		}
	})
}
