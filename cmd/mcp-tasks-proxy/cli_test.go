package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestHelpOnEverySubcommand: --help, -h and `help X` exit 0 with the
// command's help (with examples) on stdout and nothing on stderr.
func TestHelpOnEverySubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stdout
	}{
		{[]string{"--help"}, "Examples:"},
		{[]string{"-h"}, "Examples:"},
		{[]string{"help"}, "Examples:"},
		{[]string{"help", "help"}, "Examples:"},
		{[]string{"trace", "--help"}, "Examples:"},
		{[]string{"trace", "-h"}, "Examples:"},
		{[]string{"trace", "view", "--help"}, "Examples:"},
		{[]string{"trace", "view", "-h"}, "Examples:"},
		{[]string{"trace", "stats", "--help"}, "Examples:"},
		{[]string{"help", "trace"}, "Examples:"},
		{[]string{"help", "trace", "view"}, "Examples:"},
		{[]string{"rewrite", "--help"}, "Examples:"},
		{[]string{"rewrite", "-h"}, "Examples:"},
		{[]string{"help", "rewrite"}, "Examples:"},
		{[]string{"auth", "--help"}, "Examples:"},
		{[]string{"auth", "-h"}, "Examples:"},
		{[]string{"auth", "login", "--help"}, "Examples:"},
		{[]string{"auth", "status", "-h"}, "Examples:"},
		{[]string{"auth", "logout", "--help"}, "Examples:"},
		{[]string{"help", "auth"}, "Examples:"},
		{[]string{"help", "auth", "login"}, "Examples:"},
		{[]string{"completion", "--help"}, "Examples:"},
		{[]string{"completion", "-h"}, "Examples:"},
		{[]string{"help", "completion"}, "Examples:"},
		{[]string{"version", "--help"}, "Usage"},
		{[]string{"version", "-h"}, "Usage"},
		{[]string{"help", "version"}, "version"},
	} {
		r := runBounded(t, tc.args, strings.NewReader(""), env())
		if r.code != 0 || !strings.Contains(r.stdout, tc.want) || r.stderr != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout has %q: %v; want exit 0, the help on stdout", tc.args, r.code, r.stderr, tc.want, strings.Contains(r.stdout, tc.want))
		}
	}
	r := runBounded(t, []string{"help", "bogus"}, strings.NewReader(""), env())
	if r.code != 2 || !strings.Contains(r.stderr, "unknown command") || r.stdout != "" {
		t.Errorf("help bogus: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestVersionSubcommand(t *testing.T) {
	r := runBounded(t, []string{"version"}, strings.NewReader(""), env())
	if r.code != 0 || r.stdout != versionLine()+"\n" || r.stderr != "" {
		t.Errorf("version: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if r := runBounded(t, []string{"version", "x"}, strings.NewReader(""), env()); r.code != 2 {
		t.Errorf("version x: exit %d, want 2", r.code)
	}
}

// mentions reports whether help names the flag as it is typed.
func mentions(help, name string) bool {
	return regexp.MustCompile(`(^|[\s,(])` + regexp.QuoteMeta(dashes(name)) + `([\s,)]|$)`).MatchString(help)
}

// TestSubcommandHelpNamesEveryFlag: every flag of rewrite, trace and
// completion is in its help (the proxy's and auth's: TestHelpNamesEveryFlag).
func TestSubcommandHelpNamesEveryFlag(t *testing.T) {
	flags := commandFlags()
	for sub, help := range map[string]string{"rewrite": rewriteHelp, "trace": traceHelp, "completion": completionHelp, "": helpText} {
		for _, f := range flags[sub] {
			if !mentions(help, f.name) {
				t.Errorf("%s --help does not mention %s", sub, f.word)
			}
		}
	}
}

// TestDidYouMean: a mistyped flag gets the nearest one, on every command.
func TestDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--insecur", testURL}, "did you mean --insecure?"},
		{[]string{"--conect-timeout", "10", testURL}, "did you mean --connect-timeout?"},
		{[]string{"--ignore-tools", "x", testURL}, "did you mean --ignore-tool?"},
		{[]string{"--silnt", testURL}, "did you mean --silent?"},
		{[]string{"--drain", "1", testURL}, "did you mean --drain-timeout?"},
		{[]string{"rewrite", "--dwn"}, "did you mean --down?"},
		{[]string{"auth", "login", "--no-browsr", testURL}, "did you mean --no-browser?"},
		{[]string{"trace", "view", "--hlep"}, "did you mean --help?"},
	} {
		r := runBounded(t, tc.args, strings.NewReader(""), env())
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	r := runBounded(t, []string{"--zzzzzzzz", testURL}, strings.NewReader(""), env())
	if r.code != 2 || strings.Contains(r.stderr, "did you mean") || !strings.Contains(r.stderr, "unknown flag --zzzzzzzz") {
		t.Errorf("a flag near nothing: stderr %q, want no suggestion", r.stderr)
	}
}

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"insecur", "insecure", 1}, {"flaw", "lawn", 2}} {
		if d := levenshtein(tc.a, tc.b); d != tc.d {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// TestDurationsTakeBareSeconds: every duration flag takes 10 (seconds) as
// well as 10s, and a wrong value gets an error that shows the form.
func TestDurationsTakeBareSeconds(t *testing.T) {
	var c config
	var durations []string
	newFlagSet(&c).VisitAll(func(f *flag.Flag) {
		switch f.Value.(type) {
		case duration:
			durations = append(durations, f.Name)
		}
	})
	if len(durations) < 7 {
		t.Fatalf("duration flags %q: want at least 7", durations)
	}
	for _, name := range durations {
		for _, v := range []string{"10", "10s", "0.5", "1m"} {
			if _, err := parseArgs([]string{"--" + name, v, testURL}, env()); err != nil {
				t.Errorf("--%s %s: %v", name, v, err)
			}
		}
		c, err := parseArgs([]string{"--" + name, "7", testURL}, env())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]time.Duration{"connect-timeout": c.up.ConnectTimeout, "discover-timeout": c.sess.DiscoverTimeout,
			"response-header-timeout": c.up.ResponseHeaderTimeout, "idle-timeout": c.sess.IdleTimeout, "request-timeout": c.sess.RequestTimeout,
			"drain-timeout": c.sess.DrainTimeout, "auth-timeout": c.oauth.AuthTimeout, "poll-timeout": c.sess.PollTimeout}[name]
		if got != 7*time.Second {
			t.Errorf("--%s 7 = %v, want 7s", name, got)
		}
		_, err = parseArgs([]string{"--" + name, "ten", testURL}, env())
		wantUsageError(t, []string{"--" + name, "ten"}, err, "--"+name, "ten", "seconds (", "2m")
	}
	// 0 means none where that has a meaning.
	for _, name := range []string{"request-timeout", "drain-timeout"} {
		if _, err := parseArgs([]string{"--" + name, "0", testURL}, env()); err != nil {
			t.Errorf("--%s 0: %v", name, err)
		}
	}
	_, err := parseArgs([]string{"--connect-timeout", "0", testURL}, env())
	wantUsageError(t, nil, err, "--connect-timeout", "positive")
}

// TestMCPRemoteFlags: mcp-remote's command line means the same here.
func TestMCPRemoteFlags(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache) // darwin's cache dir
	c, err := parseArgs([]string{testURL, "9696", "--host", "localhost", "--allow-http", "--ignore-tool", "delete*", "--ignore-tool", "rm", "--resource", "https://mcp.example.com/", "--header", "X-A: 1"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if c.url != testURL || c.oauth.CallbackPort != 9696 || c.oauth.CallbackHost != "localhost" || !c.allowHTTP ||
		strings.Join(c.sess.IgnoreTools, ",") != "delete*,rm" || c.oauth.Resource != "https://mcp.example.com/" || c.up.Header.Get("X-A") != "1" {
		t.Errorf("parsed %+v", c)
	}
	c, err = parseArgs([]string{"--url", testURL, "8080"}, env())
	if err != nil || c.oauth.CallbackPort != 8080 {
		t.Errorf("--url URL PORT: %v, port %d", err, c.oauth.CallbackPort)
	}
	c, err = parseArgs([]string{testURL, "--debug"}, env())
	if err != nil || c.logLevel != "debug" || !c.debugDefault || c.logFile == "" || !strings.HasPrefix(c.logFile, cache) {
		t.Errorf("--debug: %v, level %q, file %q (cache %s)", err, c.logLevel, c.logFile, cache)
	}
	c, err = parseArgs([]string{testURL, "--debug", "--log-file", "/tmp/x.log"}, env())
	if err != nil || c.logLevel != "debug" || c.debugDefault || c.logFile != "/tmp/x.log" {
		t.Errorf("--debug --log-file: %v, %q %q", err, c.logLevel, c.logFile)
	}
	c, err = parseArgs([]string{testURL, "--silent"}, env())
	if err != nil || c.logLevel != "error" {
		t.Errorf("--silent: %v, level %q", err, c.logLevel)
	}
	for _, tc := range []struct {
		args []string
		has  []string
	}{
		{[]string{testURL, "9696", "--oauth-callback-port", "1234"}, []string{"9696", "1234"}},
		{[]string{testURL, "--host", "localhost", "--oauth-callback-host", "::1"}, []string{"--host", "--oauth-callback-host"}},
		{[]string{testURL, "--host", "example.com"}, []string{"example.com"}},
		{[]string{testURL, "--debug", "--silent"}, []string{"--debug", "--silent"}},
		{[]string{testURL, "--debug", "--log-level", "warn"}, []string{"--debug", "warn"}},
		{[]string{testURL, "--silent", "--log-level", "info"}, []string{"--silent", "info"}},
		{[]string{testURL, "--ignore-tool", " "}, []string{"--ignore-tool"}},
		{[]string{testURL, "99999"}, []string{"99999"}},
	} {
		_, err := parseArgs(tc.args, env())
		wantUsageError(t, tc.args, err, tc.has...)
	}
}

// TestDebugNamesItsFile: --debug writes debug logs to a file under the
// user cache dir and names it on stderr once; stdout stays protocol-only.
func TestDebugNamesItsFile(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	url := startDemo(t)
	r := runBounded(t, []string{"--debug", url}, strings.NewReader(initializeLine+"\n"), env())
	path, err := debugLogPath()
	if err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || r.stderr != "mcp-tasks-proxy: debug log: "+path+"\n" {
		t.Errorf("exit %d, stderr %q; want one line naming %s", r.code, r.stderr, path)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(b, []byte("DEBUG")) || !bytes.Contains(b, []byte("frame from client")) {
		t.Errorf("debug log %s: %v, %d bytes; want debug records", path, err, len(b))
	}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !gjson.Valid(l) {
			t.Errorf("stdout line %q is not JSON", l)
		}
	}
}

// TestPipedSessionDrains: initialize and a tools/call piped in at once
// are both answered before the exit (no cancel at the end of input).
func TestPipedSessionDrains(t *testing.T) {
	url := startDemo(t)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"piped"}}}`
	r := runBounded(t, []string{url}, strings.NewReader(initializeLine+"\n"+call+"\n"), env())
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || gjson.Get(lines[0], "id").Raw != "1" || gjson.Get(lines[1], "result.content.0.text").Str != "piped" {
		t.Errorf("exit %d, stdout %q; want initialize's answer, then the echo", r.code, r.stdout)
	}
}

// TestIgnoreToolAgainstDemo: --ignore-tool hides echo and refuses its call.
func TestIgnoreToolAgainstDemo(t *testing.T) {
	url := startDemo(t)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	r := runBounded(t, []string{url, "--ignore-tool", "ECH*"}, strings.NewReader(initializeLine+"\n"+list+"\n"+call+"\n"), env())
	answers := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		answers[gjson.Get(l, "id").Raw] = l
	}
	names := gjson.Get(answers["2"], "result.tools.#.name").Array()
	if len(names) == 0 {
		t.Fatalf("tools/list: %s", answers["2"])
	}
	for _, n := range names {
		if n.Str == "echo" {
			t.Errorf("echo is listed despite --ignore-tool ECH*")
		}
	}
	if gjson.Get(answers["3"], "error.code").Int() != -32602 || !strings.Contains(answers["3"], "--ignore-tool ECH*") {
		t.Errorf("tools/call echo: %s, want a -32602 naming the pattern", answers["3"])
	}
}

// TestHello: from a terminal, one line on stderr says what this is, the
// upstream, and how to end; nothing on stdout. --silent drops it.
func TestHello(t *testing.T) {
	old := isTTY
	isTTY = func(io.Reader) bool { return true }
	defer func() { isTTY = old }()
	url := startDemo(t)
	r := runBounded(t, []string{url}, strings.NewReader(""), env())
	if r.code != 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 ||
		!strings.Contains(r.stderr, url) || !strings.Contains(r.stderr, "Ctrl-") || !strings.Contains(r.stderr, "JSON-RPC message a line") {
		t.Errorf("exit %d, stdout %q, stderr %q; want one greeting line on stderr", r.code, r.stdout, r.stderr)
	}
	r = runBounded(t, []string{url}, strings.NewReader(initializeLine+"\n"), env())
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 2 || lines[1] != "mcp-tasks-proxy: the server speaks 2026-07-28: bridging" {
		t.Errorf("after initialize: stderr %q, want the greeting, then the era", r.stderr)
	}
	r = runBounded(t, []string{"--demo-legacy"}, strings.NewReader(initializeLine+"\n"), env())
	if !strings.Contains(r.stderr, "the server speaks 2025-11-25: passing it through") {
		t.Errorf("legacy demo: stderr %q, want the era", r.stderr)
	}
	r = runBounded(t, []string{url, "--silent"}, strings.NewReader(initializeLine+"\n"), env())
	if r.stderr != "" {
		t.Errorf("--silent: stderr %q, want nothing", r.stderr)
	}
	isTTY = old
	r = runBounded(t, []string{url}, strings.NewReader(""), env())
	if r.stderr != "" {
		t.Errorf("not a terminal: stderr %q, want nothing", r.stderr)
	}
}

// TestNoColor: colour needs a terminal and no NO_COLOR; the console logger
// colours its levels only when asked.
func TestNoColor(t *testing.T) {
	var buf bytes.Buffer
	if colorOK(&buf, env()) {
		t.Error("colour on a buffer")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !colorOK(tty, env()) || colorOK(tty, env("NO_COLOR", "1")) || colorOK(tty, env("TERM", "dumb")) {
			t.Error("a terminal: colour must follow NO_COLOR and TERM=dumb")
		}
	}
	for _, color := range []bool{false, true} {
		var out bytes.Buffer
		cfg := &config{logLevel: "warn", logFormat: "console"}
		logger, closeLog, err := newLogger(cfg, &out, color)
		if err != nil {
			t.Fatal(err)
		}
		logger.Warn("w")
		closeLog()
		if has := strings.Contains(out.String(), "\x1b["); has != color {
			t.Errorf("color %v: log %q", color, out.String())
		}
	}
}

// TestTraceViewStdin: trace view - (and no file) reads stdin.
func TestTraceViewStdin(t *testing.T) {
	line := `{"ts":"2026-01-01T00:00:00Z","dir":"client->proxy","op":"op-1","method":"ping","id":1,"frame":{"jsonrpc":"2.0","id":1,"method":"ping"}}` + "\n"
	for _, args := range [][]string{{"trace", "view", "-"}, {"trace", "view"}, {"trace", "stats", "-"}} {
		r := runBounded(t, args, strings.NewReader(line), env())
		if r.code != 0 || !strings.Contains(r.stdout, "ping") || r.stderr != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}
	r := runBounded(t, []string{"trace", "view", "a", "b"}, strings.NewReader(""), env())
	if r.code != 2 {
		t.Errorf("two files: exit %d, want 2", r.code)
	}
}

// TestCompletion: the scripts name every subcommand and every flag of the
// proxy, and parse as scripts of their shell where it is installed.
func TestCompletion(t *testing.T) {
	var c config
	fs := newFlagSet(&c)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := runBounded(t, []string{"completion", shell}, strings.NewReader(""), env())
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("completion %s: exit %d, stderr %q", shell, r.code, r.stderr)
		}
		for _, sub := range subcommands {
			if !strings.Contains(r.stdout, sub) {
				t.Errorf("completion %s does not name %s", shell, sub)
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			word := dashes(f.Name)
			if shell == "fish" {
				word = "-l " + f.Name
				if len(f.Name) == 1 {
					word = "-s " + f.Name
				}
			}
			if !strings.Contains(r.stdout, word) {
				t.Errorf("completion %s does not name %s", shell, word)
			}
		})
		bin, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s is not installed: the %s script is not parsed", shell, shell)
			continue
		}
		file := filepath.Join(t.TempDir(), "c."+shell)
		if err := os.WriteFile(file, []byte(r.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
	}
	if r := runBounded(t, []string{"completion", "tcsh"}, strings.NewReader(""), env()); r.code != 2 {
		t.Errorf("completion tcsh: exit %d, want 2", r.code)
	}
}
