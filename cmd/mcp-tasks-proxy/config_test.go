package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// TestMain keeps the proxies' default OAuth store out of the user's config
// directory.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-tasks-proxy-cmd-test-")
	if err == nil {
		os.Setenv("XDG_CONFIG_HOME", dir)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// waitBound bounds every wait in this file; it is a hang guard, not a speed
// assertion.
const waitBound = 15 * time.Second

const testURL = "https://mcp.example.com/mcp"

// env returns a getenv over a fixed map.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// wantUsageError checks err is a one-line usageError mentioning every
// string in has.
func wantUsageError(t *testing.T, args []string, err error, has ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("parseArgs(%q) succeeded, want a usage error", args)
	}
	var ue usageError
	if !errors.As(err, &ue) {
		t.Errorf("parseArgs(%q) error %T %q, want a usageError", args, err, err)
	}
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\r\n") {
		t.Errorf("parseArgs(%q) error %q, want one non-empty line", args, msg)
	}
	for _, s := range has {
		if !strings.Contains(msg, s) {
			t.Errorf("parseArgs(%q) error %q does not mention %q", args, msg, s)
		}
	}
}

func TestParseArgsDefaults(t *testing.T) {
	c, err := parseArgs([]string{testURL}, env())
	if err != nil {
		t.Fatal(err)
	}
	if c.url != testURL || c.demo || c.help || c.version {
		t.Errorf("config %+v", c)
	}
	if c.logLevel != "warn" || c.logFormat != "console" || c.logFile != "" {
		t.Errorf("log defaults %q %q %q, want warn console and no file", c.logLevel, c.logFormat, c.logFile)
	}
	if c.sess.MaxInFlight != bridge.DefaultMaxInFlight {
		t.Errorf("maxInFlight = %d, want %d", c.sess.MaxInFlight, bridge.DefaultMaxInFlight)
	}
	if c.sess.MaxMessageBytes != routing.DefaultMaxMessageBytes {
		t.Errorf("maxMessage = %d, want %d", c.sess.MaxMessageBytes, routing.DefaultMaxMessageBytes)
	}
	if c.up.ConnectTimeout != routing.DefaultConnectTimeout || c.sess.DiscoverTimeout != bridge.DefaultDiscoverTimeout {
		t.Errorf("timeouts %v %v", c.up.ConnectTimeout, c.sess.DiscoverTimeout)
	}
	if len(c.up.Header) != 0 {
		t.Errorf("headers %v, want none", c.up.Header)
	}
	if c.sess.Protocol != bridge.ProtocolAuto || c.demoLegacy {
		t.Errorf("protocol %q demoLegacy %v, want auto and no legacy demo", c.sess.Protocol, c.demoLegacy)
	}
}

func TestParseArgsProtocolAndLegacyDemo(t *testing.T) {
	for _, p := range []string{bridge.ProtocolAuto, bridge.ProtocolModern, bridge.ProtocolLegacy} {
		c, err := parseArgs([]string{"--protocol", p, testURL}, env())
		if err != nil || c.sess.Protocol != p {
			t.Errorf("--protocol %s: %v, %+v", p, err, c)
		}
	}
	c, err := parseArgs([]string{"--demo-legacy"}, env())
	if err != nil || !c.demo || !c.demoLegacy || c.url != "" {
		t.Errorf("--demo-legacy: %v, demo %v legacy %v url %q", err, c.demo, c.demoLegacy, c.url)
	}
}

func TestParseArgsURL(t *testing.T) {
	const other = "http://127.0.0.1:8080/mcp"
	tests := []struct {
		name   string
		args   []string
		getenv func(string) string
		url    string
		demo   bool
	}{
		{"positional", []string{testURL}, env(), testURL, false},
		{"--url", []string{"--url", testURL}, env(), testURL, false},
		{"--url=", []string{"--url=" + testURL}, env(), testURL, false},
		{"environment", nil, env(envURL, testURL), testURL, false},
		{"positional beats the environment", []string{testURL}, env(envURL, other), testURL, false},
		{"--url beats the environment", []string{"--url", testURL}, env(envURL, other), testURL, false},
		{"the same URL twice", []string{"--url", testURL, testURL}, env(), testURL, false},
		{"--demo alone", []string{"--demo"}, env(), "", true},
		{"--demo ignores the environment", []string{"--demo"}, env(envURL, testURL), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseArgs(tt.args, tt.getenv)
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", tt.args, err)
			}
			if c.url != tt.url || c.demo != tt.demo {
				t.Errorf("url %q demo %v, want %q %v", c.url, c.demo, tt.url, tt.demo)
			}
		})
	}
}

// Flags may come before or after the URL.
func TestParseArgsFlagsAfterURL(t *testing.T) {
	for _, args := range [][]string{
		{testURL, "--log-level", "info"},
		{"--log-level", "info", testURL},
		{"--log-format", "json", testURL, "--log-level", "info", "--max-in-flight", "3"},
		{testURL, "--log-level=info", "--header", "X-A: 1"},
	} {
		c, err := parseArgs(args, env())
		if err != nil {
			t.Errorf("parseArgs(%q): %v", args, err)
			continue
		}
		if c.url != testURL || c.logLevel != "info" {
			t.Errorf("parseArgs(%q): url %q level %q", args, c.url, c.logLevel)
		}
	}
	c, err := parseArgs([]string{"--log-format", "json", testURL, "--log-level", "debug", "--max-in-flight", "3", "--connect-timeout", "2s", "--discover-timeout", "1m", "--log-file", "/tmp/x.log"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if c.logFormat != "json" || c.logLevel != "debug" || c.sess.MaxInFlight != 3 || c.up.ConnectTimeout != 2*time.Second ||
		c.sess.DiscoverTimeout != time.Minute || c.logFile != "/tmp/x.log" {
		t.Errorf("config %+v", c)
	}
}

func TestParseArgsUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  func(string) string
		has  []string
	}{
		{"missing URL", nil, env(), []string{"--url", envURL}},
		{"missing URL, empty environment value", nil, env(envURL, ""), []string{"--url", envURL}},
		{"URL twice, differently", []string{"--url", testURL, "http://other.example/mcp"}, env(), []string{"twice"}},
		{"two positionals", []string{testURL, "http://other.example/mcp"}, env(), []string{"http://other.example/mcp"}},
		{"--demo with a URL", []string{"--demo", testURL}, env(), []string{"--demo"}},
		{"--demo with --url", []string{"--demo", "--url", testURL}, env(), []string{"--demo"}},
		{"not an http URL", []string{"ftp://example.com/mcp"}, env(), nil},
		{"relative URL", []string{"/mcp"}, env(), nil},
		{"bad URL in the environment", nil, env(envURL, "mcp.example.com"), nil},
		{"--log-level bogus", []string{"--log-level", "bogus", testURL}, env(), []string{"bogus"}},
		{"--log-level warning", []string{"--log-level", "warning", testURL}, env(), []string{"warning"}},
		{"--log-format xml", []string{"--log-format", "xml", testURL}, env(), []string{"xml"}},
		{"--max-in-flight 0", []string{"--max-in-flight", "0", testURL}, env(), []string{"--max-in-flight"}},
		{"--max-in-flight -1", []string{"--max-in-flight", "-1", testURL}, env(), []string{"--max-in-flight"}},
		{"--max-in-flight x", []string{"--max-in-flight", "x", testURL}, env(), []string{"max-in-flight"}},
		{"--connect-timeout -1s", []string{"--connect-timeout", "-1s", testURL}, env(), []string{"positive"}},
		{"--connect-timeout 0", []string{"--connect-timeout", "0", testURL}, env(), []string{"positive"}},
		{"--discover-timeout 0s", []string{"--discover-timeout", "0s", testURL}, env(), []string{"positive"}},
		{"--connect-timeout ten", []string{"--connect-timeout", "ten", testURL}, env(), []string{"--connect-timeout", "ten", "seconds (10)", "10s"}},
		{"unknown flag", []string{"--nope", testURL}, env(), []string{"nope", "--help"}},
		{"unknown flag after the URL", []string{testURL, "--nope"}, env(), []string{"nope"}},
		{"flag without its value", []string{testURL, "--log-level"}, env(), []string{"log-level"}},
		{"header without a colon", []string{"--header", "NoColon", testURL}, env(), []string{"--header #1", "no colon", "Name: value"}},
		{"--protocol 2025", []string{"--protocol", "2025", testURL}, env(), []string{"2025", "auto", "modern", "legacy"}},
		{"--demo-legacy with --demo", []string{"--demo", "--demo-legacy"}, env(), []string{"--demo-legacy"}},
		{"--demo-legacy with a URL", []string{"--demo-legacy", testURL}, env(), []string{"--demo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseArgs(tt.args, tt.env)
			wantUsageError(t, tt.args, err, tt.has...)
		})
	}
}

// --help and --version need no URL.
func TestParseArgsHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"--help", "--log-level", "bogus"}} {
		c, err := parseArgs(args, env())
		if err != nil || !c.help {
			t.Errorf("parseArgs(%q) = %+v, %v; want help", args, c, err)
		}
	}
	c, err := parseArgs([]string{"--version"}, env())
	if err != nil || !c.version {
		t.Errorf("parseArgs(--version) = %+v, %v; want version", c, err)
	}
}

func TestParseArgsMaxMessageSize(t *testing.T) {
	for in, want := range map[string]int{
		"1048576":  1048576,
		"64KiB":    64 << 10,
		"2MiB":     2 << 20,
		"1GiB":     1 << 30,
		"512B":     512,
		" 3MiB ":   3 << 20,
		"128MiB":   128 << 20,
		"1":        1,
		"16 KiB":   16 << 10,
		"0000064":  64,
		"0001KiB":  1024,
		"999999":   999999,
		"+5":       5,
		"1024KiB":  1 << 20,
		"4096MiB":  4 << 30,
		"2GiB":     2 << 30,
		"131072B":  131072,
		"100KiB":   100 << 10,
		"7MiB":     7 << 20,
		"33554432": 32 << 20,
	} {
		args := []string{"--max-message-size", in, testURL}
		c, err := parseArgs(args, env())
		if err != nil {
			t.Errorf("parseArgs(%q): %v", args, err)
			continue
		}
		if c.sess.MaxMessageBytes != want {
			t.Errorf("--max-message-size %q = %d, want %d", in, c.sess.MaxMessageBytes, want)
		}
	}
	for _, in := range []string{"0", "-5", "lots", "", "KiB", "1.5MiB", "1MB", "1kib", "-1GiB", "0KiB", "1 GiB extra"} {
		args := []string{"--max-message-size", in, testURL}
		_, err := parseArgs(args, env())
		wantUsageError(t, args, err, "max-message-size")
	}
}

// A size whose product with its unit overflows int must be rejected, not
// wrapped around into a negative or tiny limit.
func TestParseArgsMaxMessageSizeOverflow(t *testing.T) {
	for _, in := range []string{
		"8589934592GiB",        // 2^33 GiB = 2^63 bytes: wraps to a negative int
		"17179869184GiB",       // 2^34 GiB = 2^64 bytes: wraps to 0
		"18014398509481985KiB", // (2^54+1) KiB: wraps to 1024 bytes
	} {
		args := []string{"--max-message-size", in, testURL}
		c, err := parseArgs(args, env())
		if err == nil {
			t.Errorf("--max-message-size %s accepted as %d bytes, want a usage error (the size overflows)", in, c.sess.MaxMessageBytes)
			continue
		}
		wantUsageError(t, args, err, "max-message-size")
	}
}

func TestParseHeader(t *testing.T) {
	lookup := func(k string) (string, bool) {
		switch k {
		case "TOKEN":
			return "s3cr3t", true
		case "EMPTY":
			return "", true
		case "NL":
			return "a\nInjected: 1", true
		}
		return "", false
	}
	tests := []struct {
		in          string
		name, value string
		errHas      string // "" means success
	}{
		{in: "X-Api-Key: abc", name: "X-Api-Key", value: "abc"},
		{in: "X-Api-Key:abc", name: "X-Api-Key", value: "abc"},
		{in: "  X-Api-Key  :   abc  ", name: "X-Api-Key", value: "abc"},
		{in: "X-Empty:", name: "X-Empty", value: ""},
		{in: "X-Colon: a:b:c", name: "X-Colon", value: "a:b:c"},
		{in: "X-Inner:  two  words ", name: "X-Inner", value: "two  words"},
		{in: "Authorization: Bearer ${TOKEN}", name: "Authorization", value: "Bearer s3cr3t"},
		{in: "X-Two: ${TOKEN}-${TOKEN}", name: "X-Two", value: "s3cr3t-s3cr3t"},
		{in: "X-Empty-Var: [${EMPTY}]", name: "X-Empty-Var", value: "[]"},
		{in: "Authorization: Bearer ${MISSING_VAR}", errHas: "MISSING_VAR"},
		{in: "X-A: ${TOKEN} ${ALSO_MISSING}", errHas: "ALSO_MISSING"},
		{in: "X Api: v", errHas: "a space as character 2"},
		{in: "X\tApi: v", errHas: "a tab as character 2"},
		{in: "X(Api): v", errHas: "'(' as character 2"},
		{in: "Xü: v", errHas: "a non-ASCII character as character 2"},
		{in: ": v", errHas: "Name: value"},
		{in: "NoColon", errHas: "Name: value"},
		{in: "X-A: a\r\nInjected: 1", errHas: "CR"},
		{in: "X-A: a\nb", errHas: "CR"},
		{in: "X-A: a\rb", errHas: "CR"},
		{in: "X-A: a\x00b", errHas: "NUL"},
		{in: "X-A: ${NL}", errHas: "CR"},
		{in: "X-Pass: pa$$word $HOME $ {x}", name: "X-Pass", value: "pa$$word $HOME $ {x}"}, // only ${NAME} expands
		{in: "X-Open: ${TOKEN", name: "X-Open", value: "${TOKEN"},
	}
	for _, tt := range tests {
		name, value, err := parseHeader(tt.in, "header", lookup)
		if tt.errHas != "" {
			if err == nil {
				t.Errorf("parseHeader(%q) = %q, %q; want an error mentioning %q", tt.in, name, value, tt.errHas)
			} else if !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("parseHeader(%q) error %q does not mention %q", tt.in, err, tt.errHas)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseHeader(%q): %v", tt.in, err)
			continue
		}
		if name != tt.name || value != tt.value {
			t.Errorf("parseHeader(%q) = %q, %q; want %q, %q", tt.in, name, value, tt.name, tt.value)
		}
	}
}

// --header through the command line: headerList.Set reads the process
// environment (os.LookupEnv), not parseArgs's getenv, so t.Setenv it is.
func TestParseArgsHeaders(t *testing.T) {
	t.Setenv("MCPTP_TEST_TOKEN", "tok-123")
	t.Setenv("MCPTP_TEST_NEWLINE", "a\r\nX-Injected: 1")
	c, err := parseArgs([]string{
		"--header", "X-One: 1",
		"--header", "X-Two:2",
		testURL,
		"--header", "  Authorization :  Bearer ${MCPTP_TEST_TOKEN} ",
		"--header", "X-One: again",
	}, env())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"X-One":         {"1", "again"},
		"X-Two":         {"2"},
		"Authorization": {"Bearer tok-123"},
	}
	if len(c.up.Header) != len(want) {
		t.Errorf("headers %v, want %v", c.up.Header, want)
	}
	for k, vs := range want {
		got := c.up.Header.Values(k)
		if strings.Join(got, "|") != strings.Join(vs, "|") {
			t.Errorf("header %s = %q, want %q", k, got, vs)
		}
	}

	for _, tc := range []struct {
		header string
		has    []string
	}{
		{"Authorization: Bearer ${MCPTP_TEST_SURELY_UNSET}", []string{"MCPTP_TEST_SURELY_UNSET"}},
		{"Bad Name: v", []string{"--header #1", "a space as character 4"}},
		{"X-A: ${MCPTP_TEST_NEWLINE}", []string{"CR"}},
		{"X-A: a\nX-Injected: 1", []string{"CR"}},
		{"X-A: a\rb", []string{"CR"}},
	} {
		args := []string{"--header", tc.header, testURL}
		_, err := parseArgs(args, env())
		wantUsageError(t, args, err, tc.has...)
		if err != nil && strings.Contains(err.Error(), "tok-123") {
			t.Errorf("error %q shows a secret from the environment", err)
		}
	}
}

// Secrets never reach a log: URL userinfo and query secrets are redacted in
// everything the proxy writes, usage errors included (hosts keep the stderr of
// their stdio servers in log files).
func TestUsageErrorsRedactURLSecrets(t *testing.T) {
	const secretURL = "https://alice:hunter2@mcp.example.com/mcp?api_key=topsecret"
	for _, args := range [][]string{
		{"--demo", secretURL},
		{"--url", secretURL, "https://mcp.example.com/other"},
		{"--url", "https://mcp.example.com/other", secretURL},
		{secretURL, "https://mcp.example.com/other"},
		{"https://mcp.example.com/other", secretURL},
		{"ftp://alice:hunter2@mcp.example.com/mcp?api_key=topsecret"},
	} {
		_, err := parseArgs(args, env())
		if err == nil {
			t.Errorf("parseArgs(%q) succeeded", args)
			continue
		}
		for _, secret := range []string{"hunter2", "topsecret"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("parseArgs(%q) error %q shows the secret %q", args, err, secret)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// run

// runResult is what run wrote and returned.
type runResult struct {
	code           int
	stdout, stderr string
}

// runBounded calls run in a goroutine and fails the test if it does not
// return within waitBound.
func runBounded(t *testing.T, args []string, stdin io.Reader, getenv func(string) string) runResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, stdin, &stdout, &stderr, getenv) }()
	select {
	case code := <-done:
		return runResult{code, stdout.String(), stderr.String()}
	case <-time.After(waitBound):
		t.Fatalf("run(%q) did not return within %v", args, waitBound)
		return runResult{}
	}
}

func TestRunHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		r := runBounded(t, []string{arg}, strings.NewReader(""), env())
		if r.code != 0 || !strings.Contains(r.stdout, "Examples") || r.stderr != "" {
			t.Errorf("run(%s): exit %d, stdout %q, stderr %q; want 0 and Examples on stdout", arg, r.code, r.stdout, r.stderr)
		}
	}
}

func TestRunVersion(t *testing.T) {
	r := runBounded(t, []string{"--version"}, strings.NewReader(""), env())
	if r.code != 0 || !strings.HasPrefix(r.stdout, "mcp-tasks-proxy ") || strings.Count(r.stdout, "\n") != 1 || r.stderr != "" {
		t.Errorf("run(--version): exit %d, stdout %q, stderr %q; want 0 and one line", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "(commit ") || !strings.Contains(r.stdout, runtime.Version()) || !strings.Contains(r.stdout, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("--version %q does not name the commit, the Go version and the platform", r.stdout)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--nope", testURL},
		{"--log-level", "bogus", testURL},
		{"--max-message-size", "lots", testURL},
		{"--log-file", "/nonexistent-dir-for-mcp-tasks-proxy-tests/x.log", testURL},
	} {
		r := runBounded(t, args, strings.NewReader(""), env())
		if r.code != 2 {
			t.Errorf("run(%q) exit %d, want 2 (stderr %q)", args, r.code, r.stderr)
		}
		if r.stdout != "" {
			t.Errorf("run(%q) stdout %q, want nothing", args, r.stdout)
		}
		line := strings.TrimSuffix(r.stderr, "\n")
		if !strings.HasPrefix(line, "mcp-tasks-proxy:") || strings.Contains(line, "\n") || !strings.HasSuffix(r.stderr, "\n") {
			t.Errorf("run(%q) stderr %q, want one line starting with mcp-tasks-proxy:", args, r.stderr)
		}
	}
	r := runBounded(t, nil, strings.NewReader(""), env())
	if !strings.Contains(r.stderr, "--url") || !strings.Contains(r.stderr, envURL) {
		t.Errorf("missing URL: stderr %q does not mention --url and %s", r.stderr, envURL)
	}
}

const (
	initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"config-test","version":"1.0"}}}`
	pingLine       = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
)

func startDemo(t *testing.T) string {
	t.Helper()
	url, stop, err := demo.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// A whole session on a fixed stdin: run cancels in-flight work at stdin EOF,
// so the initialize may or may not be answered; the ping is answered
// locally, and stdout carries only JSON-RPC lines.
func TestRunSessionAgainstDemo(t *testing.T) {
	url := startDemo(t)
	for name, tc := range map[string]struct {
		args   []string
		getenv func(string) string
	}{
		"positional URL":           {[]string{url}, env()},
		"URL from the environment": {nil, env(envURL, url)},
	} {
		t.Run(name, func(t *testing.T) {
			r := runBounded(t, tc.args, strings.NewReader(initializeLine+"\n"+pingLine+"\n"), tc.getenv)
			if r.code != 0 {
				t.Errorf("exit %d, want 0 (stderr %q)", r.code, r.stderr)
			}
			pings, inits := 0, 0
			for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
				if l == "" {
					continue
				}
				if !gjson.Valid(l) || gjson.Get(l, "jsonrpc").String() != "2.0" {
					t.Errorf("stdout line is not JSON-RPC: %q", l)
					continue
				}
				switch gjson.Get(l, "id").Raw {
				case "2":
					pings++
					if res := gjson.Get(l, "result"); res.Raw != "{}" {
						t.Errorf("ping answer %s, want result {}", l)
					}
				case "1":
					inits++
				default:
					t.Errorf("unexpected stdout line %s", l)
				}
			}
			if pings != 1 {
				t.Errorf("%d ping answers, want 1 (stdout %q)", pings, r.stdout)
			}
			if inits > 1 {
				t.Errorf("%d initialize answers, want at most 1", inits)
			}
			if r.stdout != "" && !strings.HasSuffix(r.stdout, "\n") {
				t.Errorf("stdout %q does not end with a newline", r.stdout)
			}
			if r.stderr != "" {
				t.Errorf("stderr %q at the default log level, want nothing", r.stderr)
			}
		})
	}
}

// An interactive session over pipes: the initialize is answered from the
// demo's server/discover before the ping is sent, then stdin is closed and
// run returns 0. Also covers --demo, which starts its own server, and
// --demo-legacy, whose 2025 server is passed through.
func TestRunInteractiveSession(t *testing.T) {
	v := schematest.Load(t)
	for name, tc := range map[string]struct {
		args   []string
		server string
	}{
		"--demo":        {[]string{"--demo"}, demo.ServerName},
		"--demo-legacy": {[]string{"--demo-legacy"}, "mcp-tasks-proxy-legacy-demo"},
		"URL":           {[]string{startDemo(t)}, demo.ServerName},
	} {
		args := tc.args
		t.Run(name, func(t *testing.T) {
			p := startPipedRun(t, args)
			p.write(initializeLine)
			init := p.next("initialize answer")
			if gjson.Get(init, "id").Raw != "1" || !gjson.Get(init, "result").IsObject() {
				t.Fatalf("initialize answer %s, want a result for id 1", init)
			}
			if got := gjson.Get(init, "result.protocolVersion").String(); got != "2025-11-25" {
				t.Errorf("protocolVersion %q, want 2025-11-25", got)
			}
			if got := gjson.Get(init, "result.serverInfo.name").String(); got != tc.server {
				t.Errorf("serverInfo.name %q, want %q", got, tc.server)
			}
			if err := v.ValidateClientBound([]byte(init), "initialize"); err != nil {
				t.Error(err)
			}
			if err := schematest.CheckLegacyClean([]byte(init), "initialize"); err != nil {
				t.Error(err)
			}
			p.write(pingLine)
			if l := p.next("ping answer"); l != `{"jsonrpc":"2.0","id":2,"result":{}}` {
				t.Errorf("ping answer %s", l)
			}
			p.finish()
			if s := p.stderr.String(); s != "" {
				t.Errorf("stderr %q at the default log level, want nothing", s)
			}
		})
	}
}

// pipedRun is run on pipes, driven a line at a time, every wait bounded.
type pipedRun struct {
	t      *testing.T
	inW    *io.PipeWriter
	lines  chan string // stdout's lines; closed at its end
	done   chan int    // run's exit status
	stderr *bytes.Buffer
}

// startPipedRun starts run(args) on pipes.
func startPipedRun(t *testing.T, args []string) *pipedRun {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &pipedRun{t: t, inW: inW, lines: make(chan string, 16), done: make(chan int, 1), stderr: &bytes.Buffer{}}
	go func() {
		code := run(args, inR, outW, p.stderr, env())
		_ = outW.Close()
		p.done <- code
	}()
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = outR.Close()
	})
	return p
}

// next is the next stdout line, which must be JSON.
func (p *pipedRun) next(what string) string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("stdout ended while waiting for %s", what)
		}
		if !gjson.Valid(l) {
			p.t.Fatalf("stdout line is not JSON: %q", l)
		}
		return l
	case <-time.After(waitBound):
		p.t.Fatalf("no %s within %v", what, waitBound)
		return ""
	}
}

// write sends one line on stdin.
func (p *pipedRun) write(l string) {
	p.t.Helper()
	werr := make(chan error, 1)
	go func() { _, err := io.WriteString(p.inW, l+"\n"); werr <- err }()
	select {
	case err := <-werr:
		if err != nil {
			p.t.Fatal(err)
		}
	case <-time.After(waitBound):
		p.t.Fatalf("stdin write not taken within %v", waitBound)
	}
}

// finish ends stdin, and checks that run exits 0 and writes no more line.
func (p *pipedRun) finish() {
	p.t.Helper()
	_ = p.inW.Close()
	select {
	case code := <-p.done:
		if code != 0 {
			p.t.Errorf("exit %d, want 0 (stderr %q)", code, p.stderr.String())
		}
	case <-time.After(waitBound):
		p.t.Fatalf("run did not return within %v of stdin EOF", waitBound)
	}
	// run has returned and stdout is closed: drain what is left.
	timeout := time.After(waitBound)
	for drained := false; !drained; {
		select {
		case l, ok := <-p.lines:
			if !ok {
				drained = true
				break
			}
			p.t.Errorf("unexpected stdout line after stdin EOF: %s", l)
		case <-timeout:
			p.t.Fatalf("stdout not closed within %v", waitBound)
		}
	}
}

func TestHeaderFile(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/headers"
	t.Setenv("HF_TOKEN", "tok")
	if err := os.WriteFile(file, []byte("# secrets\nAuthorization: Bearer ${HF_TOKEN}\n\nX-Team:blue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseArgs([]string{"--header-file", file, "--header", "X-Cli: 1", "https://h/mcp"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"Authorization": "Bearer tok", "X-Team": "blue", "X-Cli": "1"} {
		if got := c.up.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if err := os.WriteFile(file, []byte("Good: 1\nbad line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = parseArgs([]string{"--header-file", file, "https://h/mcp"}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad line: %v, want an error naming line 2", err)
	}
	if _, err := parseArgs([]string{"--header-file", dir + "/missing", "https://h/mcp"}, func(string) string { return "" }); err == nil {
		t.Error("a missing header file was accepted")
	}
}

func TestCAFileAndInsecure(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/ca.pem"
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	code := run([]string{"--ca-file", bad, "https://h/mcp"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 2 || !strings.Contains(stderr.String(), "PEM") {
		t.Errorf("a bad CA file: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	code = run([]string{"--insecure", "--state-file", dir + "/s.json", "https://127.0.0.1:1/mcp"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 0 || !strings.Contains(stderr.String(), "NOT verified") {
		t.Errorf("--insecure: exit %d, stderr %q; want a loud warning", code, stderr.String())
	}
}

func TestTraceSubcommandUsage(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run([]string{"trace"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }); code != 2 || !strings.Contains(stderr.String(), "trace view FILE") {
		t.Errorf("trace without args: exit %d, stderr %q", code, stderr.String())
	}
	dir := t.TempDir()
	file := dir + "/t.jsonl"
	line := `{"ts":"2026-01-01T00:00:00Z","dir":"client->proxy","op":"op-1","method":"ping","id":1,"frame":{"jsonrpc":"2.0","id":1,"method":"ping"}}` + "\n" +
		`{"ts":"2026-01-01T00:00:00.002Z","dir":"proxy->client","op":"op-1","id":1,"frame":{"jsonrpc":"2.0","id":1,"result":{}}}` + "\n"
	if err := os.WriteFile(file, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := run([]string{"trace", "stats", file}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }); code != 0 || !strings.Contains(stdout.String(), "ping") {
		t.Errorf("trace stats: exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"trace", "view", file}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" }); code != 0 || !strings.Contains(stdout.String(), "op-1") {
		t.Errorf("trace view: exit %d, stdout %q", code, stdout.String())
	}
}

func TestRewriteSubcommand(t *testing.T) {
	runRewrite := func(stdin string, args ...string) (int, string, string) {
		var stdout, stderr strings.Builder
		code := run(append([]string{"rewrite"}, args...), strings.NewReader(stdin), &stdout, &stderr, func(string) string { return "" })
		return code, stdout.String(), stderr.String()
	}
	code, out, _ := runRewrite(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"Grüße","arguments":{},"task":{"ttl":5}}}`+"\n", "--up")
	for _, want := range []string{"POST <upstream URL>", "Mcp-Method: tools/call", "Mcp-Name: =?base64?R3LDvMOfZQ==?=", `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("rewrite --up: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	if strings.Contains(out, `"task"`) {
		t.Errorf("rewrite --up kept params.task:\n%s", out)
	}
	code, out, _ = runRewrite(`{"jsonrpc":"2.0","id":9,"result":{"resultType":"task","taskId":"t1","status":"input_required","createdAt":"a","lastUpdatedAt":"a","ttlMs":1000,"pollIntervalMs":0}}`, "--down", "--task-augmented", "--id", `"c"`)
	if code != 0 || !strings.Contains(out, `{"jsonrpc":"2.0","id":"c","result":{"task":{"taskId":"t1","status":"working","createdAt":"a","lastUpdatedAt":"a","ttl":1000,"pollInterval":100}}}`) {
		t.Errorf("rewrite --down: exit %d:\n%s", code, out)
	}
	if code, _, stderr := runRewrite("", "--up", "--down"); code != 2 || !strings.Contains(stderr, "exactly one") {
		t.Errorf("--up --down: exit %d, %q", code, stderr)
	}
	if code, out, _ := runRewrite("", "--help"); code != 0 || !strings.Contains(out, "Examples") {
		t.Errorf("--help: exit %d", code)
	}
}

// A malformed --header or --header-file line is never echoed: the error
// says which flag (by its place) or which line (by its number), and the
// header's name when it parsed, never the value, nor a name that did not
// parse (it may be a token pasted without its name).
func TestHeaderErrorsNeverShowTheValue(t *testing.T) {
	const secret = "sk-live-5EcR3tV4lue"
	t.Setenv("MCPTP_TEST_CRLF", secret+"\r\nX-Injected: 1")
	for _, tc := range []struct {
		name   string
		header string
		has    []string // besides where it is
	}{
		{"no colon", secret, []string{"no colon", "Name: value"}},
		{"no colon, with a name", "Authorization Bearer " + secret, []string{"no colon"}},
		{"no name", ": Bearer " + secret, []string{"no name"}},
		{"bad name characters", "Authorization Bearer " + secret + ": x", []string{"a space as character 14"}},
		{"a secret as the name", secret + "(x): v", []string{"'(' as character 20"}},
		{"a control character in the name", "X\x01" + secret + ": v", []string{"a control character as character 2"}},
		{"CR", "X-Api-Key: " + secret + "\rX-Injected: 1", []string{"(X-Api-Key)", "CR, LF or NUL"}},
		{"LF", "X-Api-Key: " + secret + "\nX-Injected: 1", []string{"(X-Api-Key)", "CR, LF or NUL"}},
		{"NUL", "X-Api-Key: " + secret + "\x00", []string{"(X-Api-Key)", "CR, LF or NUL"}},
		{"CR LF from the environment", "X-Api-Key: ${MCPTP_TEST_CRLF}", []string{"(X-Api-Key)", "CR, LF or NUL"}},
		{"missing ${VAR}", "Authorization: Bearer " + secret + "${MCPTP_TEST_SURELY_UNSET}", []string{"(Authorization)", "${MCPTP_TEST_SURELY_UNSET} is not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			noSecret := func(msg string) {
				t.Helper()
				for _, s := range []string{secret, "5EcR3t", "Bearer"} {
					if strings.Contains(msg, s) {
						t.Errorf("error %q shows %q from the header", msg, s)
					}
				}
			}
			// The second --header is the bad one.
			args := []string{"--header", "X-Good: 1", "--header", tc.header, testURL}
			_, err := parseArgs(args, env())
			wantUsageError(t, args, err, append([]string{"--header #2"}, tc.has...)...)
			if err != nil {
				noSecret(err.Error())
			}
			// Through run, as a host would log it.
			r := runBounded(t, args, strings.NewReader(""), env())
			if r.code != 2 || r.stdout != "" {
				t.Errorf("run: exit %d stdout %q, want 2 and nothing", r.code, r.stdout)
			}
			noSecret(r.stderr)

			if strings.ContainsAny(tc.header, "\r\n") {
				return // a file line cannot hold a line break
			}
			file := t.TempDir() + "/headers"
			if err := os.WriteFile(file, []byte("# first\nX-Good: 1\n\n"+tc.header+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args = []string{"--header-file", file, testURL}
			_, err = parseArgs(args, env())
			wantUsageError(t, args, err, append([]string{"--header-file " + file, "line 4"}, tc.has...)...)
			if err != nil {
				noSecret(err.Error())
			}
		})
	}
}

// Credentials never go over plain http to another host
// unless --allow-http insists. Loopback is this machine: allowed.
func TestPlainHTTPCredentials(t *testing.T) {
	t.Setenv("MCPTP_TEST_TOKEN", "tok-123")
	file := t.TempDir() + "/headers"
	if err := os.WriteFile(file, []byte("X-Team: ${MCPTP_TEST_TOKEN}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const remote = "http://mcp.example.com/mcp"
	for _, tc := range []struct {
		name string
		args []string
		cred string // what the refusal names; "" means accepted
	}{
		{"Authorization", []string{"--header", "Authorization: Bearer abc", remote}, "--header Authorization"},
		{"authorization in lower case", []string{"--header", "authorization: Bearer abc", remote}, "--header Authorization"},
		{"an API key header", []string{"--header", "X-Api-Key: abc", remote}, "--header X-Api-Key"},
		{"Cookie", []string{"--header", "Cookie: s=1", remote}, "--header Cookie"},
		{"a value from ${VAR}", []string{"--header", "X-Team: ${MCPTP_TEST_TOKEN}", remote}, "header X-Team"},
		{"--header-file", []string{"--header-file", file, remote}, "header X-Team"},
		{"URL userinfo", []string{"http://alice:hunter2@mcp.example.com/mcp"}, "user name and password"},
		{"a token in the query", []string{"http://mcp.example.com/mcp?access_token=abc"}, "query parameter access_token"},
		{"from the environment", nil, "--header Authorization"},
		{"another port of an outside host", []string{"--header", "Authorization: Bearer abc", "http://10.0.0.5:8080/mcp"}, "--header Authorization"},
		{"https", []string{"--header", "Authorization: Bearer abc", "https://mcp.example.com/mcp"}, ""},
		{"no credentials", []string{"--header", "X-Team: blue", remote}, ""},
		{"localhost", []string{"--header", "Authorization: Bearer abc", "http://localhost:8080/mcp"}, ""},
		{"LOCALHOST", []string{"--header", "Authorization: Bearer abc", "http://LOCALHOST:8080/mcp"}, ""},
		{"127.0.0.1", []string{"--header", "Authorization: Bearer abc", "http://127.0.0.1:8080/mcp"}, ""},
		{"127.1.2.3", []string{"--header", "Authorization: Bearer abc", "http://127.1.2.3/mcp"}, ""},
		{"::1", []string{"--header", "Authorization: Bearer abc", "http://[::1]:8080/mcp"}, ""},
		{"userinfo on loopback", []string{"http://alice:hunter2@127.0.0.1:8080/mcp"}, ""},
		{"--allow-http", []string{"--allow-http", "--header", "Authorization: Bearer abc", remote}, ""},
		{"--allow-http after the URL", []string{"http://alice:hunter2@mcp.example.com/mcp", "--allow-http"}, ""},
		{"a host that only starts like localhost", []string{"--header", "Authorization: Bearer abc", "http://localhost.example.com/mcp"}, "--header Authorization"},
		{"a host that only starts like 127", []string{"--header", "Authorization: Bearer abc", "http://127.0.0.1.example.com/mcp"}, "--header Authorization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := env()
			args := tc.args
			if args == nil {
				getenv = env(envURL, remote)
				args = []string{"--header", "Authorization: Bearer abc"}
			}
			c, err := parseArgs(args, getenv)
			if tc.cred == "" {
				if err != nil {
					t.Fatalf("parseArgs(%q): %v", args, err)
				}
				if want := slices.Contains(args, "--allow-http"); c.allowHTTP != want {
					t.Errorf("allowHTTP = %v, want %v", c.allowHTTP, want)
				}
				return
			}
			wantUsageError(t, args, err, tc.cred, "--allow-http", "https://", "unencrypted")
			if err != nil {
				for _, s := range []string{"abc", "hunter2", "tok-123", "Bearer"} {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error %q shows the credential %q", err, s)
					}
				}
			}
		})
	}
}

// The refusal is a usage error: exit 2 and one line naming --allow-http;
// with --allow-http the proxy runs and says loudly what it does.
func TestRunPlainHTTPCredentials(t *testing.T) {
	args := []string{"--header", "Authorization: Bearer abc", "http://mcp.example.com/mcp"}
	r := runBounded(t, args, strings.NewReader(""), env())
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "--allow-http") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("run(%q): exit %d stdout %q stderr %q; want 2 and one line naming --allow-http", args, r.code, r.stdout, r.stderr)
	}
	// http://mcp.example.com is never dialled: stdin is empty, so the
	// session ends before any request.
	args = append([]string{"--allow-http", "--no-state"}, args...)
	r = runBounded(t, args, strings.NewReader(""), env())
	if r.code != 0 || !strings.Contains(r.stderr, "--allow-http") || !strings.Contains(r.stderr, "unencrypted") || strings.Contains(r.stderr, "abc") {
		t.Errorf("run(%q): exit %d stderr %q; want 0 and a loud warning that names no secret", args, r.code, r.stderr)
	}
	// Loopback needs no flag and gets no warning.
	args = []string{"--no-state", "--header", "Authorization: Bearer abc", "http://127.0.0.1:1/mcp"}
	r = runBounded(t, args, strings.NewReader(""), env())
	if r.code != 0 || r.stderr != "" {
		t.Errorf("run(%q): exit %d stderr %q; want 0 and a quiet stderr", args, r.code, r.stderr)
	}
}

func TestHelpNamesAllowHTTP(t *testing.T) {
	r := runBounded(t, []string{"--help"}, strings.NewReader(""), env())
	if !strings.Contains(r.stdout, "\n  --allow-http ") {
		t.Errorf("--help does not list --allow-http:\n%s", r.stdout)
	}
}
