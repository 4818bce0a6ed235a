package oauth

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// A server that answers 401 but publishes no OAuth metadata at all (it
// wants an API key or a static token) is not an OAuth server: Retry passes
// the 401 on, so the caller reports it with the --header way out, and no
// browser opens. A server whose metadata cannot be fetched (a 5xx) is an
// error, as before.
func TestNoOAuthMetadataPassesThe401On(t *testing.T) {
	var fail atomic.Bool
	srv := newHTTPTest(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		http.NotFound(w, r)
	}))
	opened := 0
	c := newBare(t, srv.URL+"/mcp", nil)
	c.user.open = func(string) error { opened++; return nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := http.Header{"Www-Authenticate": {`Bearer realm="api"`}}
	again, err := c.Retry(ctx, http.StatusUnauthorized, h, "")
	if again || err != nil {
		t.Errorf("Retry = %v, %v; want false, nil: the 401 goes to the caller", again, err)
	}
	fail.Store(true)
	if again, err := c.Retry(ctx, http.StatusUnauthorized, h, ""); again || err == nil {
		t.Errorf("Retry with failing metadata = %v, %v; want an error", again, err)
	}
	if opened != 0 {
		t.Errorf("%d browsers opened, want none", opened)
	}
}
