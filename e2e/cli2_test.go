package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

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
