package e2e

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSSEServerEverything runs the reference server,
// @modelcontextprotocol/server-everything, in its sse mode (the 2024-11-05
// HTTP+SSE transport, on express) and drives the binary against it with the
// default --transport. The server is installed with npm ci from the lock
// file in testdata/everything, so the run is reproducible; without npm or
// the registry the test is skipped, except in CI (CI=true), where it fails.
func TestSSEServerEverything(t *testing.T) {
	t.Parallel()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (the test fails instead when CI=true)", args...)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable("npm is not installed: cannot run @modelcontextprotocol/server-everything")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed: cannot run @modelcontextprotocol/server-everything")
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "everything", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ictx, icancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer icancel()
	install := exec.CommandContext(ictx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		unavailable("npm ci of @modelcontextprotocol/server-everything failed (%v):\n%s", err, out)
	}

	// A free port: the server takes it from $PORT.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	srv := exec.Command(node, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "sse")
	srv.Env = append(os.Environ(), "PORT="+port)
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Server is running on port") {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	waitChan(t, ready, "server-everything to listen")

	p := startProxy(t, []string{"--log-level", "info", "--log-format", "json", "http://127.0.0.1:" + port + "/sse"}).passthrough()
	init := resultOf(t, p.call(`"init"`, "initialize", passInitParams))
	if name := init.Get("serverInfo.name").String(); !strings.Contains(name, "everything") {
		t.Errorf("serverInfo = %s, want server-everything's", init.Get("serverInfo").Raw)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tools := resultOf(t, p.call(`2`, "tools/list", `{}`)).Get("tools.#.name").Array()
	found := false
	for _, n := range tools {
		found = found || n.String() == "echo"
	}
	if !found {
		t.Fatalf("tools/list has no echo: %v", tools)
	}
	res := resultOf(t, p.call(`3`, "tools/call", `{"name":"echo","arguments":{"message":"through the proxy"}}`))
	if got := res.Get("content.0.text").String(); !strings.Contains(got, "through the proxy") {
		t.Errorf("echo = %q", got)
	}
	resultOf(t, p.call(`4`, "ping", ``))
	p.closeStdin()
	if code := p.waitExit(exitWait); code != 0 {
		t.Errorf("exit status %d", code)
	}
}
