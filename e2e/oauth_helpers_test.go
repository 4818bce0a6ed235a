package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// The OAuth harness: a real authorization server (demo/authserver) on
// loopback, a protected demo server (2026, or 2025 for passthrough) behind a
// recorder that validates and records every request the proxy makes to it,
// and the fakebrowser command as --oauth-browser.

// fakeBrowser is the fakebrowser binary, built once per run next to the
// proxy binary.
var (
	fakeBrowserOnce sync.Once
	fakeBrowserPath string
	fakeBrowserErr  error
)

// buildFakeBrowser builds demo/authserver/cmd/fakebrowser once and returns
// its path.
func buildFakeBrowser(t testing.TB) string {
	t.Helper()
	fakeBrowserOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			fakeBrowserErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out := filepath.Join(filepath.Dir(binPath), "fakebrowser")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./demo/authserver/cmd/fakebrowser")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			fakeBrowserErr = fmt.Errorf("go build fakebrowser: %v\n%s", err, b)
			return
		}
		fakeBrowserPath = out
	})
	if fakeBrowserErr != nil {
		t.Fatal(fakeBrowserErr)
	}
	return fakeBrowserPath
}

// browser is one fakebrowser command line for --oauth-browser (or
// $BROWSER), logging each run to its own file. The log holds callback URLs,
// hence authorization codes: it is never part of a secret scan.
type browser struct {
	cmd string // the command line: path, mode, log
	log string
}

// newBrowser is a fakebrowser in mode (follow, never, tamper-state, twice,
// print).
func newBrowser(t *testing.T, mode string) *browser {
	t.Helper()
	path := buildFakeBrowser(t)
	log := filepath.Join(t.TempDir(), "browser.log")
	if strings.ContainsAny(path+log, " \t") {
		t.Fatalf("the fakebrowser command %q or its log %q has a space; --oauth-browser splits on spaces", path, log)
	}
	return &browser{cmd: path + " -mode " + mode + " -log " + log, log: log}
}

// runs returns the runs logged so far: the URL given, and the callback URL.
func (b *browser) runs() [][2]string {
	data, err := os.ReadFile(b.log)
	if err != nil {
		return nil
	}
	var out [][2]string
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		target, cb, _ := strings.Cut(line, "\t")
		out = append(out, [2]string{target, cb})
	}
	return out
}

// waitRun waits (bounded) until the browser has logged n runs.
func (b *browser) waitRun(t *testing.T, n int) [][2]string {
	t.Helper()
	var runs [][2]string
	waitUntil(t, fmt.Sprintf("fakebrowser run #%d", n), func() bool {
		runs = b.runs()
		return len(runs) >= n
	})
	return runs
}

// waitUntil polls cond (every 10 ms) until it holds, failing the test after
// waitTimeout. It is for state outside the test's reach (files, another
// process's stderr); polling only bounds how soon the test notices.
func waitUntil(t testing.TB, desc string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, desc)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startAuthServer starts an authorization server for the test.
func startAuthServer(t *testing.T, cfg authserver.Config) *authserver.Server {
	t.Helper()
	as, err := authserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	return as
}

// authExchange is one HTTP request the proxy made to the protected server.
type authExchange struct {
	HTTPMethod string
	Path       string
	Header     http.Header
	Body       []byte
	RPCMethod  string
	ID         string

	status int  // guarded by authUpstream.mu; 0 until written
	done   bool // guarded; the handler returned
}

// authSeen is a snapshot of an authExchange.
type authSeen struct {
	*authExchange
	Status int
	Done   bool
}

// Bearer is the request's bearer token, "" without one.
func (s authSeen) Bearer() string {
	v := s.Header.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return v[7:]
	}
	return ""
}

// authUpstream is a protected demo server (demo.Protect) behind a recorder.
// Every POST to the MCP path is validated: a 2026 body against the
// 2026-07-28 schema with its MCP headers checked against the body, a 2025
// body (passthrough) against 2025-11-25. An upstream id may be sent again
// only after the auth layer refused it (401, or 403 insufficient_scope):
// that is the one replay the issue allows. Violations fail the test at its
// end.
type authUpstream struct {
	t      testing.TB
	v      *schematest.Validator
	legacy bool
	next   http.Handler
	srv    *httptest.Server
	URL    string
	// Legacy is the 2025 server, for a legacy upstream.
	Legacy *demo.Legacy

	changes
	exchanges []*authExchange
	problems  []string
	// epoch is the index of the first exchange of the current proxy
	// process: upstream ids are unique per process. anyIDs turns the id
	// check off, for processes that run at once.
	epoch  int
	anyIDs bool
}

// nextProcess tells the recorder that a new proxy process starts: its
// upstream ids begin afresh.
func (u *authUpstream) nextProcess() {
	u.mu.Lock()
	u.epoch = len(u.exchanges)
	u.mu.Unlock()
}

// manyProcesses turns the upstream id check off: several processes run at
// once, each with ids of its own.
func (u *authUpstream) manyProcesses() {
	u.mu.Lock()
	u.anyIDs = true
	u.mu.Unlock()
}

// newProtectedUpstream serves the 2026 demo server behind as.
func newProtectedUpstream(t *testing.T, as *authserver.Server, opts *demo.ProtectedOptions) *authUpstream {
	t.Helper()
	return startAuthUpstream(t, as, opts, false)
}

// newProtectedLegacyUpstream serves the 2025 legacy demo server behind as.
func newProtectedLegacyUpstream(t *testing.T, as *authserver.Server, opts *demo.ProtectedOptions) *authUpstream {
	t.Helper()
	return startAuthUpstream(t, as, opts, true)
}

func startAuthUpstream(t *testing.T, as *authserver.Server, opts *demo.ProtectedOptions, legacy bool) *authUpstream {
	t.Helper()
	u := &authUpstream{t: t, v: schematest.Load(t), legacy: legacy}
	// The listener exists before the server starts, so the resource URL
	// is known when the handler is built.
	u.srv = httptest.NewUnstartedServer(u)
	u.URL = "http://" + u.srv.Listener.Addr().String() + upstreamPath
	var mcpHandler http.Handler
	if legacy {
		u.Legacy = demo.NewLegacy()
		mcpHandler = u.Legacy
	} else {
		mcpHandler = demo.Handler()
	}
	h, err := demo.Protect(mcpHandler, as, u.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	u.next = h
	u.srv.Start()
	t.Cleanup(func() {
		if u.Legacy != nil {
			u.Legacy.Expire()
		}
		u.srv.CloseClientConnections()
		u.srv.Close()
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, p := range u.problems {
			t.Errorf("protected upstream: %s", p)
		}
	})
	return u
}

func (u *authUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		u.mu.Lock()
		u.problems = append(u.problems, fmt.Sprintf("%s %s: reading the body: %v", r.Method, r.URL.Path, err))
		u.mu.Unlock()
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ex := &authExchange{HTTPMethod: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if len(body) > 0 {
		ex.RPCMethod = gjson.GetBytes(body, "method").String()
		ex.ID = gjson.GetBytes(body, "id").Raw
	}
	// A request without a bearer is validated once the auth layer has let
	// it through: one it refused (401) was never processed, and may be a
	// bare probe for the challenge (auth login's).
	anonymous := r.Header.Get("Authorization") == ""
	var probs []string
	if r.Method == http.MethodPost && !anonymous {
		probs = u.check(r, ex)
	}
	u.mu.Lock()
	if r.Method == http.MethodPost && ex.ID != "" && !u.legacy && !u.anyIDs {
		for _, prev := range u.exchanges[u.epoch:] {
			if prev.HTTPMethod == http.MethodPost && prev.ID == ex.ID && prev.RPCMethod == ex.RPCMethod && !(prev.done && authRefusedStatus(prev.status)) {
				probs = append(probs, fmt.Sprintf("upstream id %s sent again, though its earlier request was not refused by the auth layer (status %d)", ex.ID, prev.status))
				break
			}
		}
	}
	for _, p := range probs {
		u.problems = append(u.problems, fmt.Sprintf("%s %s %s: %s", r.Method, ex.RPCMethod, shortBytes(body), p))
	}
	u.exchanges = append(u.exchanges, ex)
	u.notifyLocked()
	u.mu.Unlock()

	u.next.ServeHTTP(&authWriter{ResponseWriter: w, u: u, ex: ex}, r)

	u.mu.Lock()
	status := ex.status
	u.mu.Unlock()
	if r.Method == http.MethodPost && anonymous && status != http.StatusUnauthorized {
		for _, p := range u.check(r, ex) {
			u.mu.Lock()
			u.problems = append(u.problems, fmt.Sprintf("%s %s %s: %s", r.Method, ex.RPCMethod, shortBytes(body), p))
			u.mu.Unlock()
		}
	}
	u.mu.Lock()
	if ex.status == 0 {
		ex.status = http.StatusOK
	}
	ex.done = true
	u.notifyLocked()
	u.mu.Unlock()
}

// authRefusedStatus: 401, or 403 (the demo server's only 403 is
// insufficient_scope).
func authRefusedStatus(s int) bool {
	return s == http.StatusUnauthorized || s == http.StatusForbidden
}

// check validates one POST.
func (u *authUpstream) check(r *http.Request, ex *authExchange) []string {
	var probs []string
	if r.URL.Path != upstreamPath {
		probs = append(probs, fmt.Sprintf("POST to %s, want %s", r.URL.Path, upstreamPath))
	}
	if !u.legacy || ex.RPCMethod == "server/discover" {
		if err := u.v.ValidateUpstream(ex.Body); err != nil {
			probs = append(probs, fmt.Sprintf("body does not validate against 2026-07-28: %v", err))
		}
		if !u.legacy {
			probs = append(probs, checkUpstreamHeaders(r.Header, ex.Body, false)...)
		}
		return probs
	}
	if err := u.v.ValidateLegacyUpstream(ex.Body, ""); err != nil {
		probs = append(probs, fmt.Sprintf("body does not validate against 2025-11-25: %v", err))
	}
	return probs
}

// seen returns snapshots of the exchanges that satisfy pred (nil: all).
func (u *authUpstream) seen(pred func(authSeen) bool) []authSeen {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []authSeen
	for _, ex := range u.exchanges {
		s := authSeen{authExchange: ex, Status: ex.status, Done: ex.done}
		if pred == nil || pred(s) {
			out = append(out, s)
		}
	}
	return out
}

// wait waits (bounded) for an exchange that satisfies pred.
func (u *authUpstream) wait(t testing.TB, desc string, pred func(authSeen) bool) authSeen {
	t.Helper()
	var s authSeen
	u.until(t, func() bool {
		for _, ex := range u.exchanges {
			if s = (authSeen{authExchange: ex, Status: ex.status, Done: ex.done}); pred(s) {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("the protected upstream never saw %s within %v; it saw:\n%s", desc, waitTimeout, u.dump())
	})
	return s
}

func (u *authUpstream) dump() string {
	var b strings.Builder
	for _, s := range u.seen(nil) {
		fmt.Fprintf(&b, "  %s %s %s bearer=%v → %d\n", s.HTTPMethod, s.Path, s.RPCMethod, s.Bearer() != "", s.Status)
	}
	return b.String()
}

// posts returns the POSTs of JSON-RPC method m to the MCP path.
func (u *authUpstream) posts(m string) []authSeen {
	return u.seen(func(s authSeen) bool {
		return s.HTTPMethod == http.MethodPost && s.Path == upstreamPath && s.RPCMethod == m
	})
}

// statuses lists the statuses of ss.
func statuses(ss []authSeen) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = s.Status
	}
	return out
}

// authWriter records the status as soon as it is written (a stream's is
// known long before its handler returns), and passes Flush through.
type authWriter struct {
	http.ResponseWriter
	u     *authUpstream
	ex    *authExchange
	wrote bool
}

func (w *authWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.u.mu.Lock()
		w.ex.status = code
		w.u.notifyLocked()
		w.u.mu.Unlock()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *authWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *authWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *authWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// oauthFixture is an authorization server, a protected server behind it,
// and a store directory.
type oauthFixture struct {
	as    *authserver.Server
	up    *authUpstream
	store string
}

// newOAuthFixture starts an authorization server (cfg) and the 2026 demo
// server behind it (opts), with a fresh store directory.
func newOAuthFixture(t *testing.T, cfg authserver.Config, opts *demo.ProtectedOptions) *oauthFixture {
	t.Helper()
	as := startAuthServer(t, cfg)
	return &oauthFixture{as: as, up: newProtectedUpstream(t, as, opts), store: newStoreDir(t)}
}

// newStoreDir is a fresh --oauth-store directory (not yet created: the
// proxy creates it with mode 0700).
func newStoreDir(t *testing.T) string {
	return filepath.Join(t.TempDir(), "oauth-store")
}

// args is the proxy's command line: the store, the browser command, extra
// flags, the server URL. Call it right before starting the process: it
// starts a new epoch of upstream ids.
func (f *oauthFixture) args(b *browser, extra ...string) []string {
	f.up.nextProcess()
	args := []string{"--oauth-store", f.store}
	if b != nil {
		args = append(args, "--oauth-browser", b.cmd)
	}
	return append(append(args, extra...), f.up.URL)
}

// stats is the authorization server's counters.
func (f *oauthFixture) stats() authserver.Stats { return f.as.Stats() }

// callEcho calls the echo tool and requires its text back.
func callEcho(t *testing.T, p *rawProc, id, text string) {
	t.Helper()
	res := resultOf(t, p.call(id, "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"}}`))
	if got := res.Get("content.0.text").Str; got != text {
		t.Errorf("echo %s = %q, want %q (result %s)", id, got, text, shortBytes([]byte(res.Raw)))
	}
}

// listTools lists the tools and requires echo among them.
func listTools(t *testing.T, p *rawProc, id string) {
	t.Helper()
	res := resultOf(t, p.call(id, "tools/list", ""))
	if !res.Get(`tools.#(name=="echo")`).Exists() {
		t.Errorf("tools/list %s has no echo tool: %s", id, shortBytes([]byte(res.Raw)))
	}
}

// signInURL finds the authorization URL the proxy printed in text.
func signInURL(as *authserver.Server, text string) string {
	i := strings.Index(text, as.AuthorizationEndpoint()+"?")
	if i < 0 {
		return ""
	}
	end := strings.IndexAny(text[i:], " \t\r\n\"'<>")
	if end < 0 {
		return text[i:]
	}
	return text[i : i+end]
}

// waitSignInURL waits (bounded) for the proxy to print the sign-in URL on
// buf.
func waitSignInURL(t *testing.T, as *authserver.Server, buf *syncBuffer) string {
	t.Helper()
	var u string
	waitUntil(t, "the sign-in URL on stderr", func() bool {
		u = signInURL(as, buf.String())
		return u != ""
	})
	return u
}

// sameStrings compares as sets.
func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// checkSignInMessage requires a JSON-RPC error that says the sign-in to
// the server's host did not complete and names `auth login URL`.
func checkSignInMessage(t *testing.T, e gjson.Result, serverURL string) {
	t.Helper()
	msg := e.Get("message").Str
	u, _ := url.Parse(serverURL)
	for _, want := range []string{"sign-in to " + u.Host + " did not complete", "mcp-tasks-proxy auth login " + serverURL} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message %q does not contain %q", msg, want)
		}
	}
	// The server's auth layer refused the request before any processing:
	// nothing broke, and nothing may have run.
	for _, wrong := range []string{"connection to the upstream server broke", "may or may not have run"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("error message %q says %q about a sign-in that did not complete", msg, wrong)
		}
	}
}

// secretScan looks for every secret the authorization server issued or
// saw in each named output, and reports where one shows.
func secretScan(t *testing.T, as *authserver.Server, outputs map[string]string) {
	t.Helper()
	secrets := as.Secrets()
	if len(secrets) == 0 {
		t.Error("the authorization server issued no secret: the scan proves nothing")
	}
	names := make([]string, 0, len(outputs))
	for n := range outputs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, s := range secrets {
			if strings.Contains(outputs[n], s) {
				t.Errorf("%s holds a secret the authorization server issued (%.8s…)", n, s)
			}
		}
	}
}

// storeNames lists the names in a store directory, one per line.
func storeNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading the store directory: %v", err)
	}
	var b strings.Builder
	for _, e := range ents {
		b.WriteString(e.Name() + "\n")
	}
	return b.String()
}

// storeFiles returns the JSON files of a store directory and their
// contents.
func storeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("reading the store directory: %v", err)
	}
	out := map[string]string{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

// sdkProxy launches the binary with args under the go-sdk legacy client,
// pinned to 2025-11-25, and returns the session and the proxy's stderr.
func sdkProxy(t *testing.T, args []string, env ...string) (*mcp.ClientSession, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	stderr := &syncBuffer{}
	cmd := exec.Command(binPath, args...)
	cmd.Env = proxyEnv(env...)
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-oauth", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("go-sdk connect (initialize): %v; stderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		if err := session.Close(); err != nil {
			t.Errorf("closing the go-sdk session: %v", err)
		}
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", stderr.String())
		}
	})
	return session, stderr
}

// interactive is the binary run as a terminal command with a stdin pipe.
type interactive struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

// startInteractive starts the binary with args, its stdin a pipe.
func startInteractive(t *testing.T, args ...string) *interactive {
	t.Helper()
	c := &interactive{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(binPath, args...)
	c.cmd.Env = proxyEnv()
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(cleanupExitTimeout):
			_ = c.cmd.Process.Kill()
			<-c.done
			t.Errorf("%v did not exit within %v of stdin closing", args, cleanupExitTimeout)
		}
	})
	return c
}

// wait waits (bounded) for the command to exit and returns its status.
func (c *interactive) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(waitTimeout):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("the command did not exit within %v; stdout %q, stderr %q", waitTimeout, c.stdout.String(), c.stderr.String())
	}
	return exitCode(c.err)
}

// both is what the command wrote on stdout and stderr.
func (c *interactive) both() string { return c.stdout.String() + c.stderr.String() }
