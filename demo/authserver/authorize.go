package authserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// authorizer serves {issuer}/authorize (RFC 6749 §4.1.1 with the OAuth 2.1
// requirements) and plays the user who consents, or does not: its state
// is how that user answers, and how the answer names the issuer.
type authorizer struct {
	site     site
	cfg      Config
	journal  *journal
	registry *registry
	audience *audience
	ledger   *ledger

	mu       sync.Mutex
	policy   GrantPolicy
	consent  Consent
	wrongIss bool
	omitIss  bool
}

// SetGrantScopes sets the grant policy; nil grants every scope requested.
func (a *authorizer) SetGrantScopes(p GrantPolicy) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.policy = p
}

// SetConsent sets how the simulated user answers authorization requests.
func (a *authorizer) SetConsent(c Consent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.consent = c
}

// SetWrongIss makes authorization responses carry an iss that is not the
// issuer (RFC 9207 mix-up), or the right one again.
func (a *authorizer) SetWrongIss(wrong bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.wrongIss = wrong
}

// SetOmitIss makes authorization responses carry no iss even though the
// metadata promises it, or carry it again.
func (a *authorizer) SetOmitIss(omit bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.omitIss = omit
}

// serveAuthorize serves the authorization endpoint, consenting as
// SetConsent says.
func (a *authorizer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		page(w, http.StatusBadRequest, "Bad request", err.Error())
		return
	}
	q := r.Form
	rec := AuthorizeRequest{
		ClientID:            q.Get("client_id"),
		RedirectURI:         q.Get("redirect_uri"),
		ResponseType:        q.Get("response_type"),
		Scope:               q.Get("scope"),
		State:               q.Get("state"),
		Resource:            q["resource"],
		CodeChallengeMethod: q.Get("code_challenge_method"),
		HasCodeChallenge:    q.Has("code_challenge"),
	}
	// Until the client and its redirect URI are trusted, errors are shown
	// to the user, never redirected (RFC 6749 §4.1.2.1).
	c, title, e := a.trust(r.Context(), q, rec)
	if e != nil {
		a.journal.logAuthorize(rec, e.Code)
		page(w, http.StatusBadRequest, title, e.Description)
		return
	}
	code, e := a.validate(c, q, rec)
	if e != nil {
		a.fail(w, r, q, rec, e.Code, e.Description)
		return
	}
	a.answer(w, r, q, rec, code)
}

// trust finds the client and checks the redirect URI; its error is shown
// on a page with title.
func (a *authorizer) trust(ctx context.Context, q url.Values, rec AuthorizeRequest) (c *Client, title string, e *oauthError) {
	c, e = a.registry.lookup(ctx, rec.ClientID)
	if e != nil {
		return nil, "Unknown client", e
	}
	if len(q["client_id"]) > 1 || len(q["redirect_uri"]) != 1 || rec.RedirectURI == "" {
		return nil, "Bad request", errf(http.StatusBadRequest, "invalid_request", "exactly one client_id and one redirect_uri are required")
	}
	if !redirectAllowed(c, rec.RedirectURI, a.cfg.StrictRedirectPort) {
		return nil, "Bad redirect URI", errf(http.StatusBadRequest, "invalid_request", "redirect_uri %q is not registered for this client", rec.RedirectURI)
	}
	return c, "", nil
}

// validate checks a request of a trusted client and returns the code it
// asks for, with the scopes requested (after defaults); its error goes
// back to the redirect URI.
func (a *authorizer) validate(c *Client, q url.Values, rec AuthorizeRequest) (*authCode, *oauthError) {
	bad := func(code, format string, args ...any) (*authCode, *oauthError) {
		return nil, errf(http.StatusBadRequest, code, format, args...)
	}
	for _, p := range []string{"response_type", "scope", "state", "code_challenge", "code_challenge_method"} {
		if len(q[p]) > 1 {
			return bad("invalid_request", "%s is repeated", p)
		}
	}
	if rec.ResponseType != "code" {
		return bad("unsupported_response_type", "response_type must be code")
	}
	if !slices.Contains(c.GrantTypes, GrantAuthorizationCode) {
		return bad("unauthorized_client", "the client is not registered for the authorization_code grant")
	}
	challenge := q.Get("code_challenge")
	switch {
	case challenge == "":
		return bad("invalid_request", "PKCE is required: code_challenge is missing")
	case rec.CodeChallengeMethod != "S256":
		return bad("invalid_request", "PKCE code_challenge_method must be S256")
	case !validChallenge(challenge):
		return bad("invalid_request", "code_challenge is not a base64url SHA-256 digest")
	}
	resource, e := a.audience.check(rec.Resource, "")
	if e != nil {
		return nil, e
	}
	requested := strings.Fields(rec.Scope)
	if len(requested) == 0 {
		requested = slices.Clone(a.cfg.DefaultScopes)
	}
	for _, sc := range requested {
		if !slices.Contains(a.cfg.Scopes, sc) {
			return bad("invalid_scope", "scope %q is not supported", sc)
		}
	}
	return &authCode{clientID: c.ID, redirectURI: rec.RedirectURI, challenge: challenge, resource: resource, scopes: requested}, nil
}

// answer is the simulated user's answer to a valid request: a code for
// the scopes the grant policy grants, a denial, or a page that waits for
// ever.
func (a *authorizer) answer(w http.ResponseWriter, r *http.Request, q url.Values, rec AuthorizeRequest, code *authCode) {
	a.mu.Lock()
	consent, policy := a.consent, a.policy
	a.mu.Unlock()
	if policy != nil {
		offered := policy(slices.Clone(code.scopes))
		var granted []string
		for _, sc := range code.scopes {
			if slices.Contains(offered, sc) {
				granted = append(granted, sc)
			}
		}
		code.scopes = granted
	}
	switch consent {
	case ConsentNever:
		a.journal.logAuthorize(rec, "")
		a.journal.count(func(st *Stats) { st.Authorizations++ })
		page(w, http.StatusOK, "Sign in", "Waiting for you to sign in. (This demo user never does.)")
		return
	case ConsentDeny:
		a.journal.count(func(st *Stats) { st.Authorizations++ })
		a.fail(w, r, q, rec, "access_denied", "the user denied the request")
		return
	}
	v := a.ledger.addCode(code)
	a.journal.count(func(st *Stats) { st.Authorizations++; st.CodesIssued++ })
	a.journal.logAuthorize(rec, "")
	a.redirect(w, r, rec.RedirectURI, url.Values{"code": {v}}, q)
}

// fail records the request's error and sends it back to the redirect URI.
func (a *authorizer) fail(w http.ResponseWriter, r *http.Request, q url.Values, rec AuthorizeRequest, code, desc string) {
	a.journal.logAuthorize(rec, code)
	a.redirect(w, r, rec.RedirectURI, url.Values{"error": {code}, "error_description": {desc}}, q)
}

// redirect sends the user agent to redirectURI with params, state and iss
// added to its query.
func (a *authorizer) redirect(w http.ResponseWriter, r *http.Request, redirectURI string, params, req url.Values) {
	u, err := url.Parse(redirectURI)
	if err != nil {
		page(w, http.StatusBadRequest, "Bad redirect URI", err.Error())
		return
	}
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	if req.Has("state") {
		q.Set("state", req.Get("state"))
	}
	a.mu.Lock()
	wrong, omit := a.wrongIss, a.omitIss
	a.mu.Unlock()
	switch {
	case omit:
	case wrong:
		q.Set("iss", a.site.WrongIss())
	default:
		q.Set("iss", a.site.issuer)
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// page answers with a small HTML page.
func page(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1><p>%s</p>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}

// validChallenge reports whether c looks like BASE64URL(SHA256(verifier)).
func validChallenge(c string) bool {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size
}
