package oauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fixture is a minimal authorization server and a protected MCP endpoint
// behind it, on two loopback servers, for the unit tests. It records what
// it was asked and every secret it issued.
type fixture struct {
	t  *testing.T
	as *httptest.Server
	rs *httptest.Server

	mu sync.Mutex
	// knobs
	noS256        bool     // metadata lists only "plain"
	noPKCEList    bool     // metadata lists no methods at all
	issuerLie     string   // the metadata's issuer, when set
	issParam      string   // iss in the redirect: "" the issuer, "-" none, else this
	issSupported  bool     // authorization_response_iss_parameter_supported
	grantOnly     []string // scopes the AS grants at most (nil: all asked)
	omitScope     bool     // token answers carry no scope
	ttl           int      // expires_in; 0: 3600
	clientSecret  bool     // DCR issues a client secret
	needScope     string   // the RS answers 403 insufficient_scope without it
	scopesOffered []string // PRM scopes_supported
	challengeRM   bool     // the 401 challenge carries resource_metadata
	cimd          bool     // client_id_metadata_document_supported
	chScope       string   // the 401 challenge's scope
	// records
	authorizes  []url.Values
	tokens      []url.Values
	registers   []map[string]any
	revoked     []string
	metaGets    []string
	rsCalls     int
	refreshes   int
	reuse       int // refresh tokens presented twice
	basic       int // token requests with HTTP Basic client authentication
	secrets     []string
	clients     map[string]fxClient
	codes       map[string]fxCode
	access      map[string]fxGrant
	refresh     map[string]fxGrant
	usedRefresh map[string]bool
}

type fxClient struct {
	secret   string
	redirect []string
}

type fxCode struct {
	client, redirect, challenge, resource string
	scopes                                []string
}

type fxGrant struct {
	client, resource string
	scopes           []string
	dead             bool
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{
		t:             t,
		clients:       map[string]fxClient{},
		codes:         map[string]fxCode{},
		access:        map[string]fxGrant{},
		refresh:       map[string]fxGrant{},
		usedRefresh:   map[string]bool{},
		scopesOffered: []string{"read"},
		challengeRM:   true,
	}
	f.as = httptest.NewServer(http.HandlerFunc(f.serveAS))
	f.rs = httptest.NewServer(http.HandlerFunc(f.serveRS))
	t.Cleanup(f.rs.Close)
	t.Cleanup(f.as.Close)
	return f
}

func (f *fixture) issuer() string    { return f.as.URL }
func (f *fixture) serverURL() string { return f.rs.URL + "/mcp" }

func (f *fixture) mint(prefix string) string {
	b := make([]byte, 12)
	for i := range b {
		b[i] = byte(len(f.secrets)*31 + i*7)
	}
	s := prefix + "-" + base64.RawURLEncoding.EncodeToString(b) + fmt.Sprint(len(f.secrets))
	f.secrets = append(f.secrets, s)
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fixture) serveAS(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		f.metaGets = append(f.metaGets, r.URL.Path)
		issuer := f.issuer()
		if f.issuerLie != "" {
			issuer = f.issuerLie
		}
		methods := []string{"S256"}
		if f.noS256 {
			methods = []string{"plain"}
		}
		if f.noPKCEList {
			methods = nil
		}
		writeJSON(w, 200, map[string]any{
			"issuer":                                         issuer,
			"authorization_endpoint":                         f.as.URL + "/authorize",
			"token_endpoint":                                 f.as.URL + "/token",
			"registration_endpoint":                          f.as.URL + "/register",
			"revocation_endpoint":                            f.as.URL + "/revoke",
			"response_types_supported":                       []string{"code"},
			"code_challenge_methods_supported":               methods,
			"authorization_response_iss_parameter_supported": f.issSupported,
			"client_id_metadata_document_supported":          f.cimd,
		})
	case "/authorize":
		q := r.URL.Query()
		f.authorizes = append(f.authorizes, q)
		cl, ok := f.clients[q.Get("client_id")]
		if !ok || !slices.Contains(cl.redirect, q.Get("redirect_uri")) {
			http.Error(w, "unknown client or redirect URI", 400) // never redirects
			return
		}
		if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
			http.Error(w, "PKCE S256 required", 400)
			return
		}
		scopes := strings.Fields(q.Get("scope"))
		if f.grantOnly != nil {
			scopes = slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return !slices.Contains(f.grantOnly, s) })
		}
		code := f.mint("code")
		f.codes[code] = fxCode{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), resource: q.Get("resource"), scopes: scopes}
		back := url.Values{"code": {code}, "state": {q.Get("state")}}
		switch f.issParam {
		case "":
			back.Set("iss", f.issuer())
		case "-":
		default:
			back.Set("iss", f.issParam)
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+back.Encode(), http.StatusFound)
	case "/register":
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		f.registers = append(f.registers, m)
		id := fmt.Sprintf("client-%d", len(f.registers))
		var uris []string
		for _, u := range m["redirect_uris"].([]any) {
			uris = append(uris, u.(string))
		}
		cl := fxClient{redirect: uris}
		resp := map[string]any{"client_id": id, "redirect_uris": uris, "token_endpoint_auth_method": "none"}
		if f.clientSecret {
			cl.secret = f.mint("secret")
			resp["client_secret"] = cl.secret
			resp["token_endpoint_auth_method"] = "client_secret_post"
		}
		f.clients[id] = cl
		writeJSON(w, 201, resp)
	case "/token":
		_ = r.ParseForm()
		form := r.PostForm
		f.tokens = append(f.tokens, form)
		id, secret := form.Get("client_id"), form.Get("client_secret")
		if u, p, ok := r.BasicAuth(); ok {
			id, _ = url.QueryUnescape(u)
			secret, _ = url.QueryUnescape(p)
			f.basic++
		}
		cl, ok := f.clients[id]
		if !ok || cl.secret != secret {
			writeJSON(w, 401, map[string]string{"error": "invalid_client"})
			return
		}
		if form.Get("resource") == "" {
			writeJSON(w, 400, map[string]string{"error": "invalid_target", "error_description": "resource is required"})
			return
		}
		var g fxGrant
		switch form.Get("grant_type") {
		case "authorization_code":
			code, ok := f.codes[form.Get("code")]
			delete(f.codes, form.Get("code"))
			sum := sha256.Sum256([]byte(form.Get("code_verifier")))
			if !ok || code.client != id || code.redirect != form.Get("redirect_uri") ||
				base64.RawURLEncoding.EncodeToString(sum[:]) != code.challenge || code.resource != form.Get("resource") {
				writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
			f.secrets = append(f.secrets, form.Get("code_verifier"))
			g = fxGrant{client: id, resource: code.resource, scopes: code.scopes}
		case "refresh_token":
			f.refreshes++
			rt := form.Get("refresh_token")
			old, ok := f.refresh[rt]
			if f.usedRefresh[rt] {
				f.reuse++
				writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "refresh token reused"})
				return
			}
			if !ok || old.dead || old.client != id || old.resource != form.Get("resource") {
				writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
				return
			}
			f.usedRefresh[rt] = true
			g = old
		default:
			writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
			return
		}
		at, rt := f.mint("access"), f.mint("refresh")
		f.access[at] = g
		f.refresh[rt] = g
		ttl := f.ttl
		if ttl == 0 {
			ttl = 3600
		}
		resp := map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": ttl, "refresh_token": rt}
		if !f.omitScope {
			resp["scope"] = strings.Join(g.scopes, " ")
		}
		writeJSON(w, 200, resp)
	case "/revoke":
		_ = r.ParseForm()
		tok := r.PostForm.Get("token")
		f.revoked = append(f.revoked, r.PostForm.Get("token_type_hint"))
		if g, ok := f.access[tok]; ok {
			g.dead = true
			f.access[tok] = g
		}
		if g, ok := f.refresh[tok]; ok {
			g.dead = true
			f.refresh[tok] = g
		}
		w.WriteHeader(200)
	default:
		f.metaGets = append(f.metaGets, r.URL.Path)
		http.NotFound(w, r)
	}
}

func (f *fixture) serveRS(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		writeJSON(w, 200, map[string]any{
			"resource":              f.serverURL(),
			"authorization_servers": []string{f.issuer()},
			"scopes_supported":      f.scopesOffered,
		})
		return
	case "/mcp":
	default:
		http.NotFound(w, r)
		return
	}
	f.rsCalls++
	_, _ = io.Copy(io.Discard, r.Body)
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	g, ok := f.access[tok]
	if !ok || g.dead || g.resource != f.serverURL() {
		ch := `Bearer error="invalid_token"`
		if f.challengeRM {
			ch += fmt.Sprintf(`, resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, f.rs.URL)
		}
		if f.chScope != "" {
			ch += fmt.Sprintf(`, scope="%s"`, f.chScope)
		}
		w.Header().Set("WWW-Authenticate", ch)
		w.WriteHeader(401)
		return
	}
	if f.needScope != "" && !slices.Contains(g.scopes, f.needScope) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s"`, f.needScope))
		w.WriteHeader(403)
		return
	}
	writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
}

// kill makes the AS forget every access token (as an expiry would).
func (f *fixture) kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, g := range f.access {
		g.dead = true
		f.access[k] = g
	}
}

func (f *fixture) count(what string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch what {
	case "authorize":
		return len(f.authorizes)
	case "register":
		return len(f.registers)
	case "refresh":
		return f.refreshes
	case "reuse":
		return f.reuse
	}
	panic(what)
}

// env is one Client under test with its captured outputs.
type env struct {
	c       *Client
	out     *syncBuffer
	logs    *observer.ObservedLogs
	browser *fakeBrowser
	up      *routing.Client
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeBrowser follows the sign-in address as a person who consents would,
// redirects included, up to the callback.
type fakeBrowser struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	opened []string
	before func(authURL string) // runs first, synchronously
	off    bool                 // nobody at the keyboard
	pages  []string             // the callback's answers
}

func (b *fakeBrowser) open(u string) error {
	b.mu.Lock()
	b.opened = append(b.opened, u)
	off, before := b.off, b.before
	b.mu.Unlock()
	if off {
		return nil
	}
	if before != nil {
		before(u)
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		hc := &http.Client{Transport: &http.Transport{}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Do(req)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.mu.Lock()
		b.pages = append(b.pages, string(body))
		b.mu.Unlock()
	}()
	return nil
}

func (b *fakeBrowser) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.opened)
}

// newEnv makes a Client for the fixture's server on dir.
func (f *fixture) newEnv(dir string, mod func(*Config)) *env {
	t := f.t
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	out := &syncBuffer{}
	cfg := Config{
		ServerURL:   f.serverURL(),
		StoreDir:    dir,
		AuthTimeout: time.Minute,
		Logger:      zap.New(core),
		Out:         out,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBrowser{}
	c.user.open = b.open
	up, err := routing.New(routing.Config{URL: f.serverURL(), Auth: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		b.wg.Wait()
		up.CloseIdle()
	})
	return &env{c: c, out: out, logs: logs, browser: b, up: up}
}

// call makes one upstream request through routing, as the bridge does.
func (e *env) call(ctx context.Context) (int, error) {
	resp, err := e.up.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Close()
	return resp.Status, nil
}

func (e *env) mustCall(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	status, err := e.call(ctx)
	if err != nil || status != 200 {
		t.Fatalf("call: status %d, %v\nout: %s", status, err, e.out.String())
	}
}

// scan fails the test if any secret the fixture issued appears in the
// env's user lines, logs, or the given errors.
func (f *fixture) scan(t *testing.T, envs []*env, errs ...error) {
	t.Helper()
	f.mu.Lock()
	secrets := slices.Clone(f.secrets)
	f.mu.Unlock()
	var texts []string
	for _, e := range envs {
		texts = append(texts, e.out.String())
		for _, l := range e.logs.All() {
			texts = append(texts, l.Message)
			enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "m"})
			buf, err := enc.EncodeEntry(l.Entry, l.Context)
			if err == nil {
				texts = append(texts, buf.String())
			}
		}
	}
	for _, err := range errs {
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	if len(secrets) == 0 {
		t.Fatal("the fixture issued no secret: the scan would prove nothing")
	}
	for _, s := range secrets {
		for _, text := range texts {
			if strings.Contains(text, s) {
				t.Errorf("secret %q leaked into %q", s[:6], text)
			}
		}
	}
}
