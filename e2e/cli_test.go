package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// runCLI runs the binary to completion (bounded) with no stdin and returns
// its exit status, stdout and stderr.
func runCLI(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	return runCLIStdin(t, env, nil, args...)
}

// runCLIStdin is runCLI with stdin.
func runCLIStdin(t *testing.T, env []string, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = proxyEnv(env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not finish within %v", args, waitTimeout)
	}
	code := exitCode(err)
	if code < 0 {
		t.Fatalf("running %v: %v", args, err)
	}
	return code, stdout.String(), stderr.String()
}

// TestCLIUsageErrors: command-line mistakes exit 2 with one line on stderr
// and nothing on stdout.
func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	url := "http://127.0.0.1:1/mcp"
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the stderr line
	}{
		{"no URL", nil, []string{"--url", "MCP_TASKS_PROXY_URL"}},
		{"bad log level", []string{"--log-level", "bogus", url}, []string{"bogus"}},
		{"header without colon", []string{"--header", "NoColon", url}, []string{"--header #1", "no colon"}},
		{"unknown flag", []string{"--no-such-flag", url}, []string{"no-such-flag"}},
		{"two URLs", []string{url, url + "2"}, nil},
		{"not an http URL", []string{"ftp://example.com/mcp"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, nil, tc.args...)
			if code != 2 {
				t.Errorf("exit status %d, want 2 (stderr %q)", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing (stdout is for JSON-RPC only)", stdout)
			}
			line := strings.TrimSuffix(stderr, "\n")
			if line == "" || strings.Contains(line, "\n") || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr = %q, want exactly one line", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("stderr %q does not mention %q", line, w)
				}
			}
		})
	}
}

func TestCLIHelpAndVersion(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, nil, "--help")
	if code != 0 || !strings.Contains(stdout, "Examples") || stderr != "" {
		t.Errorf("--help: exit %d, stdout %q, stderr %q; want exit 0 and Examples on stdout", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "mcp-tasks-proxy ") || strings.Count(stdout, "\n") != 1 || stderr != "" {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; want exit 0 and one line", code, stdout, stderr)
	}
}

// TestCLIURLFromEnv: MCP_TASKS_PROXY_URL stands in for the argument.
func TestCLIURLFromEnv(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, nil, "MCP_TASKS_PROXY_URL="+up.URL)
	p.initialize()
	if n := len(up.requests("server/discover")); n != 1 {
		t.Errorf("the upstream named by MCP_TASKS_PROXY_URL saw %d probes, want 1", n)
	}
}

// TestCLIHeaders: --header values reach the upstream on every request, with
// or without a space after the colon.
func TestCLIHeaders(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{"--header", "X-Test:value", "--header", "X-Test2: v 2", "--header", "X-Env: ${E2E_HEADER_VALUE}", up.URL},
		"E2E_HEADER_VALUE=from-env")
	p.initialize()
	resultOf(t, p.call("1", "tools/call", `{"name":"echo","arguments":{"text":"h"}}`))
	// discover, the proxy's own tools/list (a first tools/call learns the
	// x-mcp-header annotations), and the call; the list-change stream
	// (subscriptions/listen) opens on its own schedule and is left out.
	var exs []*exchange
	for _, ex := range up.requests("") {
		if ex.RPCMethod != "subscriptions/listen" {
			exs = append(exs, ex)
		}
	}
	if len(exs) != 3 {
		t.Fatalf("upstream saw %d requests besides the listen stream, want 3", len(exs))
	}
	for _, ex := range exs {
		for name, want := range map[string]string{"X-Test": "value", "X-Test2": "v 2", "X-Env": "from-env"} {
			if got := ex.Header.Values(name); len(got) != 1 || got[0] != want {
				t.Errorf("%s: header %s = %q, want [%q]", ex.RPCMethod, name, got, want)
			}
		}
	}
}

// TestQuietSession: a whole clean session at the default log level writes
// only JSON-RPC lines to stdout and nothing at all to stderr.
func TestQuietSession(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{up.URL})
	p.initialize()
	resultOf(t, p.call("1", "ping", ""))
	resultOf(t, p.call("3", "tools/call", `{"name":"echo","arguments":{"text":"quiet"}}`))
	resultOf(t, p.call("4", "logging/setLevel", `{"level":"info"}`))
	resultOf(t, p.call("5", "tools/call", `{"name":"slow_count","arguments":{"n":3},"_meta":{"progressToken":5}}`))
	resultOf(t, p.call("6", "prompts/get", `{"name":"greeting","arguments":{"name":"q"}}`))
	resultOf(t, p.call("7", "resources/read", `{"uri":"demo://readme"}`))
	resultOf(t, p.call("8", "prompts/list", `{}`))
	resultOf(t, p.call("9", "resources/list", `{}`))
	p.closeStdin()
	if code := p.waitExit(waitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	// Every line was checked by the reader; here: nothing else was written.
	for _, l := range p.all() {
		if !gjson.ValidBytes(l) || gjson.GetBytes(l, "jsonrpc").String() != "2.0" {
			t.Errorf("stdout line is not JSON-RPC: %s", shortBytes(l))
		}
	}
	if s := p.stderr.String(); s != "" {
		t.Errorf("stderr at the default log level in a clean session = %q, want nothing", s)
	}
}

// TestExitOnStdinEOF: closing stdin ends the process with status 0 within
// 5 s (docs/reliability.md: clean exit), idle or with a long request in flight,
// whose upstream request is then cancelled.
func TestExitOnStdinEOF(t *testing.T) {
	t.Parallel()
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		p.initialize()
		p.closeStdin()
		if code := p.waitExit(5 * time.Second); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
	})
	t.Run("request in flight", func(t *testing.T) {
		t.Parallel()
		cw := newCancelWatch()
		up := newUpstream(t, cw)
		p := startProxy(t, []string{up.URL})
		p.initialize()
		startSlowCount(p, `"slow"`)
		p.closeStdin()
		if code := p.waitExit(5 * time.Second); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
		waitClosed(t, cw.ctxDone, "cancellation of the in-flight upstream request")
	})
	t.Run("in-flight bound reached", func(t *testing.T) {
		t.Parallel()
		// One slot, taken by a long call; a second request waits for it.
		cw := newCancelWatch()
		up := newUpstream(t, cw)
		p := startProxy(t, []string{"--max-in-flight", "1", up.URL})
		p.initialize()
		startSlowCount(p, `"slow"`)
		p.request(`"queued"`, "tools/call", `{"name":"echo","arguments":{"text":"queued"}}`)
		p.closeStdin()
		if code := p.waitExit(5 * time.Second); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
	})
	t.Run("initialize in flight", func(t *testing.T) {
		t.Parallel()
		// The server takes the probe and never answers it.
		up := newUpstream(t, &fakeServer{Discover: func(_ http.ResponseWriter, r *http.Request, _ string) {
			<-r.Context().Done()
		}})
		p := startProxy(t, []string{up.URL})
		p.request("1", "initialize", initParams)
		up.waitRequest(t, "the discover probe", func(ex *exchange) bool { return ex.RPCMethod == "server/discover" })
		p.closeStdin()
		if code := p.waitExit(5 * time.Second); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
	})
	t.Run("before initialize", func(t *testing.T) {
		t.Parallel()
		p := startProxy(t, []string{closedURL(t)})
		p.closeStdin()
		if code := p.waitExit(5 * time.Second); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
		if s := p.stderr.String(); s != "" {
			t.Errorf("stderr = %q, want nothing", s)
		}
	})
}

// TestExitOnSIGTERM: SIGTERM (or SIGHUP, a terminal's hang-up) with a
// request in flight ends the process with status 0 within 5 s, and cancels
// the upstream request. stdin stays open and in blocking mode, as a host
// hands it over, so the proxy's reader is waiting for input when the
// signal comes (in Go's poller on its own copy of the pipe on Linux, in
// read(2) elsewhere): that wait must not hold the exit, and the proxy must
// not have changed the pipe's mode for whoever shares it.
func TestExitOnSIGTERM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		queued bool
		sig    syscall.Signal
	}{
		{"request in flight", nil, false, syscall.SIGTERM},
		{"in-flight bound reached", []string{"--max-in-flight", "1"}, true, syscall.SIGTERM},
		{"SIGHUP", nil, false, syscall.SIGHUP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cw := newCancelWatch()
			up := newUpstream(t, cw)
			p := startProxy(t, append(tc.args, up.URL))
			p.initialize()
			startSlowCount(p, `"slow"`)
			if tc.queued {
				p.request(`"queued"`, "tools/call", `{"name":"echo","arguments":{"text":"queued"}}`)
			}
			if nonblock, ok := stdinNonblocking(t, p.cmd.Process.Pid); ok && nonblock {
				t.Error("the proxy put its stdin pipe in non-blocking mode, which outlives a SIGKILL for whoever shares the pipe")
			}
			if err := p.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			if code := p.waitExit(5 * time.Second); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
			waitClosed(t, cw.ctxDone, "cancellation of the in-flight upstream request")
		})
	}
}

// stdinNonblocking reports whether the process's stdin has O_NONBLOCK set,
// from /proc/PID/fdinfo/0 (its flags, in octal); ok is false where there is
// no /proc.
func stdinNonblocking(t *testing.T, pid int) (nonblock, ok bool) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/0", pid))
	if errors.Is(err, fs.ErrNotExist) && runtime.GOOS != "linux" {
		return false, false
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "flags:"); found {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatalf("fdinfo flags %q: %v", v, err)
			}
			return flags&syscall.O_NONBLOCK != 0, true
		}
	}
	t.Fatalf("no flags line in /proc/%d/fdinfo/0:\n%s", pid, b)
	return false, false
}
