package check

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Auth is the upstream client's routing.Auth during a check. It uses a
// stored sign-in, and may refresh it, but never starts one (a check opens
// no browser); and it keeps the challenge of the server's last refusal,
// which the report's sign-in diagnosis reads.
type Auth struct {
	oauth *oauth.Client // nil: OAuth is off or unavailable

	mu        sync.Mutex
	challenge http.Header
}

// NewAuth is the check's Auth over the server's OAuth client (nil when
// OAuth is off or unavailable).
func NewAuth(o *oauth.Client) *Auth { return &Auth{oauth: o} }

// Authorization is the stored sign-in's, if any.
func (a *Auth) Authorization(ctx context.Context) (string, error) {
	if a.oauth == nil {
		return "", nil
	}
	return a.oauth.Authorization(ctx)
}

// Retry keeps the refusal's challenge, and lets the OAuth client refresh a
// token that was sent, unattended.
func (a *Auth) Retry(ctx context.Context, status int, h http.Header, sent string) (bool, error) {
	a.mu.Lock()
	a.challenge = h.Clone()
	a.mu.Unlock()
	if a.oauth == nil || sent == "" {
		return false, nil
	}
	return a.oauth.Retry(routing.Unattended(ctx), status, h, sent)
}

// signedIn reports whether a token for the server is in the store.
func (a *Auth) signedIn() bool {
	if a == nil || a.oauth == nil {
		return false
	}
	st, err := a.oauth.Status()
	return err == nil && st.SignedIn
}

// AuthReport is the sign-in a server wants.
type AuthReport struct {
	// Required: the server answered 401 (or 403) without a usable token.
	Required bool `json:"required"`
	// SignedIn: a token for the server is in the store.
	SignedIn            bool     `json:"signedIn"`
	Challenge           string   `json:"challenge,omitempty"`
	ResourceMetadata    string   `json:"resourceMetadata,omitempty"`
	Resource            string   `json:"resource,omitempty"`
	AuthorizationServer string   `json:"authorizationServer,omitempty"`
	Scopes              []string `json:"scopes,omitempty"`
	DynamicRegistration bool     `json:"dynamicRegistration,omitempty"`
	StaticToken         bool     `json:"staticToken,omitempty"`
	DiscoveryError      string   `json:"discoveryError,omitempty"`
}

// signIn fills in what sign-in the server wants, after it refused the
// session with status (401 or 403): the challenge of the refusal, what a
// sign-in would find (oauth's Discover), the reason and the next step.
func (c *checker) signIn(ctx context.Context, status int) {
	c.cfg.Auth.mu.Lock()
	r, h := c.rep, c.cfg.Auth.challenge // the last refusal's headers
	c.cfg.Auth.mu.Unlock()
	a := &AuthReport{Required: true, SignedIn: c.cfg.Auth.signedIn(), Challenge: strings.Join(h.Values("WWW-Authenticate"), ", ")}
	r.Auth = a
	ch := oauth.ParseChallenge(h)
	a.ResourceMetadata, a.Scopes = ch["resource_metadata"], strings.Fields(ch["scope"])
	if c.cfg.StaticToken {
		a.StaticToken = true
		r.Reason = fmt.Sprintf("the server refused the Authorization header given with %v (HTTP %d): check the token", rewrite.HintHeader, status)
		r.Next = fmt.Sprintf("check the token passed with %v or %v", rewrite.HintHeader, rewrite.HintHeaderFile)
		return
	}
	if c.cfg.Auth.oauth == nil {
		r.Reason = fmt.Sprintf("the server wants a sign-in (HTTP %d), and the OAuth client is unavailable (the warning above says why)", status)
		return
	}
	d, err := c.cfg.Auth.oauth.Discover(ctx, h)
	switch {
	case err == nil:
		a.Resource, a.AuthorizationServer, a.DynamicRegistration = d.Resource, d.Issuer, d.RegistrationEndpoint != ""
		if len(a.Scopes) == 0 {
			a.Scopes = d.Scopes
		}
	case oauth.IsNotOAuth(err):
		a.StaticToken, a.DiscoveryError = true, err.Error()
		r.Reason = fmt.Sprintf("the server wants a token (HTTP %d) but publishes no OAuth metadata", status)
		r.Next = fmt.Sprintf("pass its token with %v 'Authorization: Bearer ${TOKEN}'", rewrite.HintHeader)
		return
	default:
		a.DiscoveryError = err.Error()
	}
	login := "mcp-tasks-proxy auth login " + r.URL
	switch {
	case status == http.StatusForbidden:
		r.Reason, r.Next = "the server refused the stored sign-in (HTTP 403): "+capabilities.ForbiddenHint(r.URL, h), login
	case a.SignedIn:
		r.Reason, r.Next = "the server refused the stored sign-in (HTTP 401), and it could not be refreshed", login
	case a.AuthorizationServer != "":
		r.Reason, r.Next = "the server wants an OAuth sign-in (HTTP 401)", login
	default:
		r.Reason = fmt.Sprintf("the server wants a sign-in (HTTP %d), but its authorization server could not be found: %s", status, a.DiscoveryError)
	}
}
