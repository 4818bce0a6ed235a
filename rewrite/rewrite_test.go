package rewrite_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

var testMeta = rewrite.NewMetaBlock(
	rewrite.MetaPair{Key: protocol.MetaProtocolVersion, Value: []byte(`"2026-07-28"`)},
	rewrite.MetaPair{Key: protocol.MetaClientCapabilities, Value: []byte(`{}`)},
)

const metaIn = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`

func mustParse(t *testing.T, s string) rewrite.Frame {
	t.Helper()
	f, err := rewrite.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return f
}

func TestParse(t *testing.T) {
	tests := []struct {
		in     string
		kind   rewrite.Kind
		err    error
		code   int
		method string
		id     string
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, kind: rewrite.KindRequest, method: "ping", id: "1"},
		{in: `{"jsonrpc":"2.0","id":"abc","method":"tools/list","params":{}}`, kind: rewrite.KindRequest, method: "tools/list", id: `"abc"`},
		{in: `{"jsonrpc":"2.0","id":9007199254740993,"method":"x"}`, kind: rewrite.KindRequest, id: "9007199254740993", method: "x"},
		{in: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: rewrite.KindNotification, method: "notifications/initialized"},
		{in: `{"jsonrpc":"2.0","id":1,"result":{}}`, kind: rewrite.KindResponse, id: "1"},
		{in: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, kind: rewrite.KindResponse, id: "null"},
		{in: `not json`, err: rewrite.ErrParse, code: -32700},
		{in: `{"jsonrpc":"2.0","id":1,`, err: rewrite.ErrParse, code: -32700},
		{in: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, err: rewrite.ErrBatch, code: -32600},
		{in: `"str"`, err: rewrite.ErrNotObject, code: -32600},
		{in: `{"id":1,"method":"ping"}`, err: rewrite.ErrVersion, code: -32600, id: "1"},
		{in: `{"jsonrpc":"1.0","id":1,"method":"ping"}`, err: rewrite.ErrVersion, code: -32600, id: "1"},
		{in: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, err: rewrite.ErrID, code: -32600},
		{in: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, err: rewrite.ErrID, code: -32600},
		{in: `{"jsonrpc":"2.0","id":1,"method":7}`, err: rewrite.ErrShape, code: -32600, id: "1"},
		{in: `{"jsonrpc":"2.0","id":1}`, err: rewrite.ErrShape, code: -32600, id: "1"},
		{in: `{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}`, err: rewrite.ErrParams, code: -32602, id: "1"},
	}
	for _, tt := range tests {
		f, err := rewrite.Parse([]byte(tt.in))
		if !errors.Is(err, tt.err) {
			t.Errorf("Parse(%s) error = %v, want %v", tt.in, err, tt.err)
			continue
		}
		if err != nil {
			if got := rewrite.Code(err); got != tt.code {
				t.Errorf("Code(Parse(%s)) = %d, want %d", tt.in, got, tt.code)
			}
			if f.ID.Raw != tt.id {
				t.Errorf("Parse(%s) kept id %q, want %q", tt.in, f.ID.Raw, tt.id)
			}
			continue
		}
		if f.Kind != tt.kind || f.Method != tt.method || f.ID.Raw != tt.id {
			t.Errorf("Parse(%s) = kind %v method %q id %q, want %v %q %q", tt.in, f.Kind, f.Method, f.ID.Raw, tt.kind, tt.method, tt.id)
		}
	}
}

func TestRequestUp(t *testing.T) {
	tests := []struct {
		name string
		in   string
		drop []string
		want string
	}{
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"tools/list","params":{"_meta":{` + metaIn + `}}}`},
		{"null params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"tools/list","params":{"_meta":{` + metaIn + `}}}`},
		{"empty params", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"tools/list","params":{"_meta":{` + metaIn + `}}}`},
		{"params without _meta", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"b":2,"a":1}}}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"_meta":{` + metaIn + `},"name":"x","arguments":{"b":2,"a":1}}}`},
		{"client _meta kept", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p","traceparent":"00-1"}}}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"x","_meta":{` + metaIn + `,"progressToken":"p","traceparent":"00-1"}}}`},
		{"client copies of owned keys replaced", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `,"progressToken":1}}}`},
		{"only owned keys", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"x":1}}}}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `}}}`},
		{"empty _meta", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{}}}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `}}}`},
		{"null _meta", `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":null}}`,
			nil, `{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `}}}`},
		{"bytes kept: escapes, big numbers, key order, <>&", `{"method":"m","id":1.5,"params":{"z":"\u003c\u00e9<>&","n":123456789012345678901234567890,"a":[1.0,2e3]},"jsonrpc":"2.0"}`,
			nil, `{"method":"m","id":77,"params":{"_meta":{` + metaIn + `},"z":"\u003c\u00e9<>&","n":123456789012345678901234567890,"a":[1.0,2e3]},"jsonrpc":"2.0"}`},
		{"whitespace inside", "{ \"jsonrpc\" : \"2.0\" , \"id\" : 1 , \"method\" : \"m\" , \"params\" : { \"a\" : 1 } }",
			nil, "{ \"jsonrpc\" : \"2.0\" , \"id\" : 77 , \"method\" : \"m\" , \"params\" : {\"_meta\":{" + metaIn + "}, \"a\" : 1 } }"},
		{"drop task", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":1000},"arguments":{}}}`,
			[]string{"task"}, `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"_meta":{` + metaIn + `},"name":"x","arguments":{}}}`},
		{"drop the only member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"task":{}}}`,
			[]string{"task"}, `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"_meta":{` + metaIn + `}}}`},
		{"drop last member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"a":1},"task":{}}}`,
			[]string{"task"}, `{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"x","_meta":{` + metaIn + `,"a":1}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, tt.in)
			got, err := rewrite.RequestUp(&f, rewrite.Up{ID: []byte("77"), Meta: testMeta, DropParams: tt.drop})
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("RequestUp\n got: %s\nwant: %s", got, tt.want)
			}
			if !gjson.ValidBytes(got) {
				t.Errorf("output is not valid JSON: %s", got)
			}
		})
	}
}

func TestRequestUpRejectsNonRequests(t *testing.T) {
	f := mustParse(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, err := rewrite.RequestUp(&f, rewrite.Up{ID: []byte("1"), Meta: testMeta}); err == nil {
		t.Fatal("RequestUp accepted a notification")
	}
}

func TestResponseDown(t *testing.T) {
	tests := []struct {
		name, method, in string
		status           int
		tasks            bool
		want             string
		resultType       string
	}{
		{"strip all", "tools/list",
			`{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","tools":[],"nextCursor":"","ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{"tools":[],"nextCursor":""}}`, "complete"},
		{"cache fields kept on non-cacheable results", "tools/call",
			`{"jsonrpc":"2.0","id":5,"result":{"content":[],"ttlMs":5,"cacheScope":"x","resultType":"complete"}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{"content":[],"ttlMs":5,"cacheScope":"x"}}`, "complete"},
		{"absent resultType is complete", "prompts/get",
			`{"jsonrpc":"2.0","id":5,"result":{"messages":[]}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{"messages":[]}}`, "complete"},
		{"other _meta kept", "resources/read",
			`{"jsonrpc":"2.0","id":5,"result":{"contents":[],"_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{},"b":2},"ttlMs":1,"cacheScope":"private"}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{"contents":[],"_meta":{"a":1,"b":2}}}`, "complete"},
		{"everything removed", "ping",
			`{"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{}}}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{}}`, "complete"},
		{"non-object structuredContent dropped", "tools/call",
			`{"jsonrpc":"2.0","id":5,"result":{"content":[],"structuredContent":[1,2]}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{"content":[]}}`, "complete"},
		{"object structuredContent kept", "tools/call",
			`{"jsonrpc":"2.0","id":5,"result":{"content":[],"structuredContent":{"a":1}}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{"content":[],"structuredContent":{"a":1}}}`, "complete"},
		{"input_required left to the caller", "tools/call",
			`{"jsonrpc":"2.0","id":5,"result":{"resultType":"input_required","inputRequests":{}}}`,
			0, false, ``, "input_required"},
		{"error passes through with the status", "tools/call",
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"bad"}}`,
			400, false, `{"jsonrpc":"2.0","id":"orig","error":{"code":-32602,"message":"bad","data":{"httpStatus":400}}}`, "complete"},
		{"error data object gains the status", "tools/call",
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32022,"message":"v","data":{"supported":["2026-07-28"]}}}`,
			400, false, `{"jsonrpc":"2.0","id":"orig","error":{"code":-32022,"message":"v","data":{"httpStatus":400,"supported":["2026-07-28"]}}}`, "complete"},
		{"error data that is not an object is left alone", "tools/call",
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"v","data":"text"}}`,
			500, false, `{"jsonrpc":"2.0","id":"orig","error":{"code":-32000,"message":"v","data":"text"}}`, "complete"},
		{"error on 200 unchanged", "tools/call",
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"nope"}}`,
			200, false, `{"jsonrpc":"2.0","id":"orig","error":{"code":-32601,"message":"nope"}}`, "complete"},
		{"null id error gets the client id", "tools/call",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","error":{"code":-32600,"message":"x"}}`, "complete"},
		{"task support marked", "tools/list",
			`{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"},"execution":{}},{"name":"c","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"}}]}}`,
			0, true, `{"jsonrpc":"2.0","id":"orig","result":{"tools":[{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},{"name":"b","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}},{"name":"c","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}}`, "complete"},
		{"boolean property schemas become objects", "tools/list",
			`{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"x":true,"y":false,"z":{"type":"string"}}},"outputSchema":{"type":"object","properties":{"any":true}}}]}}`,
			0, false, `{"jsonrpc":"2.0","id":"orig","result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"x":{},"y":{"not":{}},"z":{"type":"string"}}},"outputSchema":{"type":"object","properties":{"any":{}}}}]}}`, "complete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustParse(t, tt.in)
			d, err := rewrite.ResponseDown(&f, rewrite.Down{ID: []byte(`"orig"`), Method: tt.method, HTTPStatus: tt.status, TaskSupport: tt.tasks})
			if err != nil {
				t.Fatal(err)
			}
			if d.ResultType != tt.resultType {
				t.Errorf("ResultType = %q, want %q", d.ResultType, tt.resultType)
			}
			if string(d.Frame) != tt.want {
				t.Errorf("ResponseDown\n got: %s\nwant: %s", d.Frame, tt.want)
			}
		})
	}
}

func TestToolsListHeaders(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"result":{"tools":[
	{"name":"ok","inputSchema":{"type":"object","properties":{"city":{"type":"string","x-mcp-header":"City"},"deep":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}},"a.b":{"type":"boolean","x-mcp-header":"Dot"}}}},
	{"name":"space","inputSchema":{"type":"object","properties":{"q":{"type":"string","x-mcp-header":"Bad Header"}}}},
	{"name":"number","inputSchema":{"type":"object","properties":{"q":{"type":"number","x-mcp-header":"Q"}}}},
	{"name":"items","inputSchema":{"type":"object","properties":{"q":{"type":"array","items":{"type":"string","x-mcp-header":"Q"}}}}},
	{"name":"dup","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}},
	{"name":"empty","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}},
	{"name":"root","inputSchema":{"type":"object","x-mcp-header":"R"}},
	{"name":"anyof","inputSchema":{"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}},
	{"name":"plain","inputSchema":{"type":"object","properties":{"d":{"type":"string","default":{"x-mcp-header":"not a schema"}}}}}
	]}}`
	f := mustParse(t, strings.NewReplacer("\n", "", "\t", "").Replace(in))
	d, err := rewrite.ResponseDown(&f, rewrite.Down{ID: []byte("1"), Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range gjson.GetBytes(d.Frame, "result.tools").Array() {
		names = append(names, tool.Get("name").Str)
	}
	if got := strings.Join(names, ","); got != "ok,plain" {
		t.Errorf("tools kept = %s, want ok,plain", got)
	}
	rejected := map[string]string{}
	for _, r := range d.Rejected {
		rejected[r.Tool] = r.Reason
	}
	for _, name := range []string{"space", "number", "items", "dup", "empty", "root", "anyof"} {
		if rejected[name] == "" {
			t.Errorf("tool %s was not rejected", name)
		}
	}
	if len(d.Tools) != 1 || d.Tools[0].Tool != "ok" {
		t.Fatalf("Tools = %+v, want the annotations of ok", d.Tools)
	}
	want := map[string]string{"City": "params.arguments.city", "N": "params.arguments.deep.n", "Dot": `params.arguments.a\.b`}
	for _, p := range d.Tools[0].Params {
		if want[p.Name] != p.Path {
			t.Errorf("param %s path %q, want %q", p.Name, p.Path, want[p.Name])
		}
		delete(want, p.Name)
	}
	if len(want) != 0 {
		t.Errorf("missing params %v", want)
	}
	if !gjson.ValidBytes(d.Frame) {
		t.Errorf("invalid JSON: %s", d.Frame)
	}
}

func TestErrorFrame(t *testing.T) {
	got := rewrite.ErrorFrame(nil, -32700, "bad \"line\"\n<&>\x01\xff", []byte(`{"a":1}`))
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad \"line\"\n<&>\u0001\ufffd","data":{"a":1}}}`
	if string(got) != want {
		t.Errorf("ErrorFrame\n got: %s\nwant: %s", got, want)
	}
	if got := rewrite.ResultFrame([]byte(`"x"`), []byte(`{}`)); string(got) != `{"jsonrpc":"2.0","id":"x","result":{}}` {
		t.Errorf("ResultFrame = %s", got)
	}
}

func TestRequestUpExtra(t *testing.T) {
	extra := []byte(`"inputResponses":{"k":{"action":"accept"}},"requestState":"s\u003c1"`)
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"_meta":{` + metaIn + `},"name":"x","arguments":{},"inputResponses":{"k":{"action":"accept"}},"requestState":"s\u003c1"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m"}`,
			`{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `},"inputResponses":{"k":{"action":"accept"}},"requestState":"s\u003c1"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
			`{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `},"inputResponses":{"k":{"action":"accept"}},"requestState":"s\u003c1"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{}}`,
			`{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `},"inputResponses":{"k":{"action":"accept"}},"requestState":"s\u003c1"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"m","params":{"requestState":"old","_meta":{}}}`,
			`{"jsonrpc":"2.0","id":77,"method":"m","params":{"_meta":{` + metaIn + `},"inputResponses":{"k":{"action":"accept"}},"requestState":"s\u003c1"}}`},
	}
	for _, tt := range tests {
		f := mustParse(t, tt.in)
		got, err := rewrite.RequestUp(&f, rewrite.Up{ID: []byte("77"), Meta: testMeta, DropParams: []string{"inputResponses", "requestState"}, Extra: extra})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("RequestUp(%s)\n got: %s\nwant: %s", tt.in, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"user":"ada","Password":"hunter2","nested":[{"api_key":"k1","x":{"AccessToken":{"a":1}}}]}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"user":"ada","Password":"[REDACTED]","nested":[{"api_key":"[REDACTED]","x":{"AccessToken":"[REDACTED]"}}]}}}`},
		{`{"a":"token in a value is fine","authorization":"Bearer x","apikey":1,"api-key":2}`,
			`{"a":"token in a value is fine","authorization":"[REDACTED]","apikey":"[REDACTED]","api-key":"[REDACTED]"}`},
		{`{"plain":true}`, `{"plain":true}`},
		{`not json {"password":"x"}`, `"[unparsable frame withheld]"`},
	}
	for _, tt := range tests {
		if got := rewrite.Redact([]byte(tt.in), rewrite.SensitiveKey); string(got) != tt.want {
			t.Errorf("Redact(%s)\n got: %s\nwant: %s", tt.in, got, tt.want)
		}
	}
}

// Protocol fields that only look secret stay readable in Redact and
// RedactHead, wherever they sit; credentials around them do not.
func TestRedactKeepsProtocolFields(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"_meta":{"progressToken":"p-7"},"maxTokens":256,` +
		`"messages":[],"auth":{"access_token":"at-1","refresh_token":"rt-1","client_secret":"cs-1","code_verifier":"cv-1","apiKey":"ak-1"},` +
		`"headers":{"Authorization":"Bearer b-1"},"ProgressToken":"pt-case"}}`
	want := `{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"_meta":{"progressToken":"p-7"},"maxTokens":256,` +
		`"messages":[],"auth":{"access_token":"[REDACTED]","refresh_token":"[REDACTED]","client_secret":"[REDACTED]","code_verifier":"[REDACTED]","apiKey":"[REDACTED]"},` +
		`"headers":{"Authorization":"[REDACTED]"},"ProgressToken":"[REDACTED]"}}`
	if got := rewrite.Redact([]byte(in), rewrite.SensitiveKey); string(got) != want {
		t.Errorf("Redact\n got: %s\nwant: %s", got, want)
	}
	for _, max := range []int{0, 40, 80, len(want), len(want) + 10} {
		head, n := rewrite.RedactHead([]byte(in), rewrite.SensitiveKey, max, false)
		if n != len(want) || string(head) != want[:min(max, len(want))] {
			t.Errorf("RedactHead(%d) = %s, %d; want %s, %d", max, head, n, want[:min(max, len(want))], len(want))
		}
	}
	// A progress notification keeps its token, a number included.
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":42,"progress":1}}`
	if got := rewrite.Redact([]byte(note), rewrite.SensitiveKey); string(got) != note {
		t.Errorf("Redact(%s) = %s", note, got)
	}
}

// Marking task support on a tool with no other member left (empty, or only
// a dropped outputSchema) needs no comma; a fuzz find.
func TestToolsListTaskSupportOnEmptyTool(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":0,"result":{"tools":[{}]}}`:                                 `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"execution":{"taskSupport":"optional"}}]}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"tools":[{"outputSchema":{"type":"string"}}]}}`: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"execution":{"taskSupport":"optional"}}]}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"tools":[{"name":"a"}]}}`:                       `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","execution":{"taskSupport":"optional"}}]}}`,
	} {
		f := mustParse(t, in)
		d, err := rewrite.ResponseDown(&f, rewrite.Down{ID: []byte("1"), Method: "tools/list", TaskSupport: true})
		if err != nil || string(d.Frame) != want {
			t.Errorf("ResponseDown(%s) = %s, %v; want %s", in, d.Frame, err, want)
		}
	}
}

// execution.taskSupport reaches the legacy client only as the proxy's policy
// says (docs/protocol.md, Tasks):
// "optional" on every tool when the server declared the tasks extension,
// on none otherwise, whatever the server put there (mcp-go v1.2.1 sends
// "optional" without declaring the extension). An execution object left
// empty by the removal goes; its other members stay byte for byte.
func TestToolsListTaskSupportFollowsExtension(t *testing.T) {
	tests := []struct {
		name    string
		tools   string // the server's tools array
		without string // the client's, without the extension
		with    string // the client's, with it
	}{
		{"era-mixing server",
			`[{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]`,
			`[{"name":"a","inputSchema":{"type":"object"}}]`,
			`[{"name":"a","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]`},
		{"execution first",
			`[{"execution":{"taskSupport":"required"},"name":"a"}]`,
			`[{"name":"a"}]`,
			`[{"execution":{"taskSupport":"optional"},"name":"a"}]`},
		{"execution alone",
			`[{"execution":{"taskSupport":"forbidden"}}]`,
			`[{}]`,
			`[{"execution":{"taskSupport":"optional"}}]`},
		{"other members kept byte for byte",
			`[{"name":"a","execution":{"taskSupport":"required", "x-vendor" : {"k":[1, 2.50, "\u003c"]}}}]`,
			`[{"name":"a","execution":{"x-vendor" : {"k":[1, 2.50, "\u003c"]}}}]`,
			`[{"name":"a","execution":{"taskSupport":"optional", "x-vendor" : {"k":[1, 2.50, "\u003c"]}}}]`},
		{"taskSupport last among others",
			`[{"name":"a","execution":{"x":1 , "taskSupport":"optional"}}]`,
			`[{"name":"a","execution":{"x":1}}]`,
			`[{"name":"a","execution":{"x":1 , "taskSupport":"optional"}}]`},
		{"taskSupport twice",
			`[{"name":"a","execution":{"taskSupport":"required","taskSupport":"forbidden"}}]`,
			`[{"name":"a"}]`,
			`[{"name":"a","execution":{"taskSupport":"optional","taskSupport":"optional"}}]`},
		{"escaped key",
			`[{"name":"a","execution":{"task\u0053upport":"optional"}}]`,
			`[{"name":"a"}]`,
			`[{"name":"a","execution":{"task\u0053upport":"optional"}}]`},
		{"empty execution from the server kept",
			`[{"name":"a","execution":{}}]`,
			`[{"name":"a","execution":{}}]`,
			`[{"name":"a","execution":{"taskSupport":"optional"}}]`},
		{"execution without taskSupport kept",
			`[{"name":"a","execution":{"x":true}}]`,
			`[{"name":"a","execution":{"x":true}}]`,
			`[{"name":"a","execution":{"taskSupport":"optional","x":true}}]`},
		{"execution that is not an object",
			`[{"name":"a","execution":null},{"name":"b","execution":"optional"}]`,
			`[{"name":"a"},{"name":"b"}]`,
			`[{"name":"a","execution":{"taskSupport":"optional"}},{"name":"b","execution":{"taskSupport":"optional"}}]`},
		{"removed next to a dropped outputSchema",
			`[{"name":"a","outputSchema":{"type":"string"},"execution":{"taskSupport":"optional"}},{"execution":{"taskSupport":"optional"},"outputSchema":{"type":"array"}}]`,
			`[{"name":"a"},{}]`,
			`[{"name":"a","execution":{"taskSupport":"optional"}},{"execution":{"taskSupport":"optional"}}]`},
		{"two outputSchemas that are dropped",
			`[{"outputSchema":{"type":"string"},"outputSchema":1}]`,
			`[{}]`,
			`[{"execution":{"taskSupport":"optional"}}]`},
		{"no execution",
			`[{"name":"a"},"not a tool"]`,
			`[{"name":"a"},"not a tool"]`,
			`[{"name":"a","execution":{"taskSupport":"optional"}},"not a tool"]`},
		{"whitespace",
			`[ { "name" : "a" , "execution" : { "taskSupport" : "optional" } } ]`,
			`[ { "name" : "a" } ]`,
			`[ { "name" : "a" , "execution" : { "taskSupport" : "optional" } } ]`},
	}
	for _, tt := range tests {
		for _, ext := range []bool{false, true} {
			want := tt.without
			if ext {
				want = tt.with
			}
			in := `{"jsonrpc":"2.0","id":9,"result":{"tools":` + tt.tools + `,"resultType":"complete"}}`
			f := mustParse(t, in)
			d, err := rewrite.ResponseDown(&f, rewrite.Down{ID: []byte("1"), Method: "tools/list", TaskSupport: ext})
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			if got, want := string(d.Frame), `{"jsonrpc":"2.0","id":1,"result":{"tools":`+want+`}}`; got != want {
				t.Errorf("%s, extension %v:\n got: %s\nwant: %s", tt.name, ext, got, want)
			}
		}
	}
}

// AppendString writes what encoding/json writes with HTML escaping off.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	ins := []string{
		"", "plain", `quote " backslash \ slash /`, "\b\f\n\r\t\x00\x01\x1f\x7f",
		"<tag> & amp", "é ü 日本", "\u2028 and \u2029", "bad \xff\xfe utf-8", "\xed\xa0\x80 surrogate",
	}
	// A byte to escape (or a rune's first byte) at each place of strings
	// around the eight-byte loads' edges, plain ones among them.
	for n := 1; n <= 17; n++ {
		ins = append(ins, strings.Repeat("a", n))
		for i := range n {
			for _, c := range []string{`"`, `\`, "\x1f", "é"} {
				ins = append(ins, strings.Repeat("a", i)+c+strings.Repeat("b", n-i-1))
			}
		}
	}
	for _, in := range ins {
		if got, want := rewrite.AppendString(nil, in), encodeJSONString(t, in); string(got) != want {
			t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "op-12", "tools/call", `a"b`, "12345678\n", "日本語のテキスト", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if got, want := rewrite.AppendString([]byte("x"), in), "x"+encodeJSONString(t, in); string(got) != want {
			t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
		}
	})
}

// encodeJSONString is in as encoding/json writes it with HTML escaping off.
func encodeJSONString(t *testing.T, in string) string {
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(want.String(), "\n")
}
