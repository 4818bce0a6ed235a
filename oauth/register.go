package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// registrar decides which client the proxy is at an authorization server:
// the static one (Config.ClientInfo), the Client ID Metadata Document
// (Config.ClientMetadataURL), or one it registers (RFC 7591) and keeps in
// the store, per issuer.
type registrar struct {
	target
	static       *staticClient
	meta         map[string]json.RawMessage // Config.ClientMetadata
	metadataURL  string                     // Config.ClientMetadataURL
	hc           *http.Client
	now          func() time.Time
	log          *zap.Logger
	store        *tokenStore     // where a new registration is kept
	redirectURIs func() []string // what a registration lists
}

// registrationFor is the client that got t: the static one, the metadata
// document, or the registration stored for its issuer.
func (r *registrar) registrationFor(rec *record, t *token) *registration {
	if r.static != nil && r.static.ClientID == t.ClientID {
		return r.staticRegistration()
	}
	if r.metadataURL != "" && r.metadataURL == t.ClientID {
		return &registration{ClientID: t.ClientID, AuthMethod: "none", Source: sourceCIMD}
	}
	if reg := rec.Clients[t.Issuer]; reg != nil && reg.ClientID == t.ClientID {
		return reg
	}
	return &registration{ClientID: t.ClientID, AuthMethod: "none", Source: sourceDCR}
}

func (r *registrar) staticRegistration() *registration {
	return &registration{ClientID: r.static.ClientID, ClientSecret: r.static.ClientSecret, AuthMethod: r.static.AuthMethod, Source: sourceStatic}
}

// clientFor picks the client for a sign-in, in the spec's order: the
// static one, the metadata document (when the authorization server
// supports it), the stored registration for the issuer (when it lists the
// redirect URI), a new registration. reused is true for a stored one.
func (r *registrar) clientFor(ctx context.Context, rec *record, as *oauthex.AuthServerMeta, redirectURI string) (reg *registration, reused bool, err error) {
	if r.static != nil {
		if r.static.Issuer != "" && r.static.Issuer != as.Issuer {
			return nil, false, fmt.Errorf("the static OAuth client is for the authorization server %s, but %s uses %s", r.static.Issuer, r.host, as.Issuer)
		}
		return r.staticRegistration(), false, nil
	}
	if r.metadataURL != "" && as.ClientIDMetadataDocumentSupported {
		return &registration{ClientID: r.metadataURL, AuthMethod: "none", Source: sourceCIMD}, false, nil
	}
	if reg := rec.Clients[as.Issuer]; reg != nil && slices.Contains(reg.RedirectURIs, redirectURI) {
		return reg, true, nil
	}
	uris := r.redirectURIs()
	if !slices.Contains(uris, redirectURI) {
		uris = append(uris, redirectURI)
	}
	reg, err = r.register(ctx, as, uris)
	if err != nil {
		return nil, false, err
	}
	if rec.Clients == nil {
		rec.Clients = map[string]*registration{}
	}
	rec.Clients[as.Issuer] = reg
	if err := r.store.save(rec); err != nil { // kept even if the sign-in fails
		return nil, false, err
	}
	r.log.Info("oauth: registered the proxy with the authorization server", zap.String("issuer", as.Issuer), zap.String("client_id", reg.ClientID))
	return reg, false, nil
}

// register makes a client by Dynamic Client Registration (RFC 7591): a
// native client with the authorization_code and refresh_token grants,
// public (token_endpoint_auth_method none), with the user's metadata
// merged over these defaults. redirect_uris is always the proxy's.
func (r *registrar) register(ctx context.Context, as *oauthex.AuthServerMeta, redirectURIs []string) (*registration, error) {
	if as.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("the authorization server %s offers no dynamic client registration; pass a client registered there with %v, or a client metadata document with %v", as.Issuer, rewrite.HintStaticClientInfo, rewrite.HintClientMetadataURL)
	}
	req := map[string]any{
		"client_name":                "mcp-tasks-proxy",
		"application_type":           "native",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	for k, v := range r.meta {
		req[k] = v
	}
	req["redirect_uris"] = redirectURIs
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	body, err := roundTrip(r.hc, hr, "register with", "registration answer")
	if te, ok := errors.AsType[*tokenError](err); ok {
		return nil, fmt.Errorf("the authorization server %s refused to register the proxy: %v", as.Issuer, te)
	} else if err != nil {
		return nil, err
	}
	var rr oauthex.ClientRegistrationResponse
	if err := json.Unmarshal(body, &rr); err != nil || rr.ClientID == "" {
		return nil, fmt.Errorf("the authorization server %s answered the registration without a client_id", as.Issuer)
	}
	reg := &registration{
		ClientID:     rr.ClientID,
		ClientSecret: rr.ClientSecret,
		AuthMethod:   rr.TokenEndpointAuthMethod,
		RedirectURIs: redirectURIs,
		Source:       sourceDCR,
		RegisteredAt: r.now(),
	}
	if reg.AuthMethod == "" {
		reg.AuthMethod = "none"
		if reg.ClientSecret != "" {
			reg.AuthMethod = "client_secret_basic"
		}
	}
	return reg, nil
}
