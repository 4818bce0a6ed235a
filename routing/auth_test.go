package routing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// fakeAuth is an Auth whose token is "Bearer t<gen>": Retry moves to the
// next generation when want says so.
type fakeAuth struct {
	mu      sync.Mutex
	gen     int
	retries []string // "status sent"
	again   bool
	authErr error
	err     error
}

func (a *fakeAuth) Authorization(context.Context) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.authErr != nil {
		return "", a.authErr
	}
	if a.gen == 0 {
		return "", nil
	}
	return "Bearer t" + string(rune('0'+a.gen)), nil
}

func (a *fakeAuth) Retry(_ context.Context, status int, h http.Header, sent string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.retries = append(a.retries, http.StatusText(status)+" "+sent+" "+h.Get("WWW-Authenticate"))
	if a.err != nil {
		return false, a.err
	}
	if a.again {
		a.gen++
	}
	return a.again, nil
}

// authServer accepts only "Bearer t<want>" and records every request.
type authServer struct {
	mu     sync.Mutex
	want   string
	status int // the refusal: 401 or 403
	seen   []string
}

func (s *authServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.Header.Get("Authorization")+" "+string(b))
	ok := r.Header.Get("Authorization") == s.want
	status := s.status
	s.mu.Unlock()
	if !ok {
		if status == http.StatusForbidden {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="write"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://x/.well-known/oauth-protected-resource"`)
		}
		w.WriteHeader(status)
		io.WriteString(w, "refused")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
}

func newAuthClient(t *testing.T, srv *httptest.Server, a Auth) *Client {
	t.Helper()
	c, err := New(Config{URL: srv.URL, Auth: a, Header: http.Header{"Authorization": {"Bearer user"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdle)
	return c
}

const callBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`

// postCall posts callBody through c and closes the response, for its
// status.
func postCall(t *testing.T, c *Client) *Response {
	t.Helper()
	resp, err := c.Post(context.Background(), []byte(callBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Close()
	return resp
}

// A 401 is told to the hook, and the same body (a tools/call) goes once
// more with the new header.
func TestAuthRetriesOnceAfter401(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &authServer{want: "Bearer t2", status: http.StatusUnauthorized}
	srv := httptest.NewServer(s)
	defer srv.Close()
	a := &fakeAuth{gen: 1, again: true}
	c := newAuthClient(t, srv, a)
	resp := postCall(t, c)
	if resp.Status != 200 {
		t.Fatalf("status %d", resp.Status)
	}
	want := []string{"POST Bearer t1 " + callBody, "POST Bearer t2 " + callBody}
	if strings.Join(s.seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("server saw\n%s\nwant\n%s", strings.Join(s.seen, "\n"), strings.Join(want, "\n"))
	}
	if len(a.retries) != 1 || !strings.HasPrefix(a.retries[0], "Unauthorized Bearer t1 Bearer resource_metadata=") {
		t.Fatalf("Retry calls %q", a.retries)
	}
}

// A second refusal is the caller's: no loop.
func TestAuthRetryIsOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &authServer{want: "never", status: http.StatusUnauthorized}
	srv := httptest.NewServer(s)
	defer srv.Close()
	a := &fakeAuth{gen: 1, again: true}
	c := newAuthClient(t, srv, a)
	resp := postCall(t, c)
	if resp.Status != http.StatusUnauthorized || len(s.seen) != 2 || len(a.retries) != 1 {
		t.Fatalf("status %d, %d requests, %d retries; want 401, 2, 1", resp.Status, len(s.seen), len(a.retries))
	}
}

// A 403 insufficient_scope is a step-up; a plain 403 is not the hook's.
func TestAuth403(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &authServer{want: "Bearer t2", status: http.StatusForbidden}
	srv := httptest.NewServer(s)
	defer srv.Close()
	a := &fakeAuth{gen: 1, again: true}
	c := newAuthClient(t, srv, a)
	resp := postCall(t, c)
	if resp.Status != 200 || len(a.retries) != 1 || !strings.Contains(a.retries[0], "insufficient_scope") {
		t.Fatalf("status %d retries %q", resp.Status, a.retries)
	}

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer plain.Close()
	a2 := &fakeAuth{gen: 1, again: true}
	c2 := newAuthClient(t, plain, a2)
	resp = postCall(t, c2)
	if resp.Status != http.StatusForbidden || len(a2.retries) != 0 {
		t.Fatalf("plain 403: status %d retries %q", resp.Status, a2.retries)
	}
}

// Retry false: the refusal goes to the caller, body intact.
func TestAuthRetryFalseReturnsRefusal(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &authServer{want: "x", status: http.StatusUnauthorized}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := newAuthClient(t, srv, &fakeAuth{gen: 1})
	resp, err := c.Post(context.Background(), []byte(callBody), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	b, _ := io.ReadAll(resp.body)
	if resp.Status != 401 || string(b) != "refused" || len(s.seen) != 1 {
		t.Fatalf("status %d body %q requests %d", resp.Status, b, len(s.seen))
	}
}

var errSignIn = errors.New("sign-in to example.com did not complete; run mcp-tasks-proxy auth login URL")

// Errors from the hook become KindAuth, with the hook's own text.
func TestAuthErrorsAreKindAuth(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &authServer{want: "x", status: http.StatusUnauthorized}
	srv := httptest.NewServer(s)
	defer srv.Close()
	for name, a := range map[string]*fakeAuth{
		"Authorization": {authErr: errSignIn},
		"Retry":         {gen: 1, err: errSignIn},
	} {
		c := newAuthClient(t, srv, a)
		_, err := c.Post(context.Background(), []byte(callBody), nil)
		var te *TransportError
		if !errors.As(err, &te) || te.Kind != KindAuth || !errors.Is(err, errSignIn) || err.Error() != errSignIn.Error() {
			t.Errorf("%s: err = %v, want a KindAuth TransportError with the hook's text", name, err)
		}
	}
	if len(s.seen) != 1 {
		t.Errorf("server saw %d requests, want 1 (none after an Authorization error)", len(s.seen))
	}
}

// The 2025 passthrough: POST, the GET stream and the DELETE all carry the
// hook's header, which replaces a --header Authorization; "" sends the
// user's.
func TestAuthOnEveryPassthroughRequest(t *testing.T) {
	defer goleak.VerifyNone(t)
	s := &authServer{want: "Bearer t1", status: http.StatusUnauthorized}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c := newAuthClient(t, srv, &fakeAuth{gen: 1})
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		var b []byte
		if m == http.MethodPost {
			b = []byte(callBody)
		}
		resp, err := c.Send(context.Background(), m, b, http.Header{"Mcp-Session-Id": {"s"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Close()
		if resp.Status != 200 {
			t.Errorf("%s: status %d", m, resp.Status)
		}
	}
	c0 := newAuthClient(t, srv, &fakeAuth{})
	postCall(t, c0)
	if got := s.seen[len(s.seen)-1]; !strings.HasPrefix(got, "POST Bearer user ") {
		t.Errorf("with no token the user's header goes: %q", got)
	}
}
