package authserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

const (
	testTimeout = 20 * time.Second
	resource    = "http://127.0.0.1:9/mcp"
	// callback is a loopback redirect URI nothing listens on; tests read
	// the redirect instead of following it.
	callback = "http://127.0.0.1:1/callback"
)

// env is a running authorization server and an HTTP client that does not
// follow redirects.
type env struct {
	t      *testing.T
	as     *authserver.Server
	client *http.Client
	ctx    context.Context
}

// leakChecked holds the tests whose goroutine leak check is registered.
var leakChecked sync.Map

func start(t *testing.T, cfg authserver.Config) *env {
	t.Helper()
	if _, seen := leakChecked.LoadOrStore(t, true); !seen {
		// Registered first, so it runs after every server of the test stopped.
		t.Cleanup(func() { goleak.VerifyNone(t) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	if cfg.Resources == nil {
		cfg.Resources = []string{resource}
	}
	as, err := authserver.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		as.Close()
		cancel()
	})
	return &env{t: t, as: as, ctx: ctx, client: &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// do sends a request and returns the status, headers and body.
func (e *env) do(req *http.Request) (int, http.Header, []byte) {
	e.t.Helper()
	resp, err := e.client.Do(req.WithContext(e.ctx))
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

func (e *env) get(u string) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.do(req)
}

// form posts a form to an endpoint, with Basic credentials when user is set.
func (e *env) form(endpoint string, f url.Values, basic ...string) (int, map[string]any) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(f.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	status, _, body := e.do(req)
	var m map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &m); err != nil {
			e.t.Fatalf("%s answered %d with non-JSON %q", endpoint, status, body)
		}
	}
	return status, m
}

// register registers a client with DCR and returns the response.
func (e *env) register(meta map[string]any) (int, map[string]any) {
	e.t.Helper()
	b, _ := json.Marshal(meta)
	req, err := http.NewRequest(http.MethodPost, e.as.RegistrationEndpoint(), strings.NewReader(string(b)))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	status, _, body := e.do(req)
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		e.t.Fatalf("register answered %d with %q", status, body)
	}
	return status, m
}

// native registers a public native client, as the proxy does.
func (e *env) native() string {
	e.t.Helper()
	status, m := e.register(map[string]any{
		"application_type":           "native",
		"redirect_uris":              []string{callback},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_method": "none",
		"client_name":                "test",
	})
	if status != http.StatusCreated {
		e.t.Fatalf("register: %d %v", status, m)
	}
	return m["client_id"].(string)
}

// authParams are valid authorization request parameters for client.
func authParams(client, verifier string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {client},
		"redirect_uri":          {callback},
		"code_challenge":        {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"S256"},
		"resource":              {resource},
		"scope":                 {"mcp:read mcp:write"},
		"state":                 {"st-123"},
	}
}

// authorize sends an authorization request and returns the redirect's
// query, failing if the server did not redirect to the callback.
func (e *env) authorize(q url.Values) url.Values {
	e.t.Helper()
	status, h, body := e.get(e.as.AuthorizationEndpoint() + "?" + q.Encode())
	if status != http.StatusFound {
		e.t.Fatalf("authorize: %d %s", status, body)
	}
	loc, err := url.Parse(h.Get("Location"))
	if err != nil {
		e.t.Fatal(err)
	}
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != strings.Split(q.Get("redirect_uri"), "?")[0] {
		e.t.Fatalf("redirected to %s, want the redirect URI %s", loc, q.Get("redirect_uri"))
	}
	return loc.Query()
}

// code runs an authorization request that must succeed and returns the code.
func (e *env) code(client, verifier string) string {
	e.t.Helper()
	r := e.authorize(authParams(client, verifier))
	if r.Get("error") != "" || r.Get("code") == "" {
		e.t.Fatalf("authorize: %v", r)
	}
	return r.Get("code")
}

func exchange(client, code, verifier string) url.Values {
	return url.Values{
		"grant_type":    {"authorization_code"},
		"client_id":     {client},
		"code":          {code},
		"redirect_uri":  {callback},
		"code_verifier": {verifier},
		"resource":      {resource},
	}
}

func refresh(client, rt string) url.Values {
	return url.Values{
		"grant_type":    {"refresh_token"},
		"client_id":     {client},
		"refresh_token": {rt},
		"resource":      {resource},
	}
}

// signIn runs the whole flow for a new native client and returns the
// client id and the token response.
func (e *env) signIn() (string, map[string]any) {
	e.t.Helper()
	client := e.native()
	v := oauth2.GenerateVerifier()
	status, tok := e.form(e.as.TokenEndpoint(), exchange(client, e.code(client, v), v))
	if status != http.StatusOK {
		e.t.Fatalf("token: %d %v", status, tok)
	}
	return client, tok
}

func wantError(t *testing.T, status int, m map[string]any, wantStatus int, code string) {
	t.Helper()
	if status != wantStatus || m["error"] != code {
		t.Fatalf("got %d %v, want %d error %q", status, m, wantStatus, code)
	}
}

func TestMetadata(t *testing.T) {
	e := start(t, authserver.Config{CIMD: true})
	status, _, body := e.get(e.as.URL() + "/.well-known/oauth-authorization-server")
	if status != http.StatusOK {
		t.Fatalf("metadata: %d %s", status, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	iss := e.as.Issuer()
	if m["issuer"] != iss || iss != e.as.URL() || e.as.MetadataURL() != iss+"/.well-known/oauth-authorization-server" {
		t.Errorf("issuer %v, server issuer %s, URL %s", m["issuer"], iss, e.as.URL())
	}
	for k, want := range map[string]any{
		"authorization_endpoint":                         iss + "/authorize",
		"token_endpoint":                                 iss + "/token",
		"registration_endpoint":                          iss + "/register",
		"revocation_endpoint":                            iss + "/revoke",
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          true,
	} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	for k, want := range map[string][]string{
		"code_challenge_methods_supported":      {"S256"},
		"response_types_supported":              {"code"},
		"grant_types_supported":                 {"authorization_code", "refresh_token"},
		"scopes_supported":                      authserver.DefaultScopes,
		"token_endpoint_auth_methods_supported": {"none", "client_secret_post", "client_secret_basic"},
	} {
		b, _ := json.Marshal(m[k])
		w, _ := json.Marshal(want)
		if string(b) != string(w) {
			t.Errorf("%s = %s, want %s", k, b, w)
		}
	}
	// go-sdk's lookup accepts it (issuer match, PKCE, URL checks).
	asm, err := oauthex.GetAuthServerMeta(e.ctx, e.as.MetadataURL(), iss, e.client)
	if err != nil || asm == nil || asm.TokenEndpoint != e.as.TokenEndpoint() {
		t.Errorf("GetAuthServerMeta = %+v, %v", asm, err)
	}
	if status, _, _ := e.get(iss + "/.well-known/openid-configuration"); status != http.StatusNotFound {
		t.Errorf("OIDC discovery without Config.OIDC: %d, want 404", status)
	}
	e.as.SetCIMD(false)
	if e.as.Metadata()["client_id_metadata_document_supported"] != false {
		t.Error("SetCIMD(false) did not reach the metadata")
	}
	e.as.SetMetadataIssuer("http://127.0.0.1:1")
	if _, err := oauthex.GetAuthServerMeta(e.ctx, e.as.MetadataURL(), iss, e.client); err == nil {
		t.Error("a metadata issuer mismatch went unnoticed")
	}
}

func TestPathIssuerMetadata(t *testing.T) {
	e := start(t, authserver.Config{IssuerPath: "/tenant1", OIDC: true})
	iss := e.as.Issuer()
	if iss != e.as.URL()+"/tenant1" {
		t.Fatalf("issuer %s", iss)
	}
	if e.as.MetadataURL() != e.as.URL()+"/.well-known/oauth-authorization-server/tenant1" {
		t.Fatalf("metadata URL %s", e.as.MetadataURL())
	}
	for _, u := range []string{
		e.as.URL() + "/.well-known/oauth-authorization-server/tenant1",
		e.as.URL() + "/.well-known/openid-configuration/tenant1",
		iss + "/.well-known/openid-configuration",
	} {
		status, _, body := e.get(u)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		if status != http.StatusOK || m["issuer"] != iss || m["token_endpoint"] != iss+"/token" {
			t.Errorf("%s: %d %s", u, status, body)
		}
	}
	for _, u := range []string{
		e.as.URL() + "/.well-known/oauth-authorization-server",
		e.as.URL() + "/.well-known/openid-configuration",
		e.as.URL() + "/authorize",
	} {
		if status, _, _ := e.get(u); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404 for a path issuer", u, status)
		}
	}

	o := start(t, authserver.Config{IssuerPath: "/t", NoOAuthMetadata: true, OIDC: true})
	if status, _, _ := o.get(o.as.MetadataURL()); status != http.StatusNotFound {
		t.Errorf("NoOAuthMetadata still serves RFC 8414: %d", status)
	}
	if status, _, _ := o.get(o.as.URL() + "/.well-known/openid-configuration/t"); status != http.StatusOK {
		t.Errorf("OIDC path-inserted: %d", status)
	}
	if got := e.as.Stats().MetadataRequests; got != 3 {
		t.Errorf("MetadataRequests = %d, want 3", got)
	}
}

// TestCodeFlowWithOAuth2 runs the whole flow with golang.org/x/oauth2 and
// the Browse helper, as a real client and user would.
func TestCodeFlowWithOAuth2(t *testing.T) {
	e := start(t, authserver.Config{IssuerPath: "/tenant1"})
	client := e.native()
	conf := &oauth2.Config{
		ClientID:    client,
		Endpoint:    oauth2.Endpoint{AuthURL: e.as.AuthorizationEndpoint(), TokenURL: e.as.TokenEndpoint(), AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: callback,
		Scopes:      []string{"mcp:read", "mcp:write"},
	}
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("state-xyz", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	cb, err := authserver.Browse(e.ctx, authURL, authserver.BrowseOptions{NoCallback: true, Client: e.client})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(cb)
	q := u.Query()
	if !strings.HasPrefix(cb, callback+"?") || q.Get("state") != "state-xyz" || q.Get("iss") != e.as.Issuer() || q.Get("code") == "" {
		t.Fatalf("callback %s", cb)
	}
	ctx := context.WithValue(e.ctx, oauth2.HTTPClient, e.client)
	tok, err := conf.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || time.Until(tok.Expiry) < 50*time.Minute || tok.Extra("scope") != "mcp:read mcp:write" {
		t.Errorf("token %+v scope %v", tok, tok.Extra("scope"))
	}
	ti, ok := e.as.Verify(tok.AccessToken)
	if !ok || ti.Resource != resource || ti.ClientID != client || !slices.Equal(ti.Scopes, []string{"mcp:read", "mcp:write"}) {
		t.Errorf("Verify = %+v, %v", ti, ok)
	}
	if _, ok := e.as.Verify(tok.RefreshToken); ok {
		t.Error("a refresh token verified as an access token")
	}
	st := e.as.Stats()
	if st.Authorizations != 1 || st.CodesIssued != 1 || st.TokenGrants != 1 || st.Registrations != 1 || st.Refreshes != 0 {
		t.Errorf("stats %+v", st)
	}
	reqs := e.as.AuthorizeRequests()
	if len(reqs) != 1 || reqs[0].CodeChallengeMethod != "S256" || !slices.Equal(reqs[0].Resource, []string{resource}) || reqs[0].Error != "" {
		t.Errorf("authorize requests %+v", reqs)
	}
	treqs := e.as.TokenRequests()
	if len(treqs) != 1 || treqs[0].GrantType != "authorization_code" || treqs[0].AuthMethod != "none" || treqs[0].ClientID != client {
		t.Errorf("token requests %+v", treqs)
	}
	secrets := e.as.Secrets()
	for _, s := range []string{q.Get("code"), tok.AccessToken, tok.RefreshToken, verifier} {
		if !slices.Contains(secrets, s) {
			t.Errorf("Secrets() lacks %q", s)
		}
	}
	if slices.Contains(secrets, client) {
		t.Error("Secrets() lists a client id")
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	e := start(t, authserver.Config{})
	client := e.native()
	v := oauth2.GenerateVerifier()
	for _, tc := range []struct {
		name, err string
		edit      func(url.Values)
	}{
		{"no challenge", "invalid_request", func(q url.Values) { q.Del("code_challenge") }},
		{"no method", "invalid_request", func(q url.Values) { q.Del("code_challenge_method") }},
		{"plain", "invalid_request", func(q url.Values) { q.Set("code_challenge_method", "plain"); q.Set("code_challenge", v) }},
		{"bad challenge", "invalid_request", func(q url.Values) { q.Set("code_challenge", "short") }},
		{"token response", "unsupported_response_type", func(q url.Values) { q.Set("response_type", "token") }},
		{"no resource", "invalid_request", func(q url.Values) { q.Del("resource") }},
		{"other resource", "invalid_target", func(q url.Values) { q.Set("resource", "http://127.0.0.1:9/other") }},
		{"two resources", "invalid_target", func(q url.Values) { q.Add("resource", resource) }},
		{"unknown scope", "invalid_scope", func(q url.Values) { q.Set("scope", "mcp:read root") }},
		{"repeated state", "invalid_request", func(q url.Values) { q.Add("state", "b") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := authParams(client, v)
			tc.edit(q)
			r := e.authorize(q)
			if r.Get("error") != tc.err || r.Get("code") != "" || r.Get("iss") != e.as.Issuer() || (tc.name != "repeated state" && r.Get("state") != "st-123") {
				t.Errorf("redirect query %v, want error %s", r, tc.err)
			}
		})
	}
	// Errors before the redirect URI is trusted are shown, not redirected.
	for name, edit := range map[string]func(url.Values){
		"unknown client":   func(q url.Values) { q.Set("client_id", "nobody") },
		"no client":        func(q url.Values) { q.Del("client_id") },
		"other redirect":   func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:1/elsewhere") },
		"no redirect":      func(q url.Values) { q.Del("redirect_uri") },
		"not loopback":     func(q url.Values) { q.Set("redirect_uri", "http://example.com:1/callback") },
		"loopback IP swap": func(q url.Values) { q.Set("redirect_uri", "http://localhost:1/callback") },
	} {
		q := authParams(client, v)
		edit(q)
		if status, h, _ := e.get(e.as.AuthorizationEndpoint() + "?" + q.Encode()); status != http.StatusBadRequest || h.Get("Location") != "" {
			t.Errorf("%s: %d Location %q, want a 400 page", name, status, h.Get("Location"))
		}
	}
	if n := e.as.Stats().CodesIssued; n != 0 {
		t.Errorf("%d codes issued for refused requests", n)
	}
}

func TestLoopbackRedirectAnyPort(t *testing.T) {
	e := start(t, authserver.Config{})
	client := e.native()
	v := oauth2.GenerateVerifier()
	q := authParams(client, v)
	moved := "http://127.0.0.1:54321/callback"
	q.Set("redirect_uri", moved)
	r := e.authorize(q)
	if r.Get("code") == "" {
		t.Fatalf("a moved loopback port was refused: %v", r)
	}
	f := exchange(client, r.Get("code"), v)
	if status, m := e.form(e.as.TokenEndpoint(), f); status != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Errorf("exchange with the registered rather than the used redirect URI: %d %v", status, m)
	}
	r = e.authorize(q)
	f = exchange(client, r.Get("code"), v)
	f.Set("redirect_uri", moved)
	if status, m := e.form(e.as.TokenEndpoint(), f); status != http.StatusOK {
		t.Errorf("exchange: %d %v", status, m)
	}

	s := start(t, authserver.Config{StrictRedirectPort: true})
	client = s.native()
	q = authParams(client, v)
	q.Set("redirect_uri", moved)
	if status, _, _ := s.get(s.as.AuthorizationEndpoint() + "?" + q.Encode()); status != http.StatusBadRequest {
		t.Errorf("StrictRedirectPort accepted another port: %d", status)
	}
}

func TestWrongVerifierSpendsTheCode(t *testing.T) {
	e := start(t, authserver.Config{})
	client := e.native()
	v := oauth2.GenerateVerifier()
	code := e.code(client, v)
	status, m := e.form(e.as.TokenEndpoint(), exchange(client, code, oauth2.GenerateVerifier()))
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")
	status, m = e.form(e.as.TokenEndpoint(), exchange(client, code, v))
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")

	code = e.code(client, v)
	f := exchange(client, code, v)
	f.Del("code_verifier")
	status, m = e.form(e.as.TokenEndpoint(), f)
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")
}

func TestCodeBindings(t *testing.T) {
	e := start(t, authserver.Config{Resources: []string{resource, "http://127.0.0.1:9/other"}})
	client, other := e.native(), e.native()
	v := oauth2.GenerateVerifier()
	for name, edit := range map[string]func(url.Values){
		"other client":     func(f url.Values) { f.Set("client_id", other) },
		"other redirect":   func(f url.Values) { f.Set("redirect_uri", "http://127.0.0.1:1/x") },
		"no resource":      func(f url.Values) { f.Del("resource") },
		"other resource":   func(f url.Values) { f.Set("resource", "http://127.0.0.1:9/other") },
		"unknown code":     func(f url.Values) { f.Set("code", "nope") },
		"bad grant type":   func(f url.Values) { f.Set("grant_type", "password") },
		"no grant type":    func(f url.Values) { f.Del("grant_type") },
		"repeated code":    func(f url.Values) { f.Add("code", "x") },
		"no client at all": func(f url.Values) { f.Del("client_id") },
	} {
		f := exchange(client, e.code(client, v), v)
		edit(f)
		status, m := e.form(e.as.TokenEndpoint(), f)
		want := map[string]string{
			"no resource": "invalid_request", "other resource": "invalid_target", "bad grant type": "unsupported_grant_type",
			"no grant type": "invalid_request", "repeated code": "invalid_request", "no client at all": "invalid_client",
		}[name]
		if want == "" {
			want = "invalid_grant"
		}
		wantStatus := http.StatusBadRequest
		if want == "invalid_client" {
			wantStatus = http.StatusUnauthorized
		}
		if status != wantStatus || m["error"] != want {
			t.Errorf("%s: %d %v, want %s", name, status, m, want)
		}
	}
}

func TestCodeReuseRevokesItsTokens(t *testing.T) {
	e := start(t, authserver.Config{})
	client := e.native()
	v := oauth2.GenerateVerifier()
	f := exchange(client, e.code(client, v), v)
	status, tok := e.form(e.as.TokenEndpoint(), f)
	if status != http.StatusOK {
		t.Fatal(tok)
	}
	status, m := e.form(e.as.TokenEndpoint(), f)
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")
	if _, ok := e.as.Verify(tok["access_token"].(string)); ok {
		t.Error("the access token outlived the code's reuse")
	}
	status, m = e.form(e.as.TokenEndpoint(), refresh(client, tok["refresh_token"].(string)))
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")
	if st := e.as.Stats(); st.CodeReuse != 1 || st.TokenGrants != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestRefreshRotationAndReuseDetection(t *testing.T) {
	e := start(t, authserver.Config{})
	client, tok := e.signIn()
	rt1, at1 := tok["refresh_token"].(string), tok["access_token"].(string)

	status, tok2 := e.form(e.as.TokenEndpoint(), refresh(client, rt1))
	if status != http.StatusOK {
		t.Fatal(tok2)
	}
	rt2, at2 := tok2["refresh_token"].(string), tok2["access_token"].(string)
	if rt2 == "" || rt2 == rt1 || at2 == at1 || tok2["scope"] != "mcp:read mcp:write" {
		t.Fatalf("refresh did not rotate: %v", tok2)
	}
	if _, ok := e.as.Verify(at2); !ok {
		t.Fatal("refreshed access token does not verify")
	}
	// A narrower scope may be asked; a wider one may not.
	f := refresh(client, rt2)
	f.Set("scope", "mcp:read mcp:admin")
	status, m := e.form(e.as.TokenEndpoint(), f)
	wantError(t, status, m, http.StatusBadRequest, "invalid_scope")

	// The rotated-out token is refused and takes the whole grant down.
	status, m = e.form(e.as.TokenEndpoint(), refresh(client, rt1))
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")
	if _, ok := e.as.Verify(at2); ok {
		t.Error("the grant's access token outlived refresh token reuse")
	}
	status, m = e.form(e.as.TokenEndpoint(), refresh(client, rt2))
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")
	if st := e.as.Stats(); st.Refreshes != 1 || st.RefreshReuse != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestConcurrentRefresh is the fault the issue names: two processes
// spending one rotating refresh token get the grant revoked.
func TestConcurrentRefresh(t *testing.T) {
	e := start(t, authserver.Config{})
	client, tok := e.signIn()
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Go(func() {
			statuses[i], _ = e.form(e.as.TokenEndpoint(), refresh(client, tok["refresh_token"].(string)))
		})
	}
	wg.Wait()
	slices.Sort(statuses)
	if statuses[0] != http.StatusOK || statuses[1] != http.StatusBadRequest {
		t.Fatalf("statuses %v, want one 200 and one 400", statuses)
	}
	if n := len(e.as.AccessTokens()); n != 0 {
		t.Errorf("%d access tokens survived the reuse", n)
	}
}

func TestResourceRequiredOnRefresh(t *testing.T) {
	e := start(t, authserver.Config{Resources: []string{resource, "http://127.0.0.1:9/other"}})
	client, tok := e.signIn()
	rt := tok["refresh_token"].(string)
	f := refresh(client, rt)
	f.Del("resource")
	status, m := e.form(e.as.TokenEndpoint(), f)
	wantError(t, status, m, http.StatusBadRequest, "invalid_request")
	f.Set("resource", "http://127.0.0.1:9/other")
	status, m = e.form(e.as.TokenEndpoint(), f)
	wantError(t, status, m, http.StatusBadRequest, "invalid_target")
	// Refused requests did not spend the refresh token.
	if status, m := e.form(e.as.TokenEndpoint(), refresh(client, rt)); status != http.StatusOK {
		t.Errorf("refresh after refused attempts: %d %v", status, m)
	}
	reqs := e.as.TokenRequests()
	if len(reqs) != 4 || reqs[1].Error != "invalid_request" || len(reqs[1].Resource) != 0 || reqs[3].Error != "" {
		t.Errorf("token requests %+v", reqs)
	}
}

func TestDynamicClientRegistration(t *testing.T) {
	e := start(t, authserver.Config{})
	// go-sdk's DCR client.
	res, err := oauthex.RegisterClient(e.ctx, e.as.RegistrationEndpoint(), &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{callback},
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ApplicationType:         "native",
		ClientName:              "proxy",
	}, e.client)
	if err != nil || res.ClientID == "" || res.ClientSecret != "" {
		t.Fatalf("RegisterClient = %+v, %v", res, err)
	}
	cs := e.as.Clients()
	if len(cs) != 1 || cs[0].ApplicationType != "native" || cs[0].AuthMethod != "none" || cs[0].Source != "registered" ||
		!slices.Equal(cs[0].GrantTypes, []string{"authorization_code", "refresh_token"}) {
		t.Errorf("clients %+v", cs)
	}

	// A confidential client gets a secret and must use it, by either method.
	status, m := e.register(map[string]any{"redirect_uris": []string{callback}, "grant_types": []string{"authorization_code", "refresh_token"}})
	if status != http.StatusCreated || m["client_secret"] == nil || m["token_endpoint_auth_method"] != "client_secret_basic" {
		t.Fatalf("register confidential: %d %v", status, m)
	}
	id, secret := m["client_id"].(string), m["client_secret"].(string)
	if !slices.Contains(e.as.Secrets(), secret) {
		t.Error("the client secret is not in Secrets()")
	}
	v := oauth2.GenerateVerifier()
	f := exchange(id, e.code(id, v), v)
	f.Del("client_id")
	status, tok := e.form(e.as.TokenEndpoint(), f, id, secret)
	if status != http.StatusOK {
		t.Fatalf("basic auth exchange: %d %v", status, tok)
	}
	f = refresh(id, tok["refresh_token"].(string))
	f.Set("client_secret", secret)
	if status, m := e.form(e.as.TokenEndpoint(), f); status != http.StatusOK {
		t.Fatalf("post auth refresh: %d %v", status, m)
	}
	f.Set("client_secret", "wrong")
	status, m = e.form(e.as.TokenEndpoint(), f)
	wantError(t, status, m, http.StatusUnauthorized, "invalid_client")
	f.Del("client_secret")
	status, m = e.form(e.as.TokenEndpoint(), f)
	wantError(t, status, m, http.StatusUnauthorized, "invalid_client")

	for name, meta := range map[string]map[string]any{
		"http redirect": {"redirect_uris": []string{"http://example.com/cb"}, "token_endpoint_auth_method": "none"},
		"no redirect":   {"token_endpoint_auth_method": "none"},
		"implicit":      {"redirect_uris": []string{callback}, "grant_types": []string{"implicit"}},
		"fragment":      {"redirect_uris": []string{callback + "#x"}},
		"auth method":   {"redirect_uris": []string{callback}, "token_endpoint_auth_method": "private_key_jwt"},
	} {
		status, m := e.register(meta)
		if status != http.StatusBadRequest || !strings.HasPrefix(m["error"].(string), "invalid_") {
			t.Errorf("%s: %d %v", name, status, m)
		}
	}
	if n := e.as.Stats().Registrations; n != 2 {
		t.Errorf("Registrations = %d, want 2", n)
	}
}

func TestForgetClient(t *testing.T) {
	e := start(t, authserver.Config{})
	client, tok := e.signIn()
	if !e.as.ForgetClient(client) || e.as.ForgetClient(client) {
		t.Fatal("ForgetClient did not report the forgetting")
	}
	status, m := e.form(e.as.TokenEndpoint(), refresh(client, tok["refresh_token"].(string)))
	wantError(t, status, m, http.StatusUnauthorized, "invalid_client")
	if status, _, _ := e.get(e.as.AuthorizationEndpoint() + "?" + authParams(client, oauth2.GenerateVerifier()).Encode()); status != http.StatusBadRequest {
		t.Errorf("authorize for a forgotten client: %d", status)
	}
	// Its access token is left to expire.
	if _, ok := e.as.Verify(tok["access_token"].(string)); !ok {
		t.Error("ForgetClient revoked the access token")
	}
	// Registering again works.
	e.signIn()
}

func TestRevocation(t *testing.T) {
	e := start(t, authserver.Config{})
	client, tok := e.signIn()
	at, rt := tok["access_token"].(string), tok["refresh_token"].(string)
	if status, m := e.form(e.as.RevocationEndpoint(), url.Values{"token": {at}, "client_id": {client}}); status != http.StatusOK {
		t.Fatalf("revoke: %d %v", status, m)
	}
	if _, ok := e.as.Verify(at); ok {
		t.Error("revoked access token verifies")
	}
	status, tok2 := e.form(e.as.TokenEndpoint(), refresh(client, rt))
	if status != http.StatusOK {
		t.Fatalf("refresh after access revocation: %v", tok2)
	}
	if status, _ := e.form(e.as.RevocationEndpoint(), url.Values{"token": {tok2["refresh_token"].(string)}, "token_type_hint": {"refresh_token"}, "client_id": {client}}); status != http.StatusOK {
		t.Fatal(status)
	}
	if _, ok := e.as.Verify(tok2["access_token"].(string)); ok {
		t.Error("revoking the refresh token left the grant's access token valid")
	}
	status, m := e.form(e.as.TokenEndpoint(), refresh(client, tok2["refresh_token"].(string)))
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")
	if status, _ := e.form(e.as.RevocationEndpoint(), url.Values{"token": {"unknown"}, "client_id": {client}}); status != http.StatusOK {
		t.Errorf("unknown token: %d, want 200 (RFC 7009 §2.2)", status)
	}
	status, m = e.form(e.as.RevocationEndpoint(), url.Values{"client_id": {client}})
	wantError(t, status, m, http.StatusBadRequest, "invalid_request")
	status, m = e.form(e.as.RevocationEndpoint(), url.Values{"token": {at}, "client_id": {"nobody"}})
	wantError(t, status, m, http.StatusUnauthorized, "invalid_client")
	// Another client's token is left alone.
	other, tok3 := e.signIn()
	_, _ = e.form(e.as.RevocationEndpoint(), url.Values{"token": {tok3["access_token"].(string)}, "client_id": {client}})
	if ti, ok := e.as.Verify(tok3["access_token"].(string)); !ok || ti.ClientID != other {
		t.Error("a client revoked another client's token")
	}
}

func TestIss(t *testing.T) {
	e := start(t, authserver.Config{})
	client := e.native()
	v := oauth2.GenerateVerifier()
	e.as.SetWrongIss(true)
	r := e.authorize(authParams(client, v))
	if r.Get("iss") != e.as.WrongIss() || r.Get("iss") == e.as.Issuer() || r.Get("code") == "" {
		t.Errorf("wrong iss mode: %v", r)
	}
	e.as.SetWrongIss(false)
	e.as.SetOmitIss(true)
	if r := e.authorize(authParams(client, v)); r.Has("iss") {
		t.Errorf("omit iss mode: %v", r)
	}
	e.as.SetOmitIss(false)
	if r := e.authorize(authParams(client, v)); r.Get("iss") != e.as.Issuer() {
		t.Errorf("iss %v", r)
	}
}

func TestScopePolicy(t *testing.T) {
	e := start(t, authserver.Config{DefaultScopes: []string{"mcp:read"}})
	client := e.native()
	v := oauth2.GenerateVerifier()
	e.as.SetGrantScopes(authserver.Without("mcp:admin"))
	q := authParams(client, v)
	q.Set("scope", "mcp:read mcp:admin")
	status, tok := e.form(e.as.TokenEndpoint(), exchange(client, e.authorize(q).Get("code"), v))
	if status != http.StatusOK || tok["scope"] != "mcp:read" {
		t.Fatalf("downgraded grant: %d %v", status, tok)
	}
	if ti, _ := e.as.Verify(tok["access_token"].(string)); !slices.Equal(ti.Scopes, []string{"mcp:read"}) {
		t.Errorf("scopes %v", ti.Scopes)
	}
	e.as.SetGrantScopes(nil)
	q.Del("scope")
	status, tok = e.form(e.as.TokenEndpoint(), exchange(client, e.authorize(q).Get("code"), v))
	if status != http.StatusOK || tok["scope"] != "mcp:read" {
		t.Errorf("default scopes: %d %v", status, tok)
	}
}

func TestConsent(t *testing.T) {
	e := start(t, authserver.Config{})
	client := e.native()
	v := oauth2.GenerateVerifier()
	e.as.SetConsent(authserver.ConsentNever)
	authURL := e.as.AuthorizationEndpoint() + "?" + authParams(client, v).Encode()
	cb, err := authserver.Browse(e.ctx, authURL, authserver.BrowseOptions{Client: e.client})
	if err != nil || cb != "" {
		t.Errorf("never consenting: callback %q, %v", cb, err)
	}
	if st := e.as.Stats(); st.Authorizations != 1 || st.CodesIssued != 0 {
		t.Errorf("stats %+v", st)
	}
	e.as.SetConsent(authserver.ConsentDeny)
	if r := e.authorize(authParams(client, v)); r.Get("error") != "access_denied" || r.Get("state") != "st-123" {
		t.Errorf("deny: %v", r)
	}
}

func TestExpireAndRevokeAll(t *testing.T) {
	e := start(t, authserver.Config{})
	client, tok := e.signIn()
	if n := e.as.ExpireAll(); n != 1 {
		t.Errorf("ExpireAll = %d", n)
	}
	if _, ok := e.as.Verify(tok["access_token"].(string)); ok {
		t.Error("expired token verifies")
	}
	status, tok2 := e.form(e.as.TokenEndpoint(), refresh(client, tok["refresh_token"].(string)))
	if status != http.StatusOK {
		t.Fatalf("refresh after ExpireAll: %v", tok2)
	}
	if n := e.as.RevokeAll(); n != 1 {
		t.Errorf("RevokeAll = %d", n)
	}
	status, m := e.form(e.as.TokenEndpoint(), refresh(client, tok2["refresh_token"].(string)))
	wantError(t, status, m, http.StatusBadRequest, "invalid_grant")

	_, tok = e.signIn()
	if !e.as.Revoke(tok["refresh_token"].(string)) || e.as.Revoke("nope") {
		t.Error("Revoke did not report")
	}
	if _, ok := e.as.Verify(tok["access_token"].(string)); ok {
		t.Error("revoking the refresh token left its grant's access token valid")
	}

	e.as.SetAccessTokenTTL(time.Millisecond)
	_, tok = e.signIn()
	if tok["expires_in"].(float64) != 1 {
		t.Errorf("expires_in %v for a 1 ms token", tok["expires_in"])
	}
	time.Sleep(5 * time.Millisecond) // the lifetime itself is what is tested
	if _, ok := e.as.Verify(tok["access_token"].(string)); ok {
		t.Error("a token outlived its TTL")
	}
}

func TestPreRegisteredAndMint(t *testing.T) {
	e := start(t, authserver.Config{Clients: []authserver.Client{
		{ID: "static", Secret: "s3cret", RedirectURIs: []string{callback}},
		{ID: "public", RedirectURIs: []string{callback}},
	}})
	v := oauth2.GenerateVerifier()
	f := exchange("static", e.code("static", v), v)
	f.Set("client_secret", "s3cret")
	if status, m := e.form(e.as.TokenEndpoint(), f); status != http.StatusOK || m["refresh_token"] == nil {
		t.Errorf("static client: %d %v", status, m)
	}
	at, rt, err := e.as.Mint("public", resource, "mcp:read")
	if err != nil || at == "" || rt == "" {
		t.Fatal(at, rt, err)
	}
	if ti, ok := e.as.Verify(at); !ok || ti.ClientID != "public" {
		t.Errorf("minted token %+v %v", ti, ok)
	}
	if status, m := e.form(e.as.TokenEndpoint(), refresh("public", rt)); status != http.StatusOK {
		t.Errorf("refreshing a minted token: %d %v", status, m)
	}
	if _, _, err := e.as.Mint("public", "http://elsewhere/mcp"); err == nil {
		t.Error("Mint for a resource not allowed")
	}
	if !slices.Contains(e.as.Secrets(), "s3cret") {
		t.Error("a pre-registered secret is not in Secrets()")
	}
}

func TestClientIDMetadataDocument(t *testing.T) {
	e := start(t, authserver.Config{CIMD: true})
	var docURL string
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"client_id":                  docURL,
			"client_name":                "proxy",
			"redirect_uris":              []string{callback},
			"grant_types":                []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_method": "none",
		})
	}))
	defer doc.Close()
	docURL = doc.URL + "/client.json"
	v := oauth2.GenerateVerifier()
	status, tok := e.form(e.as.TokenEndpoint(), exchange(docURL, e.code(docURL, v), v))
	if status != http.StatusOK || tok["refresh_token"] == nil {
		t.Fatalf("CIMD exchange: %d %v", status, tok)
	}
	if n := e.as.Stats().CIMDFetches; n != 2 {
		t.Errorf("CIMDFetches = %d, want 2 (authorize and token)", n)
	}
	// A document whose client_id is not its URL is refused.
	q := authParams(doc.URL+"/other.json", v)
	if status, _, _ := e.get(e.as.AuthorizationEndpoint() + "?" + q.Encode()); status != http.StatusBadRequest {
		t.Errorf("mismatched document: %d", status)
	}
	e.as.SetCIMD(false)
	if status, _, _ := e.get(e.as.AuthorizationEndpoint() + "?" + authParams(docURL, v).Encode()); status != http.StatusBadRequest {
		t.Errorf("CIMD off: %d", status)
	}
	doc.CloseClientConnections()
}

func TestBrowse(t *testing.T) {
	e := start(t, authserver.Config{})
	var mu sync.Mutex
	var hits []url.Values
	cbSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Query())
		mu.Unlock()
		_, _ = io.WriteString(w, "signed in")
	}))
	defer cbSrv.Close()
	status, m := e.register(map[string]any{"redirect_uris": []string{cbSrv.URL + "/callback"}, "token_endpoint_auth_method": "none"})
	if status != http.StatusCreated {
		t.Fatal(m)
	}
	client := m["client_id"].(string)
	q := authParams(client, oauth2.GenerateVerifier())
	q.Set("redirect_uri", cbSrv.URL+"/callback")
	authURL := e.as.AuthorizationEndpoint() + "?" + q.Encode()

	for _, tc := range []struct {
		name  string
		o     authserver.BrowseOptions
		hits  int
		state string
	}{
		{"follow", authserver.BrowseOptions{}, 1, "st-123"},
		{"twice", authserver.BrowseOptions{Twice: true}, 2, "st-123"},
		{"tamper", authserver.BrowseOptions{TamperState: true}, 1, "tampered-st-123"},
		{"never", authserver.BrowseOptions{Never: true}, 0, ""},
		{"print", authserver.BrowseOptions{NoCallback: true}, 0, ""},
	} {
		mu.Lock()
		hits = nil
		mu.Unlock()
		cb, err := authserver.Browse(e.ctx, authURL, tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		mu.Lock()
		got := slices.Clone(hits)
		mu.Unlock()
		if len(got) != tc.hits || (tc.hits > 0 && (got[0].Get("state") != tc.state || got[0].Get("code") == "")) {
			t.Errorf("%s: callback hits %v", tc.name, got)
		}
		if (tc.name == "never") != (cb == "") {
			t.Errorf("%s: callback %q", tc.name, cb)
		}
	}
	// An authorization server error page is an error.
	if _, err := authserver.Browse(e.ctx, e.as.AuthorizationEndpoint()+"?client_id=nobody", authserver.BrowseOptions{}); err == nil {
		t.Error("Browse ignored a 400 page")
	}
	var ue *url.Error
	if _, err := authserver.Browse(e.ctx, "http://127.0.0.1:1/x", authserver.BrowseOptions{}); !errors.As(err, &ue) {
		t.Errorf("Browse to a closed port: %v", err)
	}
}
