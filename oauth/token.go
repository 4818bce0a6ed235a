package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// authStyle picks how the client authenticates at the token endpoint.
func authStyle(reg *registration, as *oauthex.AuthServerMeta) oauth2.AuthStyle {
	switch reg.AuthMethod {
	case "client_secret_post", "none":
		return oauth2.AuthStyleInParams
	case "client_secret_basic":
		return oauth2.AuthStyleInHeader
	}
	if reg.ClientSecret == "" {
		return oauth2.AuthStyleInParams
	}
	// Never AutoDetect: it would send the code twice.
	if as != nil && !slices.Contains(as.TokenEndpointAuthMethodsSupported, "client_secret_basic") &&
		slices.Contains(as.TokenEndpointAuthMethodsSupported, "client_secret_post") {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader // RFC 6749 §2.3.1's default
}

func (c *Client) oauth2Config(reg *registration, as *oauthex.AuthServerMeta, redirectURI string, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     reg.ClientID,
		ClientSecret: reg.ClientSecret,
		Endpoint: oauth2.Endpoint{
			AuthURL:   as.AuthorizationEndpoint,
			TokenURL:  as.TokenEndpoint,
			AuthStyle: authStyle(reg, as),
		},
		RedirectURL: redirectURI,
		Scopes:      scopes,
	}
}

// exchange redeems an authorization code (x/oauth2), with the PKCE
// verifier and the resource.
func (c *Client) exchange(ctx context.Context, cfg *oauth2.Config, code, verifier, resource string) (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.hc)
	t, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err != nil {
		return nil, scrubOAuth2Error(err)
	}
	return t, nil
}

// scrubOAuth2Error turns x/oauth2's errors into ours: its RetrieveError
// quotes the whole response body.
func scrubOAuth2Error(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		te := &tokenError{Code: re.ErrorCode, Description: re.ErrorDescription}
		if re.Response != nil {
			te.Status = re.Response.StatusCode
		}
		return te
	}
	return fmt.Errorf("the token request failed: %v", rootCause(err))
}

// tokenResponse is a token endpoint's success (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	RefreshToken string          `json:"refresh_token"`
	ExpiresIn    json.RawMessage `json:"expires_in"`
	Scope        string          `json:"scope"`
}

type errorResponse struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// refresh spends t's refresh token at the token endpoint, with the
// resource (x/oauth2 cannot send it on a refresh, hence this request).
// The new token keeps the old refresh token and scopes when the answer
// has none.
func (c *Client) refresh(ctx context.Context, as *oauthex.AuthServerMeta, reg *registration, t *token, resource string) (*token, error) {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {t.RefreshToken},
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	var tr tokenResponse
	if err := c.postForm(ctx, as.TokenEndpoint, reg, as, form, &tr); err != nil {
		return nil, err
	}
	if tr.AccessToken == "" {
		return nil, errors.New("the authorization server's refresh answer has no access_token")
	}
	nt := &token{
		AccessToken:  tr.AccessToken,
		TokenType:    tr.TokenType,
		RefreshToken: tr.RefreshToken,
		Obtained:     c.now(),
		Scopes:       strings.Fields(tr.Scope),
		Issuer:       t.Issuer,
		ClientID:     t.ClientID,
	}
	if nt.RefreshToken == "" {
		nt.RefreshToken = t.RefreshToken
	}
	if nt.Scopes == nil {
		nt.Scopes = t.Scopes
	}
	if n := expiresIn(tr.ExpiresIn); n > 0 {
		nt.Expiry = nt.Obtained.Add(time.Duration(n * float64(time.Second)))
	}
	return nt, nil
}

// expiresIn reads expires_in, a number or (from some servers) a string
// holding one; 0 when absent or unreadable.
func expiresIn(raw json.RawMessage) float64 {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		n = json.Number(s)
	}
	f, err := n.Float64()
	if err != nil || f <= 0 || f > 10*365*24*3600 {
		return 0
	}
	return f
}

// revoke asks the revocation endpoint (RFC 7009) to forget tok.
func (c *Client) revoke(ctx context.Context, as *oauthex.AuthServerMeta, reg *registration, tok, hint string) error {
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	return c.postForm(ctx, as.RevocationEndpoint, reg, as, form, nil)
}

// postForm POSTs an authenticated form to a token or revocation endpoint
// and decodes a JSON success into out (when not nil). An OAuth error
// answer is a *tokenError.
func (c *Client) postForm(ctx context.Context, endpoint string, reg *registration, as *oauthex.AuthServerMeta, form url.Values, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	basic := authStyle(reg, as) == oauth2.AuthStyleInHeader && reg.ClientSecret != ""
	form.Set("client_id", reg.ClientID)
	if reg.ClientSecret != "" && !basic {
		form.Set("client_secret", reg.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("the token request failed: %v", rootCause(err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		req.SetBasicAuth(url.QueryEscape(reg.ClientID), url.QueryEscape(reg.ClientSecret))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the authorization server at %s: %v", hostOf(endpoint), rootCause(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return fmt.Errorf("the authorization server at %s broke off its answer: %v", hostOf(endpoint), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var er errorResponse
		_ = json.Unmarshal(body, &er)
		return &tokenError{Code: er.Error, Description: er.Description, Status: resp.StatusCode}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the authorization server at %s answered invalid JSON (%v)", hostOf(endpoint), syntaxOnly(err))
	}
	return nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	return u.Host
}

// register makes a client by Dynamic Client Registration (RFC 7591): a
// native client with the authorization_code and refresh_token grants,
// public (token_endpoint_auth_method none), with the user's metadata
// merged over these defaults. redirect_uris is always the proxy's.
func (c *Client) register(ctx context.Context, as *oauthex.AuthServerMeta, redirectURIs []string) (*registration, error) {
	if as.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("the authorization server %s offers no dynamic client registration; pass a client registered there with --static-oauth-client-info, or a client metadata document with --oauth-client-metadata-url", as.Issuer)
	}
	req := map[string]any{
		"client_name":                "mcp-tasks-proxy",
		"application_type":           "native",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
	for k, v := range c.clientMeta {
		req[k] = v
	}
	req["redirect_uris"] = redirectURIs
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, as.RegistrationEndpoint, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("cannot register with the authorization server at %s: %v", hostOf(as.RegistrationEndpoint), rootCause(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return nil, fmt.Errorf("the authorization server at %s broke off its registration answer: %v", hostOf(as.RegistrationEndpoint), err)
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		var er errorResponse
		_ = json.Unmarshal(body, &er)
		te := &tokenError{Code: er.Error, Description: er.Description, Status: resp.StatusCode}
		return nil, fmt.Errorf("the authorization server %s refused to register the proxy: %v", as.Issuer, te)
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
		RegisteredAt: c.now(),
	}
	if reg.AuthMethod == "" {
		reg.AuthMethod = "none"
		if reg.ClientSecret != "" {
			reg.AuthMethod = "client_secret_basic"
		}
	}
	return reg, nil
}
