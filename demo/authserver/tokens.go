package authserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// ledger is what the server has issued: authorization codes, grants, and
// the access and refresh tokens under them, with the rules for redeeming,
// rotating, expiring and revoking them. It takes the journal's and the
// audience's locks under its own, never the other way round.
type ledger struct {
	journal    *journal
	audience   *audience
	codeTTL    time.Duration
	refreshTTL time.Duration // zero: refresh tokens do not expire

	mu        sync.Mutex
	codes     map[string]*authCode
	access    map[string]*accessToken
	refresh   map[string]*refreshToken
	accessTTL time.Duration
	nextGrant int
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

func newLedger(cfg Config, j *journal, aud *audience) ledger {
	return ledger{
		journal:    j,
		audience:   aud,
		codeTTL:    cfg.CodeTTL,
		refreshTTL: cfg.RefreshTokenTTL,
		codes:      map[string]*authCode{},
		access:     map[string]*accessToken{},
		refresh:    map[string]*refreshToken{},
		accessTTL:  cfg.AccessTokenTTL,
	}
}

// SetAccessTokenTTL sets the lifetime of access tokens issued from now on.
func (l *ledger) SetAccessTokenTTL(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accessTTL = d
}

// ExpireAll makes every access token issued so far expired; refresh tokens
// stay valid. It returns how many valid tokens it expired.
func (l *ledger) ExpireAll() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	n := 0
	for _, t := range l.access {
		if !t.revoked && t.expires.After(now) {
			t.expires = now.Add(-time.Second)
			n++
		}
	}
	return n
}

// Expire makes one access token expired; false if it is unknown.
func (l *ledger) Expire(token string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.access[token]
	if t == nil {
		return false
	}
	t.expires = time.Now().Add(-time.Second)
	return true
}

// Revoke revokes one token as the revocation endpoint would: an access
// token alone, or a refresh token with its whole grant. False if unknown.
func (l *ledger) Revoke(token string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.access[token]; t != nil {
		t.revoked = true
		return true
	}
	if t := l.refresh[token]; t != nil {
		l.revokeGrantLocked(t.grant)
		return true
	}
	return false
}

// RevokeAll revokes every grant: all access and refresh tokens. It returns
// how many grants were live.
func (l *ledger) RevokeAll() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[*grant]bool{}
	n := 0
	for _, t := range l.access {
		seen[t.grant] = true
	}
	for _, t := range l.refresh {
		seen[t.grant] = true
	}
	for g := range seen {
		if !g.revoked {
			n++
		}
		l.revokeGrantLocked(g)
	}
	return n
}

// AccessTokens returns the access tokens that are valid now.
func (l *ledger) AccessTokens() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	var out []string
	for tok, t := range l.access {
		if !t.revoked && !t.grant.revoked && t.expires.After(now) {
			out = append(out, tok)
		}
	}
	return out
}

// Verify reports whether token is a valid access token, and what it
// grants. Resource servers must also check that Resource is themselves.
func (l *ledger) Verify(token string) (TokenInfo, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.access[token]
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

// addCode issues an authorization code for code (whose expiry it sets).
func (l *ledger) addCode(code *authCode) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.journal.newSecret("code-")
	code.expires = time.Now().Add(l.codeTTL)
	l.codes[v] = code
	return v
}

// mint issues tokens under a new grant, with no code.
func (l *ledger) mint(c *Client, resource string, scopes []string) map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.newGrantLocked(c, scopes, resource)
	return l.issueLocked(c, g, g.scopes)
}

func (l *ledger) newGrantLocked(c *Client, scopes []string, resource string) *grant {
	l.nextGrant++
	return &grant{id: l.nextGrant, clientID: c.ID, scopes: scopes, resource: resource}
}

// redeemCode serves the authorization_code grant.
func (l *ledger) redeemCode(c *Client, f url.Values) (map[string]any, *oauthError) {
	if !slices.Contains(c.GrantTypes, GrantAuthorizationCode) {
		return nil, errf(http.StatusBadRequest, "unauthorized_client", "the client may not use the authorization_code grant")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	code := l.codes[f.Get("code")]
	switch {
	case code == nil:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "unknown authorization code")
	case code.used:
		l.journal.count(func(st *Stats) { st.CodeReuse++ })
		if code.grant != nil {
			l.revokeGrantLocked(code.grant)
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
	if _, e := l.audience.check(f["resource"], code.resource); e != nil {
		return nil, e
	}
	g := l.newGrantLocked(c, code.scopes, code.resource)
	code.grant = g
	l.journal.count(func(st *Stats) { st.TokenGrants++ })
	return l.issueLocked(c, g, g.scopes), nil
}

// refreshGrant serves the refresh_token grant, rotating the token.
func (l *ledger) refreshGrant(c *Client, f url.Values) (map[string]any, *oauthError) {
	if !slices.Contains(c.GrantTypes, GrantRefreshToken) {
		return nil, errf(http.StatusBadRequest, "unauthorized_client", "the client may not use the refresh_token grant")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rt := l.refresh[f.Get("refresh_token")]
	switch {
	case rt == nil:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "unknown refresh token")
	case rt.grant.clientID != c.ID:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "refresh token was issued to another client")
	case rt.grant.revoked:
		return nil, errf(http.StatusBadRequest, "invalid_grant", "the grant was revoked")
	case !rt.current:
		l.journal.count(func(st *Stats) { st.RefreshReuse++ })
		l.revokeGrantLocked(rt.grant)
		return nil, errf(http.StatusBadRequest, "invalid_grant", "refresh token reused after rotation; the grant is revoked")
	case !rt.expires.IsZero() && time.Now().After(rt.expires):
		return nil, errf(http.StatusBadRequest, "invalid_grant", "refresh token expired")
	}
	if _, e := l.audience.check(f["resource"], rt.grant.resource); e != nil {
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
	l.journal.count(func(st *Stats) { st.Refreshes++ })
	return l.issueLocked(c, rt.grant, scopes), nil
}

// issueLocked issues an access token (and a refresh token when the client
// may refresh) under g.
func (l *ledger) issueLocked(c *Client, g *grant, scopes []string) map[string]any {
	at := l.journal.newSecret("at-")
	ttl := l.accessTTL
	l.access[at] = &accessToken{grant: g, scopes: slices.Clone(scopes), expires: time.Now().Add(ttl)}
	secs := int64((ttl + time.Second - 1) / time.Second)
	resp := map[string]any{
		"access_token": at,
		"token_type":   "Bearer",
		"expires_in":   max(secs, 1),
		"scope":        strings.Join(scopes, " "),
	}
	if slices.Contains(c.GrantTypes, GrantRefreshToken) {
		rt := l.journal.newSecret("rt-")
		t := &refreshToken{grant: g, current: true}
		if l.refreshTTL > 0 {
			t.expires = time.Now().Add(l.refreshTTL)
		}
		l.refresh[rt] = t
		resp["refresh_token"] = rt
	}
	return resp
}

// revokeFor revokes tok for the client clientID, as RFC 7009 says: a
// token of another client, or an unknown one, is ignored.
func (l *ledger) revokeFor(clientID, tok string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.access[tok]; t != nil && t.grant.clientID == clientID {
		t.revoked = true
	}
	if t := l.refresh[tok]; t != nil && t.grant.clientID == clientID {
		l.revokeGrantLocked(t.grant)
	}
}

// revokeGrantLocked revokes a grant and every token issued under it.
func (l *ledger) revokeGrantLocked(g *grant) {
	g.revoked = true
	for _, t := range l.access {
		if t.grant == g {
			t.revoked = true
		}
	}
	for _, t := range l.refresh {
		if t.grant == g {
			t.current = false
		}
	}
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
