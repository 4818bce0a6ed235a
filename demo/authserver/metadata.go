package authserver

import (
	"net/http"
	"sync"
)

// metadataDoc is the authorization server metadata document (RFC 8414),
// served at the well-known URLs, and the issuer it claims.
type metadataDoc struct {
	site     site
	scopes   []string
	journal  *journal
	registry *registry // whether CIMD is on

	mu     sync.Mutex
	issuer string // claimed instead of the real one; "" for the real one
}

// Metadata returns the authorization server metadata document.
func (m *metadataDoc) Metadata() map[string]any {
	iss := m.site.issuer
	m.mu.Lock()
	if m.issuer != "" {
		iss = m.issuer
	}
	m.mu.Unlock()
	st := m.site
	return map[string]any{
		"issuer":                                         iss,
		"authorization_endpoint":                         st.AuthorizationEndpoint(),
		"token_endpoint":                                 st.TokenEndpoint(),
		"registration_endpoint":                          st.RegistrationEndpoint(),
		"revocation_endpoint":                            st.RevocationEndpoint(),
		"scopes_supported":                               m.scopes,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{GrantAuthorizationCode, GrantRefreshToken},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{AuthNone, AuthClientSecretPost, AuthClientSecretBasic},
		"revocation_endpoint_auth_methods_supported":     []string{AuthNone, AuthClientSecretPost, AuthClientSecretBasic},
		"authorization_response_iss_parameter_supported": true,
		"client_id_metadata_document_supported":          m.registry.cimdOn(),
	}
}

// SetMetadataIssuer makes the metadata document claim issuer iss (to test
// the exact-match check); "" restores the real issuer.
func (m *metadataDoc) SetMetadataIssuer(iss string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.issuer = iss
}

// handler serves the document while enabled says so, counting it.
func (m *metadataDoc) handler(enabled func() bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !enabled() {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		m.journal.count(func(st *Stats) { st.MetadataRequests++ })
		writeJSON(w, http.StatusOK, m.Metadata())
	}
}
