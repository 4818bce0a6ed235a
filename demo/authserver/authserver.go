// Package authserver owns a small but real OAuth 2.1 authorization server
// that the OAuth tests and the command's demo mode (`mcp-tasks-proxy
// --demo --demo-oauth`, and `check` with the same flags) sign in against,
// on a loopback port.
//
// It is a test and demonstration peer: the proxy's own path (oauth,
// routing, bridge) never imports it, only the demo server (package demo)
// and the command's demo mode do, and it decides nothing about what the
// proxy must do. It refuses what the specs refuse, so a client that passes
// against it has done the work:
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
// # What it owns
//
// Start it with [Start]; everything a test needs to steer or inspect is a
// method of [Server]. A Server is made of parts, each with its own state
// and lock, whose methods are the Server's:
//
//   - the issuer's URLs (fixed at [New]);
//   - the journal: the counters ([Stats]), the requests received, and the
//     secrets issued or seen; its lock is always taken last;
//   - the client registry: pre-registered, registered and CIMD clients,
//     {issuer}/register, and client authentication;
//   - the audience: the allowed resources;
//   - the ledger: codes, grants, access and refresh tokens, and the rules
//     for redeeming, rotating, expiring and revoking them;
//   - the authorization endpoint and the simulated user behind it
//     (consent, grant policy, the iss it answers with);
//   - the metadata document.
//
// The token and revocation endpoints keep no state: they authenticate the
// client with the registry and hand the request to the ledger.
//
// # What it must never do
//
// It must never be imported by the proxy's own path, nor give way where
// the specs are strict (a loose peer would let a broken client pass); it
// keeps everything in memory and must never write to stdout (in demo
// mode the proxy's stdout is the JSON-RPC stream). [Server.Secrets]
// must list every secret it issues or is shown, since tests scan the
// proxy's output for them.
package authserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
//
// It is made of parts, each with its own state and lock, whose methods
// are the Server's: the issuer's URLs (site), what it recorded (journal),
// the clients (registry), the allowed resources (audience), the codes,
// grants and tokens (ledger), the authorization endpoint and its simulated
// user (authorizer), and the metadata document (metadataDoc). The token
// and revocation endpoints (tokenEndpoint) have no state of their own.
type Server struct {
	site
	journal
	registry
	audience
	ledger
	authorizer
	metadataDoc

	cfg    Config
	tokens tokenEndpoint
	mux    *http.ServeMux
	stop   func()
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
	s.stop = httpserve.Serve(ctx, ln, s, stopTimeout, func() {}, func() { s.registry.client.CloseIdleConnections() })
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
	s := &Server{site: site{issuer: issuer, origin: u.Scheme + "://" + u.Host}, cfg: cfg, stop: func() {}}
	if s.registry, err = newRegistry(cfg, &s.journal); err != nil {
		return nil, err
	}
	s.audience = newAudience(cfg.Resources)
	s.ledger = newLedger(cfg, &s.journal, &s.audience)
	s.authorizer = authorizer{site: s.site, cfg: cfg, journal: &s.journal, registry: &s.registry, audience: &s.audience, ledger: &s.ledger}
	s.metadataDoc = metadataDoc{site: s.site, scopes: cfg.Scopes, journal: &s.journal, registry: &s.registry}
	s.tokens = tokenEndpoint{journal: &s.journal, registry: &s.registry, ledger: &s.ledger}
	s.mux = s.routes(u.Path)
	return s, nil
}

// routes mounts the metadata and the endpoints of an issuer with path.
func (s *Server) routes(path string) *http.ServeMux {
	cfg := s.cfg
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server"+path, s.metadataDoc.handler(func() bool { return !cfg.NoOAuthMetadata }))
	oidc := func() bool { return cfg.OIDC }
	mux.HandleFunc("/.well-known/openid-configuration"+path, s.metadataDoc.handler(oidc))
	if path != "" {
		mux.HandleFunc(path+"/.well-known/openid-configuration", s.metadataDoc.handler(oidc))
	}
	mux.HandleFunc(path+"/authorize", s.authorizer.serveAuthorize)
	mux.HandleFunc(path+"/token", s.tokens.serveToken)
	mux.HandleFunc(path+"/register", s.registry.serveRegister)
	mux.HandleFunc(path+"/revoke", s.tokens.serveRevoke)
	return mux
}

// ServeHTTP serves the metadata and the endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close stops a server from Start; it is idempotent.
func (s *Server) Close() { s.stop() }

// Scopes are the scopes_supported.
func (s *Server) Scopes() []string { return slices.Clone(s.cfg.Scopes) }

// Mint issues tokens to a known client for resource and scopes without an
// authorization flow, as if the user had just signed in; a test hook for
// resource-server tests and for seeding a client's token store. The
// refresh token is "" when the client may not refresh. Mint is not
// counted in Stats.
func (s *Server) Mint(clientID, resource string, scopes ...string) (access, refresh string, err error) {
	c := s.registry.known(clientID)
	if c == nil {
		return "", "", fmt.Errorf("authserver: unknown client %q", clientID)
	}
	if _, e := s.audience.check([]string{resource}, ""); e != nil {
		return "", "", fmt.Errorf("authserver: %s", e.Description)
	}
	for _, sc := range scopes {
		if !slices.Contains(s.cfg.Scopes, sc) {
			return "", "", fmt.Errorf("authserver: scope %q is not supported", sc)
		}
	}
	resp := s.ledger.mint(c, resource, slices.Clone(scopes))
	access, _ = resp["access_token"].(string)
	refresh, _ = resp["refresh_token"].(string)
	return access, refresh, nil
}

// site is the issuer's URLs, fixed at New.
type site struct {
	issuer string
	origin string
}

// Issuer is the issuer URL, e.g. http://127.0.0.1:41234 or
// http://127.0.0.1:41234/tenant1.
func (s *site) Issuer() string { return s.issuer }

// URL is the issuer's origin, e.g. http://127.0.0.1:41234.
func (s *site) URL() string { return s.origin }

// MetadataURL is the RFC 8414 metadata URL (path-inserted for an issuer
// with a path).
func (s *site) MetadataURL() string {
	return s.origin + "/.well-known/oauth-authorization-server" + strings.TrimPrefix(s.issuer, s.origin)
}

// Endpoint URLs.

// AuthorizationEndpoint is {issuer}/authorize.
func (s *site) AuthorizationEndpoint() string { return s.issuer + "/authorize" }

// TokenEndpoint is {issuer}/token.
func (s *site) TokenEndpoint() string { return s.issuer + "/token" }

// RegistrationEndpoint is {issuer}/register.
func (s *site) RegistrationEndpoint() string { return s.issuer + "/register" }

// RevocationEndpoint is {issuer}/revoke.
func (s *site) RevocationEndpoint() string { return s.issuer + "/revoke" }

// WrongIss is the iss value authorization responses carry under SetWrongIss.
func (s *site) WrongIss() string { return s.origin + "/not-the-issuer" }

// newRandom returns a fresh random value with a prefix naming its kind.
func newRandom(prefix string) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
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
