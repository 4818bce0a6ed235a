package authserver

import (
	"slices"
	"sync"
)

// journal is what the server has done, for tests to inspect: the
// counters, every request received, and every secret issued or seen. Its
// lock is taken last: no other lock is taken under it.
type journal struct {
	mu        sync.Mutex
	stats     Stats
	secrets   []string
	authReqs  []AuthorizeRequest
	tokenReqs []TokenRequest
}

// Stats returns the counters so far.
func (j *journal) Stats() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.stats
}

// AuthorizeRequests returns every authorization request received, in order.
func (j *journal) AuthorizeRequests() []AuthorizeRequest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.authReqs)
}

// TokenRequests returns every token request received, in order.
func (j *journal) TokenRequests() []TokenRequest {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.tokenReqs)
}

// Secrets returns every secret the server has issued or seen: access and
// refresh tokens, authorization codes, client secrets, and the PKCE code
// verifiers presented to it. A test scans every output of the proxy for
// each of them.
func (j *journal) Secrets() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.secrets)
}

// newSecret returns a fresh random secret with a prefix naming its kind,
// recorded in the secrets list.
func (j *journal) newSecret(prefix string) string {
	v := newRandom(prefix)
	j.keepSecret(v)
	return v
}

// keepSecret records a secret the server was shown.
func (j *journal) keepSecret(v string) {
	j.mu.Lock()
	j.secrets = append(j.secrets, v)
	j.mu.Unlock()
}

// count updates the counters.
func (j *journal) count(f func(*Stats)) {
	j.mu.Lock()
	f(&j.stats)
	j.mu.Unlock()
}

// logAuthorize records an authorization request and the error it was
// answered with ("" for none).
func (j *journal) logAuthorize(rec AuthorizeRequest, errCode string) {
	rec.Error = errCode
	j.mu.Lock()
	j.authReqs = append(j.authReqs, rec)
	j.mu.Unlock()
}

// logToken records a token request and the error it was answered with
// (nil for none), which counts as a TokenErrors.
func (j *journal) logToken(rec TokenRequest, e *oauthError) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if e != nil {
		rec.Error = e.Code
		j.stats.TokenErrors++
	}
	j.tokenReqs = append(j.tokenReqs, rec)
}
