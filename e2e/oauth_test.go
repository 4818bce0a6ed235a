package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

// OAuth 2.1 sign-in end to end (issue 15): the built binary against a real
// authorization server (demo/authserver) and protected demo servers, with
// demo/authserver/cmd/fakebrowser as the user's browser.

// stepUpOptions: every request needs mcp:read; the echo tool also needs
// mcp:write.
func stepUpOptions() *demo.ProtectedOptions {
	return &demo.ProtectedOptions{
		Scopes:     []string{"mcp:read"},
		ToolScopes: map[string][]string{"echo": {"mcp:write"}},
	}
}

// TestOAuthFirstSignIn: a proxy with an empty store meets a protected 2026
// server: the server/discover probe gets 401, the proxy registers (DCR),
// opens the browser on an authorization request with PKCE S256 and the
// resource, redeems the code, and replays the refused probe once with the
// bearer; initialize, tools/list and tools/call work. The authorization
// server saw one registration, one authorization and one code exchange;
// every later request carried the bearer; the callback listener is gone
// once the sign-in ends; the store is private.
func TestOAuthFirstSignIn(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	b := newBrowser(t, "follow")
	p := startProxy(t, f.args(b))
	p.initialize()
	listTools(t, p, "2")
	callEcho(t, p, "3", "signed in")

	st := f.stats()
	if st.Registrations != 1 || st.Authorizations != 1 || st.TokenGrants != 1 || st.Refreshes != 0 || st.TokenErrors != 0 {
		t.Errorf("authorization server stats %+v, want 1 registration, 1 authorization, 1 token grant, no refresh, no error", st)
	}
	reqs := f.as.AuthorizeRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d authorization requests, want 1: %+v", len(reqs), reqs)
	}
	ar := reqs[0]
	if !slices.Equal(ar.Resource, []string{f.up.URL}) {
		t.Errorf("authorization request resource = %q, want [%s] (RFC 8707)", ar.Resource, f.up.URL)
	}
	if ar.CodeChallengeMethod != "S256" || !ar.HasCodeChallenge {
		t.Errorf("authorization request PKCE: method %q, challenge %v; want S256 with a challenge", ar.CodeChallengeMethod, ar.HasCodeChallenge)
	}
	if !sameStrings(strings.Fields(ar.Scope), f.as.Scopes()) {
		t.Errorf("authorization request scope %q, want the resource metadata's scopes_supported %q (the challenge names none)", ar.Scope, f.as.Scopes())
	}
	if !strings.HasPrefix(ar.RedirectURI, "http://127.0.0.1:") || !strings.HasSuffix(ar.RedirectURI, "/callback") {
		t.Errorf("redirect_uri %q, want http://127.0.0.1:PORT/callback", ar.RedirectURI)
	}
	for _, tr := range f.as.TokenRequests() {
		if !slices.Equal(tr.Resource, []string{f.up.URL}) {
			t.Errorf("token request %s carries resource %q, want [%s]", tr.GrantType, tr.Resource, f.up.URL)
		}
	}

	t.Run("bearer on every request", func(t *testing.T) {
		posts := f.up.seen(func(s authSeen) bool { return s.HTTPMethod == http.MethodPost })
		refused := 0
		for _, s := range posts {
			switch {
			case s.Status == http.StatusUnauthorized:
				refused++
				if s.Bearer() != "" {
					t.Errorf("%s was refused with a bearer: the first token was not accepted", s.RPCMethod)
				}
				if n := len(f.up.posts(s.RPCMethod)); s.RPCMethod == "server/discover" && n != 2 {
					t.Errorf("the refused %s was sent %d times, want 2 (replayed once)", s.RPCMethod, n)
				}
			case s.Bearer() == "":
				t.Errorf("%s went without a bearer after the sign-in", s.RPCMethod)
			}
		}
		if refused != 1 {
			t.Errorf("%d requests refused with 401, want 1 (the first probe); upstream saw:\n%s", refused, f.up.dump())
		}
	})

	t.Run("callback closed", func(t *testing.T) {
		u, err := url.Parse(ar.RedirectURI)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("the callback %s still accepts connections after the sign-in", u.Host)
		}
	})

	t.Run("store", func(t *testing.T) {
		fi, err := os.Stat(f.store)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("store directory mode %v, want 0700", fi.Mode().Perm())
		}
		files := storeFiles(t, f.store)
		if len(files) != 1 {
			t.Fatalf("store files %v, want one per server", slices.Collect(maps.Keys(files)))
		}
		for name, body := range files {
			fi, err := os.Stat(filepath.Join(f.store, name))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("store file %s mode %v, want 0600", name, fi.Mode().Perm())
			}
			held := false
			for _, tok := range f.as.AccessTokens() {
				held = held || strings.Contains(body, tok)
			}
			if !held {
				t.Errorf("the store file %s holds no valid access token", name)
			}
		}
	})

	t.Run("URL on stderr", func(t *testing.T) {
		if signInURL(f.as, p.stderr.String()) == "" {
			t.Errorf("the sign-in URL was not printed on stderr:\n%s", p.stderr.String())
		}
	})
	secretScan(t, f.as, map[string]string{"stdout": string(joinLines(p.all())), "stderr": p.stderr.String()})
}

// TestOAuthStoredTokenReuse: a second process on the same store (driven by
// the go-sdk legacy client) uses the stored token at once: no 401, no
// browser, no new registration or authorization.
func TestOAuthStoredTokenReuse(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	first := startProxy(t, f.args(newBrowser(t, "follow")))
	first.initialize()
	callEcho(t, first, "1", "first")
	first.closeStdin()
	if code := first.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("first proxy exit status %d, want 0", code)
	}
	before := len(f.up.seen(nil))

	// A browser that never signs in: a sign-in attempt would fail the test
	// instead of passing unnoticed.
	session, _ := sdkProxy(t, f.args(newBrowser(t, "never"), "--auth-timeout", "5"))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "echo" }) {
		t.Errorf("tools/list has no echo tool")
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "second"}})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "second" {
		t.Errorf("echo result %+v, want second", res.Content)
	}
	st := f.stats()
	if st.Registrations != 1 || st.Authorizations != 1 || st.TokenGrants != 1 || st.Refreshes != 0 {
		t.Errorf("stats %+v after the second process, want still 1 registration, 1 authorization, 1 grant, no refresh", st)
	}
	for _, s := range f.up.seen(nil)[before:] {
		if s.Path == upstreamPath && (s.Status == http.StatusUnauthorized || s.Bearer() == "") {
			t.Errorf("second process: %s %s bearer=%v → %d; want every request with the stored bearer, accepted", s.HTTPMethod, s.RPCMethod, s.Bearer() != "", s.Status)
		}
	}
}

// TestOAuthExpiryAndRefresh: an access token the server no longer accepts
// (ExpireAll) is refreshed, with resource, and the refused call replayed
// once; no browser. A short-lived token is refreshed too, whether ahead of
// its expiry or after a 401.
func TestOAuthExpiryAndRefresh(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	p := startProxy(t, f.args(newBrowser(t, "follow")))
	p.initialize()
	callEcho(t, p, "1", "before")

	if n := f.as.ExpireAll(); n < 1 {
		t.Fatalf("ExpireAll expired %d tokens, want at least 1", n)
	}
	callEcho(t, p, "2", "after expiry")
	st := f.stats()
	if st.Refreshes != 1 || st.Authorizations != 1 || st.RefreshReuse != 0 {
		t.Errorf("stats %+v, want 1 refresh, still 1 authorization, no refresh token reuse", st)
	}
	trs := f.as.TokenRequests()
	last := trs[len(trs)-1]
	if last.GrantType != authserver.GrantRefreshToken || last.Error != "" || !slices.Equal(last.Resource, []string{f.up.URL}) {
		t.Errorf("last token request %+v, want a successful refresh_token grant with resource [%s]", last, f.up.URL)
	}
	calls := f.up.posts("tools/call")
	if got := statuses(calls); !slices.Equal(got, []int{200, 401, 200}) {
		t.Errorf("tools/call statuses %v, want [200 401 200] (the refused call replayed once)", got)
	} else if calls[1].Bearer() == calls[2].Bearer() || calls[1].ID != calls[2].ID {
		t.Errorf("the replay carried the same bearer (%v) or another id (%s vs %s)", calls[1].Bearer() == calls[2].Bearer(), calls[1].ID, calls[2].ID)
	}

	t.Run("short-lived token", func(t *testing.T) {
		p := p.bind(t)
		f.as.SetAccessTokenTTL(2 * time.Second)
		f.as.ExpireAll()
		callEcho(t, p, "3", "two-second token")
		if got := f.stats().Refreshes; got != 2 {
			t.Fatalf("refreshes %d, want 2", got)
		}
		// Whatever the proxy does before the token's end (refresh ahead or
		// not), after it the next call must refresh, not sign in. This
		// sleep is a lower bound, not a race.
		time.Sleep(2500 * time.Millisecond)
		f.as.SetAccessTokenTTL(time.Hour)
		callEcho(t, p, "4", "after the second")
		st := f.stats()
		if st.Refreshes < 3 || st.Authorizations != 1 || st.RefreshReuse != 0 {
			t.Errorf("stats %+v, want at least 3 refreshes, still 1 authorization, no reuse", st)
		}
	})
}

// TestOAuthRevocation: after every grant is revoked, the refresh is refused
// (invalid_grant) and the proxy signs in again, with the stored
// registration; the refused call succeeds.
func TestOAuthRevocation(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	p := startProxy(t, f.args(newBrowser(t, "follow")))
	p.initialize()
	callEcho(t, p, "1", "before")
	if n := f.as.RevokeAll(); n != 1 {
		t.Fatalf("RevokeAll revoked %d grants, want 1", n)
	}
	callEcho(t, p, "2", "after revocation")
	st := f.stats()
	if st.Authorizations != 2 || st.TokenGrants != 2 || st.Registrations != 1 {
		t.Errorf("stats %+v, want 2 authorizations, 2 grants, still 1 registration", st)
	}
	refused := false
	for _, tr := range f.as.TokenRequests() {
		refused = refused || (tr.GrantType == authserver.GrantRefreshToken && tr.Error == "invalid_grant")
	}
	if !refused {
		t.Errorf("no refresh was tried (and refused) before signing in again: %+v", f.as.TokenRequests())
	}
	if got := statuses(f.up.posts("tools/call")); !slices.Equal(got, []int{200, 401, 200}) {
		t.Errorf("tools/call statuses %v, want [200 401 200]", got)
	}
}

// TestOAuthTwoProcesses: two proxies on one store start at once: one
// sign-in between them. Their tokens then expire and both call at once:
// one refresh, and no refresh token is ever presented twice.
func TestOAuthTwoProcesses(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	f.up.manyProcesses()
	b := newBrowser(t, "follow")
	a := startProxy(t, f.args(b))
	c := startProxy(t, f.args(b))
	a.request(`"init"`, "initialize", initParams)
	c.request(`"init"`, "initialize", initParams)
	for _, p := range []*rawProc{a, c} {
		resultOf(t, p.expect(`"init"`))
		p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	st := f.stats()
	if st.Authorizations != 1 || st.TokenGrants != 1 || st.Registrations != 1 {
		t.Errorf("stats %+v, want one sign-in between the two processes", st)
	}

	f.as.ExpireAll()
	const n = 4
	for i := range n {
		for _, p := range []*rawProc{a, c} {
			p.request(strconv.Itoa(i), "tools/call", fmt.Sprintf(`{"name":"echo","arguments":{"text":"call %d"}}`, i))
		}
	}
	for i := range n {
		for _, p := range []*rawProc{a, c} {
			res := resultOf(t, p.expect(strconv.Itoa(i)))
			if got := res.Get("content.0.text").Str; got != fmt.Sprintf("call %d", i) {
				t.Errorf("call %d = %q", i, got)
			}
		}
	}
	st = f.stats()
	if st.RefreshReuse != 0 || st.Refreshes != 1 || st.Authorizations != 1 {
		t.Errorf("stats %+v, want exactly one refresh, no refresh token reused, still one authorization", st)
	}
	if len(f.as.AccessTokens()) != 1 {
		t.Errorf("%d valid access tokens, want 1 (the grant must not have been revoked)", len(f.as.AccessTokens()))
	}
}

// TestOAuthStepUp: a tool that needs a scope the token lacks gets 403
// insufficient_scope; the proxy signs in again asking for the union of the
// scopes held and challenged, and replays the call exactly once. A second
// call goes through at once.
func TestOAuthStepUp(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, stepUpOptions())
	p := startProxy(t, f.args(newBrowser(t, "follow")))
	p.initialize()
	listTools(t, p, "1")
	reqs := f.as.AuthorizeRequests()
	if len(reqs) != 1 || reqs[0].Scope != "mcp:read" {
		t.Fatalf("authorization requests %+v, want one for the challenge's scope mcp:read", reqs)
	}
	callEcho(t, p, "2", "stepped up")
	reqs = f.as.AuthorizeRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d authorization requests, want 2 (a step-up)", len(reqs))
	}
	if !sameStrings(strings.Fields(reqs[1].Scope), []string{"mcp:read", "mcp:write"}) {
		t.Errorf("the step-up asked for %q, want the union mcp:read mcp:write", reqs[1].Scope)
	}
	calls := f.up.posts("tools/call")
	if got := statuses(calls); !slices.Equal(got, []int{403, 200}) {
		t.Errorf("tools/call statuses %v, want [403 200]: the refused call replayed exactly once", got)
	}
	callEcho(t, p, "3", "again")
	if st := f.stats(); st.Authorizations != 2 || st.Registrations != 1 {
		t.Errorf("stats %+v, want 2 authorizations and 1 registration", st)
	}
	listTools(t, p, "4") // the wider token still serves the rest
}

// TestOAuthStepUpRetryCap: a scope the authorization server never grants
// ends each call in one JSON-RPC error, not a loop: the sign-ins are
// bounded, and once the cap is reached further calls open no browser. The
// process keeps serving.
func TestOAuthStepUpRetryCap(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, stepUpOptions())
	f.as.SetGrantScopes(authserver.Without("mcp:write"))
	p := startProxy(t, f.args(newBrowser(t, "follow")))
	p.initialize()
	var auths []int
	for i := range 4 {
		e := errorOf(t, p.call(strconv.Itoa(i), "tools/call", `{"name":"echo","arguments":{"text":"never"}}`))
		if !strings.Contains(e.Get("message").Str, "scope") {
			t.Errorf("call %d: error %s does not mention the scope", i, e.Raw)
		}
		auths = append(auths, f.stats().Authorizations)
	}
	if auths[3] > 4 || auths[3] != auths[2] {
		t.Errorf("authorizations after each call %v: want a bound, reached by the third call", auths)
	}
	if n := len(f.up.posts("tools/call")); n > 2*4 {
		t.Errorf("%d tools/call POSTs for 4 calls: more than one replay each", n)
	}
	listTools(t, p, `"list"`)
}

// TestOAuthNoBrowser: --oauth-no-browser prints the sign-in URL on stderr,
// opens nothing ($BROWSER is a logging fakebrowser), and keeps waiting; the
// test signs in by following the printed URL.
func TestOAuthNoBrowser(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	b := newBrowser(t, "follow")
	p := startProxy(t, f.args(nil, "--oauth-no-browser"), "BROWSER="+b.cmd)
	p.request(`"init"`, "initialize", initParams)
	u := waitSignInURL(t, f.as, p.stderr)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := authserver.Browse(ctx, u, authserver.BrowseOptions{}); err != nil {
		t.Fatalf("following the printed URL: %v", err)
	}
	resultOf(t, p.expect(`"init"`))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	callEcho(t, p, "1", "headless")
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	if runs := b.runs(); len(runs) != 0 {
		t.Errorf("--oauth-no-browser opened a browser %d times", len(runs))
	}
	if st := f.stats(); st.Authorizations != 1 || st.TokenGrants != 1 {
		t.Errorf("stats %+v, want one sign-in", st)
	}
}

// TestOAuthTimeout: with --auth-timeout 2s and a user who never signs in,
// every request waiting on the sign-in gets exactly one JSON-RPC error
// saying the sign-in to HOST did not complete and naming `mcp-tasks-proxy
// auth login URL`; the process keeps serving. Running that very command
// (with the test's store and browser) then lets the same process go on
// without a browser of its own.
func TestOAuthTimeout(t *testing.T) {
	t.Parallel()

	t.Run("at initialize", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t, authserver.Config{}, nil)
		p := startProxy(t, f.args(newBrowser(t, "never"), "--auth-timeout", "2s"))
		e := errorOf(t, p.call(`"init"`, "initialize", initParams))
		checkSignInMessage(t, e, f.up.URL)
		if st := f.stats(); st.Authorizations != 1 {
			t.Errorf("%d authorization requests (browser tabs) for one initialize, want 1: a sign-in that did not complete is not retried", st.Authorizations)
		}
		resultOf(t, p.call(`"ping"`, "ping", ""))
		// The next initialize tries again (and times out again).
		checkSignInMessage(t, errorOf(t, p.call(`"init2"`, "initialize", initParams)), f.up.URL)
		if st := f.stats(); st.TokenGrants != 0 || st.Authorizations < 1 {
			t.Errorf("stats %+v, want an authorization request and no token", st)
		}
	})

	t.Run("while serving", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t, authserver.Config{}, nil)
		// Sign in with a first process; the one under test has a browser
		// that never signs in, and the stored token.
		first := startProxy(t, f.args(newBrowser(t, "follow")))
		first.initialize()
		first.closeStdin()
		first.waitExit(cleanupExitTimeout)

		p := startProxy(t, f.args(newBrowser(t, "never"), "--auth-timeout", "2"))
		p.initialize()
		f.as.RevokeAll()
		ids := []string{`"list"`, `"call-1"`, `"call-2"`, `"prompts"`}
		p.request(ids[0], "tools/list", "")
		p.request(ids[1], "tools/call", `{"name":"echo","arguments":{"text":"1"}}`)
		p.request(ids[2], "tools/call", `{"name":"echo","arguments":{"text":"2"}}`)
		p.request(ids[3], "prompts/list", "")
		for _, id := range ids {
			checkSignInMessage(t, errorOf(t, p.expect(id)), f.up.URL)
		}
		resultOf(t, p.call(`"ping"`, "ping", ""))
		if st := f.stats(); st.Authorizations != 2 || st.TokenGrants != 1 {
			t.Errorf("stats %+v, want one more authorization (never finished) and no new token", st)
		}

		// The way out the error names.
		code, stdout, stderr := runCLI(t, nil, "auth", "login", "--oauth-store", f.store, "--oauth-browser", newBrowser(t, "follow").cmd, f.up.URL)
		if code != 0 {
			t.Fatalf("auth login: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		auths := f.stats().Authorizations
		callEcho(t, p, `"after-login"`, "after login")
		if st := f.stats(); st.Authorizations != auths {
			t.Errorf("the process signed in again (%d authorizations, want %d): it must adopt the token auth login stored", st.Authorizations, auths)
		}
		secretScan(t, f.as, map[string]string{"auth login stdout": stdout, "auth login stderr": stderr, "proxy stderr": p.stderr.String()})
	})
}

// TestOAuthWrongState: a callback whose state is not the sign-in's is
// refused (no code redeemed) and the proxy keeps waiting; the genuine
// callback then completes the sign-in.
func TestOAuthWrongState(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	b := newBrowser(t, "tamper-state")
	p := startProxy(t, f.args(b))
	p.request(`"init"`, "initialize", initParams)
	runs := b.waitRun(t, 1)
	tampered, err := url.Parse(runs[0][1])
	if err != nil || tampered.Query().Get("code") == "" {
		t.Fatalf("the fakebrowser logged no callback URL with a code: %q", runs[0][1])
	}
	if st := f.stats(); st.TokenGrants != 0 || st.TokenErrors != 0 {
		t.Errorf("stats %+v after the tampered callback: the code must not be redeemed", st)
	}
	// The genuine callback: the same address with the real state. The
	// listener must still be there, waiting for it.
	q := tampered.Query()
	q.Set("state", strings.TrimPrefix(q.Get("state"), "tampered-"))
	tampered.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, tampered.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the callback no longer listens after a wrong state: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the genuine callback got HTTP %d, want 200", resp.StatusCode)
	}
	resultOf(t, p.expect(`"init"`))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	callEcho(t, p, "1", "state checked")
	if st := f.stats(); st.TokenGrants != 1 || st.CodeReuse != 0 || st.Authorizations != 1 {
		t.Errorf("stats %+v, want the one code redeemed once", st)
	}
}

// TestOAuthWrongIss: an authorization response whose iss is not the
// issuer (RFC 9207 mix-up) is refused before the code is redeemed: no
// token request at all. The process keeps serving, and signs in once the
// issuer is right again.
func TestOAuthWrongIss(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	f.as.SetWrongIss(true)
	p := startProxy(t, f.args(newBrowser(t, "follow")))
	e := errorOf(t, p.call(`"init"`, "initialize", initParams))
	checkSignInMessage(t, e, f.up.URL)
	if msg := e.Get("message").Str; !strings.Contains(msg, "issuer") {
		t.Errorf("error %q does not name the issuer mismatch", msg)
	}
	if st := f.stats(); st.CodesIssued != 1 || st.TokenGrants != 0 || len(f.as.TokenRequests()) != 0 {
		t.Errorf("stats %+v, token requests %+v: want a code issued and never presented", st, f.as.TokenRequests())
	}
	f.as.SetWrongIss(false)
	p.initialize()
	callEcho(t, p, "1", "right issuer")
	if st := f.stats(); st.TokenGrants != 1 {
		t.Errorf("stats %+v, want one token grant", st)
	}
}

// TestOAuthBusyCallbackPort: the derived callback port, taken by another
// program, moves on to another port and the sign-in succeeds; a pinned
// port that is taken fails the sign-in with an error naming it, and no
// authorization starts.
func TestOAuthBusyCallbackPort(t *testing.T) {
	t.Parallel()

	t.Run("derived", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t, authserver.Config{}, nil)
		first := startProxy(t, f.args(newBrowser(t, "follow")))
		first.initialize()
		first.closeStdin()
		first.waitExit(cleanupExitTimeout)
		derived, err := url.Parse(f.as.AuthorizeRequests()[0].RedirectURI)
		if err != nil {
			t.Fatal(err)
		}
		// The callback is closed, so the port is free to take.
		ln, err := net.Listen("tcp", derived.Host)
		if err != nil {
			t.Fatalf("taking the derived callback port %s: %v", derived.Host, err)
		}
		defer ln.Close()

		f.store = newStoreDir(t) // a fresh store: a new sign-in
		p := startProxy(t, f.args(newBrowser(t, "follow")))
		p.initialize()
		callEcho(t, p, "1", "moved on")
		reqs := f.as.AuthorizeRequests()
		if len(reqs) != 2 {
			t.Fatalf("%d authorization requests, want 2", len(reqs))
		}
		moved, err := url.Parse(reqs[1].RedirectURI)
		if err != nil {
			t.Fatal(err)
		}
		if moved.Host == derived.Host || moved.Hostname() != "127.0.0.1" {
			t.Errorf("second sign-in redirect_uri %s, want another 127.0.0.1 port than %s", reqs[1].RedirectURI, derived.Host)
		}
	})

	t.Run("pinned", func(t *testing.T) {
		t.Parallel()
		f := newOAuthFixture(t, authserver.Config{}, nil)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		p := startProxy(t, f.args(newBrowser(t, "follow"), "--oauth-callback-port", port))
		e := errorOf(t, p.call(`"init"`, "initialize", initParams))
		msg := e.Get("message").Str
		for _, want := range []string{port, "--oauth-callback-port"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not mention %q", msg, want)
			}
		}
		if st := f.stats(); st.Authorizations != 0 {
			t.Errorf("stats %+v, want no authorization without a callback", st)
		}
		resultOf(t, p.call(`"ping"`, "ping", ""))
	})
}

// TestOAuthForgottenClient: the authorization server forgets the proxy's
// registered client; the refresh gets invalid_client, and the proxy
// registers again and signs in; the call succeeds.
func TestOAuthForgottenClient(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	p := startProxy(t, f.args(newBrowser(t, "follow")))
	p.initialize()
	callEcho(t, p, "1", "before")
	clients := f.as.Clients()
	if len(clients) != 1 || clients[0].Source != "registered" {
		t.Fatalf("clients %+v, want one registered", clients)
	}
	old := clients[0].ID
	if !f.as.ForgetClient(old) {
		t.Fatal("ForgetClient: unknown client")
	}
	f.as.ExpireAll()
	callEcho(t, p, "2", "after forgetting")
	st := f.stats()
	if st.Registrations != 2 || st.Authorizations != 2 || st.TokenGrants != 2 {
		t.Errorf("stats %+v, want 2 registrations, 2 authorizations, 2 grants", st)
	}
	clients = f.as.Clients()
	if len(clients) != 1 || clients[0].ID == old {
		t.Errorf("clients %+v, want one new client", clients)
	}
	sawInvalidClient := false
	for _, tr := range f.as.TokenRequests() {
		sawInvalidClient = sawInvalidClient || (tr.GrantType == authserver.GrantRefreshToken && tr.Error == "invalid_client")
	}
	if !sawInvalidClient {
		t.Errorf("no refresh refused with invalid_client: %+v", f.as.TokenRequests())
	}
}

// TestOAuthPassthrough: a protected 2025 server in passthrough: after the
// sign-in, the POSTs, the GET stream and the DELETE at exit all carry the
// bearer and get through.
func TestOAuthPassthrough(t *testing.T) {
	t.Parallel()
	as := startAuthServer(t, authserver.Config{})
	up := newProtectedLegacyUpstream(t, as, nil)
	f := &oauthFixture{as: as, up: up, store: newStoreDir(t)}
	p := startProxy(t, f.args(newBrowser(t, "follow"))).passthrough()
	resultOf(t, p.call(`"init"`, "initialize", passInitParams))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	get := up.wait(t, "the GET stream, accepted", func(s authSeen) bool {
		return s.HTTPMethod == http.MethodGet && s.Path == upstreamPath && s.Status == http.StatusOK
	})
	if get.Bearer() == "" {
		t.Error("the GET stream has no bearer")
	}
	callEcho(t, p, "1", "passthrough")
	listTools(t, p, "2")
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	dels := up.seen(func(s authSeen) bool { return s.HTTPMethod == http.MethodDelete })
	if len(dels) != 1 || dels[0].Bearer() == "" || dels[0].Status == http.StatusUnauthorized {
		t.Errorf("DELETEs %d (bearer %v, status %v), want one with the bearer, accepted", len(dels), len(dels) == 1 && dels[0].Bearer() != "", statuses(dels))
	}
	if n := up.Legacy.Deleted.Load(); n != 1 {
		t.Errorf("the 2025 server saw %d DELETEs past its auth layer, want 1", n)
	}
	refused := 0
	for _, s := range up.seen(func(s authSeen) bool { return s.Path == upstreamPath }) {
		if s.Status == http.StatusUnauthorized {
			refused++
			continue
		}
		if s.Bearer() == "" {
			t.Errorf("%s %s went without a bearer", s.HTTPMethod, s.RPCMethod)
		}
	}
	if refused != 1 {
		t.Errorf("%d requests refused with 401, want 1 (the first); upstream saw:\n%s", refused, up.dump())
	}
	if st := as.Stats(); st.Authorizations != 1 || st.TokenGrants != 1 {
		t.Errorf("stats %+v, want one sign-in", st)
	}
}

// TestOAuthAuthCommands: `auth login --no-browser` prints the URL and reads
// the pasted redirect address; `auth status` shows the issuer, client,
// scopes and expiry and no token; a proxy on that store needs no sign-in;
// `auth logout` revokes and deletes. No output holds a secret.
func TestOAuthAuthCommands(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	outputs := map[string]string{}

	login := startInteractive(t, "auth", "login", "--no-browser", "--oauth-store", f.store, f.up.URL)
	var u string
	waitUntil(t, "the sign-in URL from auth login", func() bool {
		u = signInURL(f.as, login.both())
		return u != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cb, err := authserver.Browse(ctx, u, authserver.BrowseOptions{NoCallback: true})
	if err != nil || cb == "" {
		t.Fatalf("following the printed URL: %q, %v", cb, err)
	}
	if _, err := io.WriteString(login.stdin, cb+"\n"); err != nil {
		t.Fatal(err)
	}
	if code := login.wait(t); code != 0 {
		t.Fatalf("auth login exit %d; output:\n%s", code, login.both())
	}
	outputs["auth login stdout"], outputs["auth login stderr"] = login.stdout.String(), login.stderr.String()
	if st := f.stats(); st.Authorizations != 1 || st.TokenGrants != 1 {
		t.Errorf("stats %+v after auth login, want one sign-in", st)
	}

	code, stdout, stderr := runCLI(t, nil, "auth", "status", "--oauth-store", f.store, f.up.URL)
	outputs["auth status stdout"], outputs["auth status stderr"] = stdout, stderr
	if code != 0 {
		t.Errorf("auth status exit %d, stderr %q", code, stderr)
	}
	clients := f.as.Clients()
	status := stdout + stderr
	for _, want := range append([]string{f.as.Issuer(), clients[0].ID}, f.as.Scopes()...) {
		if !strings.Contains(status, want) {
			t.Errorf("auth status does not show %q:\n%s", want, status)
		}
	}

	p := startProxy(t, f.args(newBrowser(t, "never"), "--auth-timeout", "5"))
	p.initialize()
	callEcho(t, p, "1", "after auth login")
	p.closeStdin()
	p.waitExit(cleanupExitTimeout)
	outputs["proxy stderr"] = p.stderr.String()
	if st := f.stats(); st.Authorizations != 1 {
		t.Errorf("the proxy signed in again (%d authorizations)", st.Authorizations)
	}

	code, stdout, stderr = runCLI(t, nil, "auth", "logout", "--oauth-store", f.store, f.up.URL)
	outputs["auth logout stdout"], outputs["auth logout stderr"] = stdout, stderr
	if code != 0 {
		t.Errorf("auth logout exit %d, stderr %q", code, stderr)
	}
	if st := f.stats(); st.Revocations < 1 {
		t.Errorf("stats %+v, want a revocation", st)
	}
	if n := len(f.as.AccessTokens()); n != 0 {
		t.Errorf("%d access tokens still valid after logout", n)
	}
	if files := storeFiles(t, f.store); len(files) != 0 {
		t.Errorf("store files after logout: %v", slices.Collect(maps.Keys(files)))
	}
	code, stdout, stderr = runCLI(t, nil, "auth", "status", "--oauth-store", f.store, f.up.URL)
	outputs["auth status after logout"] = stdout + stderr
	if strings.Contains(stdout+stderr, clients[0].ID) {
		t.Errorf("auth status after logout (exit %d) still shows the client:\n%s%s", code, stdout, stderr)
	}
	secretScan(t, f.as, outputs)
}

// TestOAuthHeaderTurnsOff: an Authorization header given with --header
// turns OAuth off: the server's 401 is an error, and nothing is asked of
// the authorization server.
func TestOAuthHeaderTurnsOff(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	p := startProxy(t, f.args(newBrowser(t, "follow"), "--header", "Authorization: Bearer not-a-token"))
	errorOf(t, p.call(`"init"`, "initialize", initParams))
	if st := f.stats(); st.MetadataRequests != 0 || st.Authorizations != 0 || st.Registrations != 0 {
		t.Errorf("stats %+v, want no OAuth traffic with an Authorization header", st)
	}
	for _, s := range f.up.seen(nil) {
		if s.Path != upstreamPath {
			t.Errorf("the proxy fetched %s: OAuth discovery with an Authorization header", s.Path)
		}
	}
}

// TestOAuthSecretScan: one run that signs in, steps up, refreshes, and
// exits, with --log-level debug, --log-file and --trace; then `auth status`
// and `auth logout`. No secret the authorization server issued or saw
// (tokens, codes, PKCE verifiers, client secrets) appears in stdout,
// stderr, the log file, the trace or the store directory's names; tokens
// live only inside the store file.
func TestOAuthSecretScan(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, stepUpOptions())
	dir := t.TempDir()
	logFile, traceFile := filepath.Join(dir, "proxy.log"), filepath.Join(dir, "trace.jsonl")
	p := startProxy(t, f.args(newBrowser(t, "follow"), "--log-level", "debug", "--log-file", logFile, "--trace", traceFile))
	p.initialize()
	listTools(t, p, "1")
	callEcho(t, p, "2", "step-up")
	f.as.ExpireAll()
	callEcho(t, p, "3", "refresh")
	f.as.RevokeAll()
	callEcho(t, p, "4", "sign in again")
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	st := f.stats()
	if st.Authorizations < 3 || st.Refreshes < 1 {
		t.Errorf("stats %+v: the run did not sign in, step up, refresh and sign in again", st)
	}

	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if len(b) == 0 {
			t.Errorf("%s is empty: the scan proves nothing", name)
		}
		return string(b)
	}
	logText := read(logFile)
	if !strings.Contains(strings.ToLower(logText), "oauth") {
		t.Errorf("the debug log says nothing about OAuth:\n%s", logText)
	}
	files := storeFiles(t, f.store)
	held := false
	for _, body := range files {
		for _, s := range f.as.Secrets() {
			held = held || strings.Contains(body, s)
		}
	}
	if !held {
		t.Error("the store file holds no secret: the proxy stored no token")
	}

	outputs := map[string]string{
		"stdout":          string(joinLines(p.all())),
		"stderr":          p.stderr.String(),
		"--log-file":      logText,
		"--trace":         read(traceFile),
		"store dir names": storeNames(t, f.store),
	}
	code, stdout, stderr := runCLI(t, nil, "auth", "status", "--oauth-store", f.store, f.up.URL)
	outputs["auth status"] = stdout + stderr
	if code != 0 {
		t.Errorf("auth status exit %d: %s", code, stderr)
	}
	code, stdout, stderr = runCLI(t, nil, "auth", "logout", "--oauth-store", f.store, f.up.URL)
	outputs["auth logout"] = stdout + stderr
	if code != 0 {
		t.Errorf("auth logout exit %d: %s", code, stderr)
	}
	secretScan(t, f.as, outputs)
}

// joinLines joins stdout lines with newlines.
func joinLines(ls [][]byte) []byte {
	var out []byte
	for _, l := range ls {
		out = append(append(out, l...), '\n')
	}
	return out
}
