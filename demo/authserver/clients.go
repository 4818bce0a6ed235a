package authserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// registry is the clients the server knows: pre-registered, registered
// at /register (which it serves), and fetched Client ID Metadata
// Documents; and the authentication of a client at the token and
// revocation endpoints.
type registry struct {
	journal *journal
	client  *http.Client // fetches Client ID Metadata Documents

	mu      sync.Mutex
	clients map[string]*Client
	cimd    bool
}

// newRegistry knows cfg's pre-registered clients.
func newRegistry(cfg Config, j *journal) (registry, error) {
	clients := map[string]*Client{}
	for _, c := range cfg.Clients {
		if c.ID == "" {
			return registry{}, errors.New("authserver: a pre-registered client has no ID")
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
			j.keepSecret(c.Secret)
		}
		clients[c.ID] = &c
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cimdTimeout, Transport: &http.Transport{}}
	}
	return registry{journal: j, client: hc, clients: clients, cimd: cfg.CIMD}, nil
}

// SetCIMD turns Client ID Metadata Document support on or off, in the
// metadata and at the endpoints.
func (reg *registry) SetCIMD(on bool) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.cimd = on
}

func (reg *registry) cimdOn() bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.cimd
}

// ForgetClient forgets a registered or pre-registered client, as an AS
// that dropped it would: its next authorize, token or revoke request gets
// invalid_client. Its tokens are left as they are. False if unknown.
func (reg *registry) ForgetClient(id string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	_, ok := reg.clients[id]
	delete(reg.clients, id)
	return ok
}

// Clients returns copies of the known clients (CIMD clients fetched so
// far included), in no particular order.
func (reg *registry) Clients() []Client {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	out := make([]Client, 0, len(reg.clients))
	for _, c := range reg.clients {
		cc := *c
		cc.RedirectURIs = slices.Clone(c.RedirectURIs)
		cc.GrantTypes = slices.Clone(c.GrantTypes)
		out = append(out, cc)
	}
	return out
}

// known is the client with id as it stands, nil if none (no document is
// fetched).
func (reg *registry) known(id string) *Client {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.clients[id]
}

// lookupClient finds a client by id: a registered one, or, with CIMD on
// and an id that is a document URL, the client its document describes
// (fetched afresh each time, outside the lock).
func (reg *registry) lookup(ctx context.Context, id string) (*Client, *oauthError) {
	if id == "" {
		return nil, errf(http.StatusBadRequest, "invalid_request", "client_id is required")
	}
	reg.mu.Lock()
	c := reg.clients[id]
	cimd := reg.cimd
	reg.mu.Unlock()
	if c != nil && c.Source != "cimd" {
		return c, nil
	}
	if !cimd || !isDocumentURL(id) {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "unknown client %q", id)
	}
	c, err := reg.fetchDocument(ctx, id)
	if err != nil {
		return nil, errf(http.StatusUnauthorized, "invalid_client", "client metadata document %s: %v", id, err)
	}
	reg.mu.Lock()
	reg.clients[id] = c
	reg.mu.Unlock()
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

func (reg *registry) fetchDocument(ctx context.Context, id string) (*Client, error) {
	reg.journal.count(func(st *Stats) { st.CIMDFetches++ })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := reg.client.Do(req)
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
func (reg *registry) authenticate(r *http.Request) (*Client, string, *oauthError) {
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
	c, e := reg.lookup(r.Context(), id)
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

// serveRegister serves RFC 7591 dynamic client registration.
func (reg *registry) serveRegister(w http.ResponseWriter, r *http.Request) {
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
	c.ID = newRandom("client-") // not a secret: not in the secrets list
	if c.AuthMethod != AuthNone {
		c.Secret = reg.journal.newSecret("cs-")
	}
	reg.mu.Lock()
	reg.clients[c.ID] = c
	reg.mu.Unlock()
	reg.journal.count(func(st *Stats) { st.Registrations++ })

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
