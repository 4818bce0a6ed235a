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
	"path/filepath"
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

const (
	pipedInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}`
	pipedEcho = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"piped"}}}`
)

// answersByID splits stdout into JSON-RPC lines and returns the responses
// by id; an id answered twice fails the test.
func answersByID(t *testing.T, stdout string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		if !gjson.Valid(l) || gjson.Get(l, "jsonrpc").Str != "2.0" {
			t.Errorf("stdout line is not JSON-RPC: %q", l)
			continue
		}
		if gjson.Get(l, "method").Exists() {
			continue // a notification
		}
		id := gjson.Get(l, "id").Raw
		if _, dup := got[id]; dup {
			t.Errorf("id %s answered twice", id)
		}
		got[id] = l
	}
	return got
}

// TestPipedSessionAnswersBoth: printf 'initialize\ntools/call\n' |
// mcp-tasks-proxy --demo prints both answers, then exits 0.
func TestPipedSessionAnswersBoth(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLIStdin(t, nil, []byte(pipedInit+"\n"+pipedEcho+"\n"), "--demo")
	got := answersByID(t, stdout)
	if code != 0 || !gjson.Get(got["1"], "result.protocolVersion").Exists() || gjson.Get(got["2"], "result.content.0.text").Str != "piped" {
		t.Errorf("exit %d, stdout %q, stderr %q; want both answers", code, stdout, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing", stderr)
	}
}

// TestDrainTimeoutBound: a call still running when --drain-timeout (bare
// seconds here) passes gets one error answer naming the flag; with
// --drain-timeout 0 it is cancelled without an answer, as before.
func TestDrainTimeoutBound(t *testing.T) {
	t.Parallel()
	slow := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":50,"delay_ms":10000}}}`
	in := []byte(pipedInit + "\n" + slow + "\n")
	code, stdout, _ := runCLIStdin(t, nil, in, "--demo", "--drain-timeout", "0.3")
	got := answersByID(t, stdout)
	if code != 0 || got["1"] == "" {
		t.Fatalf("exit %d, stdout %q; want 0 and initialize answered", code, stdout)
	}
	if e := gjson.Get(got["2"], "error.message").Str; !strings.Contains(e, "--drain-timeout") {
		t.Errorf("slow call: %q, want an error naming --drain-timeout", got["2"])
	}
	code, stdout, _ = runCLIStdin(t, nil, in, "--demo", "--drain-timeout", "0")
	got = answersByID(t, stdout)
	if _, ok := got["2"]; code != 0 || ok {
		t.Errorf("--drain-timeout 0: exit %d, slow call answered %q; want no answer", code, got["2"])
	}
}

// TestHelpEverywhere: --help and -h exit 0 on every command, help and
// version are commands, and nothing reaches stderr.
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"help"}, {"help", "trace"}, {"help", "auth"}, {"help", "rewrite"}, {"help", "completion"},
		{"trace", "--help"}, {"trace", "-h"}, {"trace", "view", "--help"}, {"trace", "stats", "-h"},
		{"rewrite", "-h"}, {"rewrite", "--help"}, {"auth", "-h"}, {"auth", "login", "--help"},
		{"completion", "--help"}, {"version", "-h"}, {"--help"}, {"-h"},
	} {
		code, stdout, stderr := runCLI(t, nil, args...)
		if code != 0 || !strings.Contains(stdout, "Usage") || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %d bytes; want 0 and the help", args, code, stderr, len(stdout))
		}
	}
	code, stdout, _ := runCLI(t, nil, "version")
	if code != 0 || !strings.HasPrefix(stdout, "mcp-tasks-proxy ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("version: exit %d, stdout %q", code, stdout)
	}
}

// TestDidYouMeanAndDurationForm: a mistyped flag gets a suggestion, a bad
// duration shows the form, and bare seconds are taken.
func TestDidYouMeanAndDurationForm(t *testing.T) {
	t.Parallel()
	url := "http://127.0.0.1:1/mcp"
	code, _, stderr := runCLI(t, nil, "--conect-timeout", "10", url)
	if code != 2 || !strings.Contains(stderr, "did you mean --connect-timeout?") {
		t.Errorf("mistyped flag: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, nil, "--connect-timeout", "ten", url)
	if code != 2 || !strings.Contains(stderr, "seconds (10)") || !strings.Contains(stderr, "10s") {
		t.Errorf("bad duration: exit %d, stderr %q; want the form", code, stderr)
	}
	code, _, stderr = runCLIStdin(t, nil, []byte{}, "--demo", "--connect-timeout", "10", "--idle-timeout", "600", "--request-timeout", "0")
	if code != 0 || stderr != "" {
		t.Errorf("bare seconds: exit %d, stderr %q", code, stderr)
	}
}

// TestCompletionScripts: the bash script parses (bash -n), and every
// shell's names the subcommands.
func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, stdout, stderr := runCLI(t, nil, "completion", shell)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "trace") || !strings.Contains(stdout, "ignore-tool") {
			t.Errorf("completion %s: exit %d, stderr %q", shell, code, stderr)
			continue
		}
		bin, err := exec.LookPath(shell)
		if err != nil {
			continue
		}
		file := filepath.Join(t.TempDir(), "completion."+shell)
		if err := os.WriteFile(file, []byte(stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v %s", shell, err, out)
		}
	}
}

// TestIgnoreToolE2E: --ignore-tool hides a tool and refuses its call.
func TestIgnoreToolE2E(t *testing.T) {
	t.Parallel()
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	code, stdout, _ := runCLIStdin(t, nil, []byte(pipedInit+"\n"+list+"\n"+pipedEcho+"\n"), "--demo", "--ignore-tool", "ech*", "--ignore-tool", "SLOW*")
	got := answersByID(t, stdout)
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	tools := gjson.Get(got["3"], "result.tools.#.name").Array()
	if len(tools) == 0 {
		t.Fatalf("tools/list: %q", got["3"])
	}
	for _, n := range tools {
		if n.Str == "echo" || strings.HasPrefix(n.Str, "slow") {
			t.Errorf("tool %s is listed despite --ignore-tool", n.Str)
		}
	}
	if gjson.Get(got["2"], "error.code").Int() != -32602 || !strings.Contains(got["2"], "--ignore-tool ech*") {
		t.Errorf("tools/call echo: %q, want -32602 naming the pattern", got["2"])
	}
}

// TestMCPRemoteCommandLine: mcp-remote's flags are taken: the callback
// port after the URL, --host, --allow-http, --header, --resource,
// --ignore-tool, --silent; --debug names its file on stderr.
func TestMCPRemoteCommandLine(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	in := []byte(pipedInit + "\n" + pipedEcho + "\n")
	code, stdout, stderr := runCLIStdin(t, nil, in, up.URL, "9696", "--host", "localhost", "--allow-http",
		"--header", "X-From: mcp-remote", "--resource", up.URL, "--ignore-tool", "nothing", "--silent")
	got := answersByID(t, stdout)
	if code != 0 || gjson.Get(got["2"], "result.content.0.text").Str != "piped" || stderr != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want the echo and a quiet stderr", code, stdout, stderr)
	}
	cache := t.TempDir()
	up2 := newDemoUpstream(t) // the upstream checks ids are fresh: one per proxy
	code, stdout, stderr = runCLIStdin(t, []string{"XDG_CACHE_HOME=" + cache, "HOME=" + cache}, in, up2.URL, "--debug")
	if code != 0 || !strings.HasPrefix(stderr, "mcp-tasks-proxy: debug log: ") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("--debug: exit %d, stderr %q; want one line naming the file", code, stderr)
	}
	path := strings.TrimSpace(strings.TrimPrefix(stderr, "mcp-tasks-proxy: debug log: "))
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "DEBUG") {
		t.Errorf("debug log %s: %v", path, err)
	}
	if len(answersByID(t, stdout)) != 2 {
		t.Errorf("--debug: stdout %q, want both answers", stdout)
	}
}

// TestTerminalHelloAndNoColor: from a terminal (script(1) makes one), one
// greeting line names the upstream and Ctrl-D; console logs are coloured
// unless NO_COLOR is set.
func TestTerminalHelloAndNoColor(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil || runtime.GOOS != "linux" {
		t.Skip("needs util-linux script(1) to give the proxy a terminal")
	}
	for _, noColor := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		cmd := exec.CommandContext(ctx, script, "-qec", binPath+" --demo --log-level info", "/dev/null")
		env := []string{"TERM=xterm"}
		if noColor {
			env = append(env, "NO_COLOR=1")
		}
		cmd.Env = proxyEnv(env...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("script: %v: %q", err, out)
		}
		s := string(out)
		if !strings.Contains(s, "bridging to the embedded demo server at http://127.0.0.1:") || !strings.Contains(s, "Ctrl-D") {
			t.Errorf("no greeting in %q", s)
		}
		if has := strings.Contains(s, "\x1b["); has == noColor {
			t.Errorf("NO_COLOR=%v: escape codes %v in %q", noColor, has, s)
		}
	}
}
