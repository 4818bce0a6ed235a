package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func runServeCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"serve"}, args...), strings.NewReader(""), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func TestServeHelp(t *testing.T) {
	code, out, _ := runServeCmd(t, "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"mcp-tasks-proxy serve [flags] URL", "--listen ADDR", "--allow-origin ORIGIN",
		"--auth-token-file PATH", "--session-idle-timeout D", "--max-sessions N", "--session-id-prefix NAME",
		"--header 'Name: value'", "--state-file PATH", "Examples:", "listening on http://HOST:PORT/mcp"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --help lacks %q", want)
		}
	}
	var helpOut, errb bytes.Buffer
	if code := run([]string{"help", "serve"}, strings.NewReader(""), &helpOut, &errb, func(string) string { return "" }); code != 0 || helpOut.String() != out {
		t.Errorf("help serve: exit %d, and not serve --help", code)
	}
	if !strings.Contains(helpText, "mcp-tasks-proxy serve") {
		t.Error("the proxy's --help does not list serve")
	}
}

func TestServeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--demo", "--listen", "0.0.0.0:0"}, "--auth-token-file"},
		{[]string{"--demo", "--listen", ":8931"}, "--auth-token-file"},
		{[]string{"--demo", "--listen", "nope"}, "--listen"},
		{[]string{"--demo", "--max-sessions", "0"}, "--max-sessions"},
		{[]string{"--demo", "--session-idle-timeout", "0"}, "--session-idle-timeout"},
		{[]string{"--demo", "--allow-origin", "evil.example"}, "--allow-origin"},
		{[]string{"--demo", "--auth-token-file", empty}, "--auth-token-file"},
		{[]string{"--demo", "--auth-token-file", filepath.Join(dir, "missing")}, "--auth-token-file"},
		{[]string{"--demo", "--session-id-prefix", "a.b"}, "--session-id-prefix"},
		{[]string{"--demo", "--lisen", "x"}, "did you mean --listen"},
		{nil, "no upstream URL"},
	} {
		code, out, errs := runServeCmd(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("serve %v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", tc.args, code, out, errs, tc.want)
		}
	}
}

// TestServeRuns: serve prints its one line with the real port, answers an
// initialize and a call through the bridge, keeps stdout empty, and exits
// 0 when its context ends (a signal).
func TestServeRuns(t *testing.T) {
	c, err := parseServeArgs([]string{"--demo", "--listen", "127.0.0.1:0", "--log-level", "error"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb lockedBuffer
	done := make(chan int, 1)
	go func() { done <- runServe(ctx, c, &errb, func(string) string { return "" }) }()
	var url string
	deadline := time.Now().Add(10 * time.Second)
	for url == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line; stderr: %q", errb.String())
		}
		if line, ok := strings.CutPrefix(errb.String(), "listening on "); ok && strings.HasSuffix(line, "\n") {
			url = strings.TrimSpace(line)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.HasSuffix(url, ":0/mcp") || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("listening on %s: want the real port", url)
	}
	post := func(sid, body string) (*http.Response, string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, body := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`); !strings.Contains(body, `"text":"hi"`) {
		t.Errorf("echo: %s", body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after the signal, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if n := strings.Count(errb.String(), "listening on"); n != 1 {
		t.Errorf("stderr: %q", errb.String())
	}
}
