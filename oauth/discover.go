package oauth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// discoverer finds the server's protected resource metadata and its
// authorization server's metadata, in the MCP authorization spec's order,
// and refuses endpoints it must not use. go-sdk's oauthex getters are not
// used (their types and ParseWWWAuthenticate are): they refuse
// authorization servers on private networks (a company's self-hosted
// server), forgive a trailing slash where RFC 8414 §3.3 asks for an
// identical issuer, stop at the first 5xx, and accept PKCE without S256.
type discoverer struct {
	target
	hc        *http.Client
	resource  string // Config.Resource
	allowHTTP bool   // Config.AllowHTTP
}

// discovery is what a sign-in needs to know about the server.
type discovery struct {
	resource string   // sent as resource
	scopes   []string // scopes_supported of the resource metadata
	as       *oauthex.AuthServerMeta
}

// challenge is the Bearer challenge of a refusal, parameters lower-cased.
type challenge map[string]string

// ParseChallenge is the Bearer challenge of a refusal's headers (its
// WWW-Authenticate), parameter names lower-cased; nil when there is none.
func ParseChallenge(h http.Header) map[string]string {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return nil
	}
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return c.Params
		}
	}
	return nil
}

func (ch challenge) scopes() []string { return strings.Fields(ch["scope"]) }

// discover finds the protected resource metadata (from the challenge's
// resource_metadata, else the path-inserted, then the root well-known
// URL), checks its resource, and finds its authorization server's
// metadata. A server with no resource metadata is tried as its own
// authorization server (the 2025-03-26 arrangement).
func (m *discoverer) discover(ctx context.Context, ch challenge) (*discovery, error) {
	found := func(resource string, scopes []string, as *oauthex.AuthServerMeta) (*discovery, error) {
		return &discovery{resource: cmp.Or(m.resource, resource), scopes: scopes, as: as}, nil
	}
	var tried, cands []string
	if u := ch["resource_metadata"]; u != "" {
		cands = append(cands, u)
	}
	if p := strings.Trim(m.server.Path, "/"); p != "" {
		cands = append(cands, at(m.server, "/.well-known/oauth-protected-resource/"+p))
	}
	for _, cand := range append(cands, at(m.server, "/.well-known/oauth-protected-resource")) {
		if err := m.checkEndpoint("the resource metadata URL", cand); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		var prm oauthex.ProtectedResourceMetadata
		status, err := m.getJSON(ctx, cand, &prm)
		if err != nil {
			if status == 0 {
				tried = append(tried, err.Error())
			}
			continue
		}
		if !m.resourceMatches(prm.Resource) {
			return nil, fmt.Errorf("the protected resource metadata at %s is for %q, not for %s (RFC 9728 §3.3); it is not used", cand, clip(prm.Resource, 200), displayURL(m.server))
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected resource metadata at %s names no authorization server", cand)
		}
		var errs []string
		for _, issuer := range prm.AuthorizationServers {
			as, err := m.authServerMeta(ctx, issuer)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			return found(prm.Resource, prm.ScopesSupported, as)
		}
		return nil, errors.New(strings.Join(errs, "; "))
	}
	// No resource metadata: the server's origin may be its own
	// authorization server.
	as, err := m.authServerMeta(ctx, at(m.server, ""))
	if err != nil {
		reason := fmt.Sprintf("%s publishes no protected resource metadata (RFC 9728), and %s", m.host, err)
		if len(tried) > 0 {
			reason += " (" + strings.Join(tried, "; ") + ")"
		}
		if len(tried) == 0 && errors.Is(err, errNoASMetadata) {
			// Every metadata URL answered, none with a document: the
			// server does not do OAuth (an API key, a static token).
			return nil, fmt.Errorf("%w: %s", errNotOAuth, reason)
		}
		return nil, errors.New(reason)
	}
	return found(m.server.String(), nil, as)
}

// at is path on u's origin.
func at(u *url.URL, path string) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: path}).String()
}

// resourceMatches accepts a resource metadata document for this server:
// its resource is the server URL, or the same origin with a path that is a
// whole-segment prefix of the server's (as the root well-known document
// names the origin). Trailing slashes do not count.
func (m *discoverer) resourceMatches(resource string) bool {
	r, err := canonicalURL(resource)
	if err != nil || r.Scheme != m.server.Scheme || r.Host != m.server.Host || r.RawQuery != "" {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	sp := strings.TrimSuffix(m.server.Path, "/")
	return rp == sp || strings.HasPrefix(sp, rp+"/")
}

// authServerMeta fetches the authorization server metadata of issuer in
// the spec's order: RFC 8414 then OpenID Connect, with path insertion for
// an issuer with a path, then OIDC path appending. The document's issuer
// must be identical to issuer, and it must offer PKCE with S256.
func (m *discoverer) authServerMeta(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	if err := m.checkEndpoint("the authorization server", issuer); err != nil {
		return nil, err
	}
	iu, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("the authorization server %q is not a URL", clip(issuer, 200))
	}
	var problems []string
	cands := []string{at(iu, "/.well-known/oauth-authorization-server"), at(iu, "/.well-known/openid-configuration")}
	if p := strings.Trim(iu.Path, "/"); p != "" {
		cands = []string{at(iu, "/.well-known/oauth-authorization-server/"+p), at(iu, "/.well-known/openid-configuration/"+p),
			at(iu, "/"+p+"/.well-known/openid-configuration")}
	}
	for _, cand := range cands {
		var as oauthex.AuthServerMeta
		status, err := m.getJSON(ctx, cand, &as)
		if err != nil {
			if status == 0 || status >= 500 {
				problems = append(problems, err.Error())
			}
			continue
		}
		if as.Issuer != issuer {
			problems = append(problems, fmt.Sprintf("the metadata at %s is for issuer %q, not %q (RFC 8414 §3.3); it is not used", cand, clip(as.Issuer, 200), issuer))
			continue
		}
		if !slices.Contains(as.CodeChallengeMethodsSupported, "S256") {
			return nil, fmt.Errorf("the authorization server %s does not offer PKCE with S256 (code_challenge_methods_supported is %q); the proxy does not sign in without it", issuer, as.CodeChallengeMethodsSupported)
		}
		for _, e := range []struct {
			what, u  string
			optional bool
		}{
			{"its authorization endpoint", as.AuthorizationEndpoint, false},
			{"its token endpoint", as.TokenEndpoint, false},
			{"its registration endpoint", as.RegistrationEndpoint, true},
			{"its revocation endpoint", as.RevocationEndpoint, true},
		} {
			if e.u == "" && e.optional {
				continue
			}
			if err := m.checkEndpoint(e.what, e.u); err != nil {
				return nil, fmt.Errorf("the authorization server %s: %v", issuer, err)
			}
			// RFC 6749 §3.1, §3.2: an endpoint URI MUST NOT include a
			// fragment. The sign-in's query would land inside it (after
			// the #), so the server would never see it: refused rather
			// than guessed at.
			if strings.Contains(e.u, "#") {
				return nil, fmt.Errorf("the authorization server %s: %s %q has a fragment (#…), which RFC 6749 §3.1 forbids; its metadata at %s must be fixed", issuer, e.what, clip(e.u, 200), cand)
			}
		}
		return &as, nil
	}
	reason := fmt.Sprintf("no authorization server metadata was found for %s", issuer)
	if len(problems) > 0 {
		return nil, errors.New(reason + ": " + strings.Join(problems, "; "))
	}
	return nil, fmt.Errorf("%w for %s", errNoASMetadata, issuer)
}

// maxMetadata bounds a metadata or token response.
const maxMetadata = 1 << 20

// getJSON GETs a JSON document into v. status is the HTTP status (0 when
// none came); err is set for any failure.
func (m *discoverer) getJSON(ctx context.Context, u string, v any) (status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := m.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot fetch %s: %v", u, rootCause(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp.StatusCode, fmt.Errorf("%s answered HTTP %d", u, resp.StatusCode)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return resp.StatusCode, fmt.Errorf("%s answered %q, not JSON", u, mt)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMetadata)).Decode(v); err != nil {
		return resp.StatusCode, fmt.Errorf("%s answered invalid JSON (%v)", u, syntaxOnly(err))
	}
	return resp.StatusCode, nil
}

// rootCause drops the *url.Error wrapping, whose text repeats the URL.
func rootCause(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Err != nil {
		return ue.Err
	}
	return err
}

// probe sends the server one request without a token, for the challenge
// of its 401 (where its resource metadata is, which scopes it wants).
func (m *discoverer) probe(ctx context.Context) challenge {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.server.String(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", "ping")
	resp, err := m.hc.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	return ParseChallenge(resp.Header)
}
