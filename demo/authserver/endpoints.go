package authserver

import (
	"net/http"
	"time"
)

func nowUnix() int64 { return time.Now().Unix() }

// tokenEndpoint serves {issuer}/token and {issuer}/revoke: it
// authenticates the client (registry) and hands the grant to the ledger.
// It has no state of its own.
type tokenEndpoint struct {
	journal  *journal
	registry *registry
	ledger   *ledger
}

// serveToken serves the token endpoint.
func (t *tokenEndpoint) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rec := TokenRequest{}
	var e *oauthError
	var resp map[string]any
	defer func() {
		t.journal.logToken(rec, e)
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
	c, method, e := t.registry.authenticate(r)
	rec.AuthMethod = method
	if e != nil {
		return
	}
	rec.ClientID = c.ID
	if v := f.Get("code_verifier"); v != "" {
		t.journal.keepSecret(v)
	}
	switch rec.GrantType {
	case GrantAuthorizationCode:
		resp, e = t.ledger.redeemCode(c, f)
	case GrantRefreshToken:
		resp, e = t.ledger.refreshGrant(c, f)
	case "":
		e = errf(http.StatusBadRequest, "invalid_request", "grant_type is required")
	default:
		e = errf(http.StatusBadRequest, "unsupported_grant_type", "grant type %q is not supported", rec.GrantType)
	}
}

// serveRevoke serves RFC 7009 token revocation.
func (t *tokenEndpoint) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, errf(http.StatusBadRequest, "invalid_request", "body: %v", err))
		return
	}
	c, _, e := t.registry.authenticate(r)
	if e != nil {
		writeError(w, e)
		return
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		writeError(w, errf(http.StatusBadRequest, "invalid_request", "token is required"))
		return
	}
	// Tokens of other clients and unknown tokens are ignored (RFC 7009 §2.2).
	t.ledger.revokeFor(c.ID, tok)
	t.journal.count(func(st *Stats) { st.Revocations++ })
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}
