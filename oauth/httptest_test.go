package oauth

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

type httptestServer = httptest.Server

func newHTTPTest(t *testing.T, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// storeDir is a store directory that does not exist yet (t.TempDir's own
// mode is 0755, which the store refuses).
func storeDir(t *testing.T) string { return filepath.Join(t.TempDir(), "store") }
