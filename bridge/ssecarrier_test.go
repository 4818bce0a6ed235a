package bridge

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// markAuth gives unattended requests (routing.Unattended) another token, so
// that the server sees which requests were marked.
type markAuth struct{}

func (markAuth) Authorization(ctx context.Context) (string, error) {
	if routing.IsUnattended(ctx) {
		return "Bearer unattended", nil
	}
	return "Bearer attended", nil
}

func (markAuth) Retry(context.Context, int, http.Header, string) (bool, error) { return false, nil }

// tinySSE is a hand-written 2024-11-05 server: each GET is a session whose
// stream answers every request POSTed to its endpoint with an empty result
// (initialize with a 2024-11-05 InitializeResult).
type tinySSE struct {
	mu      sync.Mutex
	seen    []string              // "METHOD path Authorization rpc-method"
	streams map[int]chan string   // by session
	drops   map[int]chan struct{} // closing one ends that session's stream
	changed chan struct{}
}

func (s *tinySSE) record(r *http.Request, method string) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+method)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *tinySSE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet:
		s.record(r, "")
		s.mu.Lock()
		n := len(s.streams) + 1
		ch, drop := make(chan string, 16), make(chan struct{})
		s.streams[n], s.drops[n] = ch, drop
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: /m?s="+strconv.Itoa(n)+"\n\n")
		w.(http.Flusher).Flush()
		for {
			select {
			case m := <-ch:
				io.WriteString(w, "event: message\ndata: "+m+"\n\n")
				w.(http.Flusher).Flush()
			case <-drop:
				return
			case <-r.Context().Done():
				return
			}
		}
	case r.URL.Path == "/m":
		b, _ := io.ReadAll(r.Body)
		msg := gjson.ParseBytes(b)
		s.record(r, msg.Get("method").String())
		n, _ := strconv.Atoi(r.URL.Query().Get("s"))
		s.mu.Lock()
		ch := s.streams[n]
		s.mu.Unlock()
		if ch == nil {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		if id := msg.Get("id"); id.Exists() && msg.Get("method").Exists() {
			result := `{}`
			if msg.Get("method").String() == "initialize" {
				result = `{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"tiny","version":"1"}}`
			}
			ch <- `{"jsonrpc":"2.0","id":` + id.Raw + `,"result":` + result + `}`
		}
	default:
		http.Error(w, "not here", http.StatusMethodNotAllowed)
	}
}

func (s *tinySSE) waitSeen(t *testing.T, desc string, pred func([]string) bool) []string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		seen := append([]string(nil), s.seen...)
		s.mu.Unlock()
		if pred(seen) {
			return seen
		}
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; seen %q", desc, seen)
		}
	}
}

// The first GET may start a sign-in (a person is there to connect); the
// GET that reconnects after a drop is unattended. Both carry the hook's
// token, and so does every POST; the reconnect re-initializes.
func TestSSEReconnectIsUnattended(t *testing.T) {
	up := &tinySSE{streams: map[int]chan string{}, drops: map[int]chan struct{}{}, changed: make(chan struct{}, 1)}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close) // after the session's end (cleanups run last first): its stream is open till then
	client, err := routing.New(routing.Config{URL: srv.URL, Auth: markAuth{}})
	if err != nil {
		t.Fatal(err)
	}
	h := run(t, New(Config{Client: client, Hints: flagHints}), client)
	h.send(initReq)
	if r := h.next(); gjson.Get(r, "result.protocolVersion").Str != "2024-11-05" {
		t.Fatalf("initialize: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	up.waitSeen(t, "notifications/initialized", func(s []string) bool {
		return strings.HasSuffix(s[len(s)-1], "notifications/initialized")
	})
	up.mu.Lock()
	close(up.drops[1])
	up.mu.Unlock()
	seen := up.waitSeen(t, "the re-initialization", func(s []string) bool {
		n := 0
		for _, l := range s {
			if strings.HasSuffix(l, "notifications/initialized") {
				n++
			}
		}
		return n == 2
	})
	var gets []string
	for _, l := range seen {
		switch {
		case strings.HasPrefix(l, "GET "):
			gets = append(gets, l)
		case strings.HasPrefix(l, "POST /m") && !strings.Contains(l, "Bearer "):
			t.Errorf("a POST without the hook's token: %q", l)
		}
	}
	want := []string{"GET / Bearer attended ", "GET / Bearer unattended "}
	if strings.Join(gets, "|") != strings.Join(want, "|") {
		t.Errorf("GETs = %q, want %q", gets, want)
	}
	h.send(`{"jsonrpc":"2.0","id":"after","method":"tools/list"}`)
	if r := h.next(); gjson.Get(r, "id").Raw != `"after"` || !gjson.Get(r, "result").Exists() {
		t.Errorf("a request after the reconnect: %s", r)
	}
}
