package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
)

// Discovery is what a protected server says about its authorization, as
// the proxy's sign-in would find it: for `mcp-tasks-proxy check`, which
// reports it without signing in.
type Discovery struct {
	// Resource is the resource tokens are asked for (RFC 8707): the
	// resource metadata's, or --resource.
	Resource string
	// Scopes are the resource metadata's scopes_supported.
	Scopes []string
	// Issuer is the authorization server the sign-in would use;
	// RegistrationEndpoint is "" when it offers no dynamic registration.
	Issuer, RegistrationEndpoint string
}

// Discover finds the protected resource metadata and the authorization
// server of the client's server, exactly as a sign-in does, from the
// headers of its 401 (h; nil looks at the well-known URLs only). It sends
// no token and stores nothing. The error says what was missing;
// IsNotOAuth tells a server that publishes no OAuth metadata at all.
func (c *Client) Discover(ctx context.Context, h http.Header) (*Discovery, error) {
	d, err := c.disc.discover(ctx, ParseChallenge(h))
	if err != nil {
		return nil, err
	}
	return &Discovery{
		Resource:             d.resource,
		Scopes:               slices.Clone(d.scopes),
		Issuer:               d.as.Issuer,
		RegistrationEndpoint: d.as.RegistrationEndpoint,
	}, nil
}

// IsNotOAuth reports whether err (from Discover) says the server publishes
// no OAuth metadata at all: it wants a static token, if anything.
func IsNotOAuth(err error) bool { return errors.Is(err, errNotOAuth) }
