package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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

// tokenEndpoint speaks to an authorization server's token and revocation
// endpoints: it redeems codes, spends refresh tokens and revokes.
type tokenEndpoint struct {
	hc  *http.Client
	now func() time.Time
}

// exchange redeems an authorization code (x/oauth2), with the PKCE
// verifier and the resource.
func (e *tokenEndpoint) exchange(ctx context.Context, cfg *oauth2.Config, code, verifier, resource string) (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, e.hc)
	t, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	if err == nil {
		return t, nil
	}
	// Not x/oauth2's RetrieveError: it quotes the whole response body.
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		te := &tokenError{Code: re.ErrorCode, Description: re.ErrorDescription}
		if re.Response != nil {
			te.Status = re.Response.StatusCode
		}
		return nil, te
	}
	return nil, fmt.Errorf("the token request failed: %v", rootCause(err))
}

// tokenResponse is a token endpoint's success (RFC 6749 §5.1).
type tokenResponse struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	RefreshToken string          `json:"refresh_token"`
	ExpiresIn    json.RawMessage `json:"expires_in"`
	Scope        string          `json:"scope"`
}

// refresh spends t's refresh token at the token endpoint, with the
// resource (x/oauth2 cannot send it on a refresh, hence this request).
// The new token keeps the old refresh token and scopes when the answer
// has none.
func (e *tokenEndpoint) refresh(ctx context.Context, as *oauthex.AuthServerMeta, reg *registration, t *token, resource string) (*token, error) {
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {t.RefreshToken},
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	var tr tokenResponse
	if err := e.postForm(ctx, as.TokenEndpoint, reg, as, form, &tr); err != nil {
		return nil, err
	}
	if tr.AccessToken == "" {
		return nil, errors.New("the authorization server's refresh answer has no access_token")
	}
	nt := &token{
		AccessToken:  tr.AccessToken,
		TokenType:    tr.TokenType,
		RefreshToken: cmp.Or(tr.RefreshToken, t.RefreshToken),
		Obtained:     e.now(),
		Scopes:       strings.Fields(tr.Scope),
		Issuer:       t.Issuer,
		ClientID:     t.ClientID,
	}
	if nt.Scopes == nil {
		nt.Scopes = t.Scopes
	}
	// expires_in is a number or (from some servers) a string holding one.
	if f, err := strconv.ParseFloat(strings.Trim(string(tr.ExpiresIn), `"`), 64); err == nil && f > 0 && f <= 10*365*24*3600 {
		nt.Expiry = nt.Obtained.Add(time.Duration(f * float64(time.Second)))
	}
	return nt, nil
}

// revoke asks the revocation endpoint (RFC 7009) to forget tok.
func (e *tokenEndpoint) revoke(ctx context.Context, as *oauthex.AuthServerMeta, reg *registration, tok, hint string) error {
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	return e.postForm(ctx, as.RevocationEndpoint, reg, as, form, nil)
}

// postForm POSTs an authenticated form to a token or revocation endpoint
// and decodes a JSON success into out (when not nil). An OAuth error
// answer is a *tokenError.
func (e *tokenEndpoint) postForm(ctx context.Context, endpoint string, reg *registration, as *oauthex.AuthServerMeta, form url.Values, out any) error {
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
	if basic {
		req.SetBasicAuth(url.QueryEscape(reg.ClientID), url.QueryEscape(reg.ClientSecret))
	}
	body, err := roundTrip(e.hc, req, "reach", "answer")
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("the authorization server at %s answered invalid JSON (%v)", req.URL.Host, syntaxOnly(err))
	}
	return nil
}

// roundTrip sends req to an endpoint of an authorization server, within
// requestTimeout, and returns the body of a 2xx answer; any other status
// is a *tokenError. reach and answer word its failures: "cannot reach the
// authorization server at HOST", "... broke off its answer".
func roundTrip(hc *http.Client, req *http.Request, reach, answer string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(req.Context(), requestTimeout)
	defer cancel()
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("cannot %s the authorization server at %s: %v", reach, req.URL.Host, rootCause(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	if err != nil {
		return nil, fmt.Errorf("the authorization server at %s broke off its %s: %v", req.URL.Host, answer, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var er struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(body, &er)
		return nil, &tokenError{Code: er.Error, Description: er.Description, Status: resp.StatusCode}
	}
	return body, nil
}
