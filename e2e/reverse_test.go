package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// The reverse bridge (docs/protocol.md, Clients of both eras): a modern
// (2026-07-28) client on the proxy's stdio against a 2025 server. The raw
// client validates every line the proxy writes against 2026-07-28 (and
// every line it writes itself); the 2025 server sits behind the legacy
// recorder, which validates every body the proxy POSTs against 2025-11-25
// and every message the server sends back. The tests compare what the
// client sent with what the 2025 server received, and what the server
// answered with what the client read.

// rvMeta is a modern client's _meta: the 2026 envelope (version, identity,
// capabilities caps) with the extra members extra (raw "key":value pairs,
// "" for none) before it.
func rvMeta(caps, extra string) string {
	m := `{`
	if extra != "" {
		m += extra + `,`
	}
	return m + `"io.modelcontextprotocol/protocolVersion":"` + mcVersion + `",` +
		`"io.modelcontextprotocol/clientInfo":` + mcClientInfo + `,` +
		`"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// Client capabilities of the reverse tests.
const (
	rvAllCaps = `{"elicitation":{},"sampling":{},"roots":{}}`
	// rvExtCaps declares an extension, which the 2025 initialize must not
	// carry.
	rvExtCaps = `{"elicitation":{},"sampling":{},"extensions":{"com.example/ext":{}}}`
)

// rvNoRequests checks that the proxy sent the modern client no JSON-RPC
// request: a 2026 server asks for input in a call's answer only.
func rvNoRequests(t *testing.T, p *rawProc) {
	t.Helper()
	for _, l := range p.all() {
		r := gjson.ParseBytes(l)
		if r.Get("method").Exists() && r.Get("id").Exists() {
			t.Errorf("the proxy sent the 2026-07-28 client a request: %s", shortBytes(l))
		}
	}
}

// rvAnswerOf is the server's answer frame on a recorded exchange (the
// frame whose id is the exchange's), waiting (bounded) for it.
func rvAnswerOf(t *testing.T, up *legacyUpstream, ex legacySeen) []byte {
	t.Helper()
	s := up.wait(t, "the answer to "+ex.RPCMethod+" "+ex.ID, func(s legacySeen) bool {
		return s.legacyExchange == ex.legacyExchange && rvFrameWithID(s.Frames, ex.ID) != nil
	})
	return rvFrameWithID(s.Frames, ex.ID)
}

// rvFrameWithID is the response among frames whose raw id is id.
func rvFrameWithID(frames [][]byte, id string) []byte {
	for _, f := range frames {
		r := gjson.ParseBytes(f)
		if !r.Get("method").Exists() && r.Get("id").Raw == id {
			return f
		}
	}
	return nil
}

// rvServerRequests are the requests the server sent on an exchange's
// stream (its frames with a method and an id).
func rvServerRequests(s legacySeen) []gjson.Result {
	var out []gjson.Result
	for _, f := range s.Frames {
		if r := gjson.ParseBytes(f); r.Get("method").Exists() && r.Get("id").Exists() {
			out = append(out, r)
		}
	}
	return out
}

// rvPostedAnswer waits for the proxy's POST answering the server request
// whose raw id is id, and returns its body.
func rvPostedAnswer(t *testing.T, up *legacyUpstream, id, desc string) gjson.Result {
	t.Helper()
	s := up.wait(t, "the proxy's answer to "+desc, func(s legacySeen) bool {
		return s.HTTPMethod == http.MethodPost && s.RPCMethod == "" && s.ID == id
	})
	return gjson.ParseBytes(s.Body)
}

// rvCancelledUpstream waits for the 2025 notifications/cancelled the proxy
// POSTs for the upstream request id.
func rvCancelledUpstream(t *testing.T, up *legacyUpstream, id, desc string) legacySeen {
	t.Helper()
	return up.wait(t, "notifications/cancelled for "+desc, func(s legacySeen) bool {
		return isPost("notifications/cancelled")(s) && gjson.GetBytes(s.Body, "params.requestId").Raw == id
	})
}

// rvInit is the recorded initialize the proxy sent, and the server's
// InitializeResult for it.
func rvInit(t *testing.T, up *legacyUpstream) (legacySeen, gjson.Result) {
	t.Helper()
	inits := up.waitN(t, "initialize", 1, isPost("initialize"))
	return inits[0], gjson.GetBytes(rvAnswerOf(t, up, inits[0]), "result")
}

// rvCheckNoEnvelope checks that a body the proxy POSTed carries none of the
// 2026 envelope keys in params._meta.
func rvCheckNoEnvelope(t *testing.T, s legacySeen) {
	t.Helper()
	meta := gjson.GetBytes(s.Body, "params._meta")
	for _, k := range []string{"protocolVersion", "clientInfo", "clientCapabilities", "logLevel"} {
		if meta.Get(`io\.modelcontextprotocol/` + k).Exists() {
			t.Errorf("%s went to the 2025 server with the 2026 envelope key %s in _meta: %s", s.RPCMethod, k, shortBytes(s.Body))
		}
	}
}

// TestReverseDiscover: the modern client's discover is answered from the
// proxy's own 2025 initialize, made in the client's name (its clientInfo,
// its capabilities without extensions), followed by
// notifications/initialized; the DiscoverResult carries the one version
// the proxy speaks, the server's capabilities (never the 2025 tasks one),
// its instructions and serverInfo, and cache fields that forbid caching.
// A second discover is answered from the same session, and initialize is
// refused: the session keeps its era.
func TestReverseDiscover(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	meta := rvMeta(rvExtCaps, "")
	first := mcDiscover(p, `"d-1"`, meta)
	res := resultOf(t, first)

	init, ir := rvInit(t, up)
	ip := gjson.GetBytes(init.Body, "params")
	if got := ip.Get("protocolVersion").Str; got != legacyVersion {
		t.Errorf("the proxy's initialize asks for %q, want %s", got, legacyVersion)
	}
	if got := ip.Get("clientInfo").Raw; !erJSONEqual(got, mcClientInfo) {
		t.Errorf("the proxy's initialize clientInfo = %s, want the client's %s", got, mcClientInfo)
	}
	if got, want := ip.Get("capabilities").Raw, `{"elicitation":{},"sampling":{}}`; !erJSONEqual(got, want) {
		t.Errorf("the proxy's initialize capabilities = %s, want the client's without extensions %s", got, want)
	}
	if init.ID == `"d-1"` {
		t.Errorf("initialize went upstream under the client's id %s", init.ID)
	}
	up.wait(t, "notifications/initialized", isPost("notifications/initialized"))
	if all := up.seen(nil); len(all) > 0 {
		idx := map[string]int{}
		for i, s := range all {
			if _, ok := idx[s.RPCMethod]; !ok && s.HTTPMethod == http.MethodPost {
				idx[s.RPCMethod] = i
			}
		}
		if idx["notifications/initialized"] < idx["initialize"] {
			t.Errorf("notifications/initialized was POSTed before initialize")
		}
	}

	if got := res.Get("supportedVersions").Raw; got != `["`+mcVersion+`"]` {
		t.Errorf("supportedVersions = %s, want [%q]", got, mcVersion)
	}
	if got := res.Get("resultType").Str; got != "complete" {
		t.Errorf("resultType = %q, want complete", got)
	}
	if res.Get("ttlMs").Raw != "0" || res.Get("cacheScope").Str != "private" {
		t.Errorf("cache fields ttlMs %s cacheScope %q, want 0 and private (a 2025 server gave none: no caching)", res.Get("ttlMs").Raw, res.Get("cacheScope").Str)
	}
	wantCaps := map[string]string{}
	ir.Get("capabilities").ForEach(func(k, v gjson.Result) bool {
		if k.Str != "tasks" {
			wantCaps[k.Str] = v.Raw
		}
		return true
	})
	gotCaps := res.Get("capabilities")
	for k, v := range wantCaps {
		if got := gotCaps.Get(gjson.Escape(k)).Raw; !erJSONEqual(got, v) {
			t.Errorf("capabilities.%s = %s, want the server's %s", k, got, v)
		}
	}
	if n := len(erKeys(gotCaps)); n != len(wantCaps) {
		t.Errorf("capabilities = %s, want exactly the server's (without tasks): %s", gotCaps.Raw, ir.Get("capabilities").Raw)
	}
	if gotCaps.Get("tasks").Exists() {
		t.Errorf("the discover declares the 2025 tasks capability: %s", gotCaps.Raw)
	}
	for _, k := range []string{"tools", "resources", "logging"} {
		if !gotCaps.Get(k).Exists() {
			t.Errorf("capabilities lack %s, which the 2025 demo has: %s", k, gotCaps.Raw)
		}
	}
	if got, want := res.Get(`_meta.io\.modelcontextprotocol/serverInfo`).Raw, ir.Get("serverInfo").Raw; want == "" || !erJSONEqual(got, want) {
		t.Errorf("_meta serverInfo = %s, want the server's %s", got, want)
	}
	if want := ir.Get("instructions"); want.Exists() && res.Get("instructions").Str != want.Str {
		t.Errorf("instructions = %q, want the server's %q", res.Get("instructions").Str, want.Str)
	}

	// A second discover: the same answer, the same session.
	second := resultOf(t, p.call(`"d-2"`, "server/discover", mcParams("", rvMeta(mcElicit, ""))))
	if !erJSONEqual(second.Raw, res.Raw) {
		t.Errorf("the second discover differs from the first:\n first:  %s\n second: %s", res.Raw, second.Raw)
	}
	echo := resultOf(t, p.call(`"e-1"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"one session"}`, meta)))
	if echo.Get("content.0.text").Str != "one session" {
		t.Errorf("echo = %s", echo.Raw)
	}

	// initialize after a modern start: refused, nothing goes upstream.
	p.modernClient(false)
	e := errorOf(t, p.call(`"init"`, "initialize", initParams))
	p.modernClient(true)
	if code := e.Get("code").Int(); code != -32600 {
		t.Errorf("initialize after a modern start answered %d, want -32600: %s", code, e.Raw)
	}
	if msg := e.Get("message").Str; !strings.Contains(msg, "keeps its era") {
		t.Errorf("the refusal %q should say the client keeps its era", msg)
	}
	resultOf(t, p.call(`"e-2"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"still"}`, meta)))

	if n := len(up.seen(isPost("initialize"))); n != 1 {
		t.Errorf("the 2025 server saw %d initialize, want the proxy's 1 (two discovers and a client's initialize share the session)", n)
	}
	if n := len(up.seen(isPost("server/discover"))); n != 1 {
		t.Errorf("the 2025 server saw %d server/discover, want the 1 probe", n)
	}
	rvNoRequests(t, p)
}

// TestReverseRequests: each request reaches the 2025 server without the
// 2026 envelope in _meta (the client's own members and progressToken
// stay; an empty _meta goes), under an id of the proxy's; results come
// back under the client's id with resultType "complete", and the list and
// read results with cache fields: the server's own (go-sdk v1.8.0 writes
// them in 2025 sessions too), or, from a server that gave none, values
// that forbid caching; an error comes back as the server sent it.
func TestReverseRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler func() http.Handler
	}{
		{"go-sdk", func() http.Handler { return demo.NewLegacy() }},
		{"no-cache-fields", func() http.Handler { return rvStripCache(demo.NewLegacy()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rvRequests(t, newLegacyUpstream(t, tc.handler()), tc.name == "go-sdk")
		})
	}
}

// rvRequests runs TestReverseRequests against up; serverCache says whether
// its server writes cache fields itself.
func rvRequests(t *testing.T, up *legacyUpstream, serverCache bool) {
	p := startModernProxy(t, up.URL)
	meta := rvMeta(mcNoCaps, "")
	mcDiscover(p, "1", meta)

	// tools/list: _meta was only the envelope, so none goes upstream.
	list := p.call(`"list-1"`, "tools/list", mcParams("", meta))
	lres := resultOf(t, list)
	lex := up.wait(t, "tools/list", isPost("tools/list"))
	if gjson.GetBytes(lex.Body, "params._meta").Exists() {
		t.Errorf("tools/list went upstream with a _meta though the client's held only the envelope: %s", shortBytes(lex.Body))
	}
	srv := gjson.GetBytes(rvAnswerOf(t, up, lex), "result")
	if got, want := lres.Get("tools").Raw, srv.Get("tools").Raw; got != want {
		t.Errorf("tools differ from the server's:\n server: %s\n client: %s", shortBytes([]byte(want)), shortBytes([]byte(got)))
	}
	if srv.Get("ttlMs").Exists() != serverCache {
		t.Fatalf("the premise: the server's tools/list carries ttlMs: %v, want %v: %s", !serverCache, serverCache, shortBytes([]byte(srv.Raw)))
	}
	rvCheckCache(t, "tools/list", lres, srv, true)
	if lex.ID == `"list-1"` {
		t.Errorf("tools/list went upstream under the client's id")
	}

	// tools/call: the client's own _meta members and progressToken stay.
	cmeta := rvMeta(mcNoCaps, `"progressToken":"tok-1","`+mcTraceKey+`":"trace-1"`)
	call := p.call(`"call-1"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"héllo \"reverse\""}`, cmeta))
	cres := resultOf(t, call)
	if got := cres.Get("content.0.text").Str; got != `héllo "reverse"` {
		t.Errorf("echo = %q", got)
	}
	cex := up.wait(t, "tools/call echo", isToolCall("echo"))
	if got, want := gjson.GetBytes(cex.Body, "params._meta").Raw, `{"progressToken":"tok-1","`+mcTraceKey+`":"trace-1"}`; !erJSONEqual(got, want) {
		t.Errorf("the upstream tools/call _meta = %s, want the client's without the envelope %s", got, want)
	}
	if got := gjson.GetBytes(cex.Body, "params.arguments").Raw; !erJSONEqual(got, `{"text":"héllo \"reverse\""}`) {
		t.Errorf("the upstream arguments = %s", got)
	}
	if gjson.GetBytes(call, "id").Raw != `"call-1"` || cex.ID == `"call-1"` {
		t.Errorf("ids: the client's answer %s, upstream %s; want the client's \"call-1\" down and an id of the proxy's up", gjson.GetBytes(call, "id").Raw, cex.ID)
	}
	csrv := gjson.GetBytes(rvAnswerOf(t, up, cex), "result")
	rvCheckCache(t, "tools/call", cres, csrv, false)
	if got, want := cres.Get("content").Raw, csrv.Get("content").Raw; got != want {
		t.Errorf("content differs from the server's:\n server: %s\n client: %s", want, got)
	}

	// resources/list and resources/read: cache fields.
	rlist := resultOf(t, p.call(`"rl"`, "resources/list", mcParams("", meta)))
	rvCheckCache(t, "resources/list", rlist, gjson.GetBytes(rvAnswerOf(t, up, up.wait(t, "resources/list", isPost("resources/list"))), "result"), true)
	if !rlist.Get(`resources.#(uri=="legacy://note")`).Exists() {
		t.Errorf("resources/list lacks legacy://note: %s", rlist.Raw)
	}
	read := resultOf(t, p.call(`"rr"`, "resources/read", mcParams(`"uri":"legacy://note"`, meta)))
	rvCheckCache(t, "resources/read", read, gjson.GetBytes(rvAnswerOf(t, up, up.wait(t, "resources/read", isPost("resources/read"))), "result"), true)
	if got := read.Get("contents.0.text").Str; got != "a legacy note" {
		t.Errorf("resources/read = %s", read.Raw)
	}

	// An error: the server's, byte for byte, under the client's id.
	bad := p.call(`"bad-1"`, "tools/call", mcParams(`"name":"no_such_tool","arguments":{}`, meta))
	be := errorOf(t, bad)
	bex := up.wait(t, "tools/call no_such_tool", isToolCall("no_such_tool"))
	if se := gjson.GetBytes(rvAnswerOf(t, up, bex), "error"); be.Raw != se.Raw {
		t.Errorf("the error is not the server's byte for byte:\n server: %s\n client: %s", se.Raw, be.Raw)
	}
	if got := gjson.GetBytes(bad, "id").Raw; got != `"bad-1"` {
		t.Errorf("the error's id = %s, want the client's", got)
	}

	for _, s := range up.seen(func(s legacySeen) bool { return s.HTTPMethod == http.MethodPost && s.RPCMethod != "server/discover" }) {
		rvCheckNoEnvelope(t, s)
	}
	rvNoRequests(t, p)
}

// rvCheckCache checks resultType "complete" and the cache fields of a
// result: the server's own when it gave them (server is its result), else
// for a cacheable method values that forbid caching, and none otherwise.
func rvCheckCache(t *testing.T, method string, res, server gjson.Result, cacheable bool) {
	t.Helper()
	if got := res.Get("resultType").Str; got != "complete" {
		t.Errorf("%s resultType = %q, want complete", method, got)
	}
	ttl, scope := res.Get("ttlMs"), res.Get("cacheScope")
	switch {
	case server.Get("ttlMs").Exists():
		if ttl.Raw != server.Get("ttlMs").Raw || scope.Raw != server.Get("cacheScope").Raw {
			t.Errorf("%s: ttlMs %s cacheScope %s, want the server's %s and %s", method, ttl.Raw, scope.Raw, server.Get("ttlMs").Raw, server.Get("cacheScope").Raw)
		}
	case cacheable:
		if ttl.Raw != "0" || scope.Str != "private" {
			t.Errorf("%s: ttlMs %s cacheScope %s, want 0 and \"private\" (the server gave none: no caching)", method, ttl.Raw, scope.Raw)
		}
	case ttl.Exists() || scope.Exists():
		t.Errorf("%s carries cache fields the server did not give: %s", method, shortBytes([]byte(res.Raw)))
	}
}

// rvStripCache serves h with ttlMs and cacheScope taken out of the results
// of its event streams, as a 2025 server of another SDK (whose schema has
// no such fields) answers.
func rvStripCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&rvStripWriter{ResponseWriter: w}, r)
	})
}

type rvStripWriter struct {
	http.ResponseWriter
	pending []byte // SSE bytes not yet split into events
}

func (w *rvStripWriter) Write(b []byte) (int, error) {
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return w.ResponseWriter.Write(b)
	}
	w.pending = append(w.pending, b...)
	for {
		i := bytes.Index(w.pending, []byte("\n\n"))
		if i < 0 {
			return len(b), nil
		}
		event := w.pending[:i+2]
		w.pending = w.pending[i+2:]
		var out []byte
		for _, line := range bytes.SplitAfter(event, []byte("\n")) {
			if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && gjson.GetBytes(data, "result").IsObject() {
				data = bytes.TrimSuffix(data, []byte("\n"))
				for _, k := range []string{"result.ttlMs", "result.cacheScope"} {
					if d, err := sjson.DeleteBytes(data, k); err == nil {
						data = d
					}
				}
				line = append(append([]byte("data: "), data...), '\n')
			}
			out = append(out, line...)
		}
		if _, err := w.ResponseWriter.Write(out); err != nil {
			return 0, err
		}
	}
}

func (w *rvStripWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// rvInputRound checks an input_required answer with exactly one input
// request of method and returns its key, the request's params and the
// requestState.
func rvInputRound(t *testing.T, resp []byte, method string) (key string, params gjson.Result, state string) {
	t.Helper()
	res := resultOf(t, resp)
	if rt := res.Get("resultType").Str; rt != "input_required" {
		t.Fatalf("resultType %q, want input_required: %s", rt, shortBytes(resp))
	}
	reqs := res.Get("inputRequests")
	keys := erKeys(reqs)
	if len(keys) != 1 {
		t.Fatalf("inputRequests has keys %v, want one: %s", keys, reqs.Raw)
	}
	key = keys[0]
	ir := reqs.Get(gjson.Escape(key))
	if got := ir.Get("method").Str; got != method {
		t.Errorf("inputRequests.%s.method = %q, want %s", key, got, method)
	}
	if ks := erKeys(ir); len(ks) > 2 {
		t.Errorf("inputRequests.%s has members %v, want method and params only", key, ks)
	}
	params = ir.Get("params")
	for _, k := range []string{"_meta", "task", "elicitationId"} {
		if params.Get(k).Exists() {
			t.Errorf("inputRequests.%s.params carries %s: %s", key, k, params.Raw)
		}
	}
	state = res.Get("requestState").Str
	if state == "" || res.Get("requestState").Type != gjson.String {
		t.Fatalf("no requestState string in %s", res.Raw)
	}
	return key, params, state
}

// rvSameInput checks that the input request's params are the server's
// request's, but for the members 2026 input requests do not have.
func rvSameInput(t *testing.T, server gjson.Result, params gjson.Result) {
	t.Helper()
	want := map[string]string{}
	server.Get("params").ForEach(func(k, v gjson.Result) bool {
		if k.Str != "_meta" && k.Str != "task" && k.Str != "elicitationId" {
			want[k.Str] = v.Raw
		}
		return true
	})
	got := map[string]string{}
	params.ForEach(func(k, v gjson.Result) bool {
		got[k.Str] = v.Raw
		return true
	})
	if len(got) != len(want) {
		t.Errorf("input request params %s, want the server's %s without _meta, task, elicitationId", params.Raw, server.Get("params").Raw)
		return
	}
	for k, v := range want {
		if !erJSONEqual(got[k], v) {
			t.Errorf("input request params.%s = %s, want the server's %s", k, got[k], v)
		}
	}
}

// TestReverseElicitation: the 2025 server's elicitation/create during a
// call becomes an input_required answer under a requestState of the
// proxy's; the call stays open upstream, and the client's retry answers
// the server's request and gets the call's result. The requestState is
// good for one retry only; an unknown one is refused; an elicitation the
// retry does not answer is cancelled.
func TestReverseElicitation(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	meta := rvMeta(mcElicit, "")
	mcDiscover(p, "1", meta)

	callParams := `"name":"confirm","arguments":{}`
	first := p.call(`"c-1"`, "tools/call", mcParams(callParams, meta))
	key, params, state := rvInputRound(t, first, "elicitation/create")
	if got := params.Get("message").Str; got != "Proceed?" {
		t.Errorf("the elicitation message = %q, want Proceed?", got)
	}
	calls := up.seen(isToolCall("confirm"))
	if len(calls) != 1 {
		t.Fatalf("the 2025 server saw %d confirm calls, want 1", len(calls))
	}
	call := calls[0]
	if call.Done {
		t.Errorf("the confirm call ended upstream before the client answered: the call stays open across the round")
	}
	asks := rvServerRequests(call)
	if len(asks) != 1 || asks[0].Get("method").Str != "elicitation/create" {
		t.Fatalf("the server's requests on the call's stream: %v, want one elicitation/create", asks)
	}
	rvSameInput(t, asks[0], params)
	if len(state) < 16 {
		t.Errorf("requestState %q is too short to be unguessable", state)
	}

	answer := `{"action":"accept","content":{"ok":true}}`
	retry := mcParams(callParams+`,"inputResponses":{"`+key+`":`+answer+`},"requestState":"`+state+`"`, meta)
	second := p.call(`"c-2"`, "tools/call", retry)
	sres := resultOf(t, second)
	if got := sres.Get("content.0.text").Str; got != "confirmed: accept true" {
		t.Errorf("the retry's answer = %q, want confirmed: accept true: %s", got, shortBytes(second))
	}
	if sres.Get("resultType").Str != "complete" {
		t.Errorf("the retry's resultType = %q, want complete", sres.Get("resultType").Str)
	}
	posted := rvPostedAnswer(t, up, asks[0].Get("id").Raw, "the elicitation")
	if got := posted.Get("result").Raw; !erJSONEqual(got, answer) {
		t.Errorf("the proxy answered the server's elicitation with %s, want the client's %s", posted.Raw, answer)
	}
	if n := len(up.seen(isToolCall("confirm"))); n != 1 {
		t.Errorf("the 2025 server saw %d confirm calls, want 1 (the retry answers the held call, it is not a new one)", n)
	}

	// The same requestState again: refused, nothing goes upstream.
	again := p.call(`"c-3"`, "tools/call", retry)
	if code := errorOf(t, again).Get("code").Int(); code != -32602 {
		t.Errorf("a used requestState answered %d, want -32602: %s", code, shortBytes(again))
	}
	unknown := p.call(`"c-4"`, "tools/call", mcParams(callParams+`,"inputResponses":{"`+key+`":`+answer+`},"requestState":"mcp-tasks-proxy/00000000000000000000000000000000"`, meta))
	if code := errorOf(t, unknown).Get("code").Int(); code != -32602 {
		t.Errorf("an unknown requestState answered %d, want -32602: %s", code, shortBytes(unknown))
	}
	if n := len(up.seen(isToolCall("confirm"))); n != 1 {
		t.Errorf("the 2025 server saw %d confirm calls after refused retries, want 1", n)
	}

	// A retry that does not answer the elicitation: it is cancelled.
	third := p.call(`"c-5"`, "tools/call", mcParams(callParams, meta))
	_, _, state2 := rvInputRound(t, third, "elicitation/create")
	if state2 == state {
		t.Errorf("a new round reuses the requestState %q", state)
	}
	fourth := p.call(`"c-6"`, "tools/call", mcParams(callParams+`,"inputResponses":{},"requestState":"`+state2+`"`, meta))
	if got := resultOf(t, fourth).Get("content.0.text").Str; got != "confirmed: cancel <nil>" {
		t.Errorf("a retry without the elicitation's answer = %q, want confirmed: cancel <nil>", got)
	}
	calls = up.seen(isToolCall("confirm"))
	if len(calls) != 2 {
		t.Fatalf("the 2025 server saw %d confirm calls, want 2", len(calls))
	}
	asks2 := rvServerRequests(calls[1])
	if len(asks2) != 1 {
		t.Fatalf("the second confirm call's server requests: %v", asks2)
	}
	if got := rvPostedAnswer(t, up, asks2[0].Get("id").Raw, "the unanswered elicitation").Get("result").Raw; !erJSONEqual(got, `{"action":"cancel"}`) {
		t.Errorf("the proxy answered an unanswered elicitation with %s, want {\"action\":\"cancel\"}", got)
	}
	rvNoRequests(t, p)
}

// TestReverseSampling: a sampling/createMessage during a call is one input
// round; the client's CreateMessageResult reaches the server.
func TestReverseSampling(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	meta := rvMeta(`{"sampling":{}}`, "")
	mcDiscover(p, "1", meta)

	callParams := `"name":"summarize","arguments":{"text":"a very long text"}`
	first := p.call(`"s-1"`, "tools/call", mcParams(callParams, meta))
	key, params, state := rvInputRound(t, first, "sampling/createMessage")
	if got := params.Get("messages.0.content.text").Str; got != "Summarize: a very long text" {
		t.Errorf("the sampling message = %q: %s", got, params.Raw)
	}
	if got := params.Get("maxTokens").Int(); got != 50 {
		t.Errorf("maxTokens = %d, want 50", got)
	}
	call := up.wait(t, "tools/call summarize", isToolCall("summarize"))
	asks := rvServerRequests(call)
	if len(asks) != 1 || asks[0].Get("method").Str != "sampling/createMessage" {
		t.Fatalf("the server's requests on the call's stream: %v", asks)
	}
	rvSameInput(t, asks[0], params)

	answer := `{"role":"assistant","content":{"type":"text","text":"short"},"model":"e2e-model"}`
	second := p.call(`"s-2"`, "tools/call", mcParams(callParams+`,"inputResponses":{"`+key+`":`+answer+`},"requestState":"`+state+`"`, meta))
	if got := resultOf(t, second).Get("content.0.text").Str; got != "summary: short" {
		t.Errorf("summarize = %q, want summary: short", got)
	}
	if got := rvPostedAnswer(t, up, asks[0].Get("id").Raw, "the sampling request").Get("result").Raw; !erJSONEqual(got, answer) {
		t.Errorf("the proxy answered the sampling request with %s, want the client's %s", got, answer)
	}
	rvNoRequests(t, p)
}

// TestReverseLogLevel: a request's _meta log level becomes
// logging/setLevel on the 2025 session, before the request and only when
// it changes; the request itself goes without it.
func TestReverseLogLevel(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	mcDiscover(p, "1", rvMeta(mcNoCaps, ""))

	level := func(l string) string { return rvMeta(mcNoCaps, `"io.modelcontextprotocol/logLevel":"`+l+`"`) }
	resultOf(t, p.call(`"a"`, "tools/list", mcParams("", level("debug"))))
	resultOf(t, p.call(`"b"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"b"}`, level("debug"))))
	resultOf(t, p.call(`"c"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"c"}`, level("error"))))

	var order []string
	for _, s := range up.seen(func(s legacySeen) bool { return s.HTTPMethod == http.MethodPost && s.ID != "" }) {
		switch s.RPCMethod {
		case "logging/setLevel":
			order = append(order, "setLevel "+gjson.GetBytes(s.Body, "params.level").Str)
		case "tools/list", "tools/call":
			order = append(order, s.RPCMethod)
			rvCheckNoEnvelope(t, s)
			if gjson.GetBytes(s.Body, "params._meta").Exists() {
				t.Errorf("%s went upstream with _meta %s, which held only the envelope", s.RPCMethod, gjson.GetBytes(s.Body, "params._meta").Raw)
			}
		}
	}
	want := []string{"setLevel debug", "tools/list", "tools/call", "setLevel error", "tools/call"}
	if strings.Join(order, ", ") != strings.Join(want, ", ") {
		t.Errorf("the 2025 server saw %v, want %v", order, want)
	}
	rvNoRequests(t, p)
}

// TestReverseListen: subscriptions/listen is acknowledged with what the
// 2025 server can honour, resourceSubscriptions by resources/subscribe;
// the session's list_changed and resources/updated reach the client with
// the listen's id as subscriptionId; cancelling the listen unsubscribes,
// and it gets nothing more; at the end of input a listen ends unanswered.
func TestReverseListen(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	meta := rvMeta(mcNoCaps, "")
	mcDiscover(p, "1", meta)
	_, ir := rvInit(t, up)
	caps := ir.Get("capabilities")

	from := p.mark()
	p.request(`"L-1"`, "subscriptions/listen", mcParams(`"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["legacy://note"]}`, meta))
	ackAt, ack := mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"L-1"`)
	if ackAt != from {
		t.Errorf("the acknowledgement is line %d, want the first line after the listen (%d)", ackAt, from)
	}
	want := map[string]bool{
		"toolsListChanged":     caps.Get("tools.listChanged").Bool(),
		"promptsListChanged":   caps.Get("prompts.listChanged").Bool(),
		"resourcesListChanged": caps.Get("resources.listChanged").Bool(),
	}
	honoured := gjson.GetBytes(ack, "params.notifications")
	for k, w := range want {
		if got := honoured.Get(k).Bool(); got != w {
			t.Errorf("acknowledged %s = %v, want %v (the server's capabilities %s)", k, got, w, caps.Raw)
		}
	}
	if !want["toolsListChanged"] {
		t.Errorf("the premise: the 2025 demo declares tools.listChanged: %s", caps.Raw)
	}
	if got := honoured.Get("resourceSubscriptions").Raw; !erJSONEqual(got, `["legacy://note"]`) {
		t.Errorf("acknowledged resourceSubscriptions = %s, want [\"legacy://note\"]", got)
	}
	sub := up.wait(t, "resources/subscribe", isPost("resources/subscribe"))
	if got := gjson.GetBytes(sub.Body, "params.uri").Str; got != "legacy://note" {
		t.Errorf("resources/subscribe uri = %q", got)
	}

	resultOf(t, p.call(`"add-1"`, "tools/call", mcParams(`"name":"add_tool","arguments":{"name":"fresh_one"}`, meta)))
	_, lc := mcWaitNotification(p, from, "notifications/tools/list_changed", `"L-1"`)
	if ks := erKeys(gjson.GetBytes(lc, "params")); len(ks) != 1 || ks[0] != "_meta" {
		t.Errorf("list_changed params carry %v, want _meta only: %s", ks, lc)
	}
	resultOf(t, p.call(`"touch-1"`, "tools/call", mcParams(`"name":"touch","arguments":{"uri":"legacy://note"}`, meta)))
	_, upd := mcWaitNotification(p, from, "notifications/resources/updated", `"L-1"`)
	if got := gjson.GetBytes(upd, "params.uri").Str; got != "legacy://note" {
		t.Errorf("resources/updated uri = %q", got)
	}

	// Cancel: the subscription ends upstream, and L-1 gets nothing more.
	cancelAt := p.mark()
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L-1"}}`)
	unsub := up.wait(t, "resources/unsubscribe", isPost("resources/unsubscribe"))
	if got := gjson.GetBytes(unsub.Body, "params.uri").Str; got != "legacy://note" {
		t.Errorf("resources/unsubscribe uri = %q", got)
	}
	from = p.mark()
	p.request(`"L-2"`, "subscriptions/listen", mcParams(`"notifications":{"toolsListChanged":true}`, meta))
	mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"L-2"`)
	resultOf(t, p.call(`"add-2"`, "tools/call", mcParams(`"name":"add_tool","arguments":{"name":"fresh_two"}`, meta)))
	mcWaitNotification(p, from, "notifications/tools/list_changed", `"L-2"`)

	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	for i, l := range p.all() {
		if i >= cancelAt && mcSubscriptionID(l) == `"L-1"` {
			t.Errorf("the cancelled listen L-1 got %s", shortBytes(l))
		}
	}
	mcNoAnswer(t, p, `"L-1"`, "the client cancelled it")
	mcNoAnswer(t, p, `"L-2"`, "the input ended")
	if n := len(up.seen(isPost("resources/subscribe"))); n != 1 {
		t.Errorf("the 2025 server saw %d resources/subscribe, want 1", n)
	}
	rvNoRequests(t, p)
}

// rvGoSDK is a plain go-sdk v1.8.0 server with default options (a stateful
// Streamable HTTP handler that keeps the SDK's default protocol versions),
// behind the legacy recorder, with tools that make server requests:
//
//	echo {text}        the text back
//	ask_then_wait      elicitation/create, then blocks until its request ends
//	wait               blocks until its request ends
//	ping_client        pings the client during the call
//	roots              roots/list during the call → "roots: URI…"
//	ask_later          answers, then asks roots/list outside any call
//	two_rounds         elicitation/create, then sampling/createMessage
//	ask_then_progress  elicitation/create, then one progress notification
//	log {level}        one log message at level, during the call
//	ask_url            a URL-mode elicitation/create → "url: ACTION"
type rvGoSDK struct {
	*legacyUpstream

	askAnswered chan string   // ask_then_wait: the elicitation's action (or error)
	waitEnded   chan string   // ask_then_wait and wait: the handler's context ended (its name)
	later       chan error    // ask_later: the roots/list outside the call
	release     chan struct{} // closed at cleanup
}

func newRVGoSDK(t *testing.T) *rvGoSDK {
	t.Helper()
	s := &rvGoSDK{askAnswered: make(chan string, 4), waitEnded: make(chan string, 4), later: make(chan error, 1), release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "plain-go-sdk-2025", Version: "0.0.1"}, nil)
	type textArgs struct {
		Text string `json:"text"`
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	block := func(ctx context.Context, name string) {
		select {
		case <-ctx.Done():
			s.waitEnded <- name
		case <-s.release:
		}
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Return the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_then_wait", Description: "Ask, then block until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			// Released at cleanup, so that a request the proxy left
			// unanswered does not hold the server's Close.
			ectx, cancel := context.WithCancel(ctx)
			defer cancel()
			go func() {
				select {
				case <-s.release:
					cancel()
				case <-ectx.Done():
				}
			}()
			res, err := req.Session.Elicit(ectx, &mcp.ElicitParams{Message: "Go on?", RequestedSchema: map[string]any{"type": "object",
				"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
			if err != nil {
				s.askAnswered <- "error: " + err.Error()
				return nil, nil, err
			}
			s.askAnswered <- res.Action
			block(ctx, "ask_then_wait")
			return text("woke"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Block until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			block(ctx, "wait")
			return text("woke"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ping_client", Description: "Ping the client during the call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if err := req.Session.Ping(ctx, nil); err != nil {
				return text("ping failed: " + err.Error()), nil, nil
			}
			return text("pong"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "roots", Description: "List the client's roots during the call."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 roots is a 2025 feature a 2025 server uses.
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return nil, nil, err
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			return text("roots: " + strings.Join(uris, " ")), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_later", Description: "Answer, then ask for roots outside any call."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ss := req.Session
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				defer cancel()
				//lint:ignore SA1019 as above.
				_, err := ss.ListRoots(ctx, nil)
				s.later <- err
			}()
			return text("asked"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "two_rounds", Description: "Ask, then sample."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			er, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "First?", RequestedSchema: map[string]any{"type": "object",
				"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}})
			if err != nil {
				return nil, nil, err
			}
			//lint:ignore SA1019 2025 sampling is what a 2025 server uses.
			cm, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				//lint:ignore SA1019 as above.
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Second?"}}}})
			if err != nil {
				return nil, nil, err
			}
			reply := ""
			if tc, ok := cm.Content.(*mcp.TextContent); ok {
				reply = tc.Text
			}
			return text(fmt.Sprintf("rounds: %s %s", er.Action, reply)), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_then_progress", Description: "Ask, then report progress."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Start?", RequestedSchema: map[string]any{"type": "object",
				"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}); err != nil {
				return nil, nil, err
			}
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "after the answer"}); err != nil {
					return nil, nil, err
				}
			}
			return text("progressed"), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_url", Description: "Ask the user to visit a URL."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in there", URL: "https://example.com/e2e", ElicitationID: "elic-e2e-1"})
			if err != nil {
				return nil, nil, err
			}
			return text("url: " + res.Action), nil, nil
		})
	type levelArgs struct {
		Level string `json:"level"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "log", Description: "Log one message at level."},
		func(ctx context.Context, req *mcp.CallToolRequest, in levelArgs) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 2025 logging is what a 2025 server uses.
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(in.Level), Data: "a " + in.Level + " message"}); err != nil {
				return nil, nil, err
			}
			return text("logged"), nil, nil
		})
	s.legacyUpstream = newLegacyUpstream(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(s.release) }) })
	return s
}

// rvRecv waits (bounded) for a value on ch.
func rvRecv[T any](t *testing.T, ch <-chan T, desc string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not happen within %v", desc, waitTimeout)
	}
	var zero T
	return zero
}

// TestReverseGoSDKServerRequests: against a plain go-sdk 2025 server, a
// server ping during a call is answered by the proxy, roots/list during a
// call is one input round, and a server request outside any call is
// refused upstream with -32601.
func TestReverseGoSDKServerRequests(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, s.URL)
	meta := rvMeta(rvAllCaps, "")
	res := resultOf(t, mcDiscover(p, "1", meta))
	if got := res.Get(`_meta.io\.modelcontextprotocol/serverInfo.name`).Str; got != "plain-go-sdk-2025" {
		t.Fatalf("discover serverInfo.name = %q, want plain-go-sdk-2025 (served by the reverse bridge): %s", got, res.Raw)
	}
	if got := resultOf(t, p.call(`"e"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"plain"}`, meta))).Get("content.0.text").Str; got != "plain" {
		t.Errorf("echo = %q", got)
	}

	// ping: answered by the proxy, never put to the client.
	if got := resultOf(t, p.call(`"ping"`, "tools/call", mcParams(`"name":"ping_client","arguments":{}`, meta))).Get("content.0.text").Str; got != "pong" {
		t.Errorf("ping_client = %q, want pong (the proxy answers the server's ping)", got)
	}
	pcall := s.wait(t, "tools/call ping_client", isToolCall("ping_client"))
	pings := rvServerRequests(pcall)
	if len(pings) != 1 || pings[0].Get("method").Str != "ping" {
		t.Fatalf("the server's requests on ping_client's stream: %v, want one ping", pings)
	}
	if got := rvPostedAnswer(t, s.legacyUpstream, pings[0].Get("id").Raw, "the ping").Get("result").Raw; !erJSONEqual(got, `{}`) {
		t.Errorf("the proxy answered the ping with %s, want {}", got)
	}

	// roots/list during a call: an input round.
	first := p.call(`"r-1"`, "tools/call", mcParams(`"name":"roots","arguments":{}`, meta))
	key, _, state := rvInputRound(t, first, "roots/list")
	roots := `{"roots":[{"uri":"file:///e2e/reverse","name":"e2e"}]}`
	second := p.call(`"r-2"`, "tools/call", mcParams(`"name":"roots","arguments":{},"inputResponses":{"`+key+`":`+roots+`},"requestState":"`+state+`"`, meta))
	if got := resultOf(t, second).Get("content.0.text").Str; got != "roots: file:///e2e/reverse" {
		t.Errorf("roots = %q, want roots: file:///e2e/reverse", got)
	}

	// roots/list outside any call: refused upstream with -32601.
	resultOf(t, p.call(`"later"`, "tools/call", mcParams(`"name":"ask_later","arguments":{}`, meta)))
	if err := rvRecv(t, s.later, "the server's roots/list outside a call ending"); err == nil {
		t.Errorf("the server's roots/list outside any call succeeded; the proxy has no client to ask")
	}
	var asked gjson.Result
	s.wait(t, "the server's roots/list outside a call", func(ls legacySeen) bool {
		for _, r := range rvServerRequests(ls) {
			if r.Get("method").Str == "roots/list" && ls.HTTPMethod == http.MethodGet {
				asked = r
				return true
			}
		}
		return false
	})
	refusal := rvPostedAnswer(t, s.legacyUpstream, asked.Get("id").Raw, "the roots/list outside a call")
	if code := refusal.Get("error.code").Int(); code != -32601 {
		t.Errorf("the proxy answered a server request outside any call with %s, want error -32601", refusal.Raw)
	}
	rvNoRequests(t, p)
}

// TestReverseCancel: the client's notifications/cancelled for a request
// that waits (a plain call, or the retry of an input round whose call goes
// on) cancels the call upstream with the 2025 notification, and gets no
// answer; the session goes on.
func TestReverseCancel(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, s.URL)
	meta := rvMeta(rvAllCaps, "")
	mcDiscover(p, "1", meta)

	// A plain call.
	p.request(`"w-1"`, "tools/call", mcParams(`"name":"wait","arguments":{}`, meta))
	wcall := s.wait(t, "tools/call wait", isToolCall("wait"))
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w-1","reason":"user"}}`)
	rvCancelledUpstream(t, s.legacyUpstream, wcall.ID, "the wait call")
	if got := rvRecv(t, s.waitEnded, "the wait handler's context ending"); got != "wait" {
		t.Errorf("ended: %q, want wait", got)
	}

	// A retry that waits: the round is answered, the call goes on, the
	// client cancels the retry.
	first := p.call(`"a-1"`, "tools/call", mcParams(`"name":"ask_then_wait","arguments":{}`, meta))
	key, _, state := rvInputRound(t, first, "elicitation/create")
	acall := s.wait(t, "tools/call ask_then_wait", isToolCall("ask_then_wait"))
	p.request(`"a-2"`, "tools/call", mcParams(`"name":"ask_then_wait","arguments":{},"inputResponses":{"`+key+`":{"action":"accept","content":{"ok":true}}},"requestState":"`+state+`"`, meta))
	if got := rvRecv(t, s.askAnswered, "the elicitation's answer reaching the server"); got != "accept" {
		t.Errorf("the server's elicitation got %q, want accept", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a-2","reason":"user"}}`)
	rvCancelledUpstream(t, s.legacyUpstream, acall.ID, "the ask_then_wait call")
	if got := rvRecv(t, s.waitEnded, "the ask_then_wait handler's context ending"); got != "ask_then_wait" {
		t.Errorf("ended: %q, want ask_then_wait", got)
	}
	// Its requestState is spent.
	e := errorOf(t, p.call(`"a-3"`, "tools/call", mcParams(`"name":"ask_then_wait","arguments":{},"inputResponses":{"`+key+`":{"action":"accept"}},"requestState":"`+state+`"`, meta)))
	if code := e.Get("code").Int(); code != -32602 {
		t.Errorf("the cancelled round's requestState answered %d, want -32602", code)
	}

	if got := resultOf(t, p.call(`"after"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"after"}`, meta))).Get("content.0.text").Str; got != "after" {
		t.Errorf("echo after the cancels = %q", got)
	}
	p.closeStdin()
	p.waitExit(cleanupExitTimeout)
	mcNoAnswer(t, p, `"w-1"`, "the client cancelled it")
	mcNoAnswer(t, p, `"a-2"`, "the client cancelled it")
	rvNoRequests(t, p)
}

// TestReverseRoundNotRetried: a call whose client does not retry its input
// round within --idle-timeout is cancelled upstream (its server request
// answered with an error), and the requestState is refused afterwards.
func TestReverseRoundNotRetried(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, "--idle-timeout", "2s", s.URL)
	meta := rvMeta(rvAllCaps, "")
	mcDiscover(p, "1", meta)

	first := p.call(`"a-1"`, "tools/call", mcParams(`"name":"ask_then_wait","arguments":{}`, meta))
	key, _, state := rvInputRound(t, first, "elicitation/create")
	acall := s.wait(t, "tools/call ask_then_wait", isToolCall("ask_then_wait"))
	asks := rvServerRequests(acall)
	if len(asks) != 1 {
		t.Fatalf("the server's requests on the call's stream: %v", asks)
	}
	// No retry: the bound ends the call upstream.
	rvCancelledUpstream(t, s.legacyUpstream, acall.ID, "the call not retried")
	if got := rvRecv(t, s.askAnswered, "the server's elicitation ending"); !strings.HasPrefix(got, "error") {
		t.Errorf("the server's elicitation of a call not retried got %q, want an error", got)
	}
	if a := rvPostedAnswer(t, s.legacyUpstream, asks[0].Get("id").Raw, "the elicitation of the call not retried"); !a.Get("error").Exists() {
		t.Errorf("the proxy answered the abandoned elicitation with %s, want an error", a.Raw)
	}
	e := errorOf(t, p.call(`"a-2"`, "tools/call", mcParams(`"name":"ask_then_wait","arguments":{},"inputResponses":{"`+key+`":{"action":"accept"}},"requestState":"`+state+`"`, meta)))
	if code := e.Get("code").Int(); code != -32602 {
		t.Errorf("a requestState past the bound answered %d, want -32602", code)
	}
	if n := len(s.seen(isToolCall("ask_then_wait"))); n != 1 {
		t.Errorf("the server saw %d ask_then_wait calls, want 1", n)
	}
	rvNoRequests(t, p)
}

// TestReverseRounds: a call that asks twice (an elicitation, then, once
// answered, a sampling request) is two input rounds: the first retry is
// answered with the second round, under a new requestState, and the
// second retry with the result.
func TestReverseRounds(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, s.URL)
	meta := rvMeta(rvAllCaps, "")
	mcDiscover(p, "1", meta)

	call := `"name":"two_rounds","arguments":{}`
	key1, _, state1 := rvInputRound(t, p.call(`"t-1"`, "tools/call", mcParams(call, meta)), "elicitation/create")
	second := p.call(`"t-2"`, "tools/call", mcParams(call+`,"inputResponses":{"`+key1+`":{"action":"accept","content":{"ok":true}}},"requestState":"`+state1+`"`, meta))
	key2, params2, state2 := rvInputRound(t, second, "sampling/createMessage")
	if state2 == state1 {
		t.Errorf("the second round reuses the first round's requestState")
	}
	if key2 == key1 {
		t.Errorf("the second round reuses the key %q", key1)
	}
	if got := params2.Get("messages.0.content.text").Str; got != "Second?" {
		t.Errorf("the second round asks %q, want Second?", got)
	}
	third := p.call(`"t-3"`, "tools/call", mcParams(call+`,"inputResponses":{"`+key2+`":{"role":"assistant","content":{"type":"text","text":"yes"},"model":"m"}},"requestState":"`+state2+`"`, meta))
	if got := resultOf(t, third).Get("content.0.text").Str; got != "rounds: accept yes" {
		t.Errorf("two_rounds = %q, want rounds: accept yes", got)
	}
	if n := len(s.seen(isToolCall("two_rounds"))); n != 1 {
		t.Errorf("the server saw %d two_rounds calls, want 1", n)
	}
	// The first round's state is spent.
	e := errorOf(t, p.call(`"t-4"`, "tools/call", mcParams(call+`,"inputResponses":{"`+key1+`":{"action":"accept"}},"requestState":"`+state1+`"`, meta)))
	if code := e.Get("code").Int(); code != -32602 {
		t.Errorf("the first round's requestState, reused, answered %d, want -32602", code)
	}
	rvNoRequests(t, p)
}

// TestReverseProgressAfterRound: progress the 2025 server reports after
// an input round belongs to the request that waits for the call then, the
// client's retry: it reaches the client under the retry's progressToken
// (the first request was answered: nothing more may come for it).
func TestReverseProgressAfterRound(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, s.URL)
	mcDiscover(p, "1", rvMeta(rvAllCaps, ""))

	call := `"name":"ask_then_progress","arguments":{}`
	key, _, state := rvInputRound(t, p.call(`"p-1"`, "tools/call", mcParams(call, rvMeta(rvAllCaps, `"progressToken":"tok-first"`))), "elicitation/create")
	from := p.mark()
	retry := p.call(`"p-2"`, "tools/call", mcParams(call+`,"inputResponses":{"`+key+`":{"action":"accept","content":{"ok":true}}},"requestState":"`+state+`"`,
		rvMeta(rvAllCaps, `"progressToken":"tok-retry"`)))
	if got := resultOf(t, retry).Get("content.0.text").Str; got != "progressed" {
		t.Fatalf("ask_then_progress = %q", got)
	}
	var tokens []string
	for i, l := range p.all() {
		if i >= from && gjson.GetBytes(l, "method").Str == "notifications/progress" {
			tokens = append(tokens, gjson.GetBytes(l, "params.progressToken").Raw)
		}
	}
	if len(tokens) != 1 || tokens[0] != `"tok-retry"` {
		t.Errorf("progress after the round reached the client with tokens %v, want one with the retry's \"tok-retry\" (the request \"p-1\" of \"tok-first\" was answered)", tokens)
	}
}

// TestReverseLogs: a request's log messages reach the client when its
// _meta asked for them (logLevel), before its answer; a request that did
// not ask gets none, though an earlier request set a level on the 2025
// session.
func TestReverseLogs(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, s.URL)
	meta := rvMeta(mcNoCaps, "")
	caps := resultOf(t, mcDiscover(p, "1", meta)).Get("capabilities")
	if !caps.Get("logging").Exists() {
		t.Fatalf("the premise: the plain go-sdk server declares logging: %s", caps.Raw)
	}
	logsOf := func(from int) []string {
		var out []string
		for i, l := range p.all() {
			if i >= from && gjson.GetBytes(l, "method").Str == "notifications/message" {
				out = append(out, gjson.GetBytes(l, "params.data").Str)
			}
		}
		return out
	}

	from := p.mark()
	asked := p.call(`"l-1"`, "tools/call", mcParams(`"name":"log","arguments":{"level":"info"}`, rvMeta(mcNoCaps, `"io.modelcontextprotocol/logLevel":"debug"`)))
	resultOf(t, asked)
	if got := logsOf(from); len(got) != 1 || got[0] != "a info message" {
		t.Errorf("a request that asked for debug logs got %v, want [a info message]", got)
	}

	from = p.mark()
	resultOf(t, p.call(`"l-2"`, "tools/call", mcParams(`"name":"log","arguments":{"level":"info"}`, meta)))
	if got := logsOf(from); len(got) != 0 {
		t.Errorf("a request without a logLevel got log messages %v; a 2026 server sends none for it", got)
	}
}

// TestReverseURLElicitation: a URL-mode elicitation's input request has
// no elicitationId (2026 has none); the client's answer reaches the
// server's request, which carried it.
func TestReverseURLElicitation(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, s.URL)
	meta := rvMeta(`{"elicitation":{"url":{}}}`, "")
	mcDiscover(p, "1", meta)
	call := `"name":"ask_url","arguments":{}`
	key, params, state := rvInputRound(t, p.call(`"u-1"`, "tools/call", mcParams(call, meta)), "elicitation/create")
	if params.Get("mode").Str != "url" || params.Get("url").Str != "https://example.com/e2e" || params.Get("message").Str != "Sign in there" {
		t.Errorf("the URL elicitation's params = %s", params.Raw)
	}
	ex := s.wait(t, "tools/call ask_url", isToolCall("ask_url"))
	asks := rvServerRequests(ex)
	if len(asks) != 1 || asks[0].Get("params.elicitationId").Str != "elic-e2e-1" {
		t.Fatalf("the premise: the server's URL elicitation carries elicitationId: %v", asks)
	}
	resp := p.call(`"u-2"`, "tools/call", mcParams(call+`,"inputResponses":{"`+key+`":{"action":"accept"}},"requestState":"`+state+`"`, meta))
	if got := resultOf(t, resp).Get("content.0.text").Str; got != "url: accept" {
		t.Errorf("ask_url = %q, want url: accept", got)
	}
}

// TestReverseConcurrentRounds: two calls in input rounds at once are held
// apart: each retry answers its own call, in either order.
func TestReverseConcurrentRounds(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	meta := rvMeta(mcElicit, "")
	mcDiscover(p, "1", meta)
	call := `"name":"confirm","arguments":{}`
	keyA, _, stateA := rvInputRound(t, p.call(`"A-1"`, "tools/call", mcParams(call, meta)), "elicitation/create")
	keyB, _, stateB := rvInputRound(t, p.call(`"B-1"`, "tools/call", mcParams(call, meta)), "elicitation/create")
	if stateA == stateB {
		t.Fatalf("two rounds share the requestState %q", stateA)
	}
	b := p.call(`"B-2"`, "tools/call", mcParams(call+`,"inputResponses":{"`+keyB+`":{"action":"decline"}},"requestState":"`+stateB+`"`, meta))
	a := p.call(`"A-2"`, "tools/call", mcParams(call+`,"inputResponses":{"`+keyA+`":{"action":"accept","content":{"ok":false}}},"requestState":"`+stateA+`"`, meta))
	if got := resultOf(t, b).Get("content.0.text").Str; got != "confirmed: decline <nil>" {
		t.Errorf("B = %q, want confirmed: decline <nil>", got)
	}
	if got := resultOf(t, a).Get("content.0.text").Str; got != "confirmed: accept false" {
		t.Errorf("A = %q, want confirmed: accept false", got)
	}
	if n := len(up.seen(isToolCall("confirm"))); n != 2 {
		t.Errorf("the server saw %d confirm calls, want 2", n)
	}
}

// TestReverseListenShared: two listens of one resource share one
// resources/subscribe; the first's cancel keeps it (the second still gets
// the updates), the second's ends it.
func TestReverseListenShared(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	meta := rvMeta(mcNoCaps, "")
	mcDiscover(p, "1", meta)
	filter := mcParams(`"notifications":{"resourceSubscriptions":["legacy://note"]}`, meta)
	from := p.mark()
	p.request(`"S-1"`, "subscriptions/listen", filter)
	mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"S-1"`)
	p.request(`"S-2"`, "subscriptions/listen", filter)
	_, ack := mcWaitNotification(p, from, "notifications/subscriptions/acknowledged", `"S-2"`)
	if got := gjson.GetBytes(ack, "params.notifications.resourceSubscriptions").Raw; !erJSONEqual(got, `["legacy://note"]`) {
		t.Errorf("the second listen's acknowledgement: resourceSubscriptions %s", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"S-1"}}`)
	from = p.mark()
	resultOf(t, p.call(`"touch"`, "tools/call", mcParams(`"name":"touch","arguments":{"uri":"legacy://note"}`, meta)))
	mcWaitNotification(p, from, "notifications/resources/updated", `"S-2"`)
	if n := len(up.seen(isPost("resources/unsubscribe"))); n != 0 {
		t.Errorf("the first listen's cancel unsubscribed upstream though the second still listens (%d resources/unsubscribe)", n)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"S-2"}}`)
	up.wait(t, "resources/unsubscribe after the last listen", isPost("resources/unsubscribe"))
	if n := len(up.seen(isPost("resources/subscribe"))); n != 1 {
		t.Errorf("the server saw %d resources/subscribe, want 1 (shared)", n)
	}
	for _, l := range p.all()[from:] {
		if mcSubscriptionID(l) == `"S-1"` {
			t.Errorf("the cancelled listen S-1 got %s", shortBytes(l))
		}
	}
}

// TestReverseMetaFirst: a first request that is not a discover but whose
// _meta names 2026-07-28 opens the 2025 session in its client's name and
// is answered in the 2026 shape.
func TestReverseMetaFirst(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startModernProxy(t, up.URL)
	meta := rvMeta(mcElicit, "")
	res := resultOf(t, p.call(`"f-1"`, "tools/call", mcParams(`"name":"echo","arguments":{"text":"first"}`, meta)))
	if res.Get("content.0.text").Str != "first" || res.Get("resultType").Str != "complete" {
		t.Errorf("the first request's answer = %s", res.Raw)
	}
	init, _ := rvInit(t, up)
	if got := gjson.GetBytes(init.Body, "params.clientInfo").Raw; !erJSONEqual(got, mcClientInfo) {
		t.Errorf("initialize clientInfo = %s, want the client's", got)
	}
	if got := gjson.GetBytes(init.Body, "params.capabilities").Raw; !erJSONEqual(got, mcElicit) {
		t.Errorf("initialize capabilities = %s, want the client's %s", got, mcElicit)
	}
	disc := resultOf(t, p.call(`"d"`, "server/discover", mcParams("", meta)))
	if got := disc.Get("supportedVersions").Raw; got != `["`+mcVersion+`"]` {
		t.Errorf("a later discover: supportedVersions %s", got)
	}
	if n := len(up.seen(isPost("initialize"))); n != 1 {
		t.Errorf("the server saw %d initialize, want 1", n)
	}
}

// TestReverseRoundAtEOF: a call held for a client's retry that will never
// come (the input ended) holds nothing up and is not left behind: the
// proxy exits at once, not after --drain-timeout, and the 2025 server's
// request of that call is ended (answered, or the call cancelled), since
// a server whose handler waits for it may not end its session otherwise
// (go-sdk v1.8.0's DELETE waits for its handlers).
func TestReverseRoundAtEOF(t *testing.T) {
	t.Parallel()
	s := newRVGoSDK(t)
	p := startModernProxy(t, "--drain-timeout", "1m", s.URL)
	meta := rvMeta(rvAllCaps, "")
	mcDiscover(p, "1", meta)
	rvInputRound(t, p.call(`"a-1"`, "tools/call", mcParams(`"name":"ask_then_wait","arguments":{}`, meta)), "elicitation/create")
	call := s.wait(t, "tools/call ask_then_wait", isToolCall("ask_then_wait"))
	p.closeStdin()
	// A minute of drain would outlast this bound many times over.
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	asks := rvServerRequests(call)
	if len(asks) != 1 {
		t.Fatalf("the server's requests on the call's stream: %v", asks)
	}
	select {
	case got := <-s.askAnswered:
		t.Logf("the server's elicitation ended: %s", got)
	case <-time.After(waitTimeout):
		t.Errorf("the proxy exited and left the 2025 server's elicitation/create %s of a held call unanswered and the call not cancelled (%v later); the server saw:\n%s",
			asks[0].Get("id").Raw, waitTimeout, s.dump())
	}
}
