package demo_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

// startAS starts an authorization server with one pre-registered public
// client, "test".
func startAS(t *testing.T, ctx context.Context) *authserver.Server {
	t.Helper()
	as, err := authserver.Start(ctx, authserver.Config{Clients: []authserver.Client{
		{ID: "test", RedirectURIs: []string{"http://127.0.0.1:1/callback"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	return as
}

// startProtected starts an AS and the protected 2026 demo server.
func startProtected(t *testing.T, opts *demo.ProtectedOptions) (*peer, *authserver.Server) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	as := startAS(t, ctx)
	u, stop, err := demo.StartProtected(ctx, as, opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		stop()
	})
	return &peer{url: u, client: &http.Client{Transport: tr}}, as
}

// mint issues a token for the peer's resource.
func mint(t *testing.T, as *authserver.Server, resource string, scopes ...string) string {
	t.Helper()
	at, _, err := as.Mint("test", resource, scopes...)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// challenge parses the one Bearer challenge of a response.
func challenge(t *testing.T, h http.Header) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil || len(cs) != 1 || !strings.EqualFold(cs[0].Scheme, "bearer") {
		t.Fatalf("WWW-Authenticate %q: %+v, %v", h.Values("WWW-Authenticate"), cs, err)
	}
	return cs[0].Params
}

// call posts a 2026 request with a bearer token ("" for none) and returns
// the status, headers and body.
func (p *peer) call(t *testing.T, token, method, name string, params map[string]any) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var hdr []string
	if token != "" {
		hdr = []string{"Authorization", "Bearer " + token}
	}
	resp, err := p.client.Do(p.request(ctx, t, 1, method, name, params, hdr...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

func echoParams(text string) map[string]any {
	return map[string]any{"name": "echo", "arguments": map[string]any{"text": text}}
}

func TestProtectedChallenges(t *testing.T) {
	p, as := startProtected(t, &demo.ProtectedOptions{
		Scopes:     []string{"mcp:read"},
		ToolScopes: map[string][]string{"echo": {"mcp:write"}},
	})
	origin := strings.TrimSuffix(p.url, demo.Path)
	prmURL := origin + demo.ProtectedMetadataPrefix + demo.Path

	status, h, _ := p.call(t, "", "tools/list", "", nil)
	c := challenge(t, h)
	if status != http.StatusUnauthorized || c["error"] != "" || c["scope"] != "mcp:read" || c["resource_metadata"] != prmURL {
		t.Errorf("no token: %d %v", status, c)
	}
	status, h, _ = p.call(t, "garbage", "tools/list", "", nil)
	if c := challenge(t, h); status != http.StatusUnauthorized || c["error"] != "invalid_token" || c["resource_metadata"] != prmURL {
		t.Errorf("bad token: %d %v", status, c)
	}

	// The protected resource metadata names the resource and the issuer.
	prm, err := oauthex.GetProtectedResourceMetadata(context.Background(), prmURL, p.url, p.client)
	if err != nil || prm.Resource != p.url || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != as.Issuer() {
		t.Fatalf("metadata %+v, %v", prm, err)
	}

	read := mint(t, as, p.url, "mcp:read")
	if status, _, body := p.call(t, read, "tools/list", "", nil); status != http.StatusOK || !strings.Contains(string(body), `"echo"`) {
		t.Errorf("tools/list with a token: %d %s", status, body)
	}
	if status, _, body := p.call(t, read, "tools/call", "quick", map[string]any{"name": "quick", "arguments": map[string]any{"text": "hi"}}); status != http.StatusOK {
		t.Errorf("quick with mcp:read: %d %s", status, body)
	}
	// Step-up: echo needs mcp:write too.
	status, h, _ = p.call(t, read, "tools/call", "echo", echoParams("hi"))
	if c := challenge(t, h); status != http.StatusForbidden || c["error"] != "insufficient_scope" || c["scope"] != "mcp:read mcp:write" || c["resource_metadata"] != prmURL {
		t.Errorf("echo with mcp:read: %d %v", status, c)
	}
	write := mint(t, as, p.url, "mcp:read", "mcp:write")
	if status, _, body := p.call(t, write, "tools/call", "echo", echoParams("hi")); status != http.StatusOK || !strings.Contains(string(body), `"hi"`) {
		t.Errorf("echo with mcp:write: %d %s", status, body)
	}
	// A token without the base scope.
	status, h, _ = p.call(t, mint(t, as, p.url, "mcp:write"), "tools/list", "", nil)
	if c := challenge(t, h); status != http.StatusForbidden || c["error"] != "insufficient_scope" || c["scope"] != "mcp:read" {
		t.Errorf("no base scope: %d %v", status, c)
	}
	// A token for another resource is not accepted here.
	as.AllowResource("http://127.0.0.1:9/mcp")
	status, h, _ = p.call(t, mint(t, as, "http://127.0.0.1:9/mcp", "mcp:read"), "tools/list", "", nil)
	if c := challenge(t, h); status != http.StatusUnauthorized || c["error"] != "invalid_token" {
		t.Errorf("other resource: %d %v", status, c)
	}
	// Expired and revoked tokens.
	as.Expire(read)
	if status, _, _ := p.call(t, read, "tools/list", "", nil); status != http.StatusUnauthorized {
		t.Errorf("expired token: %d", status)
	}
	as.RevokeAll()
	if status, _, _ := p.call(t, write, "tools/list", "", nil); status != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", status)
	}
	resp, err := p.client.Get(origin + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("other path: %d", resp.StatusCode)
	}
}

func TestProtectedMetadataOptions(t *testing.T) {
	p, _ := startProtected(t, &demo.ProtectedOptions{
		OmitResourceMetadata: true,
		MetadataAtRoot:       true,
		MetadataResource:     "http://127.0.0.1:9/elsewhere",
	})
	status, h, _ := p.call(t, "", "tools/list", "", nil)
	if c := challenge(t, h); status != http.StatusUnauthorized || len(c) != 0 {
		t.Errorf("challenge %v, want a bare Bearer", c)
	}
	origin := strings.TrimSuffix(p.url, demo.Path)
	get := func(u string) (int, map[string]any) {
		resp, err := p.client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if status, _ := get(origin + demo.ProtectedMetadataPrefix + demo.Path); status != http.StatusNotFound {
		t.Errorf("path-inserted metadata with MetadataAtRoot: %d", status)
	}
	if status, m := get(origin + demo.ProtectedMetadataPrefix); status != http.StatusOK || m["resource"] != "http://127.0.0.1:9/elsewhere" {
		t.Errorf("root metadata: %d %v", status, m)
	}
}

// bearerTransport adds a bearer token and records each request's method
// and status.
type bearerTransport struct {
	token string
	mu    sync.Mutex
	seen  []string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.base.RoundTrip(r)
	if err == nil {
		b.mu.Lock()
		b.seen = append(b.seen, r.Method+" "+http.StatusText(resp.StatusCode))
		b.mu.Unlock()
	}
	return resp, err
}

func TestProtectedLegacy(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	as := startAS(t, ctx)
	u, l, stop, err := demo.StartProtectedLegacy(ctx, as, &demo.ProtectedOptions{
		Scopes:     []string{"mcp:read"},
		ToolScopes: map[string][]string{"echo": {"mcp:write"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()

	raw := func(method, token, session string) (int, http.Header) {
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		}
		req, _ := http.NewRequestWithContext(ctx, method, u, body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// Read the answer to its end: go-sdk writes the headers and a
		// priming event before it handles the initialize, and a body
		// closed early cancels the request, which can end the session
		// before it is registered.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header
	}
	read := mint(t, as, u, "mcp:read")
	status, h := raw(http.MethodPost, read, "")
	session := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || session == "" {
		t.Fatalf("initialize with a token: %d, session %q", status, session)
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		status, h := raw(m, "", session)
		if c := challenge(t, h); status != http.StatusUnauthorized || c["scope"] != "mcp:read" || c["resource_metadata"] == "" {
			t.Errorf("%s without a token: %d %v", m, status, c)
		}
	}
	// go-sdk registers the session as the initialize is answered, not
	// before: wait for it (bounded).
	for deadline := time.Now().Add(10 * time.Second); l.Sessions() != 1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if l.Sessions() != 1 || l.Deleted.Load() != 0 {
		t.Errorf("sessions %d, deletes %d", l.Sessions(), l.Deleted.Load())
	}

	// A real 2025 client with a token: POSTs, the GET stream and the DELETE.
	bt := &bearerTransport{token: read, base: tr}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: bt}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err == nil || !strings.Contains(err.Error(), "403") && !strings.Contains(strings.ToLower(err.Error()), "forbidden") {
		t.Errorf("echo without mcp:write: %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	bt.mu.Lock()
	seen := strings.Join(bt.seen, ", ")
	bt.mu.Unlock()
	t.Logf("requests: %s", seen)
	for _, want := range []string{"POST OK", "GET OK", "DELETE " + http.StatusText(http.StatusNoContent)} {
		if !strings.Contains(seen, want) {
			t.Errorf("requests %s: no %q", seen, want)
		}
	}
	if l.Deleted.Load() != 1 {
		t.Errorf("deletes %d, want 1", l.Deleted.Load())
	}
}

// TestStartWithOAuth signs in to the --demo-oauth pair the way a client
// would: the challenge, the metadata, registration, the code flow with the
// challenge's scope, a call, and a step-up for touch.
func TestStartWithOAuth(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	u, as, stop, err := demo.StartWithOAuth(ctx, authserver.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	p := &peer{url: u, client: &http.Client{Transport: tr}}

	_, h, _ := p.call(t, "", "tools/list", "", nil)
	c := challenge(t, h)
	prm, err := oauthex.GetProtectedResourceMetadata(ctx, c["resource_metadata"], u, p.client)
	if err != nil {
		t.Fatal(err)
	}
	asm, err := oauthex.GetAuthServerMeta(ctx, as.MetadataURL(), prm.AuthorizationServers[0], p.client)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{"http://127.0.0.1:1/callback"}, TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ApplicationType: "native",
	}, p.client)
	if err != nil {
		t.Fatal(err)
	}
	signIn := func(scope string) string {
		conf := &oauth2.Config{
			ClientID:    reg.ClientID,
			Endpoint:    oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
			RedirectURL: "http://127.0.0.1:1/callback",
			Scopes:      strings.Fields(scope),
		}
		v := oauth2.GenerateVerifier()
		cb, err := authserver.Browse(ctx, conf.AuthCodeURL("s", oauth2.S256ChallengeOption(v), oauth2.SetAuthURLParam("resource", u)),
			authserver.BrowseOptions{NoCallback: true, Client: p.client})
		if err != nil {
			t.Fatal(err)
		}
		cbu, _ := url.Parse(cb)
		if cbu.Query().Get("iss") != asm.Issuer {
			t.Errorf("iss %q", cbu.Query().Get("iss"))
		}
		tok, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, p.client), cbu.Query().Get("code"),
			oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", u))
		if err != nil {
			t.Fatal(err)
		}
		return tok.AccessToken
	}
	tok := signIn(c["scope"])
	if status, _, body := p.call(t, tok, "tools/list", "", nil); status != http.StatusOK {
		t.Fatalf("tools/list: %d %s", status, body)
	}
	touch := map[string]any{"name": "touch", "arguments": map[string]any{}}
	status, h, _ := p.call(t, tok, "tools/call", "touch", touch)
	c = challenge(t, h)
	if status != http.StatusForbidden || c["error"] != "insufficient_scope" || c["scope"] != "mcp:read mcp:write" {
		t.Fatalf("touch with mcp:read: %d %v", status, c)
	}
	tok = signIn(c["scope"])
	if status, _, body := p.call(t, tok, "tools/call", "touch", touch); status != http.StatusOK {
		t.Errorf("touch after step-up: %d %s", status, body)
	}
}
