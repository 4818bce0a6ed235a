package routing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// recorder is a server that records every request it gets and answers it
// with a JSON-RPC result.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	method, path, body string
	header             http.Header
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.seen = append(rec.seen, seenRequest{r.Method, r.URL.Path, string(b), r.Header.Clone()})
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(rec.Close)
	return rec
}

// requests returns what the server got so far. A request the client sent
// has been handled before the client's call returns: the handler runs
// before the answer is written.
func (r *recorder) requests() []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenRequest(nil), r.seen...)
}

// redirector answers every request with status and Location: to.
func redirector(t *testing.T, status int, to string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Location", to)
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// call is one of the client's request paths: 2026 Post, and the 2025
// passthrough's POST, GET stream and DELETE.
type call struct {
	name string
	do   func(ctx context.Context, c *Client) (*Response, error)
}

const redirectBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"grüße","arguments":{"city":"Paris"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`

var calls = []call{
	{"Post", func(ctx context.Context, c *Client) (*Response, error) {
		return c.Post(ctx, []byte(redirectBody), []ParamHeader{{Name: "City", Path: "params.arguments.city"}})
	}},
	{"Send POST", func(ctx context.Context, c *Client) (*Response, error) {
		return c.Send(ctx, http.MethodPost, []byte(redirectBody), http.Header{"Mcp-Session-Id": {"s-1"}})
	}},
	{"Send GET", func(ctx context.Context, c *Client) (*Response, error) {
		return c.Send(ctx, http.MethodGet, nil, http.Header{"Mcp-Session-Id": {"s-1"}})
	}},
	{"Send DELETE", func(ctx context.Context, c *Client) (*Response, error) {
		return c.Send(ctx, http.MethodDelete, nil, http.Header{"Mcp-Session-Id": {"s-1"}})
	}},
}

func wantRedirectRefused(t *testing.T, err error, reason RedirectReason, has ...string) {
	t.Helper()
	var te *TransportError
	if !errors.As(err, &te) || te.Kind != KindRedirect {
		t.Fatalf("err = %v (%T), want a TransportError of KindRedirect", err, err)
	}
	if !errors.Is(err, ErrRedirect) {
		t.Errorf("errors.Is(%v, ErrRedirect) = false", err)
	}
	var re *RedirectError
	if !errors.As(err, &re) || re.Reason != reason {
		t.Errorf("err = %#v, want reason %d", re, reason)
	}
	msg := err.Error()
	for _, s := range append(has, "point the proxy at the final URL") {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not mention %q", msg, s)
		}
	}
}

// Credentials stay with their origin: a redirect to another port is another
// origin. It is not followed, whatever the status and the request path, and the
// other server sees nothing: no request, so no Authorization and no --header
// value. Its userinfo and query secrets stay out of the error.
func TestRedirectToAnotherOriginNotFollowed(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the servers' cleanups
	other := newRecorder(t)
	u, _ := url.Parse(other.URL)
	target := "http://alice:hunter2@" + u.Host + "/mcp?token=topsecret"
	for _, status := range []int{301, 302, 303, 307, 308} {
		first := redirector(t, status, target)
		c, err := New(Config{URL: first.URL + "/mcp", Header: http.Header{"Authorization": {"Bearer secret"}, "X-Api-Key": {"k"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range calls {
			t.Run(http.StatusText(status)+"/"+cl.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				resp, err := cl.do(ctx, c)
				if err == nil {
					resp.Close()
					t.Fatalf("HTTP %d to %s was followed", status, target)
				}
				reason := RedirectOtherOrigin
				if cl.name != "Send GET" && status <= 303 {
					reason = RedirectMethodChange // checked first: it holds whatever the target
				}
				wantRedirectRefused(t, err, reason, "http://REDACTED@"+u.Host+"/mcp", first.URL)
				for _, secret := range []string{"hunter2", "topsecret"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("message %q shows the secret %q of the target", err, secret)
					}
				}
			})
		}
		c.CloseIdle()
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the other origin got %d requests, want none; the first: %s %s %v", len(got), got[0].method, got[0].path, got[0].header)
	}
}

// A redirect from https to http is refused, and says so.
func TestRedirectHTTPSToHTTPRefused(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the servers' cleanups
	plain := newRecorder(t)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer tlsSrv.Close()
	tr := tlsSrv.Client().Transport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	c, err := New(Config{URL: tlsSrv.URL + "/mcp", Header: http.Header{"Authorization": {"Bearer secret"}}, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range calls {
		resp, err := cl.do(context.Background(), c)
		if err == nil {
			resp.Close()
			t.Fatalf("%s: https to http was followed", cl.name)
		}
		wantRedirectRefused(t, err, RedirectInsecure, "https to plain http", plain.URL+"/mcp")
	}
	if got := plain.requests(); len(got) != 0 {
		t.Errorf("the http server got %d requests after an https redirect, want none", len(got))
	}
}

// A same-origin 307 or 308 is followed with the method, the body and every
// header intact: the derived MCP headers, the user's and the session's.
func TestRedirectSameOriginKeepsMethodBodyAndHeaders(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the servers' cleanups
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var mu sync.Mutex
		var seen []seenRequest
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old" {
				http.Redirect(w, r, "/new", status)
				return
			}
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			seen = append(seen, seenRequest{r.Method, r.URL.Path, string(b), r.Header.Clone()})
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		}))
		c, err := New(Config{URL: srv.URL + "/old", Header: http.Header{"Authorization": {"Bearer secret"}, "X-Custom": {"kept"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range calls {
			resp, err := cl.do(context.Background(), c)
			if err != nil {
				t.Fatalf("HTTP %d %s: %v", status, cl.name, err)
			}
			resp.Close()
		}
		c.CloseIdle()
		srv.Close()
		if len(seen) != len(calls) {
			t.Fatalf("HTTP %d: %d requests reached /new, want %d", status, len(seen), len(calls))
		}
		for i, s := range seen {
			name := calls[i].name
			want := strings.TrimPrefix(name, "Send ")
			if name == "Post" {
				want = http.MethodPost
			}
			if s.method != want || s.path != "/new" {
				t.Errorf("HTTP %d %s: %s %s, want %s /new", status, name, s.method, s.path, want)
			}
			if s.header.Get("Authorization") != "Bearer secret" || s.header.Get("X-Custom") != "kept" {
				t.Errorf("HTTP %d %s: user headers lost: %v", status, name, s.header)
			}
			switch name {
			case "Post":
				if s.body != redirectBody || s.header.Get("Mcp-Method") != "tools/call" || s.header.Get("Mcp-Name") != EncodeValue("grüße") ||
					s.header.Get("Mcp-Param-City") != "Paris" || s.header.Get("Content-Type") != "application/json" {
					t.Errorf("HTTP %d Post: body %q headers %v", status, s.body, s.header)
				}
			case "Send POST":
				if s.body != redirectBody || s.header.Get("Mcp-Session-Id") != "s-1" || s.header.Get("Content-Type") != "application/json" {
					t.Errorf("HTTP %d Send POST: body %q headers %v", status, s.body, s.header)
				}
			default:
				if s.body != "" || s.header.Get("Mcp-Session-Id") != "s-1" {
					t.Errorf("HTTP %d %s: body %q headers %v", status, name, s.body, s.header)
				}
			}
		}
	}
}

// A 301, 302 or 303 would turn a POST into a GET: refused even on the same
// origin. A GET stays a GET, so it is followed.
func TestRedirectMethodChangeRefusedOnSameOrigin(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the servers' cleanups
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		var mu sync.Mutex
		var reached []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old" {
				http.Redirect(w, r, "/new", status)
				return
			}
			mu.Lock()
			reached = append(reached, r.Method)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
		}))
		c, err := New(Config{URL: srv.URL + "/old"})
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range calls {
			resp, err := cl.do(context.Background(), c)
			if cl.name == "Send GET" {
				if err != nil {
					t.Errorf("HTTP %d GET on the same origin: %v", status, err)
				} else {
					resp.Close()
				}
				continue
			}
			if err == nil {
				resp.Close()
				t.Errorf("HTTP %d %s: followed as a GET", status, cl.name)
				continue
			}
			wantRedirectRefused(t, err, RedirectMethodChange, "into a GET", srv.URL+"/new")
		}
		c.CloseIdle()
		srv.Close()
		if len(reached) != 1 || reached[0] != http.MethodGet {
			t.Errorf("HTTP %d: /new got %v, want only the GET", status, reached)
		}
	}
}

// A redirect loop on one origin ends after 10 hops with a clear error.
func TestRedirectLoopStops(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the servers' cleanups
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Redirect(w, r, r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c, _ := New(Config{URL: srv.URL + "/loop"})
	defer c.CloseIdle()
	_, err := c.Post(context.Background(), []byte(redirectBody), nil)
	wantRedirectRefused(t, err, RedirectTooMany, "more than 10 times")
}

func TestSameOrigin(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"https://h.example/mcp", "https://h.example/other?x=1", true},
		{"https://h.example/mcp", "https://h.example:443/mcp", true},
		{"http://h.example/mcp", "http://h.example:80/mcp", true},
		{"HTTPS://H.Example/mcp", "https://h.example/mcp", true},
		{"http://127.0.0.1:8080/", "http://127.0.0.1:8081/", false},
		{"https://h.example/", "http://h.example/", false},
		{"http://h.example:443/", "https://h.example/", false},
		{"https://h.example/", "https://sub.h.example/", false},
		{"http://127.0.0.1:8080/", "http://localhost:8080/", false},
		{"http://[::1]:8080/", "http://[::1]:8080/x", true},
	} {
		a, _ := url.Parse(tt.a)
		b, _ := url.Parse(tt.b)
		if got := sameOrigin(a, b); got != tt.same {
			t.Errorf("sameOrigin(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}
