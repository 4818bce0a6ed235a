package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/check"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// runCheck runs `check ARGS` and returns the exit status, stdout and stderr.
func runCheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{}
	code := run(append([]string{"check", "--timeout", "20s", "--oauth-store", filepath.Join(t.TempDir(), "oauth")}, args...), strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

func checkJSON(t *testing.T, args ...string) (int, check.Report) {
	t.Helper()
	code, out, errs := runCheck(t, append([]string{"--json"}, args...)...)
	var r check.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("check --json printed no JSON (%v):\n%s\nstderr: %s", err, out, errs)
	}
	return code, r
}

func startCheckDemo(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u, stop, err := demo.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); cancel() })
	return u
}

func TestCheckModernDemo(t *testing.T) {
	u := startCheckDemo(t)
	code, r := checkJSON(t, u)
	if code != 0 || !r.Usable || r.Reason != "" {
		t.Fatalf("exit %d, usable %v, reason %q; want a usable server", code, r.Usable, r.Reason)
	}
	if r.Era != "2026-07-28" || r.Transport != "streamable-http" || !r.Tasks {
		t.Errorf("era %q transport %q tasks %v", r.Era, r.Transport, r.Tasks)
	}
	if len(r.Extensions) != 1 || r.Extensions[0] != "io.modelcontextprotocol/tasks" {
		t.Errorf("extensions %v", r.Extensions)
	}
	if r.Tools == nil || r.Tools.Count == 0 || r.Prompts == nil || r.Resources == nil {
		t.Errorf("counts: tools %+v prompts %+v resources %+v", r.Tools, r.Prompts, r.Resources)
	}
	if len(r.Filtered) != 1 || r.Filtered[0].Name != "bad_header_tool" || !strings.Contains(r.Filtered[0].Reason, "x-mcp-header") {
		t.Errorf("filtered tools %+v, want bad_header_tool with its reason", r.Filtered)
	}
	if r.Base64Names != "accepted" {
		t.Errorf("base64Names %q, want accepted", r.Base64Names)
	}
	if gotName := string(r.ServerInfo); !strings.Contains(gotName, "mcp-tasks-proxy-demo") {
		t.Errorf("serverInfo %s", gotName)
	}
	if r.RoundTripMs <= 0 || r.Auth != nil {
		t.Errorf("round trip %v, auth %+v", r.RoundTripMs, r.Auth)
	}

	code, out, _ := runCheck(t, u)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"verdict:", "usable", "2026-07-28", "io.modelcontextprotocol/tasks", "bad_header_tool", "Base64 names:", "accepted", "round trip:"} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes on a stdout that is not a terminal:\n%q", out)
	}
	// Aligned: every value starts in the same column.
	col := -1
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := regexp.MustCompile(`:\s+`).FindStringIndex(line)
		if i == nil {
			t.Fatalf("line %q has no label", line)
		}
		if col == -1 {
			col = i[1]
		} else if i[1] != col {
			t.Errorf("line %q: value at column %d, want %d", line, i[1], col)
		}
	}
}

func TestCheckLegacyDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	u, _, stop, err := demo.StartLegacy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	code, r := checkJSON(t, u)
	if code != 0 || !r.Usable {
		t.Fatalf("exit %d, reason %q", code, r.Reason)
	}
	if r.Era != "2025-11-25" || r.Transport != "streamable-http" || r.Base64Names != "" {
		t.Errorf("era %q transport %q base64 %q", r.Era, r.Transport, r.Base64Names)
	}
	if r.Tools == nil || r.Tools.Count == 0 || r.Tools.Error != "" {
		t.Errorf("tools %+v", r.Tools)
	}
}

// A go-sdk v1.8.0 server rejects the Base64 form of Mcp-Name (fixed upstream
// after v1.8.0; docs/reliability.md, Retries).
func TestCheckGoSDKRefusesBase64(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "go-sdk", Version: "1.8.0"}, nil)
	srv.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(h)
	defer ts.Close()
	code, r := checkJSON(t, ts.URL)
	if code != 0 || !r.Usable || r.Era != "2026-07-28" {
		t.Fatalf("exit %d usable %v era %q reason %q", code, r.Usable, r.Era, r.Reason)
	}
	if r.Base64Names != "refused" {
		t.Errorf("base64Names %q, want refused", r.Base64Names)
	}
	if len(r.Extensions) != 0 || r.Tasks {
		t.Errorf("extensions %v tasks %v: go-sdk declares none", r.Extensions, r.Tasks)
	}
}

func TestCheckProtected(t *testing.T) {
	u, as := startOAuthDemo(t)
	code, r := checkJSON(t, u)
	if code != check.ExitSignIn || r.Usable {
		t.Fatalf("exit %d usable %v reason %q; want %d", code, r.Usable, r.Reason, check.ExitSignIn)
	}
	a := r.Auth
	if a == nil || !a.Required || a.SignedIn || a.AuthorizationServer != as.Issuer() || len(a.Scopes) == 0 || a.ResourceMetadata == "" {
		t.Fatalf("auth %+v (issuer %s)", a, as.Issuer())
	}
	if r.Next != "mcp-tasks-proxy auth login "+u {
		t.Errorf("next %q", r.Next)
	}
	_, out, _ := runCheck(t, u)
	for _, want := range []string{"OAuth required", "auth server:", "scopes:", "auth login " + u} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckDeadURL(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	u := ts.URL + "/mcp"
	ts.Close()
	code, r := checkJSON(t, u)
	if code != check.ExitUnusable || r.Usable || !strings.Contains(r.Reason, "cannot connect") {
		t.Fatalf("exit %d reason %q", code, r.Reason)
	}
	code, out, _ := runCheck(t, u)
	if code != 1 || !strings.Contains(out, "not usable: cannot connect") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestCheckHTMLPage(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>hi</title>"))
	}))
	defer ts.Close()
	code, r := checkJSON(t, ts.URL)
	if code != check.ExitUnusable || r.Usable || !strings.Contains(r.Reason, "does not look like an MCP endpoint") {
		t.Fatalf("exit %d reason %q", code, r.Reason)
	}
}

func TestCheckPostRefused(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}))
	defer ts.Close()
	code, r := checkJSON(t, ts.URL)
	if code != check.ExitUnusable || r.Transport != "not-streamable-http" || !strings.Contains(r.Reason, "answered initialize with HTTP 405 (text/plain): the server rejected the request, and ") || !strings.Contains(r.Reason, "did not open an HTTP+SSE (2024-11-05) event stream") {
		t.Fatalf("exit %d transport %q reason %q", code, r.Transport, r.Reason)
	}
}

// startCheckSSE serves a go-sdk v1.8.0 server with one tool over the old
// HTTP+SSE transport (MCP 2024-11-05).
func startCheckSSE(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "go-sdk-sse", Version: "1.8.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// An old HTTP+SSE server refuses the Streamable HTTP POST; check then
// opens its event stream and describes it.
func TestCheckHTTPSSE(t *testing.T) {
	u := startCheckSSE(t)
	for _, mode := range [][]string{nil, {"--transport", "sse-first"}, {"--transport", "sse-only"}} {
		code, r := checkJSON(t, append(mode, u)...)
		if code != check.ExitUsable || !r.Usable || r.Reason != "" {
			t.Fatalf("%v: exit %d usable %v reason %q", mode, code, r.Usable, r.Reason)
		}
		if r.Transport != "http+sse" || r.Era != "2025-11-25" || r.Base64Names != "" {
			t.Errorf("%v: transport %q era %q base64 %q", mode, r.Transport, r.Era, r.Base64Names)
		}
		if r.Tools == nil || r.Tools.Count != 1 || r.Tools.Error != "" {
			t.Errorf("%v: tools %+v, want 1", mode, r.Tools)
		}
		if !strings.Contains(string(r.ServerInfo), "go-sdk-sse") || len(r.Capabilities) == 0 || r.RoundTripMs <= 0 {
			t.Errorf("%v: serverInfo %s capabilities %s round trip %v", mode, r.ServerInfo, r.Capabilities, r.RoundTripMs)
		}
	}
	code, out, _ := runCheck(t, u)
	if code != check.ExitUsable {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"usable", "HTTP+SSE (MCP 2024-11-05 transport): passed through", "2025-11-25", "go-sdk-sse", "round trip:"} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^tools:\s+1$`).MatchString(out) {
		t.Errorf("human output lacks the tool count 1:\n%s", out)
	}

	// --transport http-only: check does not try the old transport, and says
	// how to let it.
	code, r := checkJSON(t, "--transport", "http-only", u)
	if code != check.ExitUnusable || r.Usable || r.Transport != "not-streamable-http" || !strings.Contains(r.Reason, "--transport http-only") || !strings.Contains(r.Next, "--transport") {
		t.Fatalf("http-only: exit %d usable %v transport %q reason %q next %q", code, r.Usable, r.Transport, r.Reason, r.Next)
	}
	code, out, _ = runCheck(t, "--transport", "http-only", u)
	if code != check.ExitUnusable || !strings.Contains(out, "not usable") || !strings.Contains(out, "--transport") {
		t.Errorf("http-only: exit %d:\n%s", code, out)
	}
}

// --transport sse-first falls back to Streamable HTTP; sse-only does not.
func TestCheckSSEFirstFallsBack(t *testing.T) {
	u := startCheckDemo(t)
	code, r := checkJSON(t, "--transport", "sse-first", u)
	if code != check.ExitUsable || r.Transport != "streamable-http" {
		t.Fatalf("sse-first: exit %d transport %q reason %q", code, r.Transport, r.Reason)
	}
	code, r = checkJSON(t, "--transport", "sse-only", u)
	if code != check.ExitUnusable || r.Usable || !strings.Contains(r.Reason, "--transport sse-only") || !strings.Contains(r.Next, "--transport") {
		t.Fatalf("sse-only: exit %d usable %v reason %q next %q", code, r.Usable, r.Reason, r.Next)
	}
}

func TestCheckUsage(t *testing.T) {
	if code, _, errs := runCheck(t); code != 2 || !strings.Contains(errs, "no upstream URL") {
		t.Errorf("no URL: exit %d, %s", code, errs)
	}
	if code, _, _ := runCheck(t, "--timeout", "soon", "http://127.0.0.1:1/mcp"); code != 2 {
		t.Errorf("bad --timeout: exit %d", code)
	}
	if code, out, _ := runCheck(t, "--help"); code != 0 || !strings.Contains(out, "Examples:") {
		t.Errorf("--help: exit %d", code)
	}
	var c checkConfig
	if err := c.parse(checkFlagSet(&c), []string{"--header", "--json: x", "--json", testURL}, env(), ""); err != nil || !c.json || c.up.Header.Get("--json") != "x" {
		t.Errorf("a --header value is not check's flag: json %v, header %q, %v", c.json, c.up.Header, err)
	}
	if code, _, errs := runCheck(t, "--nope", "http://127.0.0.1:1/mcp"); code != 2 || !strings.Contains(errs, "unknown flag --nope") {
		t.Errorf("unknown flag: exit %d, %s", code, errs)
	}
	if colorOK(&bytes.Buffer{}, func(string) string { return "" }) {
		t.Error("colour on a buffer")
	}
}

// A stored sign-in is used (check runs unattended, and opens no browser):
// the protected server is usable, and the report says how.
func TestCheckSignedIn(t *testing.T) {
	u, _ := startOAuthDemo(t)
	store := filepath.Join(t.TempDir(), "store")
	inR, inW := io.Pipe()
	defer inW.Close()
	stderr := &pasteBrowser{t: t, stdin: inW, done: make(chan struct{})}
	login := make(chan int, 1)
	go func() {
		login <- run([]string{"auth", "login", "--no-browser", "--oauth-store", store, "--auth-timeout", "15", u}, inR, io.Discard, stderr, env())
	}()
	select {
	case code := <-login:
		if code != 0 {
			t.Fatalf("auth login: exit %d\n%s", code, stderr.String())
		}
	case <-time.After(waitBound + 5*time.Second):
		t.Fatalf("auth login did not return\n%s", stderr.String())
	}
	<-stderr.done
	code, r := checkJSON(t, "--oauth-store", store, u)
	if code != check.ExitUsable || !r.Usable || r.Auth == nil || !r.Auth.SignedIn || r.Auth.Required {
		t.Fatalf("exit %d usable %v reason %q auth %+v; want usable with the stored sign-in", code, r.Usable, r.Reason, r.Auth)
	}
	if _, out, _ := runCheck(t, "--oauth-store", store, u); !strings.Contains(out, "signed in (a stored OAuth token was used)") {
		t.Errorf("human output lacks the sign-in used:\n%s", out)
	}
}

// --ignore-tool hides tools from the session, as it would from a host's:
// check counts them and names them with the setting that hides them.
func TestCheckIgnoreTool(t *testing.T) {
	u := startCheckDemo(t)
	_, all := checkJSON(t, u)
	code, r := checkJSON(t, "--ignore-tool", "echo", u)
	if code != check.ExitUsable || r.Tools == nil || all.Tools == nil || r.Tools.Count != all.Tools.Count {
		t.Fatalf("exit %d tools %+v, want the %+v the server lists", code, r.Tools, all.Tools)
	}
	reason := ""
	for _, h := range r.Filtered {
		if h.Name == "echo" {
			reason = h.Reason
		}
	}
	if len(r.Filtered) != len(all.Filtered)+1 || !strings.Contains(reason, "--ignore-tool") {
		t.Errorf("filtered %+v, want echo, hidden by --ignore-tool, besides %+v", r.Filtered, all.Filtered)
	}
}
