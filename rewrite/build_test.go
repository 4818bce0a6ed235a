package rewrite_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Each constructor is held to the bytes the session built by hand before
// it existed (the bridge's fmt.Appendf and appends, copied here).

func TestRequestFrame(t *testing.T) {
	tests := []struct {
		id, method, params, want string
	}{
		{`"mtp-1"`, "roots/list", "", `{"jsonrpc":"2.0","id":"mtp-1","method":"roots/list"}`},
		{`"mtp-2"`, "elicitation/create", `{"message":"hi","requestedSchema":{}}`, `{"jsonrpc":"2.0","id":"mtp-2","method":"elicitation/create","params":{"message":"hi","requestedSchema":{}}}`},
		{`0`, "tools/list", `{"cursor":"c"}`, `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"cursor":"c"}}`},
		{`0`, "subscriptions/listen", `{"notifications":{"toolsListChanged":true}}`, `{"jsonrpc":"2.0","id":0,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`},
		{`0`, "logging/setLevel", `{"level":"info"}`, `{"jsonrpc":"2.0","id":0,"method":"logging/setLevel","params":{"level":"info"}}`},
		{`1.50`, `we"ird<>&`, `{ "a" : 1 }`, `{"jsonrpc":"2.0","id":1.50,"method":"we\"ird<>&","params":{ "a" : 1 }}`},
	}
	for _, tt := range tests {
		got := rewrite.RequestFrame([]byte(tt.id), tt.method, []byte(tt.params))
		if string(got) != tt.want {
			t.Errorf("RequestFrame(%s, %s, %s)\n got %s\nwant %s", tt.id, tt.method, tt.params, got, tt.want)
		}
		// The session's hand-built form, for the plain methods it sends.
		if tt.method != `we"ird<>&` {
			var old []byte
			if tt.params == "" {
				old = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q}`, tt.id, tt.method)
			} else {
				old = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, tt.id, tt.method, tt.params)
			}
			if !bytes.Equal(got, old) {
				t.Errorf("RequestFrame differs from the hand-built frame:\n got %s\nwant %s", got, old)
			}
		}
	}
}

func TestNotificationFrame(t *testing.T) {
	tests := []struct {
		method, params, want string
	}{
		{"notifications/initialized", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"notifications/tools/list_changed", "", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
		{"notifications/tasks/status", `{"taskId":"t","status":"working"}`, `{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t","status":"working"}}`},
		{"notifications/cancelled", string(rewrite.CancelledParams([]byte(`"mtp-3"`), "no longer needed")),
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"mtp-3","reason":"no longer needed"}}`},
		{"notifications/progress", string(rewrite.ProgressParams([]byte(`"tok"`), 3, "")),
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":3}}`},
		{"notifications/progress", string(rewrite.ProgressParams([]byte(`7`), 4, "half\nway \u2028")),
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":4,"message":"half\nway \u2028"}}`},
		{"x\u2028", "", `{"jsonrpc":"2.0","method":"x\u2028"}`},
	}
	for _, tt := range tests {
		got := rewrite.NotificationFrame(tt.method, []byte(tt.params))
		if string(got) != tt.want {
			t.Errorf("NotificationFrame(%q, %s)\n got %s\nwant %s", tt.method, tt.params, got, tt.want)
		}
	}
	// The session's hand-built progress notification.
	token, polls, msg := []byte(`"p"`), 2, "50% done"
	old := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d`, token, polls)
	old = append(rewrite.AppendString(append(old, `,"message":`...), msg), "}}"...)
	if got := rewrite.NotificationFrame("notifications/progress", rewrite.ProgressParams(token, int64(polls), msg)); !bytes.Equal(got, old) {
		t.Errorf("progress:\n got %s\nwant %s", got, old)
	}
	if got := rewrite.CancelledParams([]byte(`1`), ""); string(got) != `{"requestId":1}` {
		t.Errorf("CancelledParams without a reason: %s", got)
	}
}

func TestRetryParams(t *testing.T) {
	a := []rewrite.InputAnswer{{Key: "k1", Answer: []byte(`{"action":"accept"}`)}, {Key: "k\"2", Answer: []byte(`{"roots":[]}`)}}
	tests := []struct {
		answers []rewrite.InputAnswer
		state   string
		want    string
	}{
		{a, `"opaque \u00e9"`, `"inputResponses":{"k1":{"action":"accept"},"k\"2":{"roots":[]}},"requestState":"opaque \u00e9"`},
		{a[:1], ``, `"inputResponses":{"k1":{"action":"accept"}}`},
		{nil, `{"s":1}`, `"requestState":{"s":1}`},
		{nil, ``, ``},
	}
	for _, tt := range tests {
		got := rewrite.RetryParams(tt.answers, []byte(tt.state))
		if string(got) != tt.want {
			t.Errorf("RetryParams\n got %s\nwant %s", got, tt.want)
		}
		// The session's hand-built members (bridge mrtrAsk).
		var old []byte
		if len(tt.answers) > 0 {
			old = []byte(`"inputResponses":{`)
			for i, in := range tt.answers {
				if i > 0 {
					old = append(old, ',')
				}
				old = rewrite.AppendString(old, in.Key)
				old = append(old, ':')
				old = append(old, in.Answer...)
			}
			old = append(old, '}')
		}
		if tt.state != "" {
			if len(old) > 0 {
				old = append(old, ',')
			}
			old = append(old, `"requestState":`...)
			old = append(old, tt.state...)
		}
		if !bytes.Equal(got, old) {
			t.Errorf("RetryParams differs from the hand-built members:\n got %s\nwant %s", got, old)
		}
		if !json.Valid(append(append([]byte{'{'}, got...), '}')) {
			t.Errorf("RetryParams %s are not object members", got)
		}
	}
}

func TestSyntheticTask(t *testing.T) {
	at := "2026-01-02T03:04:05.123456789Z"
	for _, ttl := range []bool{true, false} {
		got := rewrite.SyntheticTask("mcp-tasks-proxy-00ff", at, 60000, ttl)
		// The session's hand-built task (bridge taskCreated).
		old := rewrite.AppendString([]byte(`{"taskId":`), "mcp-tasks-proxy-00ff")
		old = append(old, `,"status":"completed","createdAt":`...)
		old = rewrite.AppendString(old, at)
		old = append(old, `,"lastUpdatedAt":`...)
		old = rewrite.AppendString(old, at)
		old = append(old, `,"ttlMs":`...)
		if ttl {
			old = strconv.AppendInt(old, 60000, 10)
		} else {
			old = append(old, "null"...)
		}
		old = append(old, '}')
		if !bytes.Equal(got, old) {
			t.Errorf("SyntheticTask:\n got %s\nwant %s", got, old)
		}
		task := rewrite.ReadTask(gjson.ParseBytes(got))
		if task.ID != "mcp-tasks-proxy-00ff" || task.Status != rewrite.StatusCompleted || !task.Terminal() {
			t.Errorf("ReadTask(SyntheticTask) = %+v", task)
		}
	}
}

func TestToolErrorResult(t *testing.T) {
	msg := "the client could not answer roots/list: \"boom\"\n"
	old := append(append([]byte(`{"content":[{"type":"text","text":`), rewrite.AppendString(nil, msg)...), `}],"isError":true}`...)
	if got := rewrite.ToolErrorResult(msg); !bytes.Equal(got, old) {
		t.Errorf("ToolErrorResult:\n got %s\nwant %s", got, old)
	}
}

// flagText is what the command layer passes: a hint is the flag.
func flagText(h rewrite.Hint) string { return "--" + string(h) }

// TestErrorKeepsTheSessionsMessages renders the session's errors that name
// a setting, as rewrite.Errors, and holds them to the bytes the session
// wrote with the flag spelled in the message.
func TestErrorKeepsTheSessionsMessages(t *testing.T) {
	d := 30 * time.Second
	tests := []struct {
		e    rewrite.Error
		want string
	}{
		{rewrite.Errorf(protocol.CodeInvalidRequest, nil, "message larger than %d bytes discarded; raise %v", 1024, rewrite.HintMaxMessageSize),
			fmt.Sprintf("message larger than %d bytes discarded; raise --max-message-size", 1024)},
		{rewrite.Errorf(protocol.CodeInternalError, nil, "%s took longer than %v, so the proxy gave up (raise %v for longer calls)", "tools/call", d, rewrite.HintRequestTimeout),
			fmt.Sprintf("%s took longer than %v, so the proxy gave up (raise --request-timeout for longer calls)", "tools/call", d)},
		{rewrite.Errorf(protocol.CodeInternalError, nil, "the upstream server sent nothing for %v while answering %s, so the proxy gave up (raise %v if the tool is that slow)", d, "tools/call", rewrite.HintIdleTimeout),
			fmt.Sprintf("the upstream server sent nothing for %v while answering %s, so the proxy gave up (raise --idle-timeout if the tool is that slow)", d, "tools/call")},
		{rewrite.Errorf(protocol.CodeInternalError, []byte(`{"drainTimeoutMs":2000}`), "the client's input ended and %s was not answered within %v %v; it was cancelled", "tools/call", rewrite.HintDrainTimeout, 2*time.Second),
			fmt.Sprintf("the client's input ended and %s was not answered within --drain-timeout %v; it was cancelled", "tools/call", 2*time.Second)},
		{rewrite.Errorf(protocol.CodeInternalError, nil, "the server asked for client input %d times for %s without finishing; giving up (raise %v)", 8, "prompts/get", rewrite.HintMaxMRTRRounds),
			fmt.Sprintf("the server asked for client input %d times for %s without finishing; giving up (raise --max-mrtr-rounds)", 8, "prompts/get")},
		{rewrite.Errorf(protocol.CodeInternalError, nil, "the proxy refused %s: %d requests (%d bytes) are already waiting for one of the %d in-flight slots; wait for answers before sending more (or raise %v)", "tools/call", 1024, 5000, 64, rewrite.HintMaxInFlight),
			fmt.Sprintf("the proxy refused %s: %d requests (%d bytes) are already waiting for one of the %d in-flight slots; wait for answers before sending more (or %s)", "tools/call", 1024, 5000, 64, "raise --max-in-flight")},
		{rewrite.Errorf(protocol.CodeInternalError, nil, "the upstream server did not answer %s in time: %v; raise %v if the server is that slow to start answering", "tools/list", "timeout", rewrite.HintResponseHeaderTimeout),
			fmt.Sprintf("the upstream server did not answer %s in time: %v; raise --response-header-timeout if the server is that slow to start answering", "tools/list", "timeout")},
		{rewrite.Errorf(protocol.CodeInvalidRequest, nil, "%v sse-only reaches only old HTTP+SSE servers (MCP 2024-11-05), but %v modern demands a 2026-07-28 server; drop one of them", rewrite.HintTransport, rewrite.HintProtocol),
			"--transport sse-only reaches only old HTTP+SSE servers (MCP 2024-11-05), but --protocol modern demands a 2026-07-28 server; drop one of them"},
		{rewrite.Errorf(protocol.CodeMethodNotFound, nil, "Unknown tool: %s is hidden by the proxy's %v %s, so it cannot be called; drop that flag to use it", "rm", rewrite.HintIgnoreTool, "r*"),
			"Unknown tool: rm is hidden by the proxy's --ignore-tool r*, so it cannot be called; drop that flag to use it"},
		{rewrite.Errorf(protocol.CodeInternalError, nil, "the state file %s is not valid (%v); move it away or pass %v", "/s.json", "EOF", rewrite.HintStateFile),
			"the state file /s.json is not valid (EOF); move it away or pass --state-file"},
		{rewrite.Errorf(protocol.CodeInternalError, nil, "no setting: 100%% plain"), "no setting: 100% plain"},
	}
	for _, tt := range tests {
		id := []byte(`7`)
		want := rewrite.ErrorFrame(id, tt.e.Code, tt.want, tt.e.Data)
		if got := tt.e.Frame(id, flagText); !bytes.Equal(got, want) {
			t.Errorf("Frame:\n got %s\nwant %s", got, want)
		}
		if hintOf(tt.e) == "" && len(tt.e.Args) > 0 {
			t.Errorf("%q: no Hint", tt.e.Message)
		}
		neutral := tt.e.Text(nil)
		if bytes.Contains([]byte(neutral), []byte("--")) {
			t.Errorf("neutral text spells a flag: %s", neutral)
		}
		if h := hintOf(tt.e); h != "" && !bytes.Contains([]byte(neutral), []byte("the "+string(h)+" setting")) {
			t.Errorf("neutral text does not name %s: %s", h, neutral)
		}
		if tt.e.Error() != neutral {
			t.Errorf("Error() = %q, want the neutral text", tt.e.Error())
		}
	}
	if e := rewrite.Errorf(protocol.CodeInternalError, nil, "x"); e.Text(nil) != "x" {
		t.Errorf("Errorf without args = %+v", e)
	}
	if e := (rewrite.Error{Code: 1, Message: "a literal 100% {hint}"}); e.Text(flagText) != "a literal 100% {hint}" {
		t.Errorf("a message without Args was formatted: %q", e.Text(flagText))
	}
}

// checkFrame holds a built frame to JSON-RPC: valid JSON on one line, with
// the method and raw parts where they were put.
func checkFrame(t *testing.T, b []byte, kind rewrite.Kind, method string) rewrite.Frame {
	t.Helper()
	if !json.Valid(b) || bytes.ContainsAny(b, "\r\n") {
		t.Fatalf("not one line of JSON: %q", b)
	}
	f, err := rewrite.Parse(b)
	if err != nil || f.Kind != kind {
		t.Fatalf("Parse(%s) = %v, %v", b, f.Kind, err)
	}
	if utf8.ValidString(method) && f.Method != method {
		t.Fatalf("method %q, want %q", f.Method, method)
	}
	return f
}

// rawOrDefault is raw when it is one JSON value, def otherwise.
func rawOrDefault(raw []byte, def string) []byte {
	raw = bytes.TrimSpace(raw)
	if !json.Valid(raw) || bytes.ContainsAny(raw, "\r\n") {
		return []byte(def)
	}
	return raw
}

func objectOrEmpty(raw []byte) []byte {
	raw = rawOrDefault(raw, "")
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	return raw
}

func FuzzRequestFrame(f *testing.F) {
	f.Add([]byte(`"mtp-1"`), "roots/list", []byte(``))
	f.Add([]byte(`0`), "tools/list", []byte(`{"cursor":"c"}`))
	f.Add([]byte(`-1.5e3`), "a\"b\\\u2028\xff", []byte(`{ "x" : [1] }`))
	f.Fuzz(func(t *testing.T, id []byte, method string, params []byte) {
		id = rawOrDefault(id, "1")
		if id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9') {
			id = []byte("1")
		}
		params = objectOrEmpty(params)
		b := rewrite.RequestFrame(id, method, params)
		fr := checkFrame(t, b, rewrite.KindRequest, method)
		if fr.ID.Raw != string(id) || fr.Params.Raw != string(params) {
			t.Fatalf("id %s params %s not copied byte for byte: %s", id, params, b)
		}
	})
}

func FuzzNotificationFrame(f *testing.F) {
	f.Add("notifications/initialized", []byte(``), []byte(`1`), "no longer needed", int64(0))
	f.Add("notifications/progress", []byte(`{"a":1}`), []byte(`"tok"`), "50%\n", int64(7))
	f.Fuzz(func(t *testing.T, method string, params, token []byte, text string, n int64) {
		params = objectOrEmpty(params)
		b := rewrite.NotificationFrame(method, params)
		fr := checkFrame(t, b, rewrite.KindNotification, method)
		if fr.Params.Raw != string(params) {
			t.Fatalf("params %s not copied byte for byte: %s", params, b)
		}
		token = rawOrDefault(token, `"t"`)
		p := rewrite.ProgressParams(token, n, text)
		fr = checkFrame(t, rewrite.NotificationFrame("notifications/progress", p), rewrite.KindNotification, "notifications/progress")
		if fr.Params.Get("progressToken").Raw != string(token) || fr.Params.Get("progress").Int() != n {
			t.Fatalf("progress params %s", p)
		}
		if utf8.ValidString(text) && fr.Params.Get("message").String() != text {
			t.Fatalf("message %q, want %q", fr.Params.Get("message").String(), text)
		}
		c := rewrite.CancelledParams(token, text)
		fr = checkFrame(t, rewrite.NotificationFrame("notifications/cancelled", c), rewrite.KindNotification, "notifications/cancelled")
		if fr.Params.Get("requestId").Raw != string(token) {
			t.Fatalf("cancelled params %s", c)
		}
	})
}

func FuzzRetryParams(f *testing.F) {
	f.Add("k1", []byte(`{"action":"accept"}`), "k2", []byte(`{}`), []byte(`"state"`))
	f.Add("", []byte(``), "\x00\u2028", []byte(`[1]`), []byte(``))
	f.Fuzz(func(t *testing.T, k1 string, a1 []byte, k2 string, a2 []byte, state []byte) {
		var answers []rewrite.InputAnswer
		if a := rawOrDefault(a1, ""); len(a) > 0 {
			answers = append(answers, rewrite.InputAnswer{Key: k1, Answer: a})
		}
		if a := rawOrDefault(a2, ""); len(a) > 0 {
			answers = append(answers, rewrite.InputAnswer{Key: k2, Answer: a})
		}
		state = rawOrDefault(state, "")
		m := rewrite.RetryParams(answers, state)
		obj := append(append([]byte{'{'}, m...), '}')
		if !json.Valid(obj) || bytes.ContainsAny(m, "\r\n") {
			t.Fatalf("not object members: %q", m)
		}
		got := gjson.ParseBytes(obj)
		if got.Get("requestState").Raw != string(state) {
			t.Fatalf("requestState %s not echoed byte for byte: %s", state, m)
		}
		if n := len(got.Get("inputResponses").Map()); len(answers) > 0 && n == 0 {
			t.Fatalf("inputResponses missing: %s", m)
		}
	})
}

func FuzzSyntheticTask(f *testing.F) {
	f.Add("mcp-tasks-proxy-00", "2026-01-01T00:00:00Z", int64(60000), true)
	f.Add("\"\n\xff", "", int64(-1), false)
	f.Fuzz(func(t *testing.T, id, at string, ttl int64, hasTTL bool) {
		b := rewrite.SyntheticTask(id, at, ttl, hasTTL)
		if !json.Valid(b) || bytes.ContainsAny(b, "\r\n") {
			t.Fatalf("not one line of JSON: %q", b)
		}
		task := rewrite.ReadTask(gjson.ParseBytes(b))
		if utf8.ValidString(id) && task.ID != id || task.Status != rewrite.StatusCompleted {
			t.Fatalf("ReadTask(%s) = %+v", b, task)
		}
		if v := gjson.GetBytes(b, "ttlMs"); hasTTL && v.Int() != ttl || !hasTTL && v.Type != gjson.Null {
			t.Fatalf("ttlMs %s", v.Raw)
		}
	})
}

func FuzzToolErrorResult(f *testing.F) {
	f.Add("boom")
	f.Add("\"\n\u2028\xff<>&")
	f.Fuzz(func(t *testing.T, msg string) {
		b := rewrite.ToolErrorResult(msg)
		if !json.Valid(b) || bytes.ContainsAny(b, "\r\n") || !gjson.GetBytes(b, "isError").Bool() {
			t.Fatalf("not a tool error: %q", b)
		}
		if utf8.ValidString(msg) && gjson.GetBytes(b, "content.0.text").String() != msg {
			t.Fatalf("text %q, want %q", gjson.GetBytes(b, "content.0.text").String(), msg)
		}
	})
}

func FuzzErrorValue(f *testing.F) {
	f.Add([]byte(`1`), int64(-32603), "the %s took %d (raise %v)", "tools/call", int64(3), "request-timeout", []byte(`{"a":1}`))
	f.Add([]byte(`"x"`), int64(0), "100% literal %", "", int64(0), "", []byte(``))
	f.Fuzz(func(t *testing.T, id []byte, code int64, format, s string, n int64, hint string, data []byte) {
		id = rawOrDefault(id, "null")
		e := rewrite.Errorf(int(code), rawOrDefault(data, ""), format, s, n, rewrite.Hint(hint))
		for _, text := range []rewrite.HintText{nil, flagText} {
			b := e.Frame(id, text)
			if !json.Valid(b) || bytes.ContainsAny(b, "\r\n") {
				t.Fatalf("not one line of JSON: %q", b)
			}
			fr, err := rewrite.Parse(b)
			if err != nil || fr.Kind != rewrite.KindResponse || fr.Error.Get("code").Int() != int64(int(code)) {
				t.Fatalf("Parse(%s) = %v", b, err)
			}
			if msg := e.Text(text); utf8.ValidString(msg) && fr.Error.Get("message").String() != msg {
				t.Fatalf("message %q, want %q", fr.Error.Get("message").String(), msg)
			}
		}
	})
}

// hintOf is the setting e's fix involves: its first Hint operand, or "".
func hintOf(e rewrite.Error) rewrite.Hint {
	for _, a := range e.Args {
		if h, ok := a.(rewrite.Hint); ok {
			return h
		}
	}
	return ""
}
