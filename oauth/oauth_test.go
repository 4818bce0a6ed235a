package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"go.uber.org/goleak"
)

// The first request signs in: DCR (native, both grants), PKCE S256,
// resource on the authorization and token requests; the request goes once
// more and passes. A second Client on the store reuses the token.
func TestFirstSignInAndReuse(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after every other cleanup
	f := newFixture(t)
	f.clientSecret = true
	dir := filepath.Join(t.TempDir(), "store")
	e := f.newEnv(dir, nil)
	e.mustCall(t)
	if n := f.count("authorize"); n != 1 {
		t.Fatalf("%d authorization requests, want 1", n)
	}
	a := f.authorizes[0]
	if a.Get("resource") != f.serverURL() || a.Get("code_challenge_method") != "S256" || a.Get("scope") != "read" {
		t.Errorf("authorization request %v", a)
	}
	tok := f.tokens[0]
	if tok.Get("resource") != f.serverURL() || tok.Get("code_verifier") == "" || tok.Get("grant_type") != "authorization_code" {
		t.Errorf("token request %v", tok)
	}
	reg := f.registers[0]
	if reg["application_type"] != "native" || fmt.Sprint(reg["grant_types"]) != "[authorization_code refresh_token]" {
		t.Errorf("registration %v", reg)
	}
	if !strings.Contains(e.out.String(), "/authorize?") || !strings.Contains(e.out.String(), "signed in to "+f.rs.Listener.Addr().String()) {
		t.Errorf("user lines: %s", e.out.String())
	}
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{dir: 0o700, e.c.StoreFile(): 0o600} {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
			}
		}
	}
	e2 := f.newEnv(dir, nil)
	e2.mustCall(t)
	if n := f.count("authorize"); n != 1 || e2.browser.count() != 0 {
		t.Fatalf("the second Client signed in again (%d authorizations)", n)
	}
	st, err := e2.c.Status()
	if err != nil || !st.SignedIn || st.Issuer != f.issuer() || st.ClientID != "client-1" || st.ClientSource != sourceDCR ||
		!slices.Equal(st.Scopes, []string{"read"}) || st.Expiry.IsZero() || !st.Refreshable {
		t.Errorf("Status = %+v, %v", st, err)
	}
	if s := fmt.Sprintf("%+v", st); strings.Contains(s, "access-") || strings.Contains(s, "refresh-") || strings.Contains(s, "secret-") {
		t.Errorf("Status shows a secret: %s", s)
	}
	f.scan(t, []*env{e, e2})
}

func TestMetadataOrder(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := newRecorder(t, &mu, &got)
	c := newBare(t, srv.URL+"/mcp/v1", nil)
	ctx := context.Background()

	_, err := c.disc.discover(ctx, challenge{"resource_metadata": srv.URL + "/custom/prm"})
	if err == nil {
		t.Fatal("discover found something on an empty server")
	}
	want := []string{
		"/custom/prm",
		"/.well-known/oauth-protected-resource/mcp/v1",
		"/.well-known/oauth-protected-resource",
		"/.well-known/oauth-authorization-server", // the 2025-03-26 fallback: the origin as AS
		"/.well-known/openid-configuration",
	}
	mu.Lock()
	if !slices.Equal(got, want) {
		t.Errorf("discovery asked\n%q\nwant\n%q", got, want)
	}
	got = nil
	mu.Unlock()

	_, _ = c.disc.authServerMeta(ctx, srv.URL+"/tenant/a")
	want = []string{
		"/.well-known/oauth-authorization-server/tenant/a",
		"/.well-known/openid-configuration/tenant/a",
		"/tenant/a/.well-known/openid-configuration",
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("AS metadata asked\n%q\nwant\n%q", got, want)
	}
}

func newRecorder(t *testing.T, mu *sync.Mutex, got *[]string) *httptestServer {
	s := newHTTPTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		*got = append(*got, r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	return s
}

// newBare is a Client for url on a fresh store, no fixture.
func newBare(t *testing.T, u string, mod func(*Config)) *Client {
	t.Helper()
	cfg := Config{ServerURL: u, StoreDir: filepath.Join(t.TempDir(), "s"), AuthTimeout: time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func signInErr(t *testing.T, e *env) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status, err := e.call(ctx)
	if err == nil {
		t.Fatalf("the call passed (status %d), want a sign-in error", status)
	}
	var te *routing.TransportError
	var se *SignInError
	if !errors.As(err, &te) || te.Kind != routing.KindAuth || !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want a KindAuth TransportError around a *SignInError", err, err)
	}
	host := f0(e)
	switch {
	case errors.Is(err, errDiscovery):
		// No sign-in could start: auth login would not help either.
		if !strings.HasPrefix(err.Error(), "sign-in to "+host+" cannot start: ") ||
			!strings.HasSuffix(err.Error(), "the server's OAuth set-up must be fixed, or pass a token with --header 'Authorization: Bearer <token>'") ||
			strings.Contains(err.Error(), "auth login") {
			t.Errorf("error text %q does not name the host and the way out", err)
		}
	case !strings.HasPrefix(err.Error(), "sign-in to "+host+" did not complete: ") ||
		!strings.HasSuffix(err.Error(), "run: mcp-tasks-proxy auth login http://"+host+"/mcp"):
		t.Errorf("error text %q does not name the host and the way out", err)
	}
	return err
}

func f0(e *env) string { return e.c.host }

func TestIssuerMismatch(t *testing.T) {
	f := newFixture(t)
	f.issuerLie = "https://elsewhere.example"
	e := f.newEnv(storeDir(t), nil)
	err := signInErr(t, e)
	if !strings.Contains(err.Error(), `is for issuer "https://elsewhere.example"`) || !strings.Contains(err.Error(), "RFC 8414") {
		t.Errorf("error %q", err)
	}
	if f.count("authorize") != 0 || f.count("register") != 0 {
		t.Error("went on after the issuer mismatch")
	}
}

func TestPKCES256Required(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*fixture)
	}{
		{"plain only", func(f *fixture) { f.noS256 = true }},
		{"no list", func(f *fixture) { f.noPKCEList = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.set(f)
			e := f.newEnv(storeDir(t), nil)
			err := signInErr(t, e)
			if !strings.Contains(err.Error(), "does not offer PKCE with S256") {
				t.Errorf("error %q", err)
			}
			if f.count("authorize") != 0 {
				t.Error("went on without S256")
			}
		})
	}
}

// RFC 9207: a wrong iss, or none when promised, stops before the code is
// redeemed.
func TestIssValidated(t *testing.T) {
	for _, tc := range []struct {
		name, iss string
		promised  bool
		want      string
	}{
		{"wrong", "https://evil.example", false, `names the issuer "https://evil.example"`},
		{"missing but promised", "-", true, "promises an iss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.issParam, f.issSupported = tc.iss, tc.promised
			e := f.newEnv(storeDir(t), nil)
			err := signInErr(t, e)
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the code was not redeemed") {
				t.Errorf("error %q", err)
			}
			f.mu.Lock()
			n := len(f.tokens)
			f.mu.Unlock()
			if n != 0 {
				t.Errorf("%d token requests: the code was redeemed", n)
			}
			f.scan(t, []*env{e}, err)
		})
	}
}

// A callback with a wrong state is refused with a page; the sign-in keeps
// waiting and completes with the right one. Other paths and hosts get 404.
func TestWrongStateRefused(t *testing.T) {
	f := newFixture(t)
	e := f.newEnv(storeDir(t), nil)
	var statuses []int
	e.browser.before = func(authURL string) {
		u, _ := url.Parse(authURL)
		redirect, _ := url.Parse(u.Query().Get("redirect_uri"))
		for _, try := range []string{
			redirect.String() + "?code=stolen&state=wrong",
			redirect.String() + "?code=stolen",
			"http://" + redirect.Host + "/other?code=x&state=" + u.Query().Get("state"),
		} {
			resp, err := http.Get(try)
			if err != nil {
				t.Error(err)
				continue
			}
			resp.Body.Close()
			statuses = append(statuses, resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodGet, redirect.String()+"?code=x&state="+u.Query().Get("state"), nil)
		req.Host = "evil.example:" + redirect.Port()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			statuses = append(statuses, resp.StatusCode)
		}
	}
	e.mustCall(t)
	if !slices.Equal(statuses, []int{400, 400, 404, 404}) {
		t.Errorf("callback statuses %v, want [400 400 404 404]", statuses)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tok := range f.tokens {
		if tok.Get("code") == "stolen" || tok.Get("code") == "x" {
			t.Error("a code with a wrong state, path or host was redeemed")
		}
	}
}

// Nobody signs in: every request waiting on the sign-in gets one error
// that names the host and the way out.
func TestSignInTimeout(t *testing.T) {
	f := newFixture(t)
	e := f.newEnv(storeDir(t), func(c *Config) { c.AuthTimeout = 200 * time.Millisecond; c.NoBrowser = true })
	e.browser.off = true
	const n = 5
	errs := make(chan error, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := e.call(ctx)
			errs <- err
		}()
	}
	for range n {
		err := <-errs
		var se *SignInError
		if !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a SignInError for the timeout", err)
		}
		want := "sign-in to " + e.c.host + " did not complete: nobody finished signing in within 200ms (the sign-in page was printed on stderr); to sign in from a terminal, run: mcp-tasks-proxy auth login " + f.serverURL()
		if err.Error() != want {
			t.Fatalf("error text\n%s\nwant\n%s", err, want)
		}
	}
	if e.browser.count() != 0 {
		t.Error("--oauth-no-browser opened a browser")
	}
	if got := strings.Count(e.out.String(), "/authorize?"); got < 1 {
		t.Errorf("the sign-in address was not printed: %s", e.out.String())
	}
	if f.count("authorize") != 0 {
		t.Error("somebody signed in")
	}
}

// The derived port moves on when taken; a pinned port that is taken fails.
func TestCallbackPortBusy(t *testing.T) {
	f := newFixture(t)
	derived := derivedPort(mustCanon(t, f.serverURL()))
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(derived)))
	if err != nil {
		t.Skipf("the derived port %d is not free here: %v", derived, err)
	}
	defer ln.Close()
	e := f.newEnv(storeDir(t), nil)
	e.mustCall(t)
	u, _ := url.Parse(f.authorizes[0].Get("redirect_uri"))
	if u.Port() == strconv.Itoa(derived) || u.Hostname() != "127.0.0.1" || u.Path != "/callback" {
		t.Errorf("redirect URI %s: want 127.0.0.1, another port than %d, /callback", u, derived)
	}

	f2 := newFixture(t)
	pinned := ln.Addr().(*net.TCPAddr).Port
	e2 := f2.newEnv(storeDir(t), func(c *Config) { c.CallbackPort = pinned })
	err = signInErr(t, e2)
	if !strings.Contains(err.Error(), fmt.Sprintf("the OAuth callback port %d on 127.0.0.1 is taken", pinned)) || !strings.Contains(err.Error(), "--oauth-callback-port") {
		t.Errorf("error %q", err)
	}
}

func mustCanon(t *testing.T, s string) string {
	u, err := canonicalURL(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

func TestStorePermissionsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dir := filepath.Join(t.TempDir(), "store dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{ServerURL: "https://mcp.example.com/mcp", StoreDir: dir})
	if err == nil || !strings.Contains(err.Error(), "chmod 700 '"+dir+"'") {
		t.Fatalf("err = %v, want the chmod 700 that fixes it", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{ServerURL: "https://mcp.example.com/mcp", StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.store.save(&record{Version: 1, Token: &token{AccessToken: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(c.StoreFile(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{ServerURL: "https://mcp.example.com/mcp", StoreDir: dir})
	if err == nil || !strings.Contains(err.Error(), "chmod 600 '"+c.StoreFile()+"'") || !strings.Contains(err.Error(), "mode 0644") {
		t.Fatalf("err = %v, want the chmod 600 that fixes it", err)
	}
	if _, err := c.Status(); err == nil {
		t.Fatal("Status read a file others can read")
	}
}

// A save replaces the file by rename: a reader of the old file reads it
// whole, no temporary file is left, the mode is 0600.
func TestStoreAtomicWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	server, _ := canonicalURL("https://mcp.example.com/mcp")
	st, err := openTokenStore(dir, target{server: server}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.save(&record{Version: 1, Server: "x", Token: &token{AccessToken: "old"}}); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(st.path())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := st.save(&record{Version: 1, Server: "x", Token: &token{AccessToken: "new"}}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4096)
	n, _ := old.Read(b)
	if !strings.Contains(string(b[:n]), `"old"`) {
		t.Errorf("the old file changed under its reader: %s", b[:n])
	}
	rec, err := st.load()
	if err != nil || rec.Token.AccessToken != "new" {
		t.Fatalf("load = %+v, %v", rec, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(st.path())
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", fi.Mode().Perm())
		}
	}
	// A store file of a later version is refused, not overwritten.
	if err := os.WriteFile(st.path(), []byte(`{"version":99}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.load(); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("load of a later version: %v", err)
	}
}

// Two Clients on one store (two processes, as far as the lock can tell),
// many requests each at once: one sign-in.
func TestTwoClientsSignInOnce(t *testing.T) {
	f := newFixture(t)
	dir := storeDir(t)
	a, b := f.newEnv(dir, nil), f.newEnv(dir, nil)
	var wg sync.WaitGroup
	for _, e := range []*env{a, b, a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.mustCall(t)
		}()
	}
	wg.Wait()
	if n := f.count("authorize"); n != 1 {
		t.Fatalf("%d sign-ins, want 1", n)
	}
	if n := f.count("register"); n != 1 {
		t.Fatalf("%d registrations, want 1", n)
	}
	if a.browser.count()+b.browser.count() != 1 {
		t.Fatalf("%d browser tabs, want 1", a.browser.count()+b.browser.count())
	}
}

// Two Clients whose stored token was refused: one refresh, with resource;
// the other adopts its result, so the rotating refresh token is spent once.
func TestTwoClientsRefreshOnce(t *testing.T) {
	f := newFixture(t)
	dir := storeDir(t)
	a := f.newEnv(dir, nil)
	a.mustCall(t)
	b := f.newEnv(dir, nil)
	b.mustCall(t)
	f.kill()
	var wg sync.WaitGroup
	for _, e := range []*env{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.mustCall(t)
		}()
	}
	wg.Wait()
	if n, reuse := f.count("refresh"), f.count("reuse"); n != 1 || reuse != 0 {
		t.Fatalf("%d refreshes (%d reused), want 1 (0)", n, reuse)
	}
	if n := f.count("authorize"); n != 1 {
		t.Fatalf("%d sign-ins, want 1", n)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tok := range f.tokens {
		if tok.Get("grant_type") == "refresh_token" && tok.Get("resource") != f.serverURL() {
			t.Errorf("refresh without the resource: %v", tok)
		}
	}
}

// A token near its expiry is refreshed ahead, with the resource.
func TestRefreshAhead(t *testing.T) {
	f := newFixture(t)
	f.ttl = 600
	e := f.newEnv(storeDir(t), nil)
	e.mustCall(t)
	e.c.now = func() time.Time { return time.Now().Add(599 * time.Second) }
	e.mustCall(t)
	if n := f.count("refresh"); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	f.mu.Lock()
	last := f.tokens[len(f.tokens)-1]
	f.mu.Unlock()
	if last.Get("grant_type") != "refresh_token" || last.Get("resource") != f.serverURL() {
		t.Errorf("refresh request %v", last)
	}
	if f.rsCalls != 3 { // the sign-in's 401, its retry, one call
		t.Errorf("%d upstream calls, want 3: the refresh ahead saved a 401", f.rsCalls)
	}
}

// invalid_grant on refresh signs in again; invalid_client registers again
// first.
func TestRefreshRefused(t *testing.T) {
	for _, tc := range []struct {
		name      string
		forget    func(f *fixture)
		registers int
	}{
		{"invalid_grant", func(f *fixture) {
			for k, g := range f.refresh {
				g.dead = true
				f.refresh[k] = g
			}
		}, 1},
		{"invalid_client", func(f *fixture) { f.clients = map[string]fxClient{} }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			e := f.newEnv(storeDir(t), nil)
			e.mustCall(t)
			f.kill()
			f.mu.Lock()
			tc.forget(f)
			f.mu.Unlock()
			e.mustCall(t)
			if n := f.count("authorize"); n != 2 {
				t.Errorf("%d sign-ins, want 2", n)
			}
			if n := f.count("register"); n != tc.registers {
				t.Errorf("%d registrations, want %d", n, tc.registers)
			}
		})
	}
}

// 403 insufficient_scope: a sign-in for the union of the scopes; a scope
// never granted ends in an error after two tries.
func TestStepUp(t *testing.T) {
	f := newFixture(t)
	e := f.newEnv(storeDir(t), nil)
	e.mustCall(t)
	f.mu.Lock()
	f.needScope = "write"
	f.mu.Unlock()
	e.mustCall(t)
	f.mu.Lock()
	got := f.authorizes[len(f.authorizes)-1].Get("scope")
	f.needScope = "admin"
	f.grantOnly = []string{"read", "write"}
	f.mu.Unlock()
	if got != "read write" {
		t.Errorf("step-up asked for %q, want the union %q", got, "read write")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	for i := 0; i < 5 && err == nil; i++ {
		var status int
		status, err = e.call(ctx)
		if err == nil && status != http.StatusForbidden {
			t.Fatalf("status %d", status)
		}
	}
	if err == nil || !strings.Contains(err.Error(), `asks for the scope "admin"`) || !strings.Contains(err.Error(), "after 2 sign-ins") {
		t.Fatalf("err = %v, want the retry cap", err)
	}
	if n := f.count("authorize"); n != 4 { // the first, write, admin twice
		t.Errorf("%d sign-ins, want 4", n)
	}
}

// Login with a pasted address: no listener; a wrong state or another
// address is refused without quoting it.
func TestLoginPaste(t *testing.T) {
	f := newFixture(t)
	e := f.newEnv(storeDir(t), func(c *Config) { c.CallbackPort = 1 }) // nothing may listen
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	consent := func(mangle func(string) string) func() (string, error) {
		return func() (string, error) {
			out := e.out.String()
			i := strings.LastIndex(out, "http://127.0.0.1:"+strconv.Itoa(f.as.Listener.Addr().(*net.TCPAddr).Port)+"/authorize?")
			if i < 0 {
				return "", errors.New("no address printed")
			}
			authURL := strings.Fields(out[i:])[0]
			resp, err := noRedirect.Get(authURL)
			if err != nil {
				return "", err
			}
			resp.Body.Close()
			return mangle(resp.Header.Get("Location")), nil
		}
	}
	err := e.c.Login(context.Background(), consent(func(s string) string { return strings.Replace(s, "state=", "state=x", 1) }))
	if err == nil || !strings.Contains(err.Error(), "belongs to another sign-in") {
		t.Fatalf("wrong state: %v", err)
	}
	err2 := e.c.Login(context.Background(), consent(func(s string) string { return strings.Replace(s, "/callback", "/elsewhere", 1) }))
	if err2 == nil || !strings.Contains(err2.Error(), "not the address the browser was sent to") {
		t.Fatalf("wrong address: %v", err2)
	}
	if err := e.c.Login(context.Background(), consent(func(s string) string { return "  " + s + "\n" })); err != nil {
		t.Fatal(err)
	}
	if e.browser.count() != 0 {
		t.Error("a paste login opened a browser")
	}
	e.mustCall(t)
	f.scan(t, []*env{e}, err, err2)
}

// Logout revokes both tokens, then deletes; a second one has nothing.
func TestLogout(t *testing.T) {
	f := newFixture(t)
	e := f.newEnv(storeDir(t), nil)
	e.mustCall(t)
	if err := e.c.Logout(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	revoked := slices.Clone(f.revoked)
	f.mu.Unlock()
	if !slices.Equal(revoked, []string{"refresh_token", "access_token"}) {
		t.Errorf("revoked %v", revoked)
	}
	if _, err := os.Stat(e.c.StoreFile()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the store file is still there: %v", err)
	}
	if st, err := e.c.Status(); err != nil || st.SignedIn {
		t.Errorf("Status after logout: %+v, %v", st, err)
	}
	if err := e.c.Logout(context.Background()); !errors.Is(err, ErrNotSignedIn) {
		t.Errorf("second logout: %v", err)
	}
}

// Every secret the AS issued, across sign-in, refresh, step-up, logout and
// failures, stays out of the user lines, the logs (at debug) and the errors.
func TestSecretsNeverShown(t *testing.T) {
	f := newFixture(t)
	f.clientSecret = true
	e := f.newEnv(storeDir(t), nil)
	e.mustCall(t)
	f.kill()
	e.mustCall(t) // refresh
	f.mu.Lock()
	f.needScope = "write"
	f.mu.Unlock()
	e.mustCall(t) // step-up
	f.mu.Lock()
	for k, g := range f.refresh {
		g.dead = true
		f.refresh[k] = g
	}
	f.mu.Unlock()
	f.kill()
	e.mustCall(t) // invalid_grant, sign in again
	f.mu.Lock()
	f.issParam = "https://evil.example"
	f.mu.Unlock()
	f.kill()
	_, err := e.call(context.Background()) // refresh works; no sign-in needed
	_ = e.c.Logout(context.Background())
	f.scan(t, []*env{e}, err)
}

func TestConfigChecks(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{ServerURL: "ftp://x"}, "absolute http"},
		{Config{ServerURL: "https://x/mcp", CallbackHost: "0.0.0.0"}, "not a loopback name"},
		{Config{ServerURL: "https://x/mcp", CallbackHost: "example.com"}, "not a loopback name"},
		{Config{ServerURL: "https://x/mcp", ClientInfo: []byte(`{"client_secret":"s3cr3t"}`)}, "no client_id"},
		{Config{ServerURL: "https://x/mcp", ClientInfo: []byte(`{"client_id": s3cr3t}`)}, "not a JSON object"},
		{Config{ServerURL: "https://x/mcp", ClientMetadata: []byte(`[1]`)}, "not a JSON object"},
	} {
		tc.cfg.StoreDir = storeDir(t)
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error quotes the secret: %v", err)
		}
	}
	for host, want := range map[string]string{"": "http://127.0.0.1:", "localhost": "http://localhost:", "::1": "http://[::1]:", "[::1]": "http://[::1]:"} {
		c := newBare(t, "https://x/mcp", func(c *Config) { c.CallbackHost = host })
		if got := c.cb.redirectURI(5000); got != want+"5000/callback" {
			t.Errorf("host %q: redirect URI %s", host, got)
		}
	}
}

func TestResourceMatches(t *testing.T) {
	c := newBare(t, "https://MCP.example.com:443/api/mcp", nil)
	for r, want := range map[string]bool{
		"https://mcp.example.com/api/mcp":  true,
		"https://mcp.example.com/api/mcp/": true,
		"https://mcp.example.com":          true,
		"https://mcp.example.com/":         true,
		"https://mcp.example.com/api":      true,
		"https://mcp.example.com/ap":       false,
		"https://mcp.example.com/api/mcp2": false,
		"https://other.example.com/api":    false,
		"http://mcp.example.com/api/mcp":   false,
		"https://mcp.example.com:8443/api": false,
	} {
		if got := c.disc.resourceMatches(r); got != want {
			t.Errorf("resourceMatches(%q) = %v, want %v", r, got, want)
		}
	}
}

func TestBrowserCommand(t *testing.T) {
	t.Setenv("BROWSER", "firefox --new-tab"+string(os.PathListSeparator)+"chromium")
	if got := browserCommand("my-open --x"); !slices.Equal(got, []string{"my-open", "--x"}) {
		t.Errorf("configured: %q", got)
	}
	if got := browserCommand(""); !slices.Equal(got, []string{"firefox", "--new-tab"}) {
		t.Errorf("$BROWSER: %q", got)
	}
	t.Setenv("BROWSER", "")
	if got := browserCommand(""); len(got) == 0 {
		t.Error("no platform opener")
	}
	if runtime.GOOS == "windows" {
		return
	}
	// The child gets /dev/null for stdout: what it prints goes nowhere.
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "b.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho on-stdout\nprintf '%s' \"$1\" > "+mark+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := openBrowser([]string{script}, "http://127.0.0.1:1/authorize?x=1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := os.ReadFile(mark)
		if err == nil && string(b) == "http://127.0.0.1:1/authorize?x=1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the browser command did not get the URL as its last argument")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Registration order: a static client wins, then a client metadata
// document where the AS supports one, then DCR with the user's metadata
// merged in (redirect_uris stays the proxy's).
func TestClientRegistrationOrder(t *testing.T) {
	t.Run("static", func(t *testing.T) {
		f := newFixture(t)
		f.cimd = true
		e := f.newEnv(storeDir(t), func(c *Config) {
			c.ClientInfo = []byte(`{"client_id":"pre id","client_secret":"pre-secret-1","issuer":"` + f.issuer() + `"}`)
			c.ClientMetadataURL = "https://client.example/meta.json"
		})
		f.mu.Lock()
		f.clients["pre id"] = fxClient{secret: "pre-secret-1", redirect: e.c.cb.redirectURIs()}
		f.secrets = append(f.secrets, "pre-secret-1")
		f.mu.Unlock()
		e.mustCall(t)
		f.kill()
		e.mustCall(t) // a refresh with the static client
		if f.count("register") != 0 || f.authorizes[0].Get("client_id") != "pre id" || f.count("refresh") != 1 {
			t.Errorf("registrations %d, client %q, refreshes %d", f.count("register"), f.authorizes[0].Get("client_id"), f.count("refresh"))
		}
		if f.basic != 2 {
			t.Errorf("%d token requests with Basic client authentication, want 2", f.basic)
		}
		if st, _ := e.c.Status(); st.ClientSource != sourceStatic || st.ClientID != "pre id" {
			t.Errorf("Status %+v", st)
		}
		f.scan(t, []*env{e})
	})
	t.Run("static for another issuer", func(t *testing.T) {
		f := newFixture(t)
		e := f.newEnv(storeDir(t), func(c *Config) {
			c.ClientInfo = []byte(`{"client_id":"pre","issuer":"https://other.example"}`)
		})
		err := signInErr(t, e)
		if !strings.Contains(err.Error(), "the static OAuth client is for the authorization server https://other.example") {
			t.Errorf("error %q", err)
		}
	})
	t.Run("metadata document", func(t *testing.T) {
		f := newFixture(t)
		f.cimd = true
		const cid = "https://client.example/meta.json"
		e := f.newEnv(storeDir(t), func(c *Config) { c.ClientMetadataURL = cid })
		f.mu.Lock()
		f.clients[cid] = fxClient{redirect: e.c.cb.redirectURIs()}
		f.mu.Unlock()
		e.mustCall(t)
		if f.count("register") != 0 || f.authorizes[0].Get("client_id") != cid {
			t.Errorf("registrations %d, client %q", f.count("register"), f.authorizes[0].Get("client_id"))
		}
		if st, _ := e.c.Status(); st.ClientSource != sourceCIMD {
			t.Errorf("Status %+v", st)
		}
	})
	t.Run("DCR when the AS has no metadata documents", func(t *testing.T) {
		f := newFixture(t)
		e := f.newEnv(storeDir(t), func(c *Config) {
			c.ClientMetadataURL = "https://client.example/meta.json"
			c.ClientMetadata = []byte(`{"client_name":"My Laptop","logo_uri":"https://x/l.png","redirect_uris":["https://evil.example/cb"]}`)
		})
		e.mustCall(t)
		reg := f.registers[0]
		if reg["client_name"] != "My Laptop" || reg["logo_uri"] != "https://x/l.png" || reg["application_type"] != "native" {
			t.Errorf("registration %v", reg)
		}
		uris := fmt.Sprint(reg["redirect_uris"])
		if strings.Contains(uris, "evil") || !strings.Contains(uris, "http://127.0.0.1:") || len(reg["redirect_uris"].([]any)) != portTries {
			t.Errorf("redirect_uris %s", uris)
		}
	})
}

// The challenge's scope wins over scopes_supported; Config.Scope over both.
func TestScopeChoice(t *testing.T) {
	for _, tc := range []struct {
		name, override, want string
	}{
		{"challenge", "", "mcp:tools"},
		{"override", "a b", "a b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.chScope = "mcp:tools"
			f.scopesOffered = []string{"read", "write"}
			e := f.newEnv(storeDir(t), func(c *Config) { c.Scope = tc.override })
			e.mustCall(t)
			if got := f.authorizes[0].Get("scope"); got != tc.want {
				t.Errorf("scope %q, want %q", got, tc.want)
			}
		})
	}
}

// Metadata traffic follows a redirect only on the same origin, even with
// the caller's own http.Client.
func TestMetadataRedirectSameOriginOnly(t *testing.T) {
	var mu sync.Mutex
	var other []string
	elsewhere := newRecorder(t, &mu, &other)
	srv := newHTTPTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			http.Redirect(w, r, elsewhere.URL+"/prm", http.StatusFound)
		case "/.well-known/oauth-protected-resource":
			http.Redirect(w, r, "/moved", http.StatusFound)
		case "/moved":
			writeJSON(w, 200, map[string]any{"resource": "http://" + r.Host, "authorization_servers": []string{elsewhere.URL}})
		default:
			http.NotFound(w, r)
		}
	}))
	c := newBare(t, srv.URL+"/mcp", func(c *Config) { c.HTTPClient = &http.Client{} })
	if err := sameOriginRedirect(mustReq(t, elsewhere.URL+"/x"), []*http.Request{mustReq(t, srv.URL+"/y")}); err == nil {
		t.Error("a redirect to another origin is allowed")
	}
	_, err := c.disc.discover(context.Background(), nil) // same-origin redirect followed; the AS (elsewhere) has no metadata
	if err == nil || !strings.Contains(err.Error(), "no authorization server metadata was found for "+elsewhere.URL) {
		t.Errorf("discover: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(other, "/prm") {
		t.Error("a cross-origin redirect was followed")
	}
}

func mustReq(t *testing.T, u string) *http.Request {
	r, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A request the client did not make (routing.Unattended: a listen stream
// reconnecting) never starts a sign-in, so it cannot open a browser tab per
// try; it still refreshes a token, and a sign-in the client's own request
// makes serves it on its next try.
func TestUnattendedRequestNeverSignsIn(t *testing.T) {
	f := newFixture(t)
	e := f.newEnv(storeDir(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := e.call(routing.Unattended(ctx))
	var te *routing.TransportError
	if !errors.As(err, &te) || te.Kind != routing.KindAuth || !strings.Contains(err.Error(), "auth login") {
		t.Fatalf("unattended call before any sign-in: %v", err)
	}
	if n := f.count("authorize"); n != 0 || e.browser.count() != 0 {
		t.Fatalf("an unattended request started a sign-in (%d authorizations, %d browser launches)", n, e.browser.count())
	}
	e.mustCall(t) // the client's own request signs in
	if status, err := e.call(routing.Unattended(ctx)); err != nil || status != 200 {
		t.Fatalf("unattended call after the sign-in: %d, %v", status, err)
	}
	f.kill() // the access token is refused: a refresh, not a sign-in
	if status, err := e.call(routing.Unattended(ctx)); err != nil || status != 200 {
		t.Fatalf("unattended call with a refused token: %d, %v", status, err)
	}
	if a, r := f.count("authorize"), f.count("refresh"); a != 1 || r != 1 {
		t.Errorf("%d sign-ins and %d refreshes, want 1 and 1", a, r)
	}
}
