package routing

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The redirect policy (docs/reliability.md, Security): credentials stay with
// their origin. Go's default would re-send a POST on 307 and 308 to any host,
// keep Authorization when only the port or the scheme changes, copy the user's
// --header values everywhere, and turn a POST into a GET on 301, 302 and
// 303. The proxy follows a redirect only when it stays on the origin of the
// request (scheme, host and port) and keeps the request's method; 307 and
// 308 then keep the body and every header. Anything else is refused before
// a byte goes to the new target, with a *RedirectError.

// ErrRedirect is wrapped by every refused redirect (errors.Is).
var ErrRedirect = errors.New("redirect not followed")

// maxRedirects bounds a chain of same-origin redirects, as Go's default does.
const maxRedirects = 10

// RedirectError is a redirect the proxy refused to follow. Its text is
// written for the end user: it names the target (without userinfo or query
// values), why it is refused, and the fix.
type RedirectError struct {
	// From and To are the redirecting URL and the target, redacted.
	From, To string
	// Method is the method of the request that was redirected.
	Method string
	// Status is the redirect's HTTP status.
	Status int
	// Reason is why it is refused: a cross-origin target, https to http, a
	// method change, or too many redirects.
	Reason RedirectReason
}

// RedirectReason says why a redirect was refused.
type RedirectReason int

// Reasons for refusing a redirect.
const (
	// RedirectOtherOrigin: the target has another scheme, host or port.
	RedirectOtherOrigin RedirectReason = iota + 1
	// RedirectInsecure: the target is http:// and the request was https://.
	RedirectInsecure
	// RedirectMethodChange: a 301, 302 or 303 would turn the request
	// (a POST or DELETE) into a GET.
	RedirectMethodChange
	// RedirectTooMany: more than 10 redirects in a row.
	RedirectTooMany
)

func (e *RedirectError) Error() string {
	const fix = "point the proxy at the final URL"
	switch e.Reason {
	case RedirectInsecure:
		return fmt.Sprintf("the upstream server at %s redirected a %s request (HTTP %d) from https to plain http, %s; the proxy does not follow it, so credentials are not sent unencrypted: %s (an https one)",
			e.From, e.Method, e.Status, e.To, fix)
	case RedirectMethodChange:
		return fmt.Sprintf("the upstream server at %s answered a %s request with HTTP %d, a redirect to %s that would turn it into a GET; the proxy does not follow it, since an MCP %s must not silently become a GET: %s",
			e.From, e.Method, e.Status, e.To, e.Method, fix)
	case RedirectTooMany:
		return fmt.Sprintf("the upstream server at %s redirected a %s request more than %d times, the last time to %s; the proxy stopped: %s",
			e.From, e.Method, maxRedirects, e.To, fix)
	}
	return fmt.Sprintf("the upstream server at %s redirected a %s request (HTTP %d) to another origin, %s; the proxy follows redirects only to the same scheme, host and port, so credentials stay with their origin: %s if you trust it",
		e.From, e.Method, e.Status, e.To, fix)
}

// Is makes errors.Is(err, ErrRedirect) true.
func (e *RedirectError) Is(target error) bool { return target == ErrRedirect }

// checkRedirect is the http.Client's CheckRedirect: req is the next hop,
// via the requests made so far (via[0] the original).
func checkRedirect(req *http.Request, via []*http.Request) error {
	first, prev := via[0], via[len(via)-1]
	e := &RedirectError{From: Redact(prev.URL.String()), To: Redact(req.URL.String()), Method: first.Method}
	if req.Response != nil {
		e.Status = req.Response.StatusCode
	}
	switch {
	case req.Method != prev.Method:
		e.Reason = RedirectMethodChange
	case first.URL.Scheme == "https" && req.URL.Scheme != "https":
		e.Reason = RedirectInsecure
	case !sameOrigin(first.URL, req.URL):
		e.Reason = RedirectOtherOrigin
	case len(via) >= maxRedirects:
		e.Reason = RedirectTooMany
	default:
		return nil
	}
	return e
}

// sameOrigin reports whether a and b have the same scheme, host and port,
// the default port of the scheme counting as given.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
