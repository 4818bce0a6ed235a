package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

// Modern (2026-07-28) clients on the proxy's stdio (docs/protocol.md,
// Clients of both eras): a client that opens with server/discover, or
// whose request _meta names 2026-07-28, is relayed to a 2026 server as it
// is. The raw client here speaks 2026 NDJSON: every frame it writes is a
// valid 2026 request or notification, and every line it reads must be
// what a 2026 server sends. The tests compare bytes: what the client sent
// with what the server received, and what the server sent with what the
// client read, the ids aside.

// mcVersion is the protocol version every modern client here sends.
const mcVersion = "2026-07-28"

// mcClientInfo is the clientInfo of the modern clients here.
const mcClientInfo = `{"name":"e2e-modern","version":"1"}`

// mcTraceKey is a _meta member of the client's own, which the relay must
// forward like the rest.
const mcTraceKey = "com.example/trace"

// mcMeta is a modern client's request _meta with the client capabilities
// caps (raw JSON) and, when trace is not "", the client's own trace member.
func mcMeta(caps, trace string) string {
	m := `{"io.modelcontextprotocol/protocolVersion":"` + mcVersion + `",` +
		`"io.modelcontextprotocol/clientInfo":` + mcClientInfo + `,` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps
	if trace != "" {
		m += `,"` + mcTraceKey + `":"` + trace + `"`
	}
	return m + "}"
}

// mcParams is params members (raw, "" for none) followed by _meta.
func mcParams(members, meta string) string {
	if members == "" {
		return `{"_meta":` + meta + `}`
	}
	return `{` + members + `,"_meta":` + meta + `}`
}

// Client capabilities of the tests.
const (
	mcNoCaps    = `{}`
	mcElicit    = `{"elicitation":{}}`
	mcTasksCaps = `{"extensions":{"` + demo.TasksExtension + `":{}}}`
)

// startModernProxy starts the proxy for a modern raw client.
func startModernProxy(t *testing.T, args ...string) *rawProc {
	t.Helper()
	return startProxy(t, args).modernClient(true)
}

// mcDiscover opens the session as a modern client does and returns the
// answer, which must be a result.
func mcDiscover(p *rawProc, id, meta string) []byte {
	p.t.Helper()
	resp := p.call(id, "server/discover", mcParams("", meta))
	resultOf(p.t, resp)
	return resp
}

// mcServerFrames is every JSON-RPC frame the server wrote on ex (a JSON body,
// or each SSE event), once its handler has returned.
func mcServerFrames(t *testing.T, u *upstream, ex *exchange) [][]byte {
	t.Helper()
	_, h, body := u.response(t, ex)
	return osdkFrames(h, body)
}

// mcSameResult checks that the client's answer carries the client's id and,
// byte for byte, the result (or error) the server sent on ex under the
// proxy's own id.
func mcSameResult(t *testing.T, u *upstream, ex *exchange, clientID string, answer []byte) {
	t.Helper()
	if got := gjson.GetBytes(answer, "id").Raw; got != clientID {
		t.Errorf("the answer's id is %s, want the client's %s", got, clientID)
	}
	if ex.ID == clientID {
		t.Errorf("the upstream request went under the client's id %s; the proxy mints its own", clientID)
	}
	srv, _ := osdkAnswer(t, u, ex)
	if srv == nil {
		t.Fatalf("the server sent no answer on the %s exchange", ex.RPCMethod)
	}
	if got := gjson.GetBytes(srv, "id").Raw; got != ex.ID {
		t.Errorf("the server answered id %s on the exchange of id %s", got, ex.ID)
	}
	for _, member := range []string{"result", "error"} {
		want, got := gjson.GetBytes(srv, member), gjson.GetBytes(answer, member)
		if want.Raw != got.Raw {
			t.Errorf("the client's %s is not the server's byte for byte:\n server: %s\n client: %s", member, shortBytes([]byte(want.Raw)), shortBytes([]byte(got.Raw)))
		}
	}
}

// mcCall is the one recorded tools/call of tool whose params hold the
// client's marker text (so that each call of a test is told apart).
func mcCall(t *testing.T, u *upstream, tool, marker string) *exchange {
	t.Helper()
	return u.waitRequest(t, "tools/call "+tool+" "+marker, func(ex *exchange) bool {
		return ex.RPCMethod == "tools/call" && gjson.GetBytes(ex.Body, "params.name").Str == tool &&
			strings.Contains(gjson.GetBytes(ex.Body, "params.arguments").Raw, marker)
	})
}

// mcNoAnswer checks, once the proxy has exited (stdout at EOF), that no
// response carries id.
func mcNoAnswer(t *testing.T, p *rawProc, id, why string) {
	t.Helper()
	for _, l := range p.all() {
		if isResponse(l) && gjson.GetBytes(l, "id").Raw == id {
			t.Errorf("id %s was answered (%s): %s", id, why, shortBytes(l))
		}
	}
}

// mcSubscriptionID is the subscriptionId of a listen stream's message (a
// notification's params._meta or a result's _meta), raw.
func mcSubscriptionID(line []byte) string {
	if r := gjson.GetBytes(line, erSubscriptionID); r.Exists() {
		return r.Raw
	}
	return gjson.GetBytes(line, `result._meta.io\.modelcontextprotocol/subscriptionId`).Raw
}

// mcWaitNotification waits for a notification of method on stdout from
// line index from on, whose raw subscriptionId is sub ("" for any).
func mcWaitNotification(p *rawProc, from int, method, sub string) (int, []byte) {
	p.t.Helper()
	return p.waitLine(from, method+" for subscription "+sub, func(_ int, l outLine) bool {
		return l.method == method && (sub == "" || mcSubscriptionID(l.raw) == sub)
	})
}

// TestModernClientDiscoverAndList: the client's discover is the probe: its
// _meta reaches the server byte for byte (its own members too), and the
// server's DiscoverResult reaches the client byte for byte under the
// client's id. tools/list is relayed the same way.
func TestModernClientDiscoverAndList(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)

	meta := mcMeta(mcNoCaps, "d-1")
	resp := mcDiscover(p, `"d-1"`, meta)
	discovers := up.requests("server/discover")
	if len(discovers) != 1 {
		t.Fatalf("the upstream saw %d server/discover, want 1 (the client's own is the probe)", len(discovers))
	}
	ex := discovers[0]
	if got := gjson.GetBytes(ex.Body, "params._meta").Raw; got != meta {
		t.Errorf("the upstream discover's _meta is not the client's byte for byte:\n client: %s\n server: %s", meta, got)
	}
	mcSameResult(t, up, ex, `"d-1"`, resp)
	if got := gjson.GetBytes(resp, "result.supportedVersions").Raw; !strings.Contains(got, mcVersion) {
		t.Errorf("discover's supportedVersions = %s, want %s in it", got, mcVersion)
	}

	meta = mcMeta(mcNoCaps, "l-1")
	list := p.call("7", "tools/list", mcParams("", meta))
	resultOf(t, list)
	lists := up.requests("tools/list")
	if len(lists) != 1 {
		t.Fatalf("the upstream saw %d tools/list, want the client's 1", len(lists))
	}
	if got, want := gjson.GetBytes(lists[0].Body, "params").Raw, mcParams("", meta); got != want {
		t.Errorf("the upstream tools/list params are not the client's:\n client: %s\n server: %s", want, got)
	}
	mcSameResult(t, up, lists[0], "7", list)
	// A 2026 client filters invalid x-mcp-header tools itself: the relay
	// changes nothing of the list.
	if !strings.Contains(string(list), `"`+demo.BadHeaderTool+`"`) {
		t.Errorf("tools/list lost %s: the relay changes nothing of an answer", demo.BadHeaderTool)
	}
	if n := len(up.requests("server/discover")); n != 1 {
		t.Errorf("the upstream saw %d server/discover at the end, want 1", n)
	}
}

// TestModernClientDiscoverVerbatim: the client's discover goes upstream as
// the client wrote it, like every other request: its params (the _meta
// whitespace and number spelling too) byte for byte.
func TestModernClientDiscoverVerbatim(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	params := `{"_meta": { "io.modelcontextprotocol/protocolVersion" : "` + mcVersion + `", ` +
		`"io.modelcontextprotocol/clientInfo":` + mcClientInfo + `, "io.modelcontextprotocol/clientCapabilities":{ }, "` + mcTraceKey + `": 1.50 } }`
	resultOf(t, p.call("1", "server/discover", params))
	discovers := up.requests("server/discover")
	if len(discovers) != 1 {
		t.Fatalf("the upstream saw %d server/discover, want 1", len(discovers))
	}
	if got := gjson.GetBytes(discovers[0].Body, "params").Raw; got != params {
		t.Errorf("the upstream discover's params are not the client's byte for byte:\n client: %s\n server: %s", params, got)
	}
}

// TestModernClientMetaFirst: a first request that is not a discover but
// carries a 2026 _meta version is a modern client too: a probe goes first
// in its name (its _meta, its identity), then the request as it is.
func TestModernClientMetaFirst(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	meta := mcMeta(mcNoCaps, "first")
	params := mcParams(`"name":"echo","arguments":{"text":"first"}`, meta)
	resp := p.call(`"f-1"`, "tools/call", params)
	if got := resultOf(t, resp).Get("content.0.text").Str; got != "first" {
		t.Errorf("echo = %q, want first", got)
	}
	discovers := up.requests("server/discover")
	if len(discovers) != 1 {
		t.Fatalf("the upstream saw %d server/discover, want the 1 probe", len(discovers))
	}
	pm := gjson.GetBytes(discovers[0].Body, "params._meta")
	if got := pm.Get(`io\.modelcontextprotocol/clientInfo`).Raw; got != mcClientInfo {
		t.Errorf("the probe's clientInfo = %s, want the client's %s", got, mcClientInfo)
	}
	if got := pm.Get(`io\.modelcontextprotocol/protocolVersion`).Str; got != mcVersion {
		t.Errorf("the probe's protocolVersion = %q, want the client's %s", got, mcVersion)
	}
	ex := mcCall(t, up, "echo", "first")
	if got := gjson.GetBytes(ex.Body, "params").Raw; got != params {
		t.Errorf("the upstream tools/call params are not the client's:\n client: %s\n server: %s", params, got)
	}
	mcSameResult(t, up, ex, `"f-1"`, resp)
}

// TestModernClientToolCall: tools/call goes upstream with the client's
// params byte for byte under an id of the proxy's, with the headers a 2026
// HTTP client sends (derived from the body, Mcp-Param-* from the tool's
// x-mcp-header annotations); the answer's result is the server's byte for
// byte under the client's string id.
func TestModernClientToolCall(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	mcDiscover(p, "1", mcMeta(mcNoCaps, ""))

	params := mcParams(`"name":"echo","arguments":{"text":"héllo \"wörld\" \u2603"}`, mcMeta(mcNoCaps, "a-1"))
	resp := p.call(`"a-1"`, "tools/call", params)
	if got := resultOf(t, resp).Get("content.0.text").Str; got != "héllo \"wörld\" ☃" {
		t.Errorf("echo = %q", got)
	}
	ex := mcCall(t, up, "echo", "wörld")
	if got := gjson.GetBytes(ex.Body, "params").Raw; got != params {
		t.Errorf("the upstream tools/call params are not the client's byte for byte:\n client: %s\n server: %s", params, got)
	}
	mcSameResult(t, up, ex, `"a-1"`, resp)
	for _, h := range []struct{ name, want string }{
		{"Mcp-Method", "tools/call"},
		{"Mcp-Name", "echo"},
		{"MCP-Protocol-Version", mcVersion},
	} {
		if got := ex.Header.Values(h.name); len(got) != 1 || got[0] != h.want {
			t.Errorf("%s = %q, want exactly [%s]", h.name, got, h.want)
		}
	}

	// x-mcp-header: the annotations of the client's own tools/list.
	resultOf(t, p.call("2", "tools/list", mcParams("", mcMeta(mcNoCaps, ""))))
	wparams := mcParams(`"name":"weather","arguments":{"city":"Zürich","days":3}`, mcMeta(mcNoCaps, "w-1"))
	wresp := p.call(`"w-1"`, "tools/call", wparams)
	if got := resultOf(t, wresp).Get("content.0.text").Str; !strings.Contains(got, "Zürich") {
		t.Errorf("weather = %q, want the city in it", got)
	}
	wex := mcCall(t, up, "weather", "Zürich")
	if got := gjson.GetBytes(wex.Body, "params").Raw; got != wparams {
		t.Errorf("the upstream weather params are not the client's:\n client: %s\n server: %s", wparams, got)
	}
	if got := wex.Header.Values("Mcp-Param-City"); len(got) != 1 || got[0] != "=?base64?WsO8cmljaA==?=" {
		t.Errorf("Mcp-Param-City = %q, want [=?base64?WsO8cmljaA==?=] (Zürich)", got)
	}
	if got := wex.Header.Values("Mcp-Param-Days"); len(got) != 1 || got[0] != "3" {
		t.Errorf("Mcp-Param-Days = %q, want [3]", got)
	}
	mcSameResult(t, up, wex, `"w-1"`, wresp)
	if n := len(erToolCalls(up, "weather")); n != 1 {
		t.Errorf("the upstream saw %d weather calls, want 1 (the headers were right the first time)", n)
	}
}

// TestModernClientParamHeadersUnlisted: a client that calls an annotated
// tool without listing the tools first still gets its Mcp-Param-* headers:
// the relay lists the tools itself.
func TestModernClientParamHeadersUnlisted(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	mcDiscover(p, "1", mcMeta(mcNoCaps, ""))
	resp := p.call("2", "tools/call", mcParams(`"name":"weather","arguments":{"city":"Oslo","days":2}`, mcMeta(mcNoCaps, "")))
	resultOf(t, resp)
	wex := mcCall(t, up, "weather", "Oslo")
	if got := wex.Header.Values("Mcp-Param-City"); len(got) != 1 || got[0] != "Oslo" {
		t.Errorf("Mcp-Param-City = %q, want [Oslo]", got)
	}
	if n := len(erToolCalls(up, "weather")); n != 1 {
		t.Errorf("the upstream saw %d weather calls, want 1", n)
	}
}

// TestModernClientInputRequired: an input_required result reaches the
// client as the server sent it, and the client's retry (new id,
// inputResponses, the requestState byte for byte) goes upstream as the
// client wrote it and is answered.
func TestModernClientInputRequired(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	meta := mcMeta(mcElicit, "")
	mcDiscover(p, "1", meta)

	first := p.call(`"ask-1"`, "tools/call", mcParams(`"name":"ask_name","arguments":{}`, meta))
	res := resultOf(t, first)
	if rt := res.Get("resultType").Str; rt != "input_required" {
		t.Fatalf("ask_name answered resultType %q, want input_required: %s", rt, shortBytes(first))
	}
	calls := erToolCalls(up, "ask_name")
	if len(calls) != 1 {
		t.Fatalf("the upstream saw %d ask_name calls, want 1", len(calls))
	}
	mcSameResult(t, up, calls[0], `"ask-1"`, first)
	state := res.Get("requestState").Raw // the JSON string literal, as the server wrote it
	if !strings.HasSuffix(state, demo.RequestStateRawSuffix+`"`) {
		t.Errorf("requestState %s lost the raw escapes the server wrote (%s)", state, demo.RequestStateRawSuffix)
	}
	if !res.Get("inputRequests.name-1").IsObject() {
		t.Fatalf("no inputRequests.name-1 in %s", res.Raw)
	}

	// The client tells the proxy nothing of the round: it retries.
	retry := mcParams(`"name":"ask_name","arguments":{},"inputResponses":{"name-1":{"action":"accept","content":{"name":"Ada"}}},"requestState":`+state, meta)
	second := p.call(`"ask-2"`, "tools/call", retry)
	if got := resultOf(t, second).Get("content.0.text").Str; got != "hello, Ada" {
		t.Errorf("the retry's answer = %q, want hello, Ada: %s", got, shortBytes(second))
	}
	calls = erToolCalls(up, "ask_name")
	if len(calls) != 2 {
		t.Fatalf("the upstream saw %d ask_name calls, want 2 (the call and the client's retry)", len(calls))
	}
	if got := gjson.GetBytes(calls[1].Body, "params").Raw; got != retry {
		t.Errorf("the upstream retry's params are not the client's byte for byte:\n client: %s\n server: %s", retry, got)
	}
	if calls[1].ID == calls[0].ID {
		t.Errorf("the retry went upstream under the first call's id %s", calls[0].ID)
	}
	mcSameResult(t, up, calls[1], `"ask-2"`, second)
}

// TestModernClientProgress: the notifications on a request's SSE stream
// (progress with the client's own token, and a log message the client's
// level asked for) reach the client unchanged, before the answer.
func TestModernClientProgress(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	mcDiscover(p, "1", mcMeta(mcNoCaps, ""))

	meta := `{"io.modelcontextprotocol/protocolVersion":"` + mcVersion + `","io.modelcontextprotocol/clientInfo":` + mcClientInfo +
		`,"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info","progressToken":"tok-7"}`
	params := mcParams(`"name":"slow_count","arguments":{"n":3}`, meta)
	from := p.mark()
	resp := p.call(`"p-1"`, "tools/call", params)
	if got := resultOf(t, resp).Get("content.0.text").Str; got != "counted to 3" {
		t.Errorf("slow_count = %q, want counted to 3", got)
	}
	ex := up.waitRequest(t, "tools/call slow_count", func(ex *exchange) bool {
		return ex.RPCMethod == "tools/call" && gjson.GetBytes(ex.Body, "params.name").Str == "slow_count"
	})
	if got := gjson.GetBytes(ex.Body, "params").Raw; got != params {
		t.Errorf("the upstream params are not the client's:\n client: %s\n server: %s", params, got)
	}
	mcSameResult(t, up, ex, `"p-1"`, resp)

	var want [][]byte
	for _, f := range mcServerFrames(t, up, ex) {
		if !isResponse(f) {
			want = append(want, f)
		}
	}
	progress := 0
	for _, f := range want {
		if gjson.GetBytes(f, "method").Str == "notifications/progress" {
			progress++
		}
	}
	if progress != 3 {
		t.Fatalf("the server sent %d progress notifications, want 3 (the test's premise)", progress)
	}
	answer, _ := p.waitLine(from, "the slow_count answer", func(_ int, l outLine) bool { return l.resp && l.id == `"p-1"` })
	var got [][]byte
	for _, l := range p.all()[from:answer] {
		if !isResponse(l) {
			got = append(got, l)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the client read %d notifications before the answer, want the server's %d:\n%s", len(got), len(want), p.dump())
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("notification %d is not the server's byte for byte:\n server: %s\n client: %s", i, want[i], got[i])
		}
	}
	for _, l := range p.all()[answer+1:] {
		if gjson.GetBytes(l, "params.progressToken").Raw == `"tok-7"` {
			t.Errorf("a progress notification came after the answer: %s", l)
		}
	}
}

// TestModernClientCancel: the client's notifications/cancelled closes that
// request's HTTP stream (nothing is POSTed), the client gets no answer for
// it, and the session keeps serving.
func TestModernClientCancel(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	mcDiscover(p, "1", mcMeta(mcNoCaps, ""))

	// 50 steps 10 s apart: the call outlasts every wait here unless the
	// stream is closed. Step 1's progress shows it running.
	meta := `{"io.modelcontextprotocol/protocolVersion":"` + mcVersion + `","io.modelcontextprotocol/clientInfo":` + mcClientInfo +
		`,"io.modelcontextprotocol/clientCapabilities":{},"progressToken":9}`
	from := p.mark()
	p.request(`"c-1"`, "tools/call", mcParams(`"name":"slow_count","arguments":{"n":50,"delay_ms":10000}`, meta))
	p.waitLine(from, "the first progress of c-1", func(_ int, l outLine) bool {
		return l.method == "notifications/progress" && l.token == "9"
	})
	ex := up.waitRequest(t, "tools/call slow_count", func(ex *exchange) bool { return ex.RPCMethod == "tools/call" })
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1","reason":"the user stopped it"}}`)
	_, _, body := up.response(t, ex) // the handler ends once the stream is closed
	if bytes.Contains(body, []byte("counted to")) {
		t.Errorf("the cancelled call ran to its end: %s", shortBytes(body))
	}

	resp := p.call(`"after"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"still here"}`, mcMeta(mcNoCaps, "")))
	if got := resultOf(t, resp).Get("content.0.text").Str; got != "still here" {
		t.Errorf("echo after the cancel = %q", got)
	}
	for _, ex := range up.requests("") {
		if strings.HasPrefix(ex.RPCMethod, "notifications/") {
			t.Errorf("the proxy POSTed %s upstream; a 2026 client's cancel closes the stream only", ex.RPCMethod)
		}
	}
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d after stdin closed, want 0", code)
	}
	mcNoAnswer(t, p, `"c-1"`, "the client cancelled it")
}

// TestModernClientListen: subscriptions/listen stays open; its
// acknowledgement and the list_changed that touch causes carry the client's
// listen id as subscriptionId and are otherwise the server's bytes; the
// client's cancel closes the upstream stream, with no answer.
func TestModernClientListen(t *testing.T) {
	t.Parallel()
	w := newERListenWatch(demo.Handler())
	up := newUpstream(t, w)
	p := startModernProxy(t, up.URL)
	meta := mcMeta(mcNoCaps, "")
	mcDiscover(p, "1", meta)

	from := p.mark()
	params := mcParams(`"notifications":{"toolsListChanged":true}`, meta)
	p.request(`"L-1"`, "subscriptions/listen", params)
	_, ack := mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"L-1"`)
	l := w.wait(t, "the listen", func(*erListen) bool { return true })
	ex := up.waitRequest(t, "the listen", func(ex *exchange) bool { return ex.RPCMethod == "subscriptions/listen" })
	if got := gjson.GetBytes(ex.Body, "params").Raw; got != params {
		t.Errorf("the upstream listen params are not the client's:\n client: %s\n server: %s", params, got)
	}
	if ex.ID == `"L-1"` {
		t.Errorf("the listen went upstream under the client's id")
	}
	if got := gjson.GetBytes(ack, "params.notifications.toolsListChanged").Raw; got != "true" {
		t.Errorf("the acknowledgement does not honour toolsListChanged: %s", ack)
	}

	resultOf(t, p.call(`"t-1"`, "tools/call", mcParams(`"name":"touch","arguments":{"what":"tools"}`, meta)))
	_, changed := mcWaitNotification(p, from, "notifications/tools/list_changed", `"L-1"`)

	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L-1"}}`)
	erWait(t, l.done, "the upstream listen stream closing after the client's cancel")

	// The server's own frames, with its (the proxy's) listen id.
	frames := mcServerFrames(t, up, ex)
	upSub := []byte(`"io.modelcontextprotocol/subscriptionId":` + ex.ID)
	cliSub := []byte(`"io.modelcontextprotocol/subscriptionId":"L-1"`)
	for _, c := range []struct {
		method string
		got    []byte
	}{{"notifications/subscriptions/acknowledged", ack}, {"notifications/tools/list_changed", changed}} {
		var srv []byte
		for _, f := range frames {
			if gjson.GetBytes(f, "method").Str == c.method {
				srv = f
				break
			}
		}
		if srv == nil {
			t.Errorf("the server's listen stream has no %s", c.method)
			continue
		}
		if want := bytes.Replace(srv, upSub, cliSub, 1); !bytes.Equal(c.got, want) {
			t.Errorf("%s is not the server's but for the subscriptionId:\n server: %s\n client: %s", c.method, srv, c.got)
		}
	}
	resultOf(t, p.call(`"after"`, "tools/list", mcParams("", meta)))
	p.closeStdin()
	p.waitExit(cleanupExitTimeout)
	mcNoAnswer(t, p, `"L-1"`, "the client cancelled its listen")
	for _, l := range p.all() {
		if gjson.GetBytes(l, "method").Str == "notifications/cancelled" {
			t.Errorf("the proxy sent %s: a listen the client cancelled did not drop", l)
		}
	}
}

// mcGracefulListens answers subscriptions/listen itself once graceful is
// set, as a server that ends its listens gracefully does: the
// acknowledgement at once, then, when end is closed, the listen's result.
// Every other request goes to next.
type mcGracefulListens struct {
	next     http.Handler
	graceful atomic.Bool
	end      chan struct{}
}

func (h *mcGracefulListens) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Method") != "subscriptions/listen" || !h.graceful.Load() {
		h.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	id := gjson.GetBytes(body, "id").Raw
	sub := `{"io.modelcontextprotocol/subscriptionId":` + id + `}`
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"_meta\":%s,\"notifications\":%s}}\n\n",
		sub, gjson.GetBytes(body, "params.notifications").Raw)
	http.NewResponseController(w).Flush()
	select {
	case <-h.end:
	case <-r.Context().Done():
		return
	}
	fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"_meta\":%s}}\n\n", id, sub)
	http.NewResponseController(w).Flush()
}

// TestModernClientListenEnds: a listen stream that drops after its
// acknowledgement is reported to the client with notifications/cancelled
// for the listen id, and the client can listen again; a listen the server
// ends with a result gets that result under the client's id.
func TestModernClientListenEnds(t *testing.T) {
	t.Parallel()
	g := &mcGracefulListens{end: make(chan struct{})}
	w := newERListenWatch(demo.Handler())
	g.next = w
	up := newUpstream(t, g)
	p := startModernProxy(t, up.URL)
	meta := mcMeta(mcNoCaps, "")
	mcDiscover(p, "1", meta)
	params := mcParams(`"notifications":{"toolsListChanged":true,"promptsListChanged":true}`, meta)

	from := p.mark()
	p.request(`"L-1"`, "subscriptions/listen", params)
	mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"L-1"`)
	l1 := w.wait(t, "the first listen", func(*erListen) bool { return true })
	up.srv.CloseClientConnections() // an unexpected drop
	erWait(t, l1.done, "the first listen's stream ending")
	p.waitLine(from, "notifications/cancelled for L-1", func(_ int, l outLine) bool {
		return l.method == "notifications/cancelled" && gjson.GetBytes(l.raw, "params.requestId").Raw == `"L-1"`
	})

	// The client listens again, and the new stream works.
	from = p.mark()
	p.request(`"L-2"`, "subscriptions/listen", params)
	mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"L-2"`)
	l2 := w.wait(t, "the second listen", func(l *erListen) bool { return l != l1 })
	resultOf(t, p.call(`"t-1"`, "tools/call", mcParams(`"name":"touch","arguments":{"what":"prompts"}`, meta)))
	mcWaitNotification(p, from, "notifications/prompts/list_changed", `"L-2"`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L-2"}}`)
	erWait(t, l2.done, "the second listen's stream closing after the client's cancel")

	// A server that ends a listen gracefully: its result, under the
	// client's id, and no cancellation.
	g.graceful.Store(true)
	from = p.mark()
	p.request(`"L-3"`, "subscriptions/listen", params)
	mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"L-3"`)
	close(g.end)
	res := resultOf(t, p.expect(`"L-3"`))
	if got := res.Get(`_meta.io\.modelcontextprotocol/subscriptionId`).Raw; got != `"L-3"` {
		t.Errorf("the listen's result carries subscriptionId %s, want the client's \"L-3\": %s", got, res.Raw)
	}
	resultOf(t, p.call(`"after"`, "tools/list", mcParams("", meta)))

	p.closeStdin()
	p.waitExit(cleanupExitTimeout)
	mcNoAnswer(t, p, `"L-1"`, "its stream dropped: notifications/cancelled stands for the answer")
	mcNoAnswer(t, p, `"L-2"`, "the client cancelled it")
	for _, l := range p.all() {
		if gjson.GetBytes(l, "method").Str != "notifications/cancelled" {
			continue
		}
		if id := gjson.GetBytes(l, "params.requestId").Raw; id != `"L-1"` {
			t.Errorf("the proxy cancelled %s, a listen that did not drop: %s", id, l)
		}
	}
}

// TestModernClientTasks: a client declaring the tasks extension gets the
// server's task frames as they are: resultType "task", tasks/get and
// tasks/cancel (with their Mcp-Name), and no declaration is added for a
// client that made none.
func TestModernClientTasks(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	meta := mcMeta(mcTasksCaps, "")
	mcDiscover(p, "1", meta)

	call := p.call(`"task-1"`, "tools/call", mcParams(`"name":"slow","arguments":{"ms":600000}`, meta))
	res := resultOf(t, call)
	if rt := res.Get("resultType").Str; rt != "task" {
		t.Fatalf("slow answered resultType %q, want task: %s", rt, shortBytes(call))
	}
	mcSameResult(t, up, mcCall(t, up, "slow", "600000"), `"task-1"`, call)
	taskID := res.Get("taskId").Str
	if taskID == "" {
		t.Fatalf("no taskId in %s", res.Raw)
	}

	get := p.call(`"get-1"`, "tasks/get", mcParams(`"taskId":"`+taskID+`"`, meta))
	if st := resultOf(t, get).Get("status").Str; st != "working" {
		t.Errorf("tasks/get status = %q, want working: %s", st, shortBytes(get))
	}
	gets := up.requests("tasks/get")
	if len(gets) != 1 {
		t.Fatalf("the upstream saw %d tasks/get, want 1", len(gets))
	}
	mcSameResult(t, up, gets[0], `"get-1"`, get)
	if got := gets[0].Header.Values("Mcp-Name"); len(got) != 1 || got[0] != taskID {
		t.Errorf("tasks/get Mcp-Name = %q, want [%s]", got, taskID)
	}

	cancel := p.call(`"cancel-1"`, "tasks/cancel", mcParams(`"taskId":"`+taskID+`"`, meta))
	resultOf(t, cancel)
	cancels := up.requests("tasks/cancel")
	if len(cancels) != 1 {
		t.Fatalf("the upstream saw %d tasks/cancel, want 1", len(cancels))
	}
	mcSameResult(t, up, cancels[0], `"cancel-1"`, cancel)

	// Without the declaration, the server's refusal reaches the client as
	// it is: the proxy declares nothing on its behalf.
	plain := mcMeta(mcNoCaps, "")
	refused := p.call(`"task-2"`, "tools/call", mcParams(`"name":"slow","arguments":{"ms":599999}`, plain))
	if code := errorOf(t, refused).Get("code").Int(); code != -32021 {
		t.Errorf("a task tool called without the extension answered %d, want the server's -32021: %s", code, shortBytes(refused))
	}
	ex := mcCall(t, up, "slow", "599999")
	if got := gjson.GetBytes(ex.Body, "params._meta").Raw; got != plain {
		t.Errorf("the upstream _meta is not the client's:\n client: %s\n server: %s", plain, got)
	}
	mcSameResult(t, up, ex, `"task-2"`, refused)
}

// TestModernClientEraLegacy: --client-era legacy refuses a discover with
// -32601 (nothing goes upstream), so that a client of both eras falls back
// to initialize, which works.
func TestModernClientEraLegacy(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, "--client-era", "legacy", up.URL)
	e := errorOf(t, p.call("1", "server/discover", mcParams("", mcMeta(mcNoCaps, ""))))
	if code := e.Get("code").Int(); code != -32601 {
		t.Errorf("discover under --client-era legacy answered %d, want -32601: %s", code, e.Raw)
	}
	if msg := e.Get("message").Str; !strings.Contains(msg, "initialize") {
		t.Errorf("the message %q should tell the client to send initialize", msg)
	}
	if n := len(up.requests("")); n != 0 {
		t.Errorf("the upstream saw %d requests for a refused discover, want none", n)
	}
	p.modernClient(false)
	res := resultOf(t, p.initialize())
	if got := res.Get("protocolVersion").Str; got != legacyVersion {
		t.Errorf("initialize after the fallback: protocolVersion %q, want %s", got, legacyVersion)
	}
	if got := resultOf(t, p.call("2", "tools/call", `{"name":"echo","arguments":{"text":"legacy"}}`)).Get("content.0.text").Str; got != "legacy" {
		t.Errorf("echo after the fallback = %q", got)
	}
}

// TestModernClientEraModern: --client-era modern refuses initialize, and
// serves a modern client.
func TestModernClientEraModern(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{"--client-era", "modern", up.URL})
	e := errorOf(t, p.call(`"init"`, "initialize", initParams))
	if msg := e.Get("message").Str; !strings.Contains(msg, "--client-era") {
		t.Errorf("the refusal %q should name --client-era", msg)
	}
	if code := e.Get("code").Int(); code != -32600 {
		t.Errorf("initialize under --client-era modern answered %d, want -32600", code)
	}
	if n := len(up.requests("")); n != 0 {
		t.Errorf("the upstream saw %d requests for a refused initialize, want none", n)
	}
	p.modernClient(true)
	mcDiscover(p, "1", mcMeta(mcNoCaps, ""))
	resp := p.call("2", "tools/call", mcParams(`"name":"echo","arguments":{"text":"modern"}`, mcMeta(mcNoCaps, "")))
	if got := resultOf(t, resp).Get("content.0.text").Str; got != "modern" {
		t.Errorf("echo = %q", got)
	}
}

// TestModernClientLegacyServer: a modern client against a 2025 server is
// served by the reverse bridge: its discover is answered from the proxy's
// own initialize, and a call comes back in the 2026 shape.
func TestModernClientLegacyServer(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	res := resultOf(t, p.call("1", "server/discover", mcParams("", mcMeta(mcNoCaps, ""))))
	if got := res.Get("supportedVersions").Raw; got != `["2026-07-28"]` {
		t.Errorf("discover from a 2025 server: supportedVersions %s, want [\"2026-07-28\"]", got)
	}
	if got := res.Get(`_meta.io\.modelcontextprotocol/serverInfo.name`).Str; got != "mcp-tasks-proxy-legacy-demo" {
		t.Errorf("discover from a 2025 server: serverInfo.name %q, want the 2025 server's own", got)
	}
	if n := len(up.seen(isPost("initialize"))); n != 1 {
		t.Errorf("the 2025 server saw %d initialize for a modern client's discover, want the proxy's 1", n)
	}
	got := resultOf(t, p.call("2", "tools/call", mcParams(`"name":"echo","arguments":{"text":"reversed"}`, mcMeta(mcNoCaps, ""))))
	if got.Get("content.0.text").Str != "reversed" || got.Get("resultType").Str != "complete" {
		t.Errorf("echo through the reverse bridge = %s", got.Raw)
	}
}

// TestModernClientProbeOnly: a probe-only process (a dual client's
// short-lived sibling) gets its discover answered and exits at once when
// stdin closes.
func TestModernClientProbeOnly(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startModernProxy(t, up.URL)
	p.request("1", "server/discover", mcParams("", mcMeta(mcNoCaps, "probe")))
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	resp := p.expect("1")
	resultOf(t, resp)
	if n := len(up.requests("")); n != 1 {
		t.Errorf("the upstream saw %d requests, want the 1 discover", n)
	}
}

// TestModernClientGoSDK: through the relay to a plain go-sdk server (SSE
// answers, raw header comparison): tools/call echo, and prompts/get of a
// prompt with a non-ASCII name, refused with -32020 in the Base64 form the
// spec asks for and answered on its one retry with the raw UTF-8 value.
func TestModernClientGoSDK(t *testing.T) {
	t.Parallel()
	s := newGoSDKServer(t)
	p := startModernProxy(t, s.URL)
	meta := mcMeta(mcNoCaps, "")
	mcDiscover(p, "1", meta)

	params := mcParams(`"name":"echo","arguments":{"text":"through"}`, meta)
	resp := p.call(`"e-1"`, "tools/call", params)
	if got := resultOf(t, resp).Get("content.0.text").Str; got != "through" {
		t.Errorf("echo = %q", got)
	}
	ex := mcCall(t, s.upstream, "echo", "through")
	if got := gjson.GetBytes(ex.Body, "params").Raw; got != params {
		t.Errorf("the upstream params are not the client's:\n client: %s\n server: %s", params, got)
	}
	mcSameResult(t, s.upstream, ex, `"e-1"`, resp)

	pparams := mcParams(`"name":"`+osdkGoSDKPrompt+`","arguments":{"name":"Jörg"}`, meta)
	presp := p.call(`"g-1"`, "prompts/get", pparams)
	if got := resultOf(t, presp).Get("messages.0.content.text").Str; got != "Grüße, Jörg!" {
		t.Errorf("prompts/get %s = %q, want Grüße, Jörg!: %s", osdkGoSDKPrompt, got, shortBytes(presp))
	}
	gets := s.requests("prompts/get")
	if len(gets) != 2 {
		t.Fatalf("the server saw %d prompts/get, want 2 (the Base64 form refused, then the raw retry)", len(gets))
	}
	if h := gets[0].Header.Get("Mcp-Name"); !strings.HasPrefix(h, "=?base64?") {
		t.Errorf("the first prompts/get Mcp-Name = %q, want the Base64 form", h)
	}
	if first, _ := osdkAnswer(t, s.upstream, gets[0]); gjson.GetBytes(first, "error.code").Int() != -32020 {
		t.Errorf("the premise: the go-sdk server should refuse the Base64 form with -32020, answered %s", shortBytes(first))
	}
	if h := gets[1].Header.Get("Mcp-Name"); h != osdkGoSDKPrompt {
		t.Errorf("the retry's Mcp-Name = %q, want the raw %q", h, osdkGoSDKPrompt)
	}
	for i, g := range gets {
		if got := gjson.GetBytes(g.Body, "params").Raw; got != pparams {
			t.Errorf("prompts/get #%d params are not the client's:\n client: %s\n server: %s", i+1, pparams, got)
		}
	}
	mcSameResult(t, s.upstream, gets[1], `"g-1"`, presp)
}

// TestModernClientListenAtEOF: a listen is open for as long as the client
// wants it, so at the end of input it holds nothing up: the proxy closes
// it and exits at once, not after --drain-timeout (which is for requests
// that end by themselves), and does not answer it with the drain's error.
func TestModernClientListenAtEOF(t *testing.T) {
	t.Parallel()
	w := newERListenWatch(demo.Handler())
	up := newUpstream(t, w)
	p := startModernProxy(t, "--drain-timeout", "1m", up.URL)
	meta := mcMeta(mcNoCaps, "")
	mcDiscover(p, "1", meta)
	from := p.mark()
	p.request(`"L-1"`, "subscriptions/listen", mcParams(`"notifications":{"toolsListChanged":true}`, meta))
	mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"L-1"`)
	l := w.wait(t, "the listen", func(*erListen) bool { return true })
	p.closeStdin()
	// A minute of drain would outlast this bound many times over.
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	erWait(t, l.done, "the upstream listen stream closing")
	mcNoAnswer(t, p, `"L-1"`, "a listen ends with its result or notifications/cancelled, not with the drain's error")
}

// TestModernClientOAuth: a discover never starts a sign-in that waits for a
// person (a dual client's probe process would leave it half done): it is
// answered with an error that says how to sign in, and no browser opens.
// The client's next request, which only the real process sends, signs in
// and is served.
func TestModernClientOAuth(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	b := newBrowser(t, "follow")
	p := startModernProxy(t, f.args(b)...)
	meta := mcMeta(mcNoCaps, "")
	e := errorOf(t, p.call("1", "server/discover", mcParams("", meta)))
	if msg := e.Get("message").Str; !strings.Contains(msg, "auth login "+f.up.URL) {
		t.Errorf("the discover's error %q should name `mcp-tasks-proxy auth login %s`", msg, f.up.URL)
	}
	if runs := b.runs(); len(runs) != 0 {
		t.Errorf("a discover opened the browser %d times", len(runs))
	}
	if st := f.stats(); st.Authorizations != 0 {
		t.Errorf("a discover started %d authorizations, want none", st.Authorizations)
	}

	res := resultOf(t, p.call("2", "tools/list", mcParams("", meta)))
	if !res.Get(`tools.#(name=="echo")`).Exists() {
		t.Errorf("tools/list after the sign-in has no echo: %s", shortBytes([]byte(res.Raw)))
	}
	if runs := b.runs(); len(runs) != 1 {
		t.Errorf("the request after the discover opened the browser %d times, want 1 (it signs in)", len(runs))
	}
}
