package authserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

func nowUnix() int64 { return time.Now().Unix() }

// authorize serves the authorization endpoint (RFC 6749 §4.1.1 with the
// OAuth 2.1 requirements), consenting automatically.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
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
	record := func(errCode string) {
		rec.Error = errCode
		s.mu.Lock()
		s.authReqs = append(s.authReqs, rec)
		s.mu.Unlock()
	}

	// Until the client and its redirect URI are trusted, errors are shown
	// to the user, never redirected (RFC 6749 §4.1.2.1).
	c, e := s.lookupClient(r.Context(), rec.ClientID)
	if e != nil {
		record(e.Code)
		page(w, http.StatusBadRequest, "Unknown client", e.Description)
		return
	}
	if len(q["client_id"]) > 1 || len(q["redirect_uri"]) != 1 || rec.RedirectURI == "" {
		record("invalid_request")
		page(w, http.StatusBadRequest, "Bad request", "exactly one client_id and one redirect_uri are required")
		return
	}
	if !redirectAllowed(c, rec.RedirectURI, s.cfg.StrictRedirectPort) {
		record("invalid_request")
		page(w, http.StatusBadRequest, "Bad redirect URI", fmt.Sprintf("redirect_uri %q is not registered for this client", rec.RedirectURI))
		return
	}

	fail := func(code, desc string) {
		record(code)
		s.redirect(w, r, rec.RedirectURI, url.Values{"error": {code}, "error_description": {desc}}, q)
	}
	for _, p := range []string{"response_type", "scope", "state", "code_challenge", "code_challenge_method"} {
		if len(q[p]) > 1 {
			fail("invalid_request", p+" is repeated")
			return
		}
	}
	if rec.ResponseType != "code" {
		fail("unsupported_response_type", "response_type must be code")
		return
	}
	if !slices.Contains(c.GrantTypes, GrantAuthorizationCode) {
		fail("unauthorized_client", "the client is not registered for the authorization_code grant")
		return
	}
	challenge := q.Get("code_challenge")
	switch {
	case challenge == "":
		fail("invalid_request", "PKCE is required: code_challenge is missing")
		return
	case rec.CodeChallengeMethod != "S256":
		fail("invalid_request", "PKCE code_challenge_method must be S256")
		return
	case !validChallenge(challenge):
		fail("invalid_request", "code_challenge is not a base64url SHA-256 digest")
		return
	}
	resource, e := s.checkResource(rec.Resource, "")
	if e != nil {
		fail(e.Code, e.Description)
		return
	}
	requested := strings.Fields(rec.Scope)
	if len(requested) == 0 {
		requested = slices.Clone(s.cfg.DefaultScopes)
	}
	for _, sc := range requested {
		if !slices.Contains(s.cfg.Scopes, sc) {
			fail("invalid_scope", fmt.Sprintf("scope %q is not supported", sc))
			return
		}
	}

	s.mu.Lock()
	consent, policy := s.consent, s.policy
	s.mu.Unlock()
	granted := requested
	if policy != nil {
		offered := policy(slices.Clone(requested))
		granted = nil
		for _, sc := range requested {
			if slices.Contains(offered, sc) {
				granted = append(granted, sc)
			}
		}
	}
	switch consent {
	case ConsentNever:
		record("")
		s.mu.Lock()
		s.stats.Authorizations++
		s.mu.Unlock()
		page(w, http.StatusOK, "Sign in", "Waiting for you to sign in. (This demo user never does.)")
		return
	case ConsentDeny:
		s.mu.Lock()
		s.stats.Authorizations++
		s.mu.Unlock()
		fail("access_denied", "the user denied the request")
		return
	}

	s.mu.Lock()
	code := s.newSecretLocked("code-")
	s.codes[code] = &authCode{
		clientID:    c.ID,
		redirectURI: rec.RedirectURI,
		challenge:   challenge,
		resource:    resource,
		scopes:      granted,
		expires:     time.Now().Add(s.cfg.CodeTTL),
	}
	s.stats.Authorizations++
	s.stats.CodesIssued++
	rec.Error = ""
	s.authReqs = append(s.authReqs, rec)
	s.mu.Unlock()
	s.redirect(w, r, rec.RedirectURI, url.Values{"code": {code}}, q)
}

// redirect sends the user agent to redirectURI with params, state and iss
// added to its query.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, redirectURI string, params, req url.Values) {
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
	s.mu.Lock()
	wrong, omit := s.wrongIss, s.omitIss
	s.mu.Unlock()
	switch {
	case omit:
	case wrong:
		q.Set("iss", s.WrongIss())
	default:
		q.Set("iss", s.issuer)
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

// validVerifier checks RFC 7636 §4.1: 43 to 128 unreserved characters.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, ch := range v {
		if !(ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || strings.ContainsRune("-._~", ch)) {
			return false
		}
	}
	return true
}

// checkResource validates the resource parameters of a request: exactly
// one, an absolute URI without fragment, allowed, and equal to want when
// want is set.
func (s *Server) checkResource(rs []string, want string) (string, *oauthError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkResourceLocked(rs, want)
}

func (s *Server) checkResourceLocked(rs []string, want string) (string, *oauthError) {
	switch len(rs) {
	case 0:
		return "", errf(http.StatusBadRequest, "invalid_request", "resource (RFC 8707) is required")
	case 1:
	default:
		return "", errf(http.StatusBadRequest, "invalid_target", "only one resource is supported")
	}
	res := rs[0]
	u, err := url.Parse(res)
	if err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(res, "#") {
		return "", errf(http.StatusBadRequest, "invalid_target", "resource %q is not an absolute URI without fragment", res)
	}
	if !s.resources[res] {
		return "", errf(http.StatusBadRequest, "invalid_target", "resource %q is not served here", res)
	}
	if want != "" && res != want {
		return "", errf(http.StatusBadRequest, "invalid_target", "resource %q differs from the granted resource", res)
	}
	return res, nil
}

// token serves the token endpoint.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rec := TokenRequest{}
	var e *oauthError
	var resp map[string]any
	defer func() {
		s.mu.Lock()
		if e != nil {
			rec.Error = e.Code
			s.stats.TokenErrors++
		}
		s.tokenReqs = append(s.tokenReqs, rec)
		s.mu.Unlock()
		if e != nil {
			writeError(w, e)
			return
		}
		writeJSON(w, http.StatusOK, resp)
	}()
	if err := r.ParseForm(); err != nil {
		e = errf(http.StatusBadRequest, "invalid_request", "body: %v", err)
		return
	}
	f := r.PostForm
	rec.GrantType, rec.Scope, rec.Resource = f.Get("grant_type"), f.Get("scope"), f["resource"]
	rec.ClientID = f.Get("client_id")
	for k, v := range f {
		if len(v) > 1 && k != "resource" {
			e = errf(http.StatusBadRequest, "invalid_request", "%s is repeated", k)
			return
		}
	}
	c, method, e := s.authenticateClient(r)
	rec.AuthMethod = method
	if e != nil {
		return
	}
	rec.ClientID = c.ID
	if v := f.Get("code_verifier"); v != "" {
		s.mu.Lock()
		s.secrets = append(s.secrets, v)
		s.mu.Unlock()
	}
	switch rec.GrantType {
	case GrantAuthorizationCode:
		resp, e = s.redeemCode(c, f)
	case GrantRefreshToken:
		resp, e = s.refreshGrant(c, f)
	case "":
		e = errf(http.StatusBadRequest, "invalid_request", "grant_type is required")
	default:
		e = errf(http.StatusBadRequest, "unsupported_grant_type", "grant type %q is not supported", rec.GrantType)
	}
}

func (s *Server) redeemCode(c *Client, f url.Values) (map[string]any, *oauthError) {
	if !slices.Contains(c.GrantTypes, GrantAuthorizationCode) {
		return nil, errf(http.StatusBadRequest, "unauthorized_client", "the client may not use the authorization_code grant")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	code := s.codes[f.Get("code")]
	switch {
	case code == nil:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "unknown authorization code")
	case code.used:
		s.stats.CodeReuse++
		if code.grant != nil {
			s.revokeGrantLocked(code.grant)
		}
		return nil, errf(http.StatusBadRequest, "invalid_grant", "authorization code already used; its tokens are revoked")
	}
	code.used = true // spent by its first presentation, whatever follows
	switch {
	case time.Now().After(code.expires):
		return nil, errf(http.StatusBadRequest, "invalid_grant", "authorization code expired")
	case code.clientID != c.ID:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "authorization code was issued to another client")
	case f.Get("redirect_uri") != code.redirectURI:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request")
	}
	v := f.Get("code_verifier")
	if v == "" || !validVerifier(v) {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "a valid PKCE code_verifier is required")
	}
	sum := sha256.Sum256([]byte(v))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(code.challenge)) != 1 {
		return nil, errf(http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
	}
	if _, e := s.checkResourceLocked(f["resource"], code.resource); e != nil {
		return nil, e
	}
	s.nextGrant++
	g := &grant{id: s.nextGrant, clientID: c.ID, scopes: code.scopes, resource: code.resource}
	code.grant = g
	s.stats.TokenGrants++
	return s.issueLocked(c, g, g.scopes), nil
}

func (s *Server) refreshGrant(c *Client, f url.Values) (map[string]any, *oauthError) {
	if !slices.Contains(c.GrantTypes, GrantRefreshToken) {
		return nil, errf(http.StatusBadRequest, "unauthorized_client", "the client may not use the refresh_token grant")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rt := s.refresh[f.Get("refresh_token")]
	switch {
	case rt == nil:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "unknown refresh token")
	case rt.grant.clientID != c.ID:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "refresh token was issued to another client")
	case rt.grant.revoked:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the grant was revoked")
	case !rt.current:
		s.stats.RefreshReuse++
		s.revokeGrantLocked(rt.grant)
		return nil, errf(http.StatusBadRequest, "invalid_grant", "refresh token reused after rotation; the grant is revoked")
	case !rt.expires.IsZero() && time.Now().After(rt.expires):
		return nil, errf(http.StatusBadRequest, "invalid_grant", "refresh token expired")
	}
	if _, e := s.checkResourceLocked(f["resource"], rt.grant.resource); e != nil {
		return nil, e
	}
	scopes := rt.grant.scopes
	if sc := f.Get("scope"); sc != "" {
		scopes = strings.Fields(sc)
		for _, x := range scopes {
			if !slices.Contains(rt.grant.scopes, x) {
				return nil, errf(http.StatusBadRequest, "invalid_scope", "scope %q exceeds the grant", x)
			}
		}
	}
	rt.current = false
	s.stats.Refreshes++
	return s.issueLocked(c, rt.grant, scopes), nil
}

// issueLocked issues an access token (and a refresh token when the client
// may refresh) under g.
func (s *Server) issueLocked(c *Client, g *grant, scopes []string) map[string]any {
	at := s.newSecretLocked("at-")
	ttl := s.accessTTL
	s.access[at] = &accessToken{grant: g, scopes: slices.Clone(scopes), expires: time.Now().Add(ttl)}
	secs := int64((ttl + time.Second - 1) / time.Second)
	resp := map[string]any{
		"access_token": at,
		"token_type":   "Bearer",
		"expires_in":   max(secs, 1),
		"scope":        strings.Join(scopes, " "),
	}
	if slices.Contains(c.GrantTypes, GrantRefreshToken) {
		rt := s.newSecretLocked("rt-")
		t := &refreshToken{grant: g, current: true}
		if s.cfg.RefreshTokenTTL > 0 {
			t.expires = time.Now().Add(s.cfg.RefreshTokenTTL)
		}
		s.refresh[rt] = t
		resp["refresh_token"] = rt
	}
	return resp
}

// revoke serves RFC 7009 token revocation.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, errf(http.StatusBadRequest, "invalid_request", "body: %v", err))
		return
	}
	c, _, e := s.authenticateClient(r)
	if e != nil {
		writeError(w, e)
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		writeError(w, errf(http.StatusBadRequest, "invalid_request", "token is required"))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Tokens of other clients and unknown tokens are ignored (RFC 7009 §2.2).
	if t := s.access[tok]; t != nil && t.grant.clientID == c.ID {
		t.revoked = true
	}
	if t := s.refresh[tok]; t != nil && t.grant.clientID == c.ID {
		s.revokeGrantLocked(t.grant)
	}
	s.stats.Revocations++
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
