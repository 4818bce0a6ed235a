package routing

import (
	"context"
	"net/http"
	"slices"
	"strings"
)

// Auth supplies the Authorization header of upstream requests and reacts
// when the server's auth layer refuses one. The oauth package implements
// it; a nil Config.Auth means no authorization beyond the user's headers.
//
// Implementations must be safe for concurrent use: every in-flight request
// calls them. Both methods may block (a sign-in waits for a person), and
// both must end by ctx or by their own bound (--auth-timeout).
type Auth interface {
	// Authorization returns the Authorization header value for the next
	// request ("" for none). It may block while a sign-in runs, bounded by
	// ctx and the auth timeout.
	Authorization(ctx context.Context) (string, error)
	// Retry is told of a 401, or a 403 with error="insufficient_scope",
	// answered to a request that carried sent; it refreshes, signs in again
	// or steps up, and reports whether the request should be sent once more.
	Retry(ctx context.Context, status int, h http.Header, sent string) (bool, error)
}

type unattendedKey struct{}

// Unattended marks ctx as a request the client did not ask for (a listen
// stream, the 2025 GET stream): Auth may refresh its token, but must not
// start a sign-in that waits for a person, so that a stream reconnecting in
// the background cannot open a browser tab per try. The client's next own
// request signs in, and the stream's next try uses the new token.
func Unattended(ctx context.Context) context.Context {
	return context.WithValue(ctx, unattendedKey{}, true)
}

// IsUnattended reports whether ctx was marked by Unattended.
func IsUnattended(ctx context.Context) bool {
	v, _ := ctx.Value(unattendedKey{}).(bool)
	return v
}

// authRefused reports whether an answer is one the auth layer gave before
// any processing: a 401, or a 403 whose Bearer challenge says
// insufficient_scope (RFC 6750 §3.1). Such a request is sent once more
// after Auth.Retry, tools/call included: the server never acted on it.
func authRefused(resp *Response) bool {
	switch resp.Status {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		return slices.ContainsFunc(resp.Header.Values("WWW-Authenticate"), func(v string) bool {
			return strings.Contains(strings.ToLower(v), "insufficient_scope")
		})
	}
	return false
}

// authError wraps an error of the Auth hook. Its text is the hook's own:
// the oauth package's errors name the server, what did not happen and the
// way out.
func (c *Client) authError(err error) error {
	return &TransportError{Kind: KindAuth, URL: c.URL(), Err: err}
}
