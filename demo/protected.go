package demo

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

// ProtectedMetadataPrefix is the RFC 9728 well-known prefix; a protected
// server serves its metadata at this prefix followed by its path.
const ProtectedMetadataPrefix = "/.well-known/oauth-protected-resource"

// ProtectedOptions configure [Protect]. The zero value requires any valid
// token for the resource.
type ProtectedOptions struct {
	// Scopes are required on every request; they are the scope of the 401
	// challenge.
	Scopes []string
	// ToolScopes are required, on top of Scopes, for a tools/call of the
	// named tool; a token without them gets 403 with
	// error="insufficient_scope" and scope = Scopes plus the tool's.
	ToolScopes map[string][]string
	// OmitResourceMetadata leaves resource_metadata out of the challenges,
	// so a client must find the metadata at the well-known URLs.
	OmitResourceMetadata bool
	// MetadataAtRoot serves the metadata at the root well-known URL
	// instead of the path-inserted one.
	MetadataAtRoot bool
	// MetadataResource, when set, is the metadata's resource instead of the
	// server's URL (to test the client's check that they match).
	MetadataResource string
}

// Protect puts next, the MCP endpoint at resourceURL's path, behind bearer
// tokens issued by as for resourceURL (RFC 8707 audience), and serves the
// resource's protected resource metadata (RFC 9728). Mount the handler at
// the root of resourceURL's origin; other paths get 404. It allows
// resourceURL at as.
//
// Every request to the endpoint (POST, GET stream and DELETE alike) needs
// a valid token: go-sdk's auth.RequireBearerToken verifies it with
// as.Verify and refuses missing, invalid, expired, revoked and
// other-resource tokens with 401, and tokens lacking Scopes with 403. As
// go-sdk v1.8.0 puts no error code in its challenges, Protect writes them:
//
//	WWW-Authenticate: Bearer error="invalid_token", scope="…", resource_metadata="…"
//	WWW-Authenticate: Bearer error="insufficient_scope", scope="…", resource_metadata="…"
//
// (no error for a request without a token, RFC 6750 §3.1). A tools/call
// of a tool in ToolScopes is checked against the token's scopes before it
// reaches next.
func Protect(next http.Handler, as *authserver.Server, resourceURL string, opts *ProtectedOptions) (http.Handler, error) {
	u, err := url.Parse(resourceURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("demo: bad resource URL %q", resourceURL)
	}
	if opts == nil {
		opts = &ProtectedOptions{}
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	prmPath := ProtectedMetadataPrefix + strings.TrimSuffix(u.Path, "/")
	if opts.MetadataAtRoot {
		prmPath = ProtectedMetadataPrefix
	}
	p := &protector{
		as:       as,
		resource: resourceURL,
		opts:     *opts,
		prmURL:   u.Scheme + "://" + u.Host + prmPath,
	}
	as.AllowResource(resourceURL)
	meta := &oauthex.ProtectedResourceMetadata{
		Resource:               resourceURL,
		AuthorizationServers:   []string{as.Issuer()},
		ScopesSupported:        as.Scopes(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           ServerName,
	}
	if opts.MetadataResource != "" {
		meta.Resource = opts.MetadataResource
	}
	gateOpts := &auth.RequireBearerTokenOptions{ResourceMetadataURL: p.prmURL, Scopes: opts.Scopes}
	gate := auth.RequireBearerToken(p.verify, gateOpts)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := w.(*challengeWriter)
		cw.passed = true
		p.checkTool(next, cw.ResponseWriter, r)
	}))

	mux := http.NewServeMux()
	mux.Handle(prmPath, auth.ProtectedResourceMetadataHandler(meta))
	mux.Handle(path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate.ServeHTTP(&challengeWriter{ResponseWriter: w, p: p, token: hasBearer(r)}, r)
	}))
	return mux, nil
}

// ProtectedHandler is the 2026 demo server ([Handler]) behind [Protect].
func ProtectedHandler(as *authserver.Server, resourceURL string, opts *ProtectedOptions) (http.Handler, error) {
	return Protect(Handler(), as, resourceURL, opts)
}

// StartProtected serves the 2026 demo server behind [Protect] on a free
// loopback port, like [Start]: url is http://127.0.0.1:PORT/mcp, which is
// also the resource.
func StartProtected(ctx context.Context, as *authserver.Server, opts *ProtectedOptions) (url string, stop func(), err error) {
	h, closeListens, closeTasks := newHandler()
	url, stop, err = serve(ctx, protected(h, as, opts), closeListens, closeTasks)
	if err != nil {
		closeListens()
		closeTasks()
	}
	return url, stop, err
}

// StartProtectedLegacy serves a new 2025 legacy demo server ([Legacy])
// behind [Protect] on a free loopback port, like [StartLegacy].
func StartProtectedLegacy(ctx context.Context, as *authserver.Server, opts *ProtectedOptions) (url string, l *Legacy, stop func(), err error) {
	l = NewLegacy()
	url, stop, err = serve(ctx, protected(l, as, opts), func() { l.Expire() }, func() {})
	return url, l, stop, err
}

// DemoProtectedOptions are what [StartWithOAuth] uses when given none:
// every request needs mcp:read, and the touch tool also needs mcp:write,
// so a sign-in and a step-up can both be watched.
func DemoProtectedOptions() *ProtectedOptions {
	return &ProtectedOptions{
		Scopes:     []string{"mcp:read"},
		ToolScopes: map[string][]string{"touch": {"mcp:write"}},
	}
}

// StartWithOAuth starts an authorization server (cfg; its DefaultScopes
// default to mcp:read) and the 2026 demo server behind it, for
// `--demo --demo-oauth`. nil opts means [DemoProtectedOptions]. stop ends
// both.
func StartWithOAuth(ctx context.Context, cfg authserver.Config, opts *ProtectedOptions) (url string, as *authserver.Server, stop func(), err error) {
	if cfg.DefaultScopes == nil {
		cfg.DefaultScopes = []string{"mcp:read"}
	}
	if opts == nil {
		opts = DemoProtectedOptions()
	}
	as, err = authserver.Start(ctx, cfg)
	if err != nil {
		return "", nil, nil, err
	}
	url, stopMCP, err := StartProtected(ctx, as, opts)
	if err != nil {
		as.Close()
		return "", nil, nil, err
	}
	return url, as, func() {
		stopMCP()
		as.Close()
	}, nil
}

// protector holds what Protect's handlers share.
type protector struct {
	as       *authserver.Server
	resource string
	opts     ProtectedOptions
	prmURL   string
}

// verify is the auth.TokenVerifier: a token must be valid at the AS and
// issued for this resource.
func (p *protector) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	ti, ok := p.as.Verify(token)
	if !ok {
		return nil, fmt.Errorf("%w: unknown, expired or revoked token", auth.ErrInvalidToken)
	}
	if ti.Resource != p.resource {
		return nil, fmt.Errorf("%w: token is for another resource", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{
		Scopes:     ti.Scopes,
		Expiration: ti.Expiration,
		UserID:     authserver.Subject,
		Extra:      map[string]any{"client_id": ti.ClientID},
	}, nil
}

// challenge is the WWW-Authenticate value for an error code ("" for a
// request without a token) and the scopes it needs.
func (p *protector) challenge(errCode string, scopes []string) string {
	var params []string
	if errCode != "" {
		params = append(params, fmt.Sprintf("error=%q", errCode))
	}
	if len(scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(scopes, " ")))
	}
	if !p.opts.OmitResourceMetadata {
		params = append(params, fmt.Sprintf("resource_metadata=%q", p.prmURL))
	}
	if len(params) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(params, ", ")
}

// checkTool refuses a tools/call whose tool needs scopes the token lacks.
func (p *protector) checkTool(next http.Handler, w http.ResponseWriter, r *http.Request) {
	if len(p.opts.ToolScopes) == 0 || r.Method != http.MethodPost {
		next.ServeHTTP(w, r)
		return
	}
	r, body, ok := peekBody(r)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	var held []string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		held = ti.Scopes
	}
	msgs := []gjson.Result{gjson.ParseBytes(body)}
	if msgs[0].IsArray() {
		msgs = msgs[0].Array()
	}
	for _, m := range msgs {
		if m.Get("method").Str != "tools/call" {
			continue
		}
		need := p.opts.ToolScopes[m.Get("params.name").Str]
		for _, sc := range need {
			if !slices.Contains(held, sc) {
				want := slices.Clone(p.opts.Scopes)
				for _, x := range need {
					if !slices.Contains(want, x) {
						want = append(want, x)
					}
				}
				w.Header().Set("WWW-Authenticate", p.challenge("insufficient_scope", want))
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
	}
	next.ServeHTTP(w, r)
}

// hasBearer reports whether r carries an Authorization: Bearer header.
func hasBearer(r *http.Request) bool {
	f := strings.Fields(r.Header.Get("Authorization"))
	return len(f) >= 1 && strings.EqualFold(f[0], "bearer")
}

// challengeWriter replaces the challenge of auth.RequireBearerToken's own
// 401 and 403 answers with one that carries the RFC 6750 error code. It
// steps aside (passed) once the request is let through.
type challengeWriter struct {
	http.ResponseWriter
	p      *protector
	token  bool
	passed bool
}

func (cw *challengeWriter) WriteHeader(code int) {
	if !cw.passed {
		switch code {
		case http.StatusUnauthorized:
			e := ""
			if cw.token {
				e = "invalid_token"
			}
			cw.Header().Set("WWW-Authenticate", cw.p.challenge(e, cw.p.opts.Scopes))
		case http.StatusForbidden:
			cw.Header().Set("WWW-Authenticate", cw.p.challenge("insufficient_scope", cw.p.opts.Scopes))
		}
	}
	cw.ResponseWriter.WriteHeader(code)
}

// protected is a handler for serve: Protect(h) at the root, with the
// server's URL as the resource.
func protected(h http.Handler, as *authserver.Server, opts *ProtectedOptions) func(url string) (http.Handler, error) {
	return func(url string) (http.Handler, error) { return Protect(h, as, url, opts) }
}
