package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// mrtrMeta is the request _meta of a client that can answer every kind of
// input request.
func mrtrMeta() map[string]any {
	return meta(map[string]any{
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
			"sampling":    map[string]any{},
			"roots":       map[string]any{},
		},
	})
}

// mrtrClient drives MRTR tools/call exchanges with raw request bodies, so
// that the requestState bytes sent are exactly the bytes chosen.
type mrtrClient struct {
	*peer
	v *schematest.Validator
}

func newMRTRClient(t *testing.T) *mrtrClient {
	t.Helper()
	v := schematest.Load(t)
	return &mrtrClient{peer: startPeer(t), v: v}
}

// round is one answered tools/call.
type round struct {
	reply
	msg message
	// state is the raw JSON text of result.requestState ("" if absent).
	state string
	// requests maps each inputRequests key to its raw request.
	requests map[string]gjson.Result
}

// body builds a tools/call body for tool. responses (raw JSON object or
// nil) becomes params.inputResponses and rawState (raw JSON text or "")
// params.requestState, both spliced in verbatim.
func mrtrBody(t *testing.T, id, tool string, args map[string]any, responses, rawState string, metaObj map[string]any) []byte {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	if metaObj == nil {
		metaObj = mrtrMeta()
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": metaObj}})
	if err != nil {
		t.Fatal(err)
	}
	if responses != "" {
		if body, err = sjson.SetRawBytes(body, "params.inputResponses", []byte(responses)); err != nil {
			t.Fatal(err)
		}
	}
	if rawState != "" {
		if body, err = sjson.SetRawBytes(body, "params.requestState", []byte(rawState)); err != nil {
			t.Fatal(err)
		}
	}
	return body
}

// postRaw POSTs a raw 2026 tools/call body with the standard headers; hdr
// holds further header name/value pairs (an empty value deletes the
// header).
func (p *peer) postRaw(t *testing.T, tool string, body []byte, hdr ...string) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("POST tools/call %s: %v", tool, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b}
}

// call sends one schema-checked tools/call and returns the answer.
func (c *mrtrClient) call(t *testing.T, id, tool string, args map[string]any, responses, rawState string) round {
	t.Helper()
	body := mrtrBody(t, id, tool, args, responses, rawState, nil)
	if err := c.v.ValidateUpstream(body); err != nil {
		t.Errorf("request: %v", err)
	}
	r := c.postRaw(t, tool, body)
	if err := c.v.ValidateUpstreamResult(r.body, "tools/call"); err != nil {
		t.Errorf("response: %v", err)
	}
	var m message
	decode(t, r.body, &m)
	if string(m.ID) != `"`+id+`"` {
		t.Errorf("response id %s, want %q", m.ID, id)
	}
	rd := round{reply: r, msg: m, requests: map[string]gjson.Result{}}
	if st := gjson.GetBytes(r.body, "result.requestState"); st.Exists() {
		rd.state = st.Raw
	}
	gjson.GetBytes(r.body, "result.inputRequests").ForEach(func(k, v gjson.Result) bool {
		rd.requests[k.Str] = v
		return true
	})
	return rd
}

// inputRequired checks that rd is an InputRequiredResult asking exactly
// for keys (methods by key) with a decorated requestState.
func (c *mrtrClient) inputRequired(t *testing.T, rd round, methods map[string]string) {
	t.Helper()
	if rd.status != http.StatusOK || rd.msg.Error != nil {
		t.Fatalf("status %d, body %s; want an InputRequiredResult", rd.status, rd.body)
	}
	if rt := gjson.GetBytes(rd.body, "result.resultType").Str; rt != "input_required" {
		t.Fatalf("resultType %q in %s, want input_required", rt, rd.body)
	}
	if err := c.v.Validate(schematest.Schema2026, "InputRequiredResult", rd.msg.Result); err != nil {
		t.Error(err)
	}
	if gjson.GetBytes(rd.body, "result.content").Exists() {
		t.Errorf("InputRequiredResult %s carries content", rd.msg.Result)
	}
	got := map[string]string{}
	for k, v := range rd.requests {
		got[k] = v.Get("method").Str
		for _, f := range []string{"jsonrpc", "id"} {
			if v.Get(f).Exists() {
				t.Errorf("inputRequests[%q] %s has %q", k, v.Raw, f)
			}
		}
	}
	if !reflect.DeepEqual(got, methods) {
		t.Errorf("inputRequests methods %v, want %v", got, methods)
	}
	if !strings.HasSuffix(rd.state, demo.RequestStateRawSuffix+`"`) {
		t.Errorf("requestState %s does not end with the raw suffix %s", rd.state, demo.RequestStateRawSuffix)
	}
}

// complete checks that rd is a complete CallToolResult and returns its text.
func (c *mrtrClient) complete(t *testing.T, rd round) string {
	t.Helper()
	if rd.status != http.StatusOK || rd.msg.Error != nil {
		t.Fatalf("status %d, body %s; want a CallToolResult", rd.status, rd.body)
	}
	var res callResult
	decode(t, rd.msg.Result, &res)
	if res.ResultType != "complete" || res.IsError {
		t.Fatalf("result %s: want resultType complete, no isError", rd.msg.Result)
	}
	if err := c.v.Validate(schematest.Schema2026, "CallToolResult", rd.msg.Result); err != nil {
		t.Error(err)
	}
	if rd.state != "" || len(rd.requests) != 0 {
		t.Errorf("complete result %s still carries MRTR fields", rd.msg.Result)
	}
	return res.text(t)
}

// rpcError checks that rd is a JSON-RPC error with code and message.
func rpcError(t *testing.T, rd round, status int, code int64, msg string) {
	t.Helper()
	if rd.status != status || rd.msg.Error == nil || rd.msg.Error.Code != code || !strings.Contains(rd.msg.Error.Message, msg) {
		t.Fatalf("status %d, body %s; want %d with error %d %q", rd.status, rd.body, status, code, msg)
	}
}

func TestMRTRAskName(t *testing.T) {
	c := newMRTRClient(t)
	rd := c.call(t, "n-1", "ask_name", nil, "", "")
	c.inputRequired(t, rd, map[string]string{"name-1": "elicitation/create"})
	req := rd.requests["name-1"]
	if err := c.v.Validate(schematest.Schema2026, "ElicitRequest", []byte(req.Raw)); err != nil {
		t.Error(err)
	}
	if req.Get("params.mode").Str != "form" || req.Get("params.message").Str != "What is your name?" ||
		req.Get("params.requestedSchema.properties.name.type").Str != "string" {
		t.Errorf("name-1 request %s: want a form asking for name", req.Raw)
	}

	for _, tc := range []struct {
		name, response, want string
	}{
		{"accept", `{"action":"accept","content":{"name":"Ada"}}`, "hello, Ada"},
		{"decline", `{"action":"decline"}`, "no name given"},
		{"cancel", `{"action":"cancel"}`, "no name given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.complete(t, c.call(t, "n-2", "ask_name", nil, `{"name-1":`+tc.response+`}`, rd.state))
			if got != tc.want {
				t.Errorf("text %q, want %q", got, tc.want)
			}
		})
	}

	t.Run("retry without the response asks again", func(t *testing.T) {
		again := c.call(t, "n-3", "ask_name", nil, `{}`, rd.state)
		c.inputRequired(t, again, map[string]string{"name-1": "elicitation/create"})
		again = c.call(t, "n-4", "ask_name", nil, "", again.state)
		c.inputRequired(t, again, map[string]string{"name-1": "elicitation/create"})
		if got := c.complete(t, c.call(t, "n-5", "ask_name", nil, `{"name-1":{"action":"accept","content":{"name":"Bo"}}}`, again.state)); got != "hello, Bo" {
			t.Errorf("text %q, want hello, Bo", got)
		}
	})

	t.Run("a response of the wrong kind", func(t *testing.T) {
		rpcError(t, c.call(t, "n-6", "ask_name", nil, `{"name-1":{"roots":[]}}`, rd.state), 400, -32602, `inputResponses["name-1"]`)
	})
}

// TestMRTRRejectsAlteredState retries with requestState literals that
// decode to the issued string but differ in bytes, and with a forged one.
func TestMRTRRejectsAlteredState(t *testing.T) {
	c := newMRTRClient(t)
	rd := c.call(t, "a-1", "ask_name", nil, "", "")
	c.inputRequired(t, rd, map[string]string{"name-1": "elicitation/create"})
	var decoded string
	decode(t, []byte(rd.state), &decoded)
	if !strings.HasSuffix(decoded, demo.RequestStateSuffix) {
		t.Fatalf("decoded requestState %q lacks %q", decoded, demo.RequestStateSuffix)
	}
	reencoded, err := json.Marshal(decoded) // escapes <, >, & and leaves é and / bare
	if err != nil {
		t.Fatal(err)
	}
	core := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(rd.state, `"`), `"`), demo.RequestStateRawSuffix)
	forged := []byte(core)
	if forged[len(forged)-2] == 'A' { // keep it a Base64url character
		forged[len(forged)-2] = 'B'
	} else {
		forged[len(forged)-2] = 'A'
	}
	answer := `{"name-1":{"action":"accept","content":{"name":"Ada"}}}`
	for _, tc := range []struct{ name, state string }{
		{"Go re-encoding", string(reencoded)},
		{"slash unescaped", strings.Replace(rd.state, `\/`, `/`, 1)},
		{"e-acute as UTF-8", strings.Replace(rd.state, `\u00e9`, "é", 1)},
		{"uppercase escape", strings.Replace(rd.state, `\u00e9`, `\u00E9`, 1)},
		{"forged signature", `"` + string(forged) + demo.RequestStateRawSuffix + `"`},
		{"another tool's state", `"` + core + demo.RequestStateRawSuffix + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := "ask_name"
			if tc.name == "another tool's state" {
				tool = "list_roots"
			}
			body := mrtrBody(t, "a-2", tool, nil, answer, tc.state, nil)
			var got string
			if err := json.Unmarshal([]byte(tc.state), &got); err != nil {
				t.Fatal(err)
			}
			if tc.name != "forged signature" && got != decoded {
				t.Fatalf("test bug: %s decodes to %q, want the issued %q", tc.state, got, decoded)
			}
			r := c.postRaw(t, tool, body)
			if err := c.v.ValidateUpstreamResult(r.body, "tools/call"); err != nil {
				t.Error(err)
			}
			var m message
			decode(t, r.body, &m)
			rpcError(t, round{reply: r, msg: m}, http.StatusBadRequest, -32602, "requestState was altered")
			if string(m.ID) != `"a-2"` {
				t.Errorf("error id %s, want \"a-2\"", m.ID)
			}
		})
	}
	// The exact bytes still work afterwards.
	if got := c.complete(t, c.call(t, "a-3", "ask_name", nil, answer, rd.state)); got != "hello, Ada" {
		t.Errorf("text %q, want hello, Ada", got)
	}
}

func TestMRTRAskTwoRounds(t *testing.T) {
	c := newMRTRClient(t)
	r1 := c.call(t, "t-1", "ask_two_rounds", nil, "", "")
	c.inputRequired(t, r1, map[string]string{"name-1": "elicitation/create"})

	r2 := c.call(t, "t-2", "ask_two_rounds", nil, `{"name-1":{"action":"accept","content":{"name":"Ada"}}}`, r1.state)
	c.inputRequired(t, r2, map[string]string{"roots-2": "roots/list", "colour-2": "elicitation/create"})
	if err := c.v.Validate(schematest.Schema2026, "ListRootsRequest", []byte(r2.requests["roots-2"].Raw)); err != nil {
		t.Error(err)
	}
	if err := c.v.Validate(schematest.Schema2026, "ElicitRequest", []byte(r2.requests["colour-2"].Raw)); err != nil {
		t.Error(err)
	}
	if r2.state == r1.state {
		t.Error("round 2 reuses the round 1 requestState")
	}

	// Half the answers: round 2 again.
	again := c.call(t, "t-3", "ask_two_rounds", nil, `{"roots-2":{"roots":[]}}`, r2.state)
	c.inputRequired(t, again, map[string]string{"roots-2": "roots/list", "colour-2": "elicitation/create"})

	answers := `{"roots-2":{"roots":[{"uri":"file:///a","name":"a"},{"uri":"file:///b"}]},` +
		`"colour-2":{"action":"accept","content":{"colour":"blue"}}}`
	if got := c.complete(t, c.call(t, "t-4", "ask_two_rounds", nil, answers, again.state)); got != "hello, Ada; colour: blue; roots: 2" {
		t.Errorf("text %q", got)
	}
	// The round 2 state of the first attempt is still good (stateless).
	if got := c.complete(t, c.call(t, "t-5", "ask_two_rounds", nil,
		`{"roots-2":{"roots":[]},"colour-2":{"action":"decline"}}`, r2.state)); got != "hello, Ada; colour: unknown; roots: 0" {
		t.Errorf("text %q", got)
	}
}

func TestMRTROpenURL(t *testing.T) {
	c := newMRTRClient(t)
	rd := c.call(t, "u-1", "open_url", nil, "", "")
	c.inputRequired(t, rd, map[string]string{"consent-1": "elicitation/create"})
	req := rd.requests["consent-1"]
	if err := c.v.Validate(schematest.Schema2026, "ElicitRequest", []byte(req.Raw)); err != nil {
		t.Error(err)
	}
	var params map[string]any
	decode(t, []byte(req.Get("params").Raw), &params)
	if !reflect.DeepEqual(params, map[string]any{"mode": "url", "url": demo.ConsentURL, "message": params["message"]}) ||
		params["message"] == "" {
		t.Errorf("consent-1 params %v: want exactly mode url, url and message (no elicitationId)", params)
	}
	for _, action := range []string{"accept", "decline"} {
		got := c.complete(t, c.call(t, "u-2", "open_url", nil, `{"consent-1":{"action":"`+action+`"}}`, rd.state))
		if got != "consent: "+action {
			t.Errorf("text %q, want consent: %s", got, action)
		}
	}

	t.Run("requestState-only rounds", func(t *testing.T) {
		args := map[string]any{"wait_rounds": 2}
		rd := c.call(t, "w-1", "open_url", args, "", "")
		c.inputRequired(t, rd, map[string]string{"consent-1": "elicitation/create"})
		state := rd.state
		for i := range 2 {
			rd = c.call(t, "w-2", "open_url", args, map[bool]string{true: `{"consent-1":{"action":"accept"}}`}[i == 0], state)
			c.inputRequired(t, rd, map[string]string{})
			if gjson.GetBytes(rd.body, "result.inputRequests").Exists() {
				t.Errorf("wait round %d: %s has inputRequests", i, rd.body)
			}
			state = rd.state
		}
		if got := c.complete(t, c.call(t, "w-3", "open_url", args, "", state)); got != "consent: accept" {
			t.Errorf("text %q", got)
		}
	})
}

func TestMRTRSample(t *testing.T) {
	c := newMRTRClient(t)
	rd := c.call(t, "s-1", "sample", nil, "", "")
	c.inputRequired(t, rd, map[string]string{"sample-1": "sampling/createMessage"})
	req := rd.requests["sample-1"]
	if err := c.v.Validate(schematest.Schema2026, "CreateMessageRequest", []byte(req.Raw)); err != nil {
		t.Error(err)
	}
	var params map[string]any
	decode(t, []byte(req.Get("params").Raw), &params)
	want := map[string]any{"maxTokens": 50.0, "messages": []any{map[string]any{
		"role": "user", "content": map[string]any{"type": "text", "text": "Say hi"}}}}
	if !reflect.DeepEqual(params, want) {
		t.Errorf("sample-1 params %v, want %v", params, want)
	}
	for _, resp := range []string{
		`{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"test-model","stopReason":"endTurn"}`,
		`{"role":"assistant","content":[{"type":"text","text":"hi there"}],"model":"test-model"}`,
	} {
		if got := c.complete(t, c.call(t, "s-2", "sample", nil, `{"sample-1":`+resp+`}`, rd.state)); got != "hi there" {
			t.Errorf("text %q, want hi there", got)
		}
	}
}

func TestMRTRListRoots(t *testing.T) {
	c := newMRTRClient(t)
	rd := c.call(t, "r-1", "list_roots", nil, "", "")
	c.inputRequired(t, rd, map[string]string{"roots-1": "roots/list"})
	if err := c.v.Validate(schematest.Schema2026, "ListRootsRequest", []byte(rd.requests["roots-1"].Raw)); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct{ roots, want string }{
		{`[{"uri":"file:///home/u/p","name":"p"},{"uri":"file:///tmp"}]`, "file:///home/u/p, file:///tmp"},
		{`[]`, "(no roots)"},
	} {
		if got := c.complete(t, c.call(t, "r-2", "list_roots", nil, `{"roots-1":{"roots":`+tc.roots+`}}`, rd.state)); got != tc.want {
			t.Errorf("text %q, want %q", got, tc.want)
		}
	}
}

// TestMRTRRequiresCapabilities: no input request for a capability the
// client did not declare; -32021 names what is missing.
func TestMRTRRequiresCapabilities(t *testing.T) {
	c := newMRTRClient(t)
	for _, tc := range []struct {
		tool string
		caps map[string]any
		want string // raw data.requiredCapabilities
	}{
		{"ask_name", map[string]any{}, `{"elicitation":{"form":{}}}`},
		{"ask_name", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, `{"elicitation":{"form":{}}}`},
		{"open_url", map[string]any{"elicitation": map[string]any{}}, `{"elicitation":{"url":{}}}`},
		{"sample", map[string]any{"roots": map[string]any{}}, `{"sampling":{}}`},
		{"list_roots", map[string]any{"sampling": map[string]any{}}, `{"roots":{}}`},
		{"ask_two_rounds", map[string]any{"elicitation": map[string]any{}}, `{"roots":{}}`},
	} {
		body := mrtrBody(t, "c-1", tc.tool, nil, "", "",
			meta(map[string]any{"io.modelcontextprotocol/clientCapabilities": tc.caps}))
		r := c.postRaw(t, tc.tool, body)
		if err := c.v.Validate(schematest.Schema2026, "MissingRequiredClientCapabilityError", r.body); err != nil {
			t.Errorf("%s: %v", tc.tool, err)
		}
		var m message
		decode(t, r.body, &m)
		rpcError(t, round{reply: r, msg: m}, http.StatusBadRequest, -32021, "Missing required client capability")
		if got := gjson.GetBytes(m.Error.Data, "requiredCapabilities").Raw; got != tc.want {
			t.Errorf("%s with %v: requiredCapabilities %s, want %s", tc.tool, tc.caps, got, tc.want)
		}
	}
	// The 2025 form-only declaration "elicitation": {} is enough for a form.
	body := mrtrBody(t, "c-2", "ask_name", nil, "", "", meta(map[string]any{
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}}}))
	if r := c.postRaw(t, "ask_name", body); r.status != http.StatusOK || !strings.Contains(string(r.body), `"input_required"`) {
		t.Errorf("ask_name with elicitation {}: status %d, body %s", r.status, r.body)
	}
}

// TestMRTRToolsListed checks the MRTR tools appear in tools/list.
func TestMRTRToolsListed(t *testing.T) {
	p := startPeer(t)
	m := jsonReply(t, p.post(t, 1, "tools/list", "", nil), http.StatusOK)
	var names []string
	gjson.GetBytes(m.Result, "tools.#.name").ForEach(func(_, v gjson.Result) bool {
		names = append(names, v.Str)
		return true
	})
	sort.Strings(names)
	for _, want := range []string{"ask_name", "ask_two_rounds", "list_roots", "open_url", "sample", "touch", "weather", demo.BadHeaderTool} {
		if i := sort.SearchStrings(names, want); i == len(names) || names[i] != want {
			t.Errorf("tools/list %v lacks %s", names, want)
		}
	}
}
