package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// access is the DNS-rebinding protection of the 2025 transport (and the
// lesson of CVE-2025-49596): an Origin must be a loopback origin or one
// allowed, and the Host must be what a browser sends for a page that
// targets this listener: a loopback name (localhost, *.localhost,
// 127.0.0.0/8, [::1]) or the listen host, with the port the request came
// in on (no port only when that is 80, http's default); or an allowed
// origin's host, with that port or the origin's own (none, or the
// scheme's default, for an origin without one: a TLS front that keeps the
// Host).
type access struct {
	origins     map[string]bool     // normalized allowed origins
	hosts       map[string]bool     // the listen host, lower-case
	originHosts map[string][]string // an allowed origin's host: its ports ("" for none)
	anyHost     bool
}

// newAccess prepares the checks. With a token and a listen address on
// every interface, any Host is accepted: the server is reached under names
// it cannot know (a balancer's, a pod's address), and a rebinding page
// cannot send the token.
func newAccess(listenHost string, allowOrigins []string, token bool) access {
	a := access{origins: map[string]bool{}, hosts: map[string]bool{}, originHosts: map[string][]string{}}
	h := strings.ToLower(strings.Trim(listenHost, "[]"))
	switch {
	case h == "" || h == "0.0.0.0" || h == "::":
		a.anyHost = token
	default:
		a.hosts[h] = true
	}
	for _, o := range allowOrigins {
		n, host, ok := NormalizeOrigin(o)
		if !ok {
			continue
		}
		a.origins[n] = true
		ports := []string{"", "80"}
		if strings.HasPrefix(n, "https:") {
			ports[1] = "443"
		}
		if u, err := url.Parse(n); err == nil && u.Port() != "" {
			ports = []string{u.Port()} // an explicit port, not the scheme's default
		}
		a.originHosts[host] = append(a.originHosts[host], ports...)
	}
	return a
}

func (a access) check(r *http.Request) string {
	port := 0 // of the listener r came in on; 0 for a handler called directly
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		port = addr.Port
	}
	if !a.hostOK(r.Host, port) {
		at := ""
		if port != 0 {
			at = " with its port, " + strconv.Itoa(port) + ","
		}
		return "Forbidden: the Host header " + quoteShort(r.Host) + " does not name this server; reach it by a loopback name or its listen address" + at + " or allow the name with " + rewrite.HintAllowOrigin.String()
	}
	if o := r.Header.Get("Origin"); o != "" {
		if n, host, ok := NormalizeOrigin(o); ok && (isLoopbackName(host) || a.origins[n]) {
			return ""
		}
		return "Forbidden: the Origin " + quoteShort(o) + " is not allowed; only loopback origins are, unless " + rewrite.HintAllowOrigin.String() + " lists it"
	}
	return ""
}

// hostOK checks a Host header against the listener on port (0: unknown,
// any port passes).
func (a access) hostOK(hostport string, port int) bool {
	if a.anyHost {
		return true
	}
	host, hp := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, hp = h, p
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	portOK := port == 0 || hp == strconv.Itoa(port) || (hp == "" && port == 80)
	if (isLoopbackName(host) || a.hosts[host]) && portOK {
		return true
	}
	ports, ok := a.originHosts[host]
	return ok && (portOK || slices.Contains(ports, hp))
}

// NormalizeOrigin reads an origin (scheme://host[:port], as browsers send
// it): its lower-case form without a default port, and its host. ok is
// false for anything else ("null", a path, another scheme).
func NormalizeOrigin(origin string) (normalized, host string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", "", false
	}
	host = strings.ToLower(u.Hostname())
	port := u.Port()
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	hp := host
	if strings.Contains(host, ":") {
		hp = "[" + host + "]"
	}
	if port != "" {
		hp += ":" + port
	}
	return scheme + "://" + hp, host, true
}

// isLoopbackName reports whether host names this machine: localhost,
// 127.0.0.0/8 or ::1.
func isLoopbackName(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackListen reports whether a listen address binds loopback only.
func IsLoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return isLoopbackName(strings.ToLower(host))
}

// bearerMatches compares an Authorization header with the token in
// constant time (of the hashes, so the length does not show either).
func bearerMatches(header, token string) bool {
	scheme, value, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		value = ""
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(value)))
	want := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && value != ""
}

// quoteShort quotes a header value for a message, cut to 100 bytes.
func quoteShort(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return '?'
		}
		return r
	}, v) + `"`
}
