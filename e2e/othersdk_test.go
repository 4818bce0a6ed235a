package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// The binary against plain servers of other SDKs (othersdk_servers_test.go):
// a go-sdk v1.8.0 server and an mcp-go v1.2.1 server, both at 2026-07-28,
// driven by the go-sdk legacy client and by the raw NDJSON client. Every
// line the proxy writes is validated against 2025-11-25 and checked for
// leaked modern fields, every body it POSTs is validated against 2026-07-28
// with its headers compared to the body (the recorder), exactly as for the
// demo. Frames the servers send that are not valid 2026-07-28 are logged as
// the server's quirks, not failed: the proxy must cope with them.
//
// Two server quirks the proxy copes with have tests of their own:
// TestGoSDKServerNonASCIIPromptName (go-sdk v1.8.0 refuses the spec's
// Base64 Mcp-Name, so the proxy retries with raw UTF-8) and
// TestMCPGoServerNoTaskSupportLeak (mcp-go marks execution.taskSupport
// without declaring the tasks extension, and the proxy removes it).

// osdkKind describes one plain server for the shared drivers.
type osdkKind struct {
	serverName string
	start      func(t *testing.T) *osdkServer
	tools      []string // every tool the server has
	notes      string   // the resource URI
	nonASCII   string   // the prompt with a non-ASCII name
	greeting   string   // its text for name "Wörld"
}

var (
	osdkGoSDK = osdkKind{
		serverName: osdkGoSDKName,
		start:      newGoSDKServer,
		tools:      []string{"confirm", "echo", "sleep"},
		notes:      osdkGoSDKNotes,
		nonASCII:   osdkGoSDKPrompt,
		greeting:   "Grüße, Wörld!",
	}
	osdkMCPGo = osdkKind{
		serverName: osdkMCPGoName,
		start:      func(t *testing.T) *osdkServer { return newMCPGoServer(t, false) },
		tools:      []string{"confirm", "count", "echo", "sleep", "upper"},
		notes:      osdkMCPGoNotes,
		nonASCII:   osdkMCPGoPrompt,
		greeting:   "Bonjour, Wörld!",
	}
)

// osdkCaps are the raw client's capabilities: form elicitation, so that the
// proxy may pass the servers' input requests on.
const osdkCaps = `{"elicitation":{"form":{}}}`

func TestGoSDKServerRawClient(t *testing.T) { t.Parallel(); osdkRawClient(t, osdkGoSDK) }
func TestMCPGoServerRawClient(t *testing.T) { t.Parallel(); osdkRawClient(t, osdkMCPGo) }
func TestGoSDKServerSDKClient(t *testing.T) { t.Parallel(); osdkSDKClient(t, osdkGoSDK) }
func TestMCPGoServerSDKClient(t *testing.T) { t.Parallel(); osdkSDKClient(t, osdkMCPGo) }

// osdkRawClient drives the binary with the raw NDJSON client against the
// plain server of k: initialize, tools/list, a tools/call of each tool (the
// elicitation answered by the client, sleep cancelled), prompts/list and
// prompts/get of the ASCII prompt, resources/list and resources/read, ping,
// and a clean exit with one answer per id.
func osdkRawClient(t *testing.T, k osdkKind) {
	srv := k.start(t)
	up := srv.upstream
	p := startProxy(t, []string{up.URL})
	defer osdkLogServerQuirks(t, up)

	t.Run("initialize", func(t *testing.T) {
		p := p.bind(t)
		params := `{"protocolVersion":"2025-11-25","capabilities":` + osdkCaps + `,"clientInfo":{"name":"e2e-osdk","version":"1"}}`
		res := resultOf(t, p.call(`"init"`, "initialize", params))
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if got := res.Get("protocolVersion").String(); got != "2025-11-25" {
			t.Errorf("protocolVersion = %q, want 2025-11-25", got)
		}
		if got := res.Get("serverInfo.name").String(); got != k.serverName {
			t.Errorf("serverInfo.name = %q, want %q (from the server's discover)", got, k.serverName)
		}
		for _, c := range []string{"tools", "prompts", "resources"} {
			if !res.Get("capabilities." + c).IsObject() {
				t.Errorf("capabilities lack %s: %s", c, res.Get("capabilities").Raw)
			}
		}
		if len(up.requests("server/discover")) == 0 {
			t.Error("no server/discover probe upstream")
		}
		if n := len(up.requests("initialize")); n != 0 {
			t.Errorf("initialize was POSTed upstream %d times; the server speaks 2026-07-28, which has no initialize", n)
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		p := p.bind(t)
		res := resultOf(t, p.call("1", "tools/list", `{}`))
		var names []string
		for _, tool := range res.Get("tools").Array() {
			names = append(names, tool.Get("name").String())
		}
		slices.Sort(names)
		if !slices.Equal(names, k.tools) {
			t.Errorf("tools/list names = %v, want %v", names, k.tools)
		}
	})

	t.Run("tools/call echo", func(t *testing.T) {
		p := p.bind(t)
		for i, text := range []string{"hello", "héllo 世界", `quotes " and \ and <tags> & more`} {
			args := `{"name":"echo","arguments":{"text":` + fsQuote(text) + `}}`
			res := resultOf(t, p.call(fsQuote("echo-"+string(rune('a'+i))), "tools/call", args))
			if got := res.Get("content.0.text").String(); got != text || res.Get("isError").Bool() {
				t.Errorf("echo %q answered %s", text, res.Raw)
			}
		}
	})

	if k.serverName == osdkMCPGoName {
		t.Run("tools/call upper and count (task-declaring tools, called plainly)", func(t *testing.T) {
			p := p.bind(t)
			if got := resultOf(t, p.call(`"upper"`, "tools/call", `{"name":"upper","arguments":{"text":"abc"}}`)).Get("content.0.text").String(); got != "ABC" {
				t.Errorf("upper answered %q, want ABC", got)
			}
			if got := resultOf(t, p.call(`"count"`, "tools/call", `{"name":"count","arguments":{"text":"abcd"}}`)).Get("content.0.text").String(); got != "4" {
				t.Errorf("count answered %q, want 4", got)
			}
		})
	}

	t.Run("tools/call confirm (elicitation)", func(t *testing.T) {
		p := p.bind(t)
		mark := p.mark()
		p.request(`"confirm"`, "tools/call", `{"name":"confirm","arguments":{}}`)
		_, ask := p.waitLine(mark, "the proxy's elicitation/create", func(_ int, l outLine) bool {
			return l.method == "elicitation/create"
		})
		askID := gjson.GetBytes(ask, "id")
		if !askID.Exists() || askID.Raw == "null" {
			t.Fatalf("elicitation/create without an id: %s", ask)
		}
		if got := gjson.GetBytes(ask, "params.message").String(); got != "Proceed?" {
			t.Errorf("elicitation message = %q, want Proceed?", got)
		}
		if !gjson.GetBytes(ask, "params.requestedSchema.properties.ok").IsObject() {
			t.Errorf("elicitation requestedSchema lost the ok property: %s", ask)
		}
		p.send(`{"jsonrpc":"2.0","id":` + askID.Raw + `,"result":{"action":"accept","content":{"ok":true}}}`)
		res := resultOf(t, p.expect(`"confirm"`))
		if got := res.Get("content.0.text").String(); got != "confirmed: accept ok=true" {
			t.Errorf("confirm answered %s, want the text \"confirmed: accept ok=true\"", res.Raw)
		}
		osdkCheckMRTR(t, k, up)
	})

	t.Run("prompts/list", func(t *testing.T) {
		p := p.bind(t)
		res := resultOf(t, p.call(`"prompts"`, "prompts/list", `{}`))
		var names []string
		for _, pr := range res.Get("prompts").Array() {
			names = append(names, pr.Get("name").String())
		}
		slices.Sort(names)
		if want := []string{k.nonASCII, "hello"}; !slices.Equal(names, slices.Sorted(slices.Values(want))) {
			t.Errorf("prompts/list names = %q, want %q", names, want)
		}
	})

	t.Run("prompts/get hello", func(t *testing.T) {
		p := p.bind(t)
		res := resultOf(t, p.call(`"hello"`, "prompts/get", `{"name":"hello","arguments":{"name":"Wörld"}}`))
		if got := res.Get("messages.0.content.text").String(); got != "Hello, Wörld!" {
			t.Errorf("prompts/get hello = %s, want the text Hello, Wörld!", res.Raw)
		}
	})

	t.Run("resources/list and resources/read", func(t *testing.T) {
		p := p.bind(t)
		res := resultOf(t, p.call(`"resources"`, "resources/list", `{}`))
		if uris := res.Get("resources.#.uri").Array(); len(uris) != 1 || uris[0].String() != k.notes {
			t.Errorf("resources/list = %s, want the one resource %s", res.Raw, k.notes)
		}
		res = resultOf(t, p.call(`"read"`, "resources/read", `{"uri":`+fsQuote(k.notes)+`}`))
		c := res.Get("contents.0")
		if c.Get("uri").String() != k.notes || c.Get("text").String() != osdkNotesText {
			t.Errorf("resources/read = %s, want %s with text %q", res.Raw, k.notes, osdkNotesText)
		}
		reads := up.requests("resources/read")
		if len(reads) != 1 || reads[0].Header.Get("Mcp-Name") != k.notes {
			t.Errorf("upstream resources/read = %d requests, want 1 with Mcp-Name %s", len(reads), k.notes)
		}
	})

	t.Run("ping", func(t *testing.T) {
		p := p.bind(t)
		res := resultOf(t, p.call(`"ping"`, "ping", ""))
		if res.Raw != "{}" {
			t.Errorf("ping = %s, want {}", res.Raw)
		}
		if n := len(up.requests("ping")); n != 0 {
			t.Errorf("ping was POSTed upstream %d times; 2026-07-28 has no ping", n)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		p := p.bind(t)
		p.request(`"sleep"`, "tools/call", `{"name":"sleep","arguments":{}}`)
		waitClosed(t, osdkRecv(srv.sleepStarted), "the sleep handler starting upstream")
		fsCancel(p, `"sleep"`)
		waitClosed(t, srv.sleepHTTPDone, "the proxy closing the upstream sleep request")
		resultOf(t, p.call(`"after-cancel"`, "tools/call", `{"name":"echo","arguments":{"text":"still serving"}}`))
		osdkLogSleepCtx(t, srv)
	})

	t.Run("exit", func(t *testing.T) {
		fsFinish(t, p.bind(t), `"sleep"`)
	})
}

// osdkCheckMRTR checks the upstream side of the confirm call: two attempts,
// the retry with a new id, the same name and arguments, the client's
// answer under the server's key and the server's requestState byte for
// byte. For go-sdk it also requires what the test is there to exercise:
// the input_required answer came over SSE with "content": null.
func osdkCheckMRTR(t *testing.T, k osdkKind, up *upstream) {
	t.Helper()
	calls := erToolCalls(up, "confirm")
	if len(calls) != 2 {
		t.Fatalf("upstream saw %d tools/call confirm, want 2 (the call and one retry)", len(calls))
	}
	first, ct := osdkAnswer(t, up, calls[0])
	if first == nil {
		t.Fatalf("no JSON-RPC answer recorded for the first confirm attempt")
	}
	res := gjson.GetBytes(first, "result")
	if rt := res.Get("resultType").String(); rt != "input_required" {
		t.Fatalf("the first confirm attempt was answered %s, want input_required", shortBytes(first))
	}
	if k.serverName == osdkGoSDKName {
		if !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("go-sdk answered confirm with %q, want text/event-stream (the test needs its SSE answers)", ct)
		}
		if c := res.Get("content"); c.Type != gjson.Null || !c.Exists() {
			t.Logf("go-sdk's input_required result has content %s, not null: the quirk this test covers is gone", c.Raw)
		}
	}
	retry := calls[1]
	if retry.ID == calls[0].ID {
		t.Errorf("the retry reuses upstream id %s", retry.ID)
	}
	if got, want := erBaseParams(retry.Body), erBaseParams(calls[0].Body); !erJSONEqual(got, want) {
		t.Errorf("the retry changed the params:\n first: %s\n retry: %s", want, got)
	}
	if got, want := gjson.GetBytes(retry.Body, "params.requestState").Raw, res.Get("requestState").Raw; got != want || want == "" {
		t.Errorf("retry requestState %s, want the server's %s byte for byte", got, want)
	}
	ir := gjson.GetBytes(retry.Body, "params.inputResponses")
	if !slices.Equal(erKeys(ir), []string{"ok"}) || ir.Get("ok.action").String() != "accept" || !ir.Get("ok.content.ok").Bool() {
		t.Errorf("retry inputResponses = %s, want {\"ok\": the client's accept with ok=true}", ir.Raw)
	}
	last, _ := osdkAnswer(t, up, retry)
	if rt := gjson.GetBytes(last, "result.resultType").String(); rt != "complete" {
		t.Errorf("the retry was answered %s, want a complete result", shortBytes(last))
	}
}

// osdkSDKClient drives the binary with the go-sdk v1.8.0 legacy client
// against the plain server of k, covering the same ground as osdkRawClient
// through a real client's eyes. Its stdout is tapped and validated like the
// raw client's.
func osdkSDKClient(t *testing.T, k osdkKind) {
	srv := k.start(t)
	up := srv.upstream
	defer osdkLogServerQuirks(t, up)

	var (
		mu    sync.Mutex
		asked []*mcp.ElicitParams
	)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-osdk-sdk", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			cp := *req.Params
			asked = append(asked, &cp)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	tap := osdkConnect(t, ctx, client, up.URL)
	session := tap.session

	t.Run("initialize", func(t *testing.T) {
		ir := session.InitializeResult()
		if ir.ProtocolVersion != "2025-11-25" {
			t.Errorf("protocolVersion = %q, want 2025-11-25", ir.ProtocolVersion)
		}
		if ir.ServerInfo == nil || ir.ServerInfo.Name != k.serverName {
			t.Errorf("serverInfo = %+v, want %s", ir.ServerInfo, k.serverName)
		}
		if n := len(up.requests("initialize")); n != 0 {
			t.Errorf("initialize was POSTed upstream %d times", n)
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		if names := sdkToolNames(t, ctx, session); !slices.Equal(names, k.tools) {
			t.Errorf("tools/list names = %v, want %v", names, k.tools)
		}
	})

	call := func(t *testing.T, tool string, args map[string]any) string {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return sdkText(t, res)
	}

	t.Run("tools/call echo", func(t *testing.T) {
		for _, text := range []string{"hello", "héllo 世界"} {
			if got := call(t, "echo", map[string]any{"text": text}); got != text {
				t.Errorf("echo %q = %q", text, got)
			}
		}
	})
	if k.serverName == osdkMCPGoName {
		t.Run("tools/call upper and count", func(t *testing.T) {
			if got := call(t, "upper", map[string]any{"text": "abc"}); got != "ABC" {
				t.Errorf("upper = %q, want ABC", got)
			}
			if got := call(t, "count", map[string]any{"text": "abcd"}); got != "4" {
				t.Errorf("count = %q, want 4", got)
			}
		})
	}

	t.Run("tools/call confirm (elicitation)", func(t *testing.T) {
		if got := call(t, "confirm", map[string]any{}); got != "confirmed: accept ok=true" {
			t.Errorf("confirm = %q, want \"confirmed: accept ok=true\"", got)
		}
		mu.Lock()
		n := len(asked)
		mu.Unlock()
		if n != 1 || asked[0].Message != "Proceed?" {
			t.Errorf("the client's elicitation handler ran %d times (%+v), want once for Proceed?", n, asked)
		}
		osdkCheckMRTR(t, k, up)
	})

	t.Run("prompts", func(t *testing.T) {
		list, err := session.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, pr := range list.Prompts {
			names = append(names, pr.Name)
		}
		if !slices.Contains(names, "hello") || !slices.Contains(names, k.nonASCII) {
			t.Errorf("prompts/list = %q, want hello and %q", names, k.nonASCII)
		}
		if got := sdkPromptText(t, ctx, session, "hello", map[string]string{"name": "Wörld"}); got != "Hello, Wörld!" {
			t.Errorf("hello = %q, want Hello, Wörld!", got)
		}
	})

	t.Run("resources", func(t *testing.T) {
		list, err := session.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Resources) != 1 || list.Resources[0].URI != k.notes {
			t.Errorf("resources/list = %+v, want %s", list.Resources, k.notes)
		}
		res, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: k.notes})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Contents) != 1 || res.Contents[0].Text != osdkNotesText {
			t.Errorf("resources/read = %+v, want %q", res.Contents, osdkNotesText)
		}
	})

	t.Run("ping", func(t *testing.T) {
		if err := session.Ping(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		callCtx, cancelCall := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := session.CallTool(callCtx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{}})
			done <- err
		}()
		waitClosed(t, osdkRecv(srv.sleepStarted), "the sleep handler starting upstream")
		cancelCall() // the go-sdk client sends notifications/cancelled
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled CallTool returned %v, want context.Canceled", err)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("CallTool did not return within %v of its context being cancelled", waitTimeout)
		}
		waitClosed(t, srv.sleepHTTPDone, "the proxy closing the upstream sleep request")
		if got := call(t, "echo", map[string]any{"text": "after cancel"}); got != "after cancel" {
			t.Errorf("echo after cancel = %q", got)
		}
		id := tap.requestID("tools/call", "sleep")
		if id == "" {
			t.Fatal("the tap saw no tools/call sleep request")
		}
		if tap.answered(id) {
			t.Errorf("the cancelled request %s was answered; nothing more may be sent for a cancelled id", id)
		}
		osdkLogSleepCtx(t, srv)
	})

	t.Run("exit on stdin EOF", func(t *testing.T) {
		tap.close(t)
	})
}

// TestGoSDKServerNonASCIIPromptName: prompts/get of the go-sdk server's
// prompt grüße works through the proxy. The proxy must send the name in
// Mcp-Name as the spec's Base64 sentinel (2026-07-28 Streamable HTTP; the
// recorder checks it), and the go-sdk v1.8.0 server compares that header with
// the body without decoding it (streamable_headers.go validateMcpHeaders) and
// answers -32020 header mismatch; the proxy then retries once with the raw
// UTF-8 name.
func TestGoSDKServerNonASCIIPromptName(t *testing.T) {
	t.Parallel()
	osdkNonASCIIPrompt(t, osdkGoSDK)
}

// TestMCPGoServerNonASCIIPromptName: the same against mcp-go v1.2.1, which
// decodes the sentinel (mcp.ValidateStandardHeaders): a control for
// TestGoSDKServerNonASCIIPromptName.
func TestMCPGoServerNonASCIIPromptName(t *testing.T) {
	t.Parallel()
	osdkNonASCIIPrompt(t, osdkMCPGo)
}

func osdkNonASCIIPrompt(t *testing.T, k osdkKind) {
	t.Run("raw client", func(t *testing.T) {
		t.Parallel()
		up := k.start(t).upstream
		p := startProxy(t, []string{up.URL})
		p.initialize()
		resp := p.call(`"get"`, "prompts/get", `{"name":`+fsQuote(k.nonASCII)+`,"arguments":{"name":"Wörld"}}`)
		res := gjson.GetBytes(resp, "result")
		if got := res.Get("messages.0.content.text").String(); got != k.greeting {
			t.Errorf("prompts/get %q through the proxy = %s, want the text %q", k.nonASCII, shortBytes(resp), k.greeting)
		}
		gets := up.requests("prompts/get")
		for _, ex := range gets {
			ans, _ := osdkAnswer(t, up, ex)
			t.Logf("upstream prompts/get: Mcp-Name %q, answer %s", ex.Header.Get("Mcp-Name"), shortBytes(ans))
		}
	})
	t.Run("sdk client", func(t *testing.T) {
		t.Parallel()
		up := k.start(t).upstream
		ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
		defer cancel()
		tap := osdkConnect(t, ctx, mcp.NewClient(&mcp.Implementation{Name: "e2e-osdk-sdk", Version: "1"}, nil), up.URL)
		defer tap.close(t)
		if got := sdkPromptText(t, ctx, tap.session, k.nonASCII, map[string]string{"name": "Wörld"}); got != k.greeting {
			t.Errorf("GetPrompt %q = %q, want %q", k.nonASCII, got, k.greeting)
		}
	})
}

// osdkTaskSupport lists the client's tools/list and initialize capabilities
// against srv and checks the taskSupport policy (docs/protocol.md, Tasks): with
// the tasks extension declared in discover, capabilities.tasks is advertised
// and every tool has execution.taskSupport "optional"; without it, neither.
func osdkTaskSupport(t *testing.T, up *upstream, wantTasks bool) {
	t.Helper()
	p := startProxy(t, []string{up.URL})
	initRes := resultOf(t, p.call(`"init"`, "initialize", initParams))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if got := initRes.Get("capabilities.tasks").Exists(); got != wantTasks {
		t.Errorf("initialize capabilities.tasks present = %v, want %v: %s", got, wantTasks, initRes.Get("capabilities").Raw)
	}
	if discover := up.requests("server/discover"); len(discover) > 0 {
		ans, _ := osdkAnswer(t, up, discover[0])
		t.Logf("the server's discover capabilities: %s", gjson.GetBytes(ans, "result.capabilities").Raw)
	}
	tools := resultOf(t, p.call("1", "tools/list", `{}`)).Get("tools").Array()
	if len(tools) == 0 {
		t.Fatal("tools/list is empty")
	}
	for _, tool := range tools {
		ts := tool.Get("execution.taskSupport")
		switch {
		case wantTasks && ts.String() != "optional":
			t.Errorf("tool %s has execution %s, want taskSupport \"optional\" (the server declares %s)", tool.Get("name"), tool.Get("execution").Raw, osdkTasksExt)
		case !wantTasks && ts.Exists():
			t.Errorf("tool %s has execution %s, want no taskSupport (the server does not declare %s)", tool.Get("name"), tool.Get("execution").Raw, osdkTasksExt)
		}
	}
}

// TestGoSDKServerNoTaskSupport: the go-sdk server declares no tasks
// extension, so the client sees no tasks capability and no taskSupport.
func TestGoSDKServerNoTaskSupport(t *testing.T) {
	t.Parallel()
	osdkTaskSupport(t, newGoSDKServer(t).upstream, false)
}

// TestMCPGoServerNoTaskSupportLeak: the mcp-go server declares no tasks
// extension but puts execution.taskSupport ("optional" on upper,
// "forbidden" on count) on its tools, a field 2026-07-28 does not have.
// The client must see no taskSupport on any tool (docs/protocol.md, Tasks): the
// proxy removes the server's taskSupport.
func TestMCPGoServerNoTaskSupportLeak(t *testing.T) {
	t.Parallel()
	osdkTaskSupport(t, newMCPGoServer(t, false).upstream, false)
}

// TestMCPGoServerTaskSupportWithExtension: the same mcp-go server declaring
// the tasks extension: every tool shows taskSupport "optional", whatever
// the server wrote ("forbidden" on count, nothing on echo).
func TestMCPGoServerTaskSupportWithExtension(t *testing.T) {
	t.Parallel()
	osdkTaskSupport(t, newMCPGoServer(t, true).upstream, true)
}

// --- helpers ---

// osdkRecv is a channel closed once ch has delivered a value, for
// waitClosed. The goroutine ends when the value arrives; a value that never
// arrives leaves it blocked only until the test binary exits, and the wait
// itself is bounded.
func osdkRecv(ch <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		<-ch
		close(done)
	}()
	return done
}

// osdkLogSleepCtx reports whether the SDK cancelled the sleep handler when
// the proxy closed its stream (a server property, not a proxy one).
func osdkLogSleepCtx(t *testing.T, srv *osdkServer) {
	select {
	case <-srv.sleepCtxDone:
		t.Log("the server cancelled the sleep handler after its HTTP request ended")
	default:
		t.Log("the server had not cancelled the sleep handler by the time the next call was answered (it is released at cleanup)")
	}
}

// osdkLogServerQuirks logs every frame the server sent that is not valid
// 2026-07-28 for the request it answered: what the proxy had to cope with.
func osdkLogServerQuirks(t *testing.T, up *upstream) {
	t.Helper()
	v := schematest.Load(t)
	for _, ex := range up.requests("") {
		select {
		case <-ex.done:
		default:
			continue // still running (a cancelled sleep the SDK did not stop)
		}
		_, h, body := up.response(t, ex)
		for _, f := range osdkFrames(h, body) {
			if err := v.ValidateUpstreamResult(f, ex.RPCMethod); err != nil {
				t.Logf("server quirk (%s answered %s): %v", ex.RPCMethod, h.Get("Content-Type"), err)
			}
		}
	}
}

// osdkTap is the binary launched for the go-sdk client over IOTransport,
// with its stdout tapped: each line is checked like the raw client's
// (procState.check: one JSON object, valid 2025-11-25 for the request it
// answers, no modern fields) before the client reads it, and each line the
// client writes is recorded.
type osdkTap struct {
	session *mcp.ClientSession
	ps      *procState
	cmd     *exec.Cmd
	stdin   io.WriteCloser

	exited  chan struct{}
	waitErr error
	readEOF chan struct{}

	mu      sync.Mutex
	written [][]byte // complete lines the client wrote
	closed  bool
}

// osdkConnect launches the binary for url and connects client to it at
// protocol 2025-11-25. The process is stopped at the end of the test if
// close was not called.
func osdkConnect(t *testing.T, ctx context.Context, client *mcp.Client, url string) *osdkTap {
	t.Helper()
	tap := &osdkTap{
		ps: &procState{
			owner:   t,
			v:       schematest.Load(t),
			stderr:  &syncBuffer{},
			changed: make(chan struct{}),
			claimed: map[int]bool{},
			methods: map[string]string{},
			sent:    map[string]int{},
		},
		exited:  make(chan struct{}),
		readEOF: make(chan struct{}),
	}
	tap.cmd = exec.Command(binPath, url)
	tap.cmd.Env = proxyEnv()
	tap.cmd.Stderr = tap.ps.stderr
	stdin, err := tap.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := tap.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tap.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binPath, err)
	}
	tap.stdin = stdin
	pr, pw := io.Pipe()
	go func() {
		// Reap only after stdout is drained: Wait closes the pipe.
		<-tap.readEOF
		tap.waitErr = tap.cmd.Wait()
		close(tap.exited)
	}()
	go tap.read(stdout, pw)
	t.Cleanup(func() { tap.close(t) })

	tap.session, err = client.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: &osdkWriter{tap: tap}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect (initialize): %v; stderr:\n%s", err, tap.ps.stderr.String())
	}
	return tap
}

// read checks and forwards stdout lines to the client's pipe.
func (tap *osdkTap) read(stdout io.Reader, pw *io.PipeWriter) {
	defer close(tap.readEOF)
	br := bufio.NewReaderSize(stdout, 1<<16)
	forward := true
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			ol := tap.ps.check(line[:len(line)-1])
			tap.ps.mu.Lock()
			tap.ps.lines = append(tap.ps.lines, ol)
			tap.ps.mu.Unlock()
			if forward {
				if _, werr := pw.Write(line); werr != nil {
					forward = false // the client closed its side; keep checking
				}
			}
		} else if len(line) > 0 {
			tap.ps.addProblem("stdout ended with an incomplete line (no newline): %s", shortBytes(line))
		}
		if err != nil {
			pw.Close()
			return
		}
	}
}

// osdkWriter is the client's stdin: it records every complete line (and the
// method of each request by id) before the proxy can answer it.
type osdkWriter struct {
	tap *osdkTap
	buf []byte
}

func (w *osdkWriter) Write(b []byte) (int, error) {
	tap := w.tap
	tap.mu.Lock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.Clone(w.buf[:i])
		w.buf = w.buf[i+1:]
		tap.written = append(tap.written, line)
		r := gjson.ParseBytes(line)
		if r.Get("method").Exists() && r.Get("id").Exists() {
			tap.ps.mu.Lock()
			tap.ps.methods[r.Get("id").Raw] = r.Get("method").String()
			tap.ps.sent[r.Get("id").Raw]++
			tap.ps.mu.Unlock()
		}
	}
	tap.mu.Unlock()
	return tap.stdin.Write(b)
}

func (w *osdkWriter) Close() error { return w.tap.stdin.Close() }

// requestID is the raw id of the first request the client wrote with this
// method and params.name, or "".
func (tap *osdkTap) requestID(method, name string) string {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	for _, l := range tap.written {
		r := gjson.ParseBytes(l)
		if r.Get("method").String() == method && r.Get("params.name").String() == name && r.Get("id").Exists() {
			return r.Get("id").Raw
		}
	}
	return ""
}

// answered reports whether the proxy wrote a response with this raw id.
func (tap *osdkTap) answered(id string) bool {
	tap.ps.mu.Lock()
	defer tap.ps.mu.Unlock()
	for _, l := range tap.ps.lines {
		if l.resp && l.id == id {
			return true
		}
	}
	return false
}

// close ends the session (stdin EOF), requires exit status 0 within the
// cleanup bound, and reports every problem seen on stdout and every id
// answered more often than it was sent. It runs once.
func (tap *osdkTap) close(t *testing.T) {
	t.Helper()
	tap.mu.Lock()
	if tap.closed {
		tap.mu.Unlock()
		return
	}
	tap.closed = true
	tap.mu.Unlock()
	if tap.session != nil {
		if err := tap.session.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
	}
	_ = tap.stdin.Close()
	select {
	case <-tap.exited:
		if code := exitCode(tap.waitErr); code != 0 {
			t.Errorf("proxy exit status %d, want 0", code)
		}
	case <-time.After(cleanupExitTimeout):
		t.Errorf("the proxy did not exit within %v of stdin closing; killing it", cleanupExitTimeout)
		_ = tap.cmd.Process.Kill()
		<-tap.exited
	}
	tap.ps.mu.Lock()
	defer tap.ps.mu.Unlock()
	for _, prob := range tap.ps.problems {
		t.Errorf("stdout: %s", prob)
	}
	got := map[string]int{}
	for _, l := range tap.ps.lines {
		if l.resp {
			got[l.id]++
		}
	}
	for id, n := range got {
		if id != "null" && n > tap.ps.sent[id] {
			t.Errorf("id %s was answered %d times for %d requests", id, n, tap.ps.sent[id])
		}
	}
	if t.Failed() {
		t.Logf("proxy stderr:\n%s", tap.ps.stderr.String())
	}
}
