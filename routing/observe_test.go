package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// emptyResultClient is a Client of a server that answers every POST with
// an empty JSON result; the server ends with the test.
func emptyResultClient(t *testing.T) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// obsRecorder is an Observer that keeps what it saw.
type obsRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *obsRecorder) Request(ctx context.Context, method, url string, h http.Header, body []byte) {
	r.add(fmt.Sprintf("request %s %s auth=%q mcp-method=%q body=%s", method, url, h.Get("Authorization"), h.Get("Mcp-Method"), body))
}

func (r *obsRecorder) Answer(ctx context.Context, status int, msg []byte, since time.Time, err error) {
	r.add(fmt.Sprintf("answer %d %s err=%v", status, msg, err != nil))
}

func (r *obsRecorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *obsRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

type tokenAuth struct{}

func (tokenAuth) Authorization(context.Context) (string, error) { return "Bearer s3cret", nil }
func (tokenAuth) Retry(context.Context, int, http.Header, string) (bool, error) {
	return false, nil
}

func TestObserverSeesEveryExchange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/") {
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n")
		case "accepted":
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		}
	}))
	defer srv.Close()
	rec := &obsRecorder{}
	ctx := WithObserver(context.Background(), rec)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	read := func(url string) []string {
		t.Helper()
		c, err := New(Config{URL: url, Auth: tokenAuth{}})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Post(ctx, body, nil)
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := resp.Next(); err != nil {
				break
			}
		}
		resp.Close()
		return rec.take()
	}

	got := read(srv.URL + "/json")
	want := []string{
		fmt.Sprintf("request POST %s/json auth=\"\" mcp-method=\"tools/list\" body=%s", srv.URL, body),
		`answer 200 {"jsonrpc":"2.0","id":1,"result":{}} err=false`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("JSON answer: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	got = read(srv.URL + "/sse")
	if len(got) != 3 || got[1] != `answer 200 {"a":1} err=false` || got[2] != `answer 0 {"b":2} err=false` {
		t.Errorf("event stream: the first message carries the status, later ones 0: %q", got)
	}
	got = read(srv.URL + "/accepted")
	if len(got) != 2 || got[1] != "answer 202  err=false" {
		t.Errorf("an answer without a message is reported once, with its status, at Close: %q", got)
	}

	// A failure before any status.
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	c, err := New(Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, http.MethodGet, nil, nil); err == nil {
		t.Fatal("a closed server answered")
	}
	got = rec.take()
	if len(got) != 2 || !strings.HasPrefix(got[0], "request GET") || got[1] != "answer 0  err=true" {
		t.Errorf("transport failure: %q", got)
	}
}

func TestNoObserverNoCost(t *testing.T) {
	c := emptyResultClient(t)
	resp, err := c.Post(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	if resp.watch.o != nil {
		t.Error("an exchange without an Observer keeps a watch")
	}
	if _, err := resp.Next(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
}

// TestObserversChain: an Observer added under a context that has one
// already makes both see every exchange, the first one first.
func TestObserversChain(t *testing.T) {
	c := emptyResultClient(t)
	var first, second obsRecorder
	ctx := WithObserver(WithObserver(context.Background(), &first), &second)
	resp, err := c.Post(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := resp.Next(); err != nil {
			break
		}
	}
	resp.Close()
	a, b := first.take(), second.take()
	if len(a) < 2 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("first saw %q, second %q", a, b)
	}
}
