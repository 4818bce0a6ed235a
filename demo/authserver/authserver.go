// Package authserver owns a small but real OAuth 2.1 authorization server
// that the OAuth tests and `mcp-tasks-proxy --demo --demo-oauth` sign in
// against, on a loopback port.
//
// It is a test and demonstration peer: the proxy never imports it, and it
// decides nothing about what the proxy must do. It refuses what the specs
// refuse, so a client that passes against it has done the work:
//
//   - RFC 8414 metadata at /.well-known/oauth-authorization-server{path}
//     (path insertion for an issuer with a path), and optionally the OIDC
//     variants /.well-known/openid-configuration{path} and
//     {path}/.well-known/openid-configuration. The document's issuer is the
//     server's issuer, byte for byte.
//   - {issuer}/authorize with automatic consent (no UI): the client must be
//     known (pre-registered, registered with /register, or a Client ID
//     Metadata Document URL when CIMD is on), the redirect_uri must match a
//     registered one, response_type must be code, PKCE with S256 is
//     required (plain and missing are refused), resource (RFC 8707) is
//     required and must be an allowed resource, scopes must be supported.
//     The redirect carries code, state and iss (RFC 9207). Errors go back to
//     the redirect URI as error=… once the client and redirect URI are
//     trusted, and are a 400 page before that.
//   - {issuer}/token: authorization_code (the code is single use, bound to
//     the client, the redirect URI, the PKCE challenge and the resource; a
//     reused code revokes what it issued) and refresh_token (rotated on
//     every use; presenting a rotated-out refresh token revokes the whole
//     grant). resource is required on every token request, refreshes
//     included. Errors are RFC 6749 JSON.
//   - {issuer}/register: RFC 7591 dynamic client registration.
//   - {issuer}/revoke: RFC 7009 revocation.
//   - [Server.Verify], the in-process introspection that protected
//     resources use: tokens are opaque random strings bound to one resource.
//
// # Decisions
//
//   - Loopback redirect URIs: following RFC 8252 §7.3, a registered
//     redirect URI whose host is 127.0.0.1, [::1] or localhost matches a
//     request for the same scheme, host, path and query on any port, so a
//     client whose callback port moved on need not register again.
//     Config.StrictRedirectPort turns that off (exact match only).
//   - redirect_uri is required on every authorization request, even for a
//     client with one registered URI.
//   - A request with no scope gets Config.DefaultScopes. The grant policy
//     ([Server.SetGrantScopes]) may grant fewer scopes than asked; it never
//     grants more.
//   - A confidential client may authenticate with client_secret_basic or
//     client_secret_post, whichever it registered; a public client sends
//     its client_id and no secret (an empty Basic password is accepted).
//   - An authorization code is spent by its first presentation, even one
//     that fails (wrong verifier, wrong resource…).
//   - [Server.ForgetClient] forgets the client only; its tokens stay valid
//     until they expire or are revoked, so a test decides separately when
//     the client next needs the token endpoint ([Server.ExpireAll]).
//   - Consent is automatic; [Server.SetConsent] can make the server record
//     an authorization and never answer it with a redirect (a user who
//     never signs in), or deny it (error=access_denied).
//
// Start it with [Start]; everything a test needs to steer or inspect is a
// method of [Server].
package authserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/httpserve"
)

// Defaults for the zero Config.
var (
	// DefaultScopes are the scopes_supported of a Config without Scopes.
	DefaultScopes = []string{"mcp:read", "mcp:write", "mcp:admin"}
)

const (
	defaultAccessTTL = time.Hour
	defaultCodeTTL   = time.Minute
	cimdTimeout      = 5 * time.Second
	maxDocument      = 64 << 10
	stopTimeout      = 2 * time.Second

	// Subject is the one user the server signs in; it is the UserID of
	// every token (go-sdk ties a 2025 session to it).
	Subject = "demo-user"
)

// Grant types and client authentication methods the server supports.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"

	AuthNone              = "none"
	AuthClientSecretPost  = "client_secret_post"
	AuthClientSecretBasic = "client_secret_basic"
)

// Config configures a Server. The zero Config is usable: a root issuer,
// DefaultScopes, one-hour access tokens, no allowed resource yet (add them
// with [Server.AllowResource]).
type Config struct {
	// Addr is the loopback address Start listens on; default
	// "127.0.0.1:0" (a free port).
	Addr string
	// IssuerPath is the path of the issuer URL, e.g. "/tenant1" for issuer
	// http://127.0.0.1:PORT/tenant1; empty for a root issuer. Its metadata
	// is then at /.well-known/oauth-authorization-server/tenant1.
	IssuerPath string
	// Scopes are scopes_supported; default DefaultScopes.
	Scopes []string
	// DefaultScopes are granted to a request that names no scope; default
	// none (an empty grant).
	DefaultScopes []string
	// Resources are the allowed resource indicators (RFC 8707), compared
	// exactly. Requests for any other resource get invalid_target.
	Resources []string
	// Clients are pre-registered clients.
	Clients []Client
	// AccessTokenTTL is the access token lifetime; default one hour.
	AccessTokenTTL time.Duration
	// RefreshTokenTTL is the refresh token lifetime; zero means no expiry.
	RefreshTokenTTL time.Duration
	// CodeTTL is the authorization code lifetime; default one minute.
	CodeTTL time.Duration
	// CIMD makes the server accept Client ID Metadata Document URLs as
	// client_id and advertise client_id_metadata_document_supported.
	CIMD bool
	// OIDC also serves the metadata at the two OpenID Connect discovery
	// URLs (path-inserted and path-appended).
	OIDC bool
	// NoOAuthMetadata stops serving the RFC 8414 URL, so a client must
	// fall back to OIDC discovery.
	NoOAuthMetadata bool
	// StrictRedirectPort requires loopback redirect URIs to match
	// exactly, port included.
	StrictRedirectPort bool
	// HTTPClient fetches Client ID Metadata Documents; default a client
	// with a 5 s timeout.
	HTTPClient *http.Client
}

// Client is a registered client.
type Client struct {
	// ID is the client_id; for a CIMD client, the document URL.
	ID string
	// Secret is the client secret; empty for a public client.
	Secret string
	// RedirectURIs are the registered redirect URIs.
	RedirectURIs []string
	// GrantTypes default to authorization_code and refresh_token for a
	// pre-registered client, and to authorization_code (RFC 7591) for a
	// registered or CIMD one.
	GrantTypes []string
	// AuthMethod is token_endpoint_auth_method; default none without a
	// Secret, client_secret_basic with one.
	AuthMethod string
	// ApplicationType is the registered application_type ("native",
	// "web"…), informative.
	ApplicationType string
	// Scope is the registered scope, informative.
	Scope string
	// ClientName is the registered client_name, informative.
	ClientName string
	// Source says how the server learnt of the client: "static",
	// "registered" or "cimd". Set by the server.
	Source string
}

// TokenInfo is what [Server.Verify] knows about a valid access token.
type TokenInfo struct {
	// Scopes are the granted scopes.
	Scopes []string
	// Expiration is when the token stops being valid.
	Expiration time.Time
	// Resource is the one resource (RFC 8707) the token is for.
	Resource string
	// ClientID is the client the token was issued to.
	ClientID string
}

// Consent is how the simulated user answers an authorization request.
type Consent int

const (
	// ConsentAuto approves every valid request at once.
	ConsentAuto Consent = iota
	// ConsentNever records the request and answers with a page that never
	// redirects: a user who never signs in.
	ConsentNever
	// ConsentDeny redirects with error=access_denied.
	ConsentDeny
)

// GrantPolicy chooses the scopes granted out of those requested (after
// defaults); the server keeps only the ones that were requested.
type GrantPolicy func(requested []string) []string

// Without is a GrantPolicy that never grants the given scopes.
func Without(scopes ...string) GrantPolicy {
	return func(req []string) []string {
		var out []string
		for _, s := range req {
			if !slices.Contains(scopes, s) {
				out = append(out, s)
			}
		}
		return out
	}
}

// Stats counts what the server has done.
type Stats struct {
	// MetadataRequests counts metadata documents served.
	MetadataRequests int
	// Authorizations counts authorization requests that passed validation
	// (whether consent then came or not).
	Authorizations int
	// CodesIssued counts authorization codes issued.
	CodesIssued int
	// TokenGrants counts successful authorization_code exchanges.
	TokenGrants int
	// Refreshes counts successful refresh_token grants.
	Refreshes int
	// TokenErrors counts token requests answered with an error.
	TokenErrors int
	// Registrations counts successful dynamic client registrations.
	Registrations int
	// Revocations counts successful revocation requests.
	Revocations int
	// RefreshReuse counts rotated-out refresh tokens presented again.
	RefreshReuse int
	// CodeReuse counts authorization codes presented again.
	CodeReuse int
	// CIMDFetches counts Client ID Metadata Document fetches.
	CIMDFetches int
}

// AuthorizeRequest is one authorization request as received.
type AuthorizeRequest struct {
	ClientID, RedirectURI, ResponseType, Scope, State string
	Resource                                          []string
	CodeChallengeMethod                               string
	HasCodeChallenge                                  bool
	// Error is the error the server answered with, empty when it issued
	// a code or is waiting for consent.
	Error string
}

// TokenRequest is one token request as received, without its secrets.
type TokenRequest struct {
	GrantType, ClientID, Scope string
	Resource                   []string
	// AuthMethod is how the client authenticated: none,
	// client_secret_basic or client_secret_post.
	AuthMethod string
	// Error is the OAuth error code answered, empty on success.
	Error string
}

// Server is a running authorization server. Its methods are safe for
// concurrent use.
type Server struct {
	cfg    Config
	issuer string
	origin string
	mux    *http.ServeMux
	client *http.Client
	stop   func()

	mu             sync.Mutex
	clients        map[string]*Client
	resources      map[string]bool
	codes          map[string]*authCode
	access         map[string]*accessToken
	refresh        map[string]*refreshToken
	secrets        []string
	stats          Stats
	authReqs       []AuthorizeRequest
	tokenReqs      []TokenRequest
	policy         GrantPolicy
	consent        Consent
	wrongIss       bool
	omitIss        bool
	cimd           bool
	accessTTL      time.Duration
	metadataIssuer string
	nextGrant      int
}

type grant struct {
	id       int
	clientID string
	scopes   []string
	resource string
	revoked  bool
}

type authCode struct {
	clientID, redirectURI, challenge, resource string
	scopes                                     []string
	expires                                    time.Time
	used                                       bool
	grant                                      *grant // set once redeemed
}

type accessToken struct {
	grant   *grant
	scopes  []string
	expires time.Time
	revoked bool
}

type refreshToken struct {
	grant   *grant
	current bool
	expires time.Time // zero: none
}

// Start serves a new Server on a loopback port until Close is called or
// ctx ends. Its issuer is http://ADDR{cfg.IssuerPath}.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("authserver: not starting: %w", err)
	}
	addr := cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("authserver: listen on %s: %w", addr, err)
	}
	s, err := New("http://"+ln.Addr().String()+cfg.IssuerPath, cfg)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.stop = httpserve.Serve(ctx, ln, s, stopTimeout, func() {}, func() { s.client.CloseIdleConnections() })
	return s, nil
}

// New returns a Server for issuer (an http or https URL without query or
// fragment) without serving it: mount it at the root of issuer's origin.
// [Start] is New on a fresh loopback listener.
func New(issuer string, cfg Config) (*Server, error) {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(u.Path, "/") {
		return nil, fmt.Errorf("authserver: bad issuer %q", issuer)
	}
	if cfg.Scopes == nil {
		cfg.Scopes = DefaultScopes
	}
	if cfg.AccessTokenTTL <= 0 {
		cfg.AccessTokenTTL = defaultAccessTTL
	}
	if cfg.CodeTTL <= 0 {
		cfg.CodeTTL = defaultCodeTTL
	}
	s := &Server{
		cfg:       cfg,
		issuer:    issuer,
		origin:    u.Scheme + "://" + u.Host,
		client:    cfg.HTTPClient,
		stop:      func() {},
		clients:   map[string]*Client{},
		resources: map[string]bool{},
		codes:     map[string]*authCode{},
		access:    map[string]*accessToken{},
		refresh:   map[string]*refreshToken{},
		cimd:      cfg.CIMD,
		accessTTL: cfg.AccessTokenTTL,
	}
	if s.client == nil {
		s.client = &http.Client{Timeout: cimdTimeout, Transport: &http.Transport{}}
	}
	for _, r := range cfg.Resources {
		s.resources[r] = true
	}
	for _, c := range cfg.Clients {
		if c.ID == "" {
			return nil, errors.New("authserver: a pre-registered client has no ID")
		}
		c := c
		c.Source = "static"
		if c.GrantTypes == nil {
			c.GrantTypes = []string{GrantAuthorizationCode, GrantRefreshToken}
		}
		if c.AuthMethod == "" {
			c.AuthMethod = AuthNone
			if c.Secret != "" {
				c.AuthMethod = AuthClientSecretBasic
			}
		}
		if c.Secret != "" {
			s.secrets = append(s.secrets, c.Secret)
		}
		s.clients[c.ID] = &c
	}
	path := u.Path
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server"+path, s.metadata(func() bool { return !cfg.NoOAuthMetadata }))
	oidc := func() bool { return cfg.OIDC }
	mux.HandleFunc("/.well-known/openid-configuration"+path, s.metadata(oidc))
	if path != "" {
		mux.HandleFunc(path+"/.well-known/openid-configuration", s.metadata(oidc))
	}
	mux.HandleFunc(path+"/authorize", s.authorize)
	mux.HandleFunc(path+"/token", s.token)
	mux.HandleFunc(path+"/register", s.register)
	mux.HandleFunc(path+"/revoke", s.revoke)
	s.mux = mux
	return s, nil
}

// ServeHTTP serves the metadata and the endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close stops a server from Start; it is idempotent.
func (s *Server) Close() { s.stop() }

// Issuer is the issuer URL, e.g. http://127.0.0.1:41234 or
// http://127.0.0.1:41234/tenant1.
func (s *Server) Issuer() string { return s.issuer }

// URL is the issuer's origin, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.origin }

// MetadataURL is the RFC 8414 metadata URL (path-inserted for an issuer
// with a path).
func (s *Server) MetadataURL() string {
	return s.origin + "/.well-known/oauth-authorization-server" + strings.TrimPrefix(s.issuer, s.origin)
}

// Scopes are the scopes_supported.
func (s *Server) Scopes() []string { return slices.Clone(s.cfg.Scopes) }

// Endpoint URLs.

// AuthorizationEndpoint is {issuer}/authorize.
func (s *Server) AuthorizationEndpoint() string { return s.issuer + "/authorize" }

// TokenEndpoint is {issuer}/token.
func (s *Server) TokenEndpoint() string { return s.issuer + "/token" }

// RegistrationEndpoint is {issuer}/register.
func (s *Server) RegistrationEndpoint() string { return s.issuer + "/register" }

// RevocationEndpoint is {issuer}/revoke.
func (s *Server) RevocationEndpoint() string { return s.issuer + "/revoke" }

// Metadata returns the authorization server metadata document.
func (s *Server) Metadata() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metadataLocked()
}

func (s *Server) metadataLocked() map[string]any {
	iss := s.issuer
	if s.metadataIssuer != "" {
		iss = s.metadataIssuer
	}
	return map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         s.AuthorizationEndpoint(),
		"token_endpoint":                                 s.TokenEndpoint(),
		"registration_endpoint":                          s.RegistrationEndpoint(),
		"revocation_endpoint":                            s.RevocationEndpoint(),
		"scopes_supported":                               s.cfg.Scopes,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{GrantAuthorizationCode, GrantRefreshToken},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{AuthNone, AuthClientSecretPost, AuthClientSecretBasic},
		"revocation_endpoint_auth_methods_supported":     []string{AuthNone, AuthClientSecretPost, AuthClientSecretBasic},
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          s.cimd,
	}
}

func (s *Server) metadata(enabled func() bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !enabled() {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s.mu.Lock()
		s.stats.MetadataRequests++
		doc := s.metadataLocked()
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, doc)
	}
}

// AllowResource adds resources to the allowed resource indicators.
func (s *Server) AllowResource(resources ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range resources {
		s.resources[r] = true
	}
}

// SetGrantScopes sets the grant policy; nil grants every scope requested.
func (s *Server) SetGrantScopes(p GrantPolicy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// SetWrongIss makes authorization responses carry an iss that is not the
// issuer (RFC 9207 mix-up), or the right one again.
func (s *Server) SetWrongIss(wrong bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wrongIss = wrong
}

// WrongIss is the iss value authorization responses carry under SetWrongIss.
func (s *Server) WrongIss() string { return s.origin + "/not-the-issuer" }

// SetOmitIss makes authorization responses carry no iss even though the
// metadata promises it, or carry it again.
func (s *Server) SetOmitIss(omit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.omitIss = omit
}

// SetMetadataIssuer makes the metadata document claim issuer iss (to test
// the exact-match check); "" restores the real issuer.
func (s *Server) SetMetadataIssuer(iss string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metadataIssuer = iss
}

// SetCIMD turns Client ID Metadata Document support on or off, in the
// metadata and at the endpoints.
func (s *Server) SetCIMD(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cimd = on
}

// SetConsent sets how the simulated user answers authorization requests.
func (s *Server) SetConsent(c Consent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consent = c
}

// SetAccessTokenTTL sets the lifetime of access tokens issued from now on.
func (s *Server) SetAccessTokenTTL(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accessTTL = d
}

// ExpireAll makes every access token issued so far expired; refresh tokens
// stay valid. It returns how many valid tokens it expired.
func (s *Server) ExpireAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	n := 0
	for _, t := range s.access {
		if !t.revoked && t.expires.After(now) {
			t.expires = now.Add(-time.Second)
			n++
		}
	}
	return n
}

// Expire makes one access token expired; false if it is unknown.
func (s *Server) Expire(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.access[token]
	if t == nil {
		return false
	}
	t.expires = time.Now().Add(-time.Second)
	return true
}

// Revoke revokes one token as the revocation endpoint would: an access
// token alone, or a refresh token with its whole grant. False if unknown.
func (s *Server) Revoke(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.access[token]; t != nil {
		t.revoked = true
		return true
	}
	if t := s.refresh[token]; t != nil {
		s.revokeGrantLocked(t.grant)
		return true
	}
	return false
}

// RevokeAll revokes every grant: all access and refresh tokens. It returns
// how many grants were live.
func (s *Server) RevokeAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[*grant]bool{}
	n := 0
	for _, t := range s.access {
		seen[t.grant] = true
	}
	for _, t := range s.refresh {
		seen[t.grant] = true
	}
	for g := range seen {
		if !g.revoked {
			n++
		}
		s.revokeGrantLocked(g)
	}
	return n
}

// ForgetClient forgets a registered or pre-registered client, as an AS
// that dropped it would: its next authorize, token or revoke request gets
// invalid_client. Its tokens are left as they are. False if unknown.
func (s *Server) ForgetClient(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.clients[id]
	delete(s.clients, id)
	return ok
}

// Clients returns copies of the known clients (CIMD clients fetched so
// far included), in no particular order.
func (s *Server) Clients() []Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Client, 0, len(s.clients))
	for _, c := range s.clients {
		cc := *c
		cc.RedirectURIs = slices.Clone(c.RedirectURIs)
		cc.GrantTypes = slices.Clone(c.GrantTypes)
		out = append(out, cc)
	}
	return out
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// AuthorizeRequests returns every authorization request received, in order.
func (s *Server) AuthorizeRequests() []AuthorizeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authReqs)
}

// TokenRequests returns every token request received, in order.
func (s *Server) TokenRequests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokenReqs)
}

// Secrets returns every secret the server has issued or seen: access and
// refresh tokens, authorization codes, client secrets, and the PKCE code
// verifiers presented to it. A test scans every output of the proxy for
// each of them.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.secrets)
}

// AccessTokens returns the access tokens that are valid now.
func (s *Server) AccessTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var out []string
	for tok, t := range s.access {
		if !t.revoked && !t.grant.revoked && t.expires.After(now) {
			out = append(out, tok)
		}
	}
	return out
}

// Verify reports whether token is a valid access token, and what it
// grants. Resource servers must also check that Resource is themselves.
func (s *Server) Verify(token string) (TokenInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.access[token]
	if t == nil || t.revoked || t.grant.revoked || !time.Now().Before(t.expires) {
		return TokenInfo{}, false
	}
	return TokenInfo{
		Scopes:     slices.Clone(t.scopes),
		Expiration: t.expires,
		Resource:   t.grant.resource,
		ClientID:   t.grant.clientID,
	}, true
}

// revokeGrantLocked revokes a grant and every token issued under it.
func (s *Server) revokeGrantLocked(g *grant) {
	g.revoked = true
	for _, t := range s.access {
		if t.grant == g {
			t.revoked = true
		}
	}
	for _, t := range s.refresh {
		if t.grant == g {
			t.current = false
		}
	}
}

// newSecret returns a fresh random secret with a prefix naming its kind,
// recorded in the secrets list.
func (s *Server) newSecretLocked(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	v := prefix + base64.RawURLEncoding.EncodeToString(b)
	s.secrets = append(s.secrets, v)
	return v
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// oauthError is an RFC 6749 §5.2 error response.
type oauthError struct {
	status      int
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func errf(status int, code, format string, args ...any) *oauthError {
	return &oauthError{status: status, Code: code, Description: fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, e *oauthError) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="token"`)
	}
	writeJSON(w, e.status, e)
}

// Mint issues tokens to a known client for resource and scopes without an
// authorization flow, as if the user had just signed in; a test hook for
// resource-server tests and for seeding a client's token store. The
// refresh token is "" when the client may not refresh. Mint is not
// counted in Stats.
func (s *Server) Mint(clientID, resource string, scopes ...string) (access, refresh string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[clientID]
	if c == nil {
		return "", "", fmt.Errorf("authserver: unknown client %q", clientID)
	}
	if _, e := s.checkResourceLocked([]string{resource}, ""); e != nil {
		return "", "", fmt.Errorf("authserver: %s", e.Description)
	}
	for _, sc := range scopes {
		if !slices.Contains(s.cfg.Scopes, sc) {
			return "", "", fmt.Errorf("authserver: scope %q is not supported", sc)
		}
	}
	s.nextGrant++
	g := &grant{id: s.nextGrant, clientID: c.ID, scopes: slices.Clone(scopes), resource: resource}
	resp := s.issueLocked(c, g, g.scopes)
	access, _ = resp["access_token"].(string)
	refresh, _ = resp["refresh_token"].(string)
	return access, refresh, nil
}
