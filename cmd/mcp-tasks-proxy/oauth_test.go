package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
)

func TestParseArgsOAuthFlags(t *testing.T) {
	dir := t.TempDir()
	info := filepath.Join(dir, "client.json")
	if err := os.WriteFile(info, []byte(`{"client_id":"from-file","client_secret":"s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parseArgs([]string{
		"--oauth-store", "/tmp/store",
		"--oauth-callback-port", "33418",
		"--oauth-callback-host", "localhost",
		"--oauth-browser", "firefox --new-window",
		"--oauth-no-browser",
		"--auth-timeout", "30",
		"--static-oauth-client-info", "@" + info,
		"--static-oauth-client-metadata", `{"client_name":"My proxy"}`,
		"--oauth-client-metadata-url", "https://example.com/client.json",
		"--resource", "https://mcp.example.com",
		"--oauth-scope", "read write",
		testURL,
	}, env())
	if err != nil {
		t.Fatal(err)
	}
	o := c.oauth
	if o.StoreDir != "/tmp/store" || o.CallbackPort != 33418 || o.CallbackHost != "localhost" || o.Browser != "firefox --new-window" ||
		!o.NoBrowser || o.AuthTimeout != 30*time.Second || o.ClientMetadataURL != "https://example.com/client.json" ||
		o.Resource != "https://mcp.example.com" || o.Scope != "read write" {
		t.Errorf("oauth flags %+v", o)
	}
	if string(o.ClientInfo) != `{"client_id":"from-file","client_secret":"s3cret"}` || string(o.ClientMetadata) != `{"client_name":"My proxy"}` {
		t.Errorf("client info %q, metadata %q", o.ClientInfo, o.ClientMetadata)
	}
	if c.oauthOff || len(o.given) != 11 {
		t.Errorf("oauthOff %v, given %q", c.oauthOff, o.given)
	}

	// Defaults.
	c, err = parseArgs([]string{testURL}, env())
	if err != nil {
		t.Fatal(err)
	}
	if c.oauth.AuthTimeout != oauth.DefaultAuthTimeout || c.oauth.CallbackHost != "127.0.0.1" || c.oauth.CallbackPort != 0 || c.oauthOff || len(c.oauth.given) != 0 {
		t.Errorf("defaults %+v", c.oauth)
	}
}

func TestAuthTimeoutForms(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30": 30 * time.Second, "1.5": 1500 * time.Millisecond, "2m": 2 * time.Minute, "1m30s": 90 * time.Second, " 45 ": 45 * time.Second,
	} {
		c, err := parseArgs([]string{"--auth-timeout", in, testURL}, env())
		if err != nil || c.oauth.AuthTimeout != want {
			t.Errorf("--auth-timeout %q: %v, %v; want %v", in, c, err, want)
		}
	}
	for _, in := range []string{"abc", "0", "-5", "-1m", "0s", "2 minutes", ""} {
		args := []string{"--auth-timeout", in, testURL}
		_, err := parseArgs(args, env())
		wantUsageError(t, args, err, "auth-timeout", "seconds (120)", "duration (2m")
	}
}

func TestParseArgsOAuthErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"client_id": "x", "client_secret": "hunter2"`), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		has  []string
	}{
		{[]string{"--oauth-callback-host", "example.com"}, []string{"--oauth-callback-host", "127.0.0.1", "localhost", "::1"}},
		{[]string{"--oauth-callback-host", "0.0.0.0"}, []string{"--oauth-callback-host", "127.0.0.1"}},
		{[]string{"--oauth-callback-host", "192.168.1.2"}, []string{"--oauth-callback-host"}},
		{[]string{"--oauth-callback-port", "70000"}, []string{"--oauth-callback-port", "65535"}},
		{[]string{"--oauth-callback-port", "-1"}, []string{"--oauth-callback-port"}},
		{[]string{"--static-oauth-client-info", `{"client_id": "x", "client_secret": "hunter2"`}, []string{"--static-oauth-client-info", "JSON", "client_id"}},
		{[]string{"--static-oauth-client-info", `"just-an-id"`}, []string{"--static-oauth-client-info", "not a JSON object"}},
		{[]string{"--static-oauth-client-info", `{"client_secret":"hunter2"}`}, []string{"--static-oauth-client-info", "client_id"}},
		{[]string{"--static-oauth-client-info", "@" + bad}, []string{"--static-oauth-client-info", "invalid JSON"}},
		{[]string{"--static-oauth-client-info", "@" + empty}, []string{"--static-oauth-client-info", "empty"}},
		{[]string{"--static-oauth-client-info", "@" + filepath.Join(dir, "missing.json")}, []string{"--static-oauth-client-info", "missing.json"}},
		{[]string{"--static-oauth-client-metadata", `[1,2]`}, []string{"--static-oauth-client-metadata", "not a JSON object"}},
		{[]string{"--oauth-client-metadata-url", "http://example.com/c.json"}, []string{"--oauth-client-metadata-url", "https://"}},
		{[]string{"--oauth-client-metadata-url", "https://example.com"}, []string{"--oauth-client-metadata-url", "path"}},
		{[]string{"--resource", "not a url"}, []string{"--resource"}},
		{[]string{"--demo-oauth", "--demo-legacy"}, []string{"--demo-oauth", "--demo-legacy"}},
		{[]string{"--demo", "--demo-oauth", "--header", "Authorization: Bearer x"}, []string{"--demo-oauth", "Authorization"}},
	} {
		args := c.args
		if !strings.HasPrefix(args[0], "--demo") {
			args = append(append([]string(nil), args...), testURL)
		}
		_, err := parseArgs(args, env())
		wantUsageError(t, args, err, c.has...)
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("parseArgs(%q) error shows the client secret: %v", args, err)
		}
	}
	// Through run: exit 2, one line, nothing on stdout.
	r := runBounded(t, []string{"--oauth-callback-host", "example.com", testURL}, strings.NewReader(""), env())
	if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "mcp-tasks-proxy: --oauth-callback-host") {
		t.Errorf("run: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestAuthorizationHeaderTurnsOAuthOff(t *testing.T) {
	hf := filepath.Join(t.TempDir(), "headers")
	if err := os.WriteFile(hf, []byte("authorization: Bearer from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--header", "Authorization: Bearer x", testURL},
		{"--header", "authorization: Bearer x", testURL},
		{"--header-file", hf, testURL},
		{"--header", "Authorization: Bearer x", "--oauth-scope", "read", testURL},
	} {
		c, err := parseArgs(args, env())
		if err != nil {
			t.Fatal(err)
		}
		if !c.oauthOff {
			t.Errorf("parseArgs(%q): OAuth on, want off", args)
		}
	}
	c, err := parseArgs([]string{"--header", "X-Api-Key: k", testURL}, env())
	if err != nil || c.oauthOff {
		t.Errorf("another header turned OAuth off: %v %v", c, err)
	}
	// The OAuth flags given with it are named in a warning.
	args := []string{"--no-state", "--header", "Authorization: Bearer abc", "--oauth-scope", "read", "http://127.0.0.1:1/mcp"}
	r := runBounded(t, args, strings.NewReader(""), env())
	if r.code != 0 || !strings.Contains(r.stderr, "OAuth is off") || !strings.Contains(r.stderr, "--oauth-scope") || strings.Contains(r.stderr, "abc") {
		t.Errorf("run(%q): exit %d stderr %q; want 0 and a warning naming --oauth-scope", args, r.code, r.stderr)
	}
}

// Every flag of the proxy is in --help, and every flag of auth in auth
// --help.
func TestHelpNamesEveryFlag(t *testing.T) {
	check := func(what, help string, fs *flag.FlagSet) {
		fs.VisitAll(func(f *flag.Flag) {
			name := "--" + f.Name
			if len(f.Name) == 1 {
				name = "-" + f.Name
			}
			if !regexp.MustCompile(`(^|[\s,(])` + regexp.QuoteMeta(name) + `([\s,)]|$)`).MatchString(help) {
				t.Errorf("%s does not mention %s", what, name)
			}
		})
	}
	var c config
	check("--help", helpText, newFlagSet(&c))
	r := runBounded(t, []string{"auth", "--help"}, strings.NewReader(""), env())
	if r.code != 0 || r.stdout != authHelpText {
		t.Fatalf("auth --help: exit %d stdout %q", r.code, r.stdout)
	}
	// auth's flag set, as parseAuthArgs builds it.
	fs := authFlagSet(&authConfig{})
	check("auth --help", authHelpText, fs)
}

func TestAuthUsage(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	for _, c := range []struct {
		args []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{[]string{"auth"}, 2, "", "auth login|status|logout URL"},
		{[]string{"auth", "--help"}, 0, "Usage:", ""},
		{[]string{"auth", "-h"}, 0, "Examples:", ""},
		{[]string{"auth", "help"}, 0, "--no-browser", ""},
		{[]string{"auth", "login", "--help"}, 0, "Usage:", ""},
		{[]string{"auth", "status", "-h"}, 0, "Usage:", ""},
		{[]string{"auth", "whoami", testURL}, 2, "", "auth whoami: unknown command; use login, status or logout"},
		{[]string{"auth", "status"}, 2, "", "no server URL"},
		{[]string{"auth", "status", "ftp://x/y"}, 2, "", "http"},
		{[]string{"auth", "status", testURL, "https://other/mcp"}, 2, "", "unexpected argument"},
		{[]string{"auth", "status", "--bogus", testURL}, 2, "", "unknown flag"},
		{[]string{"auth", "status", "--no-browser", testURL}, 2, "", "--no-browser is for auth login"},
		{[]string{"auth", "login", "--json", testURL}, 2, "", "--json is for auth status"},
		{[]string{"auth", "login", "--no-browser", "--oauth-no-browser", testURL}, 2, "", "pass one"},
		{[]string{"auth", "login", "--oauth-callback-host", "example.com", testURL}, 2, "", "--oauth-callback-host"},
		{[]string{"auth", "login", "--auth-timeout", "soon", testURL}, 2, "", "seconds (120)"},
		{[]string{"auth", "status", "--oauth-store", store, testURL}, 1, "Not signed in to " + testURL, ""},
		{[]string{"auth", "status", "--oauth-store", store, "--json", testURL}, 1, `"signedIn": false`, ""},
		{[]string{"auth", "logout", "--oauth-store", store, testURL}, 0, "Not signed in", ""},
	} {
		r := runBounded(t, c.args, strings.NewReader(""), env())
		if r.code != c.code || !strings.Contains(r.stdout, c.out) || !strings.Contains(r.stderr, c.err) {
			t.Errorf("run(%q): exit %d\nstdout %q\nstderr %q\nwant exit %d, stdout with %q, stderr with %q", c.args, r.code, r.stdout, r.stderr, c.code, c.out, c.err)
		}
		if c.code == 2 && (strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "mcp-tasks-proxy: ")) {
			t.Errorf("run(%q): stderr %q, want one line", c.args, r.stderr)
		}
	}
	// A store others can read is refused, with the fix: exit 1.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	r := runBounded(t, []string{"auth", "status", "--oauth-store", open, testURL}, strings.NewReader(""), env())
	if r.code != 1 || !strings.Contains(r.stderr, "chmod 700") {
		t.Errorf("auth status on a 0755 store: exit %d stderr %q; want 1 and the chmod", r.code, r.stderr)
	}
}

// pasteBrowser is stderr for `auth login --no-browser`: when the sign-in
// address appears, it plays the user (authserver.Browse, stopping at the
// callback as on a headless machine) and pastes the address the browser
// was sent to on stdin.
type pasteBrowser struct {
	t      *testing.T
	follow bool // follow to the loopback callback instead of pasting
	mu     sync.Mutex
	buf    bytes.Buffer
	stdin  *io.PipeWriter
	once   sync.Once
	done   chan struct{}
}

var authorizeURL = regexp.MustCompile(`http://\S+/authorize\?\S+`)

func (p *pasteBrowser) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	if u := authorizeURL.FindString(p.buf.String()); u != "" {
		p.once.Do(func() {
			go func() {
				defer close(p.done)
				ctx, cancel := context.WithTimeout(context.Background(), waitBound)
				defer cancel()
				cb, err := authserver.Browse(ctx, u, authserver.BrowseOptions{NoCallback: !p.follow})
				if err != nil {
					p.t.Errorf("browse: %v", err)
					if p.stdin != nil {
						p.stdin.Close()
					}
					return
				}
				if !p.follow {
					io.WriteString(p.stdin, cb+"\n")
				}
			}()
		})
	}
	return len(b), nil
}

func (p *pasteBrowser) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.String()
}

// startOAuthDemo serves the protected demo server and its authorization
// server until the test ends; url is the server's.
func startOAuthDemo(t *testing.T) (url string, as *authserver.Server) {
	t.Helper()
	url, as, stop, err := demo.StartWithOAuth(context.Background(), authserver.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url, as
}

// auth login --no-browser against a real authorization server and a
// protected demo server, then status (text and JSON; never a token) and
// logout (revoked, deleted).
func TestAuthLoginStatusLogout(t *testing.T) {
	url, as := startOAuthDemo(t)
	store := filepath.Join(t.TempDir(), "store")

	inR, inW := io.Pipe()
	defer inW.Close()
	stderr := &pasteBrowser{t: t, stdin: inW, done: make(chan struct{})}
	var stdout bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"auth", "login", "--no-browser", "--oauth-store", store, "--auth-timeout", "15", url}, inR, &stdout, stderr, env())
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("auth login: exit %d\nstdout %s\nstderr %s", code, stdout.String(), stderr.String())
		}
	case <-time.After(waitBound + 5*time.Second):
		t.Fatalf("auth login did not return\nstderr %s", stderr.String())
	}
	<-stderr.done
	if !strings.Contains(stdout.String(), "Signed in to "+url) || !strings.Contains(stdout.String(), store) || !strings.Contains(stdout.String(), "0600") {
		t.Errorf("auth login stdout %q: want where the tokens are", stdout.String())
	}
	if !strings.Contains(stderr.String(), "paste") {
		t.Errorf("auth login stderr %q: want the paste instructions", stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(store, "*.json"))
	if len(files) != 1 {
		t.Fatalf("store holds %q, want one file", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("store file mode %v (%v), want 0600", fi.Mode(), err)
	}
	secrets := as.Secrets()
	if len(secrets) == 0 {
		t.Fatal("the authorization server issued nothing")
	}
	noSecret := func(what, s string) {
		t.Helper()
		for _, sec := range secrets {
			if len(sec) >= 8 && strings.Contains(s, sec) {
				t.Errorf("%s shows a secret the authorization server issued (%.6s…)", what, sec)
			}
		}
	}
	noSecret("auth login stdout", stdout.String())
	noSecret("auth login stderr", stderr.String())

	r := runBounded(t, []string{"auth", "status", "--oauth-store", store, url}, strings.NewReader(""), env())
	if r.code != 0 {
		t.Fatalf("auth status: exit %d stderr %q", r.code, r.stderr)
	}
	for _, s := range []string{"Server:   " + url, "Issuer:   " + as.Issuer(), "(dynamic)", "mcp:read", "refreshed automatically", files[0]} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("auth status does not say %q:\n%s", s, r.stdout)
		}
	}
	noSecret("auth status", r.stdout+r.stderr)

	r = runBounded(t, []string{"auth", "status", "--json", "--oauth-store", store, url}, strings.NewReader(""), env())
	var st struct { // what auth status --json prints
		SignedIn     bool     `json:"signedIn"`
		Issuer       string   `json:"issuer"`
		ClientID     string   `json:"clientId"`
		ClientSource string   `json:"clientSource"`
		StoreFile    string   `json:"storeFile"`
		Scopes       []string `json:"scopes"`
		Expiry       string   `json:"expiry"`
		Refreshable  bool     `json:"refreshable"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 {
		t.Fatalf("auth status --json: exit %d %q (%v)", r.code, r.stdout, err)
	}
	if !st.SignedIn || st.Issuer != as.Issuer() || st.ClientID == "" || st.ClientSource != "dynamic" || len(st.Scopes) == 0 || st.Expiry == "" || !st.Refreshable || st.StoreFile != files[0] {
		t.Errorf("auth status --json %+v", st)
	}
	noSecret("auth status --json", r.stdout)
	valid := as.AccessTokens()
	if len(valid) != 1 {
		t.Fatalf("%d valid access tokens, want 1", len(valid))
	}

	r = runBounded(t, []string{"auth", "logout", "--oauth-store", store, url}, strings.NewReader(""), env())
	if r.code != 0 || !strings.Contains(r.stdout, "Signed out of "+url) {
		t.Errorf("auth logout: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Errorf("the store file is still there after logout (%v)", err)
	}
	if n := len(as.AccessTokens()); n != 0 {
		t.Errorf("%d access tokens still valid after logout, want 0 (revoked)", n)
	}
	r = runBounded(t, []string{"auth", "status", "--oauth-store", store, url}, strings.NewReader(""), env())
	if r.code != 1 || !strings.Contains(r.stdout, "Not signed in") {
		t.Errorf("auth status after logout: exit %d stdout %q", r.code, r.stdout)
	}
}

// auth login whose sign-in nobody completes ends within --auth-timeout,
// exit 1, with a message that names the host and the cause (not the
// command being run as the way out).
func TestAuthLoginTimeout(t *testing.T) {
	url, _ := startOAuthDemo(t)
	store := filepath.Join(t.TempDir(), "store")
	inR, inW := io.Pipe()
	defer inW.Close()
	r := runBounded(t, []string{"auth", "login", "--no-browser", "--oauth-store", store, "--auth-timeout", "1", url}, inR, env())
	if r.code != 1 || !strings.Contains(r.stderr, "auth login: sign-in to 127.0.0.1:") || !strings.Contains(r.stderr, "nothing was pasted within 1s") ||
		strings.Contains(r.stderr, "run: mcp-tasks-proxy auth login") {
		t.Errorf("auth login timeout: exit %d stderr %q", r.code, r.stderr)
	}
}

// --demo --demo-oauth: the demo server behind a local authorization
// server; with --oauth-no-browser the sign-in address is printed on stderr
// (here a user follows it), and the session's first request waits for the
// sign-in, then succeeds. stdout carries only JSON-RPC.
func TestRunDemoOAuth(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &pasteBrowser{t: t, follow: true, done: make(chan struct{})}
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"--demo", "--demo-oauth", "--oauth-no-browser", "--auth-timeout", "15"}, inR, outW, stderr, env())
		outW.Close()
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	io.WriteString(inW, initializeLine+"\n")
	select {
	case l := <-lines:
		if gjson.Get(l, "id").Raw != "1" || !gjson.Get(l, "result.protocolVersion").Exists() {
			t.Errorf("initialize answer %s\nstderr %s", l, stderr.String())
		}
	case <-time.After(waitBound + 5*time.Second):
		t.Fatalf("no initialize answer\nstderr %s", stderr.String())
	}
	inW.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(waitBound):
		t.Fatal("run did not return after stdin EOF")
	}
	for l := range lines {
		if !gjson.Valid(l) {
			t.Errorf("stdout line is not JSON: %q", l)
		}
	}
	<-stderr.done
	if s := stderr.String(); !strings.Contains(s, "needs you to sign in. Open this address") || !strings.Contains(s, "signed in to 127.0.0.1:") {
		t.Errorf("stderr %q: want the sign-in address and its success", s)
	}
}
