package authserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// BrowseOptions say how [Browse] plays the user.
type BrowseOptions struct {
	// Never fetches the first URL (so the authorization server records
	// the request) and follows no redirect: a user who never signs in.
	Never bool
	// TamperState replaces the state parameter of the callback URL.
	TamperState bool
	// Twice fetches the callback URL a second time (ignoring how that
	// goes: the listener may have closed).
	Twice bool
	// NoCallback stops before fetching the callback URL and returns it,
	// as a user of a headless machine who copies it from the address bar.
	NoCallback bool
	// Client makes the requests; default a fresh client. Its
	// CheckRedirect is not used.
	Client *http.Client
}

// maxHops bounds the redirects Browse follows.
const maxHops = 10

// Browse plays a browser: it fetches rawURL and follows redirects, and
// treats the first redirect that leaves rawURL's origin as the callback to
// the client (the proxy's loopback listener). It returns the callback URL
// (after tampering) or "" if there was none. A 4xx or 5xx answer from the
// authorization server is an error; the callback's own answer is not.
func Browse(ctx context.Context, rawURL string, o BrowseOptions) (callback string, err error) {
	start, err := url.Parse(rawURL)
	if err != nil || start.Host == "" {
		return "", fmt.Errorf("browse: bad URL %q", rawURL)
	}
	base := o.Client
	if base == nil {
		base = &http.Client{Transport: &http.Transport{}}
		defer base.CloseIdleConnections()
	}
	c := *base
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	get := func(u string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/html")
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return resp, nil
	}

	cur := start
	for range maxHops {
		resp, err := get(cur.String())
		if err != nil {
			return "", fmt.Errorf("browse: %w", err)
		}
		if o.Never {
			return "", nil
		}
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
			if resp.StatusCode >= 400 {
				return "", fmt.Errorf("browse: %s answered HTTP %d", cur.Redacted(), resp.StatusCode)
			}
			return "", nil // a page that does not redirect (consent never comes)
		}
		next, err := cur.Parse(loc)
		if err != nil {
			return "", fmt.Errorf("browse: bad Location %q: %w", loc, err)
		}
		if next.Scheme == start.Scheme && next.Host == start.Host {
			cur = next
			continue
		}
		// The callback.
		if o.TamperState {
			q := next.Query()
			q.Set("state", "tampered-"+q.Get("state"))
			next.RawQuery = q.Encode()
		}
		if o.NoCallback {
			return next.String(), nil
		}
		if _, err := get(next.String()); err != nil {
			return next.String(), fmt.Errorf("browse: callback: %w", err)
		}
		if o.Twice {
			// The listener may be gone by now; that is its right.
			_, _ = get(next.String())
		}
		return next.String(), nil
	}
	return "", errors.New("browse: too many redirects")
}
