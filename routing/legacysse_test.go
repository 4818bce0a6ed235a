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
	"time"
)

// legacyServer is a minimal 2024-11-05 server: GET /sse opens a stream
// whose first event is the endpoint given, then one message; POSTs are
// recorded and answered 202.
type legacyServer struct {
	endpoint string // the endpoint event's data; "" sends a message first
	mu       sync.Mutex
	seen     []string // "METHOD path?query Authorization X-User body"
	release  chan struct{}
}

func (s *legacyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization")+" "+r.Header.Get("X-User")+" "+string(b))
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/sse":
		http.Error(w, "use the endpoint", http.StatusMethodNotAllowed)
	case r.Method == http.MethodPost:
		w.WriteHeader(http.StatusAccepted)
	case r.URL.Path == "/redirect":
		http.Redirect(w, r, "/sse", http.StatusTemporaryRedirect)
	default:
		w.Header().Set("Content-Type", "text/event-stream")
		if s.endpoint == "" {
			io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n")
		} else {
			io.WriteString(w, ": hi\nevent: endpoint\ndata: "+s.endpoint+"\n\n")
		}
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-s.release:
		case <-r.Context().Done():
		}
	}
}

func newLegacy(t *testing.T, endpoint string) (*legacyServer, *httptest.Server) {
	s := &legacyServer{endpoint: endpoint, release: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { close(s.release); srv.Close() })
	return s, srv
}

func TestOpenLegacyEndpoint(t *testing.T) {
	for _, tc := range []struct{ name, endpoint, path, want string }{
		{"relative", "/messages?sessionId=abc", "/sse", "/messages?sessionId=abc"},
		{"relative to the path", "messages?s=1", "/mcp/sse", "/mcp/messages?s=1"},
		{"absolute same origin", "ORIGIN/m?s=2", "/sse", "/m?s=2"},
		{"after a same-origin redirect", "m2", "/redirect", "/m2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := newLegacy(t, "")
			s.endpoint = strings.ReplaceAll(tc.endpoint, "ORIGIN", srv.URL)
			auth := &fakeAuth{gen: 1}
			c, err := New(Config{URL: srv.URL + tc.path, Header: http.Header{"X-User": {"u"}}, Auth: auth})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := c.OpenLegacy(ctx, 0)
			if err != nil {
				t.Fatalf("OpenLegacy: %v", err)
			}
			defer st.Close()
			if st.Endpoint != srv.URL+tc.want {
				t.Errorf("Endpoint = %q, want %q", st.Endpoint, srv.URL+tc.want)
			}
			msg, err := st.Next()
			if err != nil || string(msg) != `{"jsonrpc":"2.0","id":1,"result":{}}` || st.Event() != "message" {
				t.Errorf("Next = %q %v (event %q), want the message after the endpoint", msg, err, st.Event())
			}
			resp, err := c.SendTo(ctx, st.Endpoint, []byte(`{"jsonrpc":"2.0","method":"n"}`))
			if err != nil {
				t.Fatalf("SendTo: %v", err)
			}
			resp.Close()
			if resp.Status != http.StatusAccepted {
				t.Errorf("POST status %d, want 202", resp.Status)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			last := s.seen[len(s.seen)-1]
			if want := "POST " + tc.want + " Bearer t1 u {\"jsonrpc\":\"2.0\",\"method\":\"n\"}"; last != want {
				t.Errorf("the POST upstream = %q, want %q (the user's header and the hook's token on it)", last, want)
			}
			if !strings.HasPrefix(s.seen[0], "GET "+tc.path+" Bearer t1 u") {
				t.Errorf("the GET upstream = %q, want the user's header and the hook's token on it", s.seen[0])
			}
		})
	}
}

func TestOpenLegacyRefusesOtherOrigins(t *testing.T) {
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	for _, ep := range []string{other.URL + "/m?sessionId=secret", "https://" + strings.TrimPrefix(other.URL, "http://") + "/m", "//evil.example/m"} {
		s, srv := newLegacy(t, ep)
		_ = s
		c, _ := New(Config{URL: srv.URL + "/sse"})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.OpenLegacy(ctx, 0)
		cancel()
		var ee *EndpointError
		if !errors.As(err, &ee) {
			if st != nil {
				st.Close()
			}
			t.Fatalf("endpoint %s: err = %v, want an EndpointError", ep, err)
		}
		if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "another origin") {
			t.Errorf("error %q: want it to say another origin, without the query values", err)
		}
	}
	c, _ := New(Config{URL: "http://127.0.0.1:1/sse"})
	if _, err := c.SendTo(context.Background(), other.URL+"/m", nil); !errors.As(err, new(*EndpointError)) {
		t.Errorf("SendTo another origin: err = %v, want an EndpointError", err)
	}
}

func TestOpenLegacyNotLegacy(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/404", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
	})
	mux.HandleFunc("/silent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, msgFirst := newLegacy(t, "")
	for _, tc := range []struct{ url, want string }{
		{srv.URL + "/404", "HTTP 404"},
		{srv.URL + "/json", "not an event stream"},
		{srv.URL + "/empty", "ended before an endpoint event"},
		{srv.URL + "/silent", "no endpoint event within 100ms"},
		{msgFirst.URL + "/sse", `first event is "message"`},
	} {
		c, _ := New(Config{URL: tc.url})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.OpenLegacy(ctx, 100*time.Millisecond)
		cancel()
		var ne *NotLegacyError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want a NotLegacyError saying %q", tc.url, err, tc.want)
		}
	}
}

func TestSSEReaderEventType(t *testing.T) {
	r := NewSSEReader(strings.NewReader("event: endpoint\ndata: /m\n\nevent: ping\n\ndata: a\n\nevent: message\ndata: b"), 0)
	for _, want := range []struct{ data, event string }{{"/m", "endpoint"}, {"a", ""}, {"b", "message"}} {
		d, err := r.Next()
		if err != nil || string(d) != want.data || r.event != want.event {
			t.Errorf("Next = %q %v event %q, want %q event %q", d, err, r.event, want.data, want.event)
		}
	}
}
