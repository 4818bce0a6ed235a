package e2e

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// TestSDKClient drives the binary with the go-sdk v1.8.0 client pinned to
// protocol 2025-11-25, the way a legacy host launches a stdio server,
// against the demo server.
func TestSDKClient(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)

	var (
		mu       sync.Mutex
		progress []*mcp.ProgressNotificationParams
		//lint:ignore SA1019 the legacy logging feature is what the proxy bridges.
		logs    []*mcp.LoggingMessageParams
		changed = make(chan struct{}, 1)
	)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
			poke()
		},
		//lint:ignore SA1019 the legacy logging feature is what the proxy bridges.
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, req.Params)
			mu.Unlock()
			poke()
		},
	})
	// waitFor waits (bounded) until cond holds; the go-sdk delivers
	// notifications on a queue of its own, so they may be handled just after
	// the call that carried them returns (see TestRawProgressBeforeResponse
	// for the ordering on the wire).
	waitFor := func(t *testing.T, desc string, cond func() bool) {
		t.Helper()
		deadline := time.After(waitTimeout)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("timed out waiting for %s", desc)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	stderr := &syncBuffer{}
	cmd := exec.Command(binPath, up.URL)
	cmd.Env = proxyEnv()
	cmd.Stderr = stderr
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect (initialize): %v; stderr:\n%s", err, stderr.String())
	}
	closed := false
	closeSession := func() {
		if closed {
			return
		}
		closed = true
		if err := session.Close(); err != nil {
			t.Errorf("closing the session (stdin EOF, then wait for exit): %v", err)
		}
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("proxy exit state %v, want exit status 0", cmd.ProcessState)
		}
	}
	defer func() {
		closeSession()
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", stderr.String())
		}
	}()

	t.Run("initialize", func(t *testing.T) {
		ir := session.InitializeResult()
		if ir == nil {
			t.Fatal("no InitializeResult")
		}
		if ir.ProtocolVersion != "2025-11-25" {
			t.Errorf("protocolVersion = %q, want 2025-11-25", ir.ProtocolVersion)
		}
		if ir.ServerInfo == nil || ir.ServerInfo.Name != demo.ServerName || ir.ServerInfo.Version != demo.ServerVersion {
			t.Errorf("serverInfo = %+v, want %s %s (the demo's, from discover _meta)", ir.ServerInfo, demo.ServerName, demo.ServerVersion)
		}
		if ir.Capabilities == nil || ir.Capabilities.Tools == nil {
			t.Errorf("capabilities = %+v, want tools", ir.Capabilities)
		}
		if len(up.requests("server/discover")) == 0 {
			t.Error("initialize was answered without a server/discover probe upstream")
		}
		if n := len(up.requests("initialize")); n != 0 {
			t.Errorf("initialize was POSTed upstream %d times; a 2026-07-28 server has no initialize", n)
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		names := sdkToolNames(t, ctx, session)
		for _, want := range []string{"echo", "slow_count", "whoami"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list = %v, missing %s", names, want)
			}
		}
	})

	t.Run("tools/call echo", func(t *testing.T) {
		for _, text := range []string{"hello", "héllo 世界", `quotes " and \ and <tags> & more`} {
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			if err != nil {
				t.Fatalf("echo %q: %v", text, err)
			}
			if got := sdkText(t, res); got != text {
				t.Errorf("echo %q came back as %q", text, got)
			}
		}
	})

	t.Run("prompts/get", func(t *testing.T) {
		if got := sdkPromptText(t, ctx, session, "greeting", map[string]string{"name": "Wörld"}); got != "Hello, Wörld!" {
			t.Errorf("greeting = %q, want Hello, Wörld!", got)
		}
	})

	t.Run("resources/read", func(t *testing.T) {
		res, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://readme"})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "mcp-tasks-proxy demo server") {
			t.Errorf("contents = %+v", res.Contents)
		}
		reads := up.requests("resources/read")
		if len(reads) != 1 {
			t.Fatalf("upstream saw %d resources/read, want 1", len(reads))
		}
		if got := reads[0].Header.Get("Mcp-Name"); got != "demo://readme" {
			t.Errorf("upstream Mcp-Name = %q, want demo://readme", got)
		}
	})

	t.Run("progress over SSE", func(t *testing.T) {
		const n = 5
		params := &mcp.CallToolParams{Name: "slow_count", Arguments: map[string]any{"n": n}}
		params.SetProgressToken("sdk-progress")
		res, err := session.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "counted to 5" {
			t.Errorf("slow_count result %#v", res.Content)
		}
		mu.Lock()
		atReturn := len(progress)
		mu.Unlock()
		waitFor(t, "5 progress notifications", func() bool { return len(progress) >= n })
		mu.Lock()
		defer mu.Unlock()
		if len(progress) != n {
			t.Errorf("got %d progress notifications, want %d", len(progress), n)
		}
		for i, p := range progress {
			if p.ProgressToken != "sdk-progress" || p.Progress != float64(i+1) || p.Total != n {
				t.Errorf("progress #%d = %+v, want token sdk-progress, %d of %d", i, p, i+1, n)
			}
		}
		t.Logf("%d of %d progress notifications had been handled when CallTool returned", atReturn, n)
		// The answer came on text/event-stream: the SSE path was exercised.
		calls := up.requests("tools/call")
		last := calls[len(calls)-1]
		_, respHeader, _ := up.response(t, last)
		if ct := respHeader.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
			t.Errorf("slow_count was answered with %q, want text/event-stream (the test needs the SSE path)", ct)
		}
		if got := gjson.GetBytes(last.Body, "params._meta.progressToken").String(); got != "sdk-progress" {
			t.Errorf("upstream progressToken = %q, want sdk-progress", got)
		}
	})

	t.Run("logging", func(t *testing.T) {
		//lint:ignore SA1019 the legacy logging feature is what the proxy bridges.
		if err := session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		sc, ok := res.StructuredContent.(map[string]any)
		if !ok {
			t.Fatalf("whoami structuredContent = %#v", res.StructuredContent)
		}
		if sc["logLevel"] != "info" {
			t.Errorf("whoami saw logLevel %#v, want \"info\"", sc["logLevel"])
		}
		calls := up.requests("tools/call")
		body := calls[len(calls)-1].Body
		if got := gjson.GetBytes(body, `params._meta.io\.modelcontextprotocol/logLevel`); got.String() != "info" {
			t.Errorf("upstream _meta logLevel = %s, want \"info\" (body %s)", got.Raw, shortBytes(body))
		}

		mu.Lock()
		before := len(logs)
		mu.Unlock()
		if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "slow_count", Arguments: map[string]any{"n": 3}}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "a log notification from slow_count", func() bool { return len(logs) > before })
		mu.Lock()
		defer mu.Unlock()
		l := logs[before]
		if l.Level != "info" || l.Logger != "slow_count" || l.Data != "counting to 3" {
			t.Errorf("log notification = %+v, want info from slow_count: counting to 3", l)
		}
	})

	t.Run("exit on stdin EOF", func(t *testing.T) {
		closeSession()
	})
}

// sdkToolNames is the names of the tools session lists, sorted.
func sdkToolNames(t *testing.T, ctx context.Context, session *mcp.ClientSession) []string {
	t.Helper()
	res, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// sdkText is the one text content of a tool result; an error result or any
// other content fails the test.
func sdkText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result %+v, want one text content", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %#v is not text", res.Content[0])
	}
	return tc.Text
}

// sdkPromptText gets a prompt and returns the text of its one message;
// anything else fails the test.
func sdkPromptText(t *testing.T, ctx context.Context, session *mcp.ClientSession, name string, args map[string]string) string {
	t.Helper()
	res, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("prompts/get %q: %v", name, err)
	}
	if len(res.Messages) != 1 {
		t.Fatalf("prompts/get %q: messages = %+v", name, res.Messages)
	}
	tc, ok := res.Messages[0].Content.(*mcp.TextContent)
	if !ok {
		t.Fatalf("prompts/get %q: content %#v is not text", name, res.Messages[0].Content)
	}
	return tc.Text
}
