package authserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// lookupClient finds a client by id: a registered one, or, with CIMD on
// and an id that is a document URL, the client its document describes
// (fetched afresh each time, outside the lock).
func (s *Server) lookupClient(ctx context.Context, id string) (*Client, *oauthError) {
	if id == "" {
		return nil, errf(http.StatusBadRequest, "invalid_request", "client_id is required")
	}
	s.mu.Lock()
	c := s.clients[id]
	cimd := s.cimd
	s.mu.Unlock()
	if c != nil && c.Source != "cimd" {
		return c, nil
	}
	if !cimd || !isDocumentURL(id) {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "unknown client %q", id)
	}
	c, err := s.fetchClientDocument(ctx, id)
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client metadata document %s: %v", id, err)
	}
	s.mu.Lock()
	s.clients[id] = c
	s.mu.Unlock()
	return c, nil
}

// isDocumentURL reports whether id can be a Client ID Metadata Document
// URL: https with a path, or http on a loopback host (for tests), no
// fragment, no userinfo.
func isDocumentURL(id string) bool {
	u, err := url.Parse(id)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil || u.Path == "" || u.Path == "/" {
		return false
	}
	return u.Scheme == "https" || (u.Scheme == "http" && isLoopbackHost(u.Hostname()))
}

func (s *Server) fetchClientDocument(ctx context.Context, id string) (*Client, error) {
	s.mu.Lock()
	s.stats.CIMDFetches++
	s.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxDocument {
		return nil, fmt.Errorf("document larger than %d bytes", maxDocument)
	}
	var doc struct {
		ClientID string `json:"client_id"`
		registrationRequest
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if doc.ClientID != id {
		return nil, fmt.Errorf("its client_id %q is not its URL", doc.ClientID)
	}
	if m := doc.TokenEndpointAuthMethod; m != "" && m != AuthNone {
		return nil, fmt.Errorf("token_endpoint_auth_method %q: only none is supported for a metadata document", m)
	}
	doc.TokenEndpointAuthMethod = AuthNone
	c, e := doc.client()
	if e != nil {
		return nil, fmt.Errorf("%s", e.Description)
	}
	c.ID, c.Source = id, "cimd"
	return c, nil
}

// redirectAllowed reports whether uri matches one of c's redirect URIs:
// exactly, or, for a loopback host, on any port (RFC 8252 §7.3) unless
// strict.
func redirectAllowed(c *Client, uri string, strict bool) bool {
	if slices.Contains(c.RedirectURIs, uri) {
		return true
	}
	if strict {
		return false
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" || !isLoopbackHost(u.Hostname()) || u.Fragment != "" {
		return false
	}
	for _, reg := range c.RedirectURIs {
		r, err := url.Parse(reg)
		if err != nil || r.Scheme != u.Scheme || !isLoopbackHost(r.Hostname()) {
			continue
		}
		if r.Hostname() == u.Hostname() && r.EscapedPath() == u.EscapedPath() && r.RawQuery == u.RawQuery && u.User == nil {
			return true
		}
	}
	return false
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// authenticateClient authenticates the client of a token or revocation
// request (RFC 6749 §2.3): client_secret_basic, client_secret_post, or a
// bare client_id for a public client. It returns the method used.
func (s *Server) authenticateClient(r *http.Request) (*Client, string, *oauthError) {
	id, secret, basic := r.BasicAuth()
	method := AuthNone
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return nil, "", errf(http.StatusUnauthorized, "invalid_client", "malformed Basic credentials")
		}
		if r.PostForm.Has("client_secret") {
			return nil, "", errf(http.StatusBadRequest, "invalid_request", "more than one client authentication method")
		}
		if formID := r.PostForm.Get("client_id"); formID != "" && formID != id {
			return nil, "", errf(http.StatusBadRequest, "invalid_request", "client_id differs from the Basic credentials")
		}
		method = AuthClientSecretBasic
	} else {
		id = r.PostForm.Get("client_id")
		if r.PostForm.Has("client_secret") {
			secret = r.PostForm.Get("client_secret")
			method = AuthClientSecretPost
		}
	}
	if id == "" {
		return nil, "", errf(http.StatusUnauthorized, "invalid_client", "no client authentication and no client_id")
	}
	c, e := s.lookupClient(r.Context(), id)
	if e != nil {
		if e.Code == "invalid_request" {
			e.status = http.StatusUnauthorized
			e.Code = "invalid_client"
		}
		return nil, method, e
	}
	if c.Secret == "" {
		if secret != "" {
			return nil, method, errf(http.StatusUnauthorized, "invalid_client", "client %q is public and has no secret", id)
		}
		return c, AuthNone, nil
	}
	if method == AuthNone {
		return nil, method, errf(http.StatusUnauthorized, "invalid_client", "client %q must authenticate", id)
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) != 1 {
		return nil, method, errf(http.StatusUnauthorized, "invalid_client", "wrong client secret")
	}
	return c, method, nil
}

// registrationRequest is the RFC 7591 client metadata the server reads.
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types,omitempty"`
	ApplicationType         string   `json:"application_type,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	Scope                   string   `json:"scope,omitempty"`
}

// client validates the metadata (RFC 7591 §2) and returns the client it
// describes, without ID, secret or source.
func (m *registrationRequest) client() (*Client, *oauthError) {
	bad := func(code, format string, args ...any) (*Client, *oauthError) {
		return nil, errf(http.StatusBadRequest, code, format, args...)
	}
	grants := m.GrantTypes
	if len(grants) == 0 {
		grants = []string{GrantAuthorizationCode}
	}
	for _, g := range grants {
		if g != GrantAuthorizationCode && g != GrantRefreshToken {
			return bad("invalid_client_metadata", "grant type %q is not supported", g)
		}
	}
	for _, rt := range m.ResponseTypes {
		if rt != "code" {
			return bad("invalid_client_metadata", "response type %q is not supported", rt)
		}
	}
	method := m.TokenEndpointAuthMethod
	if method == "" {
		method = AuthClientSecretBasic // RFC 7591 §2 default
	}
	if method != AuthNone && method != AuthClientSecretBasic && method != AuthClientSecretPost {
		return bad("invalid_client_metadata", "token_endpoint_auth_method %q is not supported", method)
	}
	if slices.Contains(grants, GrantAuthorizationCode) && len(m.RedirectURIs) == 0 {
		return bad("invalid_redirect_uri", "redirect_uris is required for the authorization_code grant")
	}
	for _, ru := range m.RedirectURIs {
		u, err := url.Parse(ru)
		switch {
		case err != nil || !u.IsAbs():
			return bad("invalid_redirect_uri", "redirect URI %q is not an absolute URI", ru)
		case u.Fragment != "" || strings.Contains(ru, "#"):
			return bad("invalid_redirect_uri", "redirect URI %q has a fragment", ru)
		case u.Scheme == "http" && !isLoopbackHost(u.Hostname()):
			return bad("invalid_redirect_uri", "redirect URI %q uses http on a host that is not loopback", ru)
		case u.Scheme == "javascript" || u.Scheme == "data":
			return bad("invalid_redirect_uri", "redirect URI %q has a forbidden scheme", ru)
		}
	}
	return &Client{
		RedirectURIs:    slices.Clone(m.RedirectURIs),
		GrantTypes:      slices.Clone(grants),
		AuthMethod:      method,
		ApplicationType: m.ApplicationType,
		Scope:           m.Scope,
		ClientName:      m.ClientName,
	}, nil
}

// register serves RFC 7591 dynamic client registration.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var m registrationRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxDocument))
	if err := dec.Decode(&m); err != nil {
		writeError(w, errf(http.StatusBadRequest, "invalid_client_metadata", "body is not a JSON object: %v", err))
		return
	}
	c, e := m.client()
	if e != nil {
		writeError(w, e)
		return
	}
	c.Source = "registered"
	s.mu.Lock()
	c.ID = s.newSecretLocked("client-")
	// A client id is not a secret; keep only real secrets in the list.
	s.secrets = s.secrets[:len(s.secrets)-1]
	if c.AuthMethod != AuthNone {
		c.Secret = s.newSecretLocked("cs-")
	}
	s.clients[c.ID] = c
	s.stats.Registrations++
	s.mu.Unlock()

	resp := map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        nowUnix(),
		"redirect_uris":              c.RedirectURIs,
		"grant_types":                c.GrantTypes,
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": c.AuthMethod,
	}
	if c.Secret != "" {
		resp["client_secret"] = c.Secret
		resp["client_secret_expires_at"] = 0
	}
	if c.ApplicationType != "" {
		resp["application_type"] = c.ApplicationType
	}
	if c.ClientName != "" {
		resp["client_name"] = c.ClientName
	}
	if c.Scope != "" {
		resp["scope"] = c.Scope
	}
	writeJSON(w, http.StatusCreated, resp)
}
