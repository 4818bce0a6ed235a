package authserver

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// audience is the resources (RFC 8707) the server issues tokens for.
type audience struct {
	mu      sync.Mutex
	allowed map[string]bool
}

func newAudience(resources []string) audience {
	allowed := map[string]bool{}
	for _, r := range resources {
		allowed[r] = true
	}
	return audience{allowed: allowed}
}

// AllowResource adds resources to the allowed resource indicators.
func (a *audience) AllowResource(resources ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range resources {
		a.allowed[r] = true
	}
}

// check validates the resource parameters of a request: exactly one, an
// absolute URI without fragment, allowed, and equal to want when want is
// set.
func (a *audience) check(rs []string, want string) (string, *oauthError) {
	switch len(rs) {
	case 0:
		return "", errf(http.StatusBadRequest, "invalid_request", "resource (RFC 8707) is required")
	case 1:
	default:
		return "", errf(http.StatusBadRequest, "invalid_target", "only one resource is supported")
	}
	res := rs[0]
	u, err := url.Parse(res)
	if err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(res, "#") {
		return "", errf(http.StatusBadRequest, "invalid_target", "resource %q is not an absolute URI without fragment", res)
	}
	a.mu.Lock()
	allowed := a.allowed[res]
	a.mu.Unlock()
	if !allowed {
		return "", errf(http.StatusBadRequest, "invalid_target", "resource %q is not served here", res)
	}
	if want != "" && res != want {
		return "", errf(http.StatusBadRequest, "invalid_target", "resource %q differs from the granted resource", res)
	}
	return res, nil
}
