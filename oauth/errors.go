package oauth

import (
	"errors"
	"fmt"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// SignInError is every failure of the Client to authorize a request: a
// sign-in that did not complete (nobody signed in in time, the
// authorization server refused, the state or issuer did not match), a
// refresh the authorization server refused, a scope it never grants. Its
// text is for the end user: it names the server, the cause and the way
// out. It never holds a secret.
//
// Host is the MCP server's host (and port, when not the default), Server
// its URL without userinfo or query; Reason says what happened, in a
// phrase; Err is the cause, when there is one (context.DeadlineExceeded
// for a sign-in that timed out), whose text is already in Reason.
type SignInError struct {
	Host, Server, Reason string
	Err                  error
}

func (e *SignInError) Error() string {
	if errors.Is(e.Err, errDiscovery) {
		// No sign-in could start: auth login would meet the same.
		return fmt.Sprintf("sign-in to %s cannot start: %s; the server's OAuth set-up must be fixed, or pass a token with %v 'Authorization: Bearer <token>'",
			e.Host, e.Reason, rewrite.HintHeader)
	}
	return fmt.Sprintf("sign-in to %s did not complete: %s; to sign in from a terminal, run: mcp-tasks-proxy auth login %s",
		e.Host, e.Reason, e.Server)
}

func (e *SignInError) Unwrap() error { return e.Err }

// ErrNotSignedIn is returned by Logout when the store holds nothing for the
// server.
var ErrNotSignedIn = errors.New("not signed in")

var (
	// errNoASMetadata: every authorization server metadata URL answered,
	// none with a document.
	errNoASMetadata = errors.New("no authorization server metadata was found")
	// errNotOAuth: the server publishes no OAuth metadata at all. Its 401
	// is not a challenge the proxy can meet (it expects an API key or a
	// static token), so Retry passes it on, for the --header way out.
	errNotOAuth = errors.New("the server does not offer OAuth")
	// errDiscovery: no sign-in could start.
	errDiscovery = errors.New("no usable OAuth metadata")
	// errUnattended: no sign-in for a request the client did not make
	// (routing.Unattended).
	errUnattended = errors.New("no sign-in for an unattended request")
)

// tokenError is an OAuth error response of the token, registration or
// revocation endpoint (RFC 6749 §5.2). Only its code and description are
// kept: never the body, which might echo what was sent.
type tokenError struct {
	Code        string
	Description string
	Status      int
}

func (e *tokenError) Error() string {
	s := fmt.Sprintf("the authorization server answered %s", e.Code)
	if e.Code == "" {
		s = fmt.Sprintf("the authorization server answered HTTP %d", e.Status)
	}
	if e.Description != "" {
		s += fmt.Sprintf(" (%s)", clip(e.Description, 200))
	}
	return s
}

func isOAuthError(err error, code string) bool {
	te, ok := errors.AsType[*tokenError](err)
	return ok && te.Code == code
}

// clip shortens s to n bytes, for text that comes from a server.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
