package bridge

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// hookText is what an auth hook's error says: the oauth package's
// SignInError names the server, what did not happen and the way out.
const hookText = "sign-in to up.example did not complete: nobody finished signing in within 2m0s; to sign in from a terminal, run: mcp-tasks-proxy auth login https://up.example/mcp"

// failingAuth authorizes every request until fail is set; then it cannot.
type failingAuth struct {
	fail  atomic.Bool
	calls atomic.Int64 // Authorization calls while failing
}

func (a *failingAuth) Authorization(context.Context) (string, error) {
	if a.fail.Load() {
		a.calls.Add(1)
		return "", errors.New(hookText)
	}
	return "Bearer ok", nil
}

func (a *failingAuth) Retry(context.Context, int, http.Header, string) (bool, error) {
	return false, nil
}

func startWithAuth(t *testing.T, url string, a routing.Auth) *harness {
	t.Helper()
	client, err := routing.New(routing.Config{URL: url, Auth: a})
	if err != nil {
		t.Fatal(err)
	}
	return run(t, New(Config{Client: client, Hints: flagHints}), client)
}

// A request the auth hook cannot authorize (the sign-in did not complete)
// gets one error whose message is the hook's text, with cause auth, and is
// not made again: not a tools/call, not a list call that is safe to repeat,
// not the initialize probe.
func TestAuthFailureAnswersOnceNotRetried(t *testing.T) {
	u := newUpstream(t)
	a := &failingAuth{}
	a.fail.Store(true)
	h := startWithAuth(t, u.URL, a)

	h.send(initReq)
	r := h.next()
	checkAuthError(t, "initialize", r, `0`)
	if n := a.calls.Swap(0); n != 1 {
		t.Errorf("initialize: %d authorizations asked, want 1: a sign-in that did not complete is not retried", n)
	}

	a.fail.Store(false)
	h.send(initReq)
	if r := h.next(); gjson.Get(r, "result.protocolVersion").Str == "" {
		t.Fatalf("initialize once authorized: %s", r)
	}
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// Listed, so a tools/call needs no lazy listing of its own.
	h.send(`{"jsonrpc":"2.0","id":"tl","method":"tools/list"}`)
	for r := h.next(); gjson.Get(r, "id").Raw != `"tl"`; r = h.next() {
	}
	a.fail.Store(true)
	var mu sync.Mutex
	posts := 0
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		mu.Lock()
		posts++
		mu.Unlock()
		w.WriteHeader(500)
	})
	for _, m := range []struct{ id, line string }{
		{`"call"`, `{"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"x"}}`},
		{`"list"`, `{"jsonrpc":"2.0","id":"list","method":"prompts/list"}`},
	} {
		a.calls.Store(0)
		h.send(m.line)
		var r string
		for r = h.next(); gjson.Get(r, "method").Exists(); r = h.next() {
		}
		checkAuthError(t, m.id, r, m.id)
		if n := a.calls.Load(); n != 1 {
			t.Errorf("%s: %d authorizations asked, want 1: not retried", m.id, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if posts != 0 {
		t.Errorf("%d requests reached the server without authorization", posts)
	}
}

func checkAuthError(t *testing.T, what, r, id string) {
	t.Helper()
	if gjson.Get(r, "id").Raw != id {
		t.Fatalf("%s: answer %s, want id %s", what, r, id)
	}
	want := hookText
	if what == "initialize" {
		want = "cannot initialize: " + hookText + "; the next initialize will try again"
	}
	if got := gjson.Get(r, "error.message").Str; got != want {
		t.Errorf("%s: message %q, want %q", what, got, want)
	}
	if got := gjson.Get(r, "error.data.cause").Str; got != "auth" {
		t.Errorf("%s: error.data.cause %q, want auth: %s", what, got, r)
	}
}

// A 401 or 403 that reaches the client names both ways out: the OAuth
// sign-in from a terminal, and a static token with --header.
func TestAuthHintsNameBothWaysOut(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	for _, c := range []struct {
		status int
		has    []string
	}{
		{401, []string{"HTTP 401", "authentication required", "mcp-tasks-proxy auth login " + u.URL, "--header 'Authorization: Bearer <token>'"}},
		{403, []string{"HTTP 403", "access denied", "mcp-tasks-proxy auth login " + u.URL, "--header"}},
	} {
		u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(c.status)
		})
		h.send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"x"}}`)
		var r string
		for r = h.next(); gjson.Get(r, "method").Exists(); r = h.next() {
		}
		msg := gjson.Get(r, "error.message").Str
		for _, s := range c.has {
			if !strings.Contains(msg, s) {
				t.Errorf("HTTP %d: message %q does not say %q", c.status, msg, s)
			}
		}
	}
}
