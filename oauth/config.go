package oauth

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Config configures a Client. Zero values take the documented defaults.
// Each field's comment is the user documentation of its flag.
type Config struct {
	// ServerURL is the MCP server's endpoint, the upstream URL. Its
	// canonical form (lower-case scheme and host, no default port, no
	// fragment) is the resource (RFC 8707) unless the server's protected
	// resource metadata or Resource say otherwise, and names its store file.
	ServerURL string

	// StoreDir (--oauth-store) holds one file per server. Default
	// os.UserConfigDir()/mcp-tasks-proxy/oauth. It is created with mode
	// 0700; a directory or file that other users can read is refused, with
	// the chmod that fixes it.
	StoreDir string

	// CallbackHost (--oauth-callback-host) is the host of the redirect URI
	// the browser comes back to: 127.0.0.1 (default), localhost or ::1.
	// The callback listens on loopback only, and only while a sign-in runs.
	CallbackHost string
	// CallbackPort (--oauth-callback-port) pins the callback's port. With
	// 0 the port is derived from the server URL (stable across runs, so a
	// registered redirect URI stays valid) and moves on to the next of a
	// few when taken; a pinned port that is taken fails the sign-in.
	CallbackPort int

	// Browser (--oauth-browser) is the command that opens the sign-in page,
	// run with the URL as its last argument (split on spaces; no shell).
	// Default: $BROWSER, then xdg-open, open or rundll32 by platform. The
	// child never gets the proxy's stdout, and is never waited for.
	Browser string
	// NoBrowser (--oauth-no-browser) only prints the sign-in URL on Out,
	// and waits all the same.
	NoBrowser bool

	// AuthTimeout (--auth-timeout) bounds a sign-in, a refresh and the wait
	// for another process's. Default DefaultAuthTimeout.
	AuthTimeout time.Duration

	// ClientInfo (--static-oauth-client-info) is a pre-registered client,
	// as JSON: {"client_id": "...", "client_secret": "...",
	// "token_endpoint_auth_method": "...", "issuer": "..."}; only client_id
	// is required. With issuer, it is used with that authorization server
	// only.
	ClientInfo []byte
	// ClientMetadata (--static-oauth-client-metadata) is a JSON object
	// merged into the dynamic client registration request (RFC 7591), over
	// the proxy's defaults; redirect_uris stays the proxy's.
	ClientMetadata []byte
	// ClientMetadataURL (--oauth-client-metadata-url) is an https URL whose
	// document describes the client (Client ID Metadata Document); it is
	// the client_id wherever the authorization server supports it.
	ClientMetadataURL string

	// Resource (--resource) overrides the resource (RFC 8707) sent on the
	// authorization request and every token request.
	Resource string
	// Scope (--oauth-scope) overrides the scopes asked for, space
	// separated. Default: the server's challenge, else the protected
	// resource metadata's scopes_supported.
	Scope string

	// AllowHTTP (--allow-http) lets metadata, registration and token
	// traffic go over plain http:// to a host other than this machine.
	AllowHTTP bool

	// HTTPClient carries the metadata, registration, token and revocation
	// traffic (TLS settings and proxies as for the upstream). Its redirect
	// policy is replaced by the proxy's: same origin only, never https to
	// http. Default: a client with proxies from the environment.
	HTTPClient *http.Client

	// Logger gets the diagnostics (never a secret). Default: none.
	Logger *zap.Logger
	// Out gets the lines meant for the person at the keyboard: the sign-in
	// URL, and what to do. The CLI passes stderr. Default: discarded.
	Out io.Writer
}

// Defaults.
const (
	DefaultAuthTimeout = 2 * time.Minute
	// requestTimeout bounds one metadata, registration or token request.
	requestTimeout = 30 * time.Second
	// callbackPath is the redirect URI's path.
	callbackPath = "/callback"
	// portTries is how many ports a derived callback port moves through.
	portTries = 10
	// maxStepUps is how many step-up sign-ins one set of challenged scopes
	// gets before the 403 is an error.
	maxStepUps = 2
	// maxRefusedSignIns is how many freshly signed-in tokens the server may
	// refuse before a 401 is an error rather than another browser tab.
	maxRefusedSignIns = 2
	// refreshMargin is how long before expiry a token is refreshed ahead.
	refreshMargin = time.Minute
)

// staticClient is the parsed ClientInfo.
type staticClient struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	AuthMethod   string `json:"token_endpoint_auth_method"`
	Issuer       string `json:"issuer"`
}

// canonicalURL is the server URL as a resource identifier: scheme and host
// lower case, the default port and the fragment dropped. The path and query
// are kept as given.
func canonicalURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the server URL must be an absolute http:// or https:// URL")
	}
	c := *u
	c.Scheme = strings.ToLower(c.Scheme)
	host := strings.ToLower(c.Hostname())
	port := c.Port()
	if (c.Scheme == "https" && port == "443") || (c.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	c.Host = host
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	return &c, nil
}

// displayURL is u without userinfo or query, for messages.
func displayURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery, c.ForceQuery = "", false
	c.Fragment, c.RawFragment = "", ""
	return c.String()
}

// checkEndpoint refuses an endpoint URL that is not https (or http to
// this machine, or http anywhere under AllowHTTP).
func (m *discoverer) checkEndpoint(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s %q is not an absolute URL", what, clip(raw, 200))
	}
	ip := net.ParseIP(u.Hostname())
	loopback := strings.EqualFold(u.Hostname(), "localhost") || ip != nil && ip.IsLoopback()
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && (loopback || m.allowHTTP):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%s %s is plain http:// to another machine; credentials would go unencrypted (%v to insist)", what, displayURL(u), rewrite.HintAllowHTTP)
	}
	return fmt.Errorf("%s %q is not an http(s) URL", what, clip(raw, 200))
}

// sameOriginRedirect is the redirect policy of every request the package
// makes, as routing's: follow only to the same scheme, host and port,
// keeping the method, at most 10 times.
func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	first := via[0]
	ca, errA := canonicalURL(first.URL.String())
	cb, errB := canonicalURL(req.URL.String())
	switch {
	case len(via) >= 10:
		return fmt.Errorf("more than 10 redirects from %s", displayURL(first.URL))
	case req.Method != via[len(via)-1].Method:
		return fmt.Errorf("%s redirected a %s to a %s; not followed", displayURL(first.URL), first.Method, req.Method)
	case errA != nil || errB != nil || ca.Scheme != cb.Scheme || ca.Host != cb.Host:
		return fmt.Errorf("%s redirected to another origin, %s; not followed, so credentials stay with their origin", displayURL(first.URL), displayURL(req.URL))
	}
	return nil
}
