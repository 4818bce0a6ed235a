package oauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// realAS serves the project's real authorization server (demo/authserver)
// on loopback. edit, when set, changes its metadata document as it goes
// out: the one defect a test puts in an otherwise correct server.
func realAS(t *testing.T, edit func(meta map[string]any)) *authserver.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	as, err := authserver.New("http://"+srv.Listener.Addr().String(), authserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if edit == nil || !strings.HasPrefix(r.URL.Path, "/.well-known/") {
			as.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		as.ServeHTTP(rec, r)
		var meta map[string]any
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &meta) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		edit(meta)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(meta)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(as.Close)
	return as
}

// protectedBy serves an MCP endpoint behind as (demo.Protect: RFC 9728
// metadata, bearer tokens checked with the server) and returns its URL.
func protectedBy(t *testing.T, as *authserver.Server) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	u := "http://" + srv.Listener.Addr().String() + "/mcp"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`))
	})
	h, err := demo.Protect(ok, as, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = h
	srv.Start()
	t.Cleanup(srv.Close)
	return u
}

// envFor is a Client for serverURL on a fresh store, with the fake browser
// of fixture_test.go (it follows the sign-in address to the callback and
// keeps the callback's page).
func envFor(t *testing.T, serverURL string) *env {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	out := &syncBuffer{}
	c, err := New(Config{ServerURL: serverURL, StoreDir: storeDir(t), AuthTimeout: 20 * time.Second, Logger: zap.New(core), Out: out})
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBrowser{}
	c.user.open = b.open
	up, err := routing.New(routing.Config{URL: serverURL, Auth: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		b.wg.Wait()
		up.CloseIdle()
	})
	return &env{c: c, out: out, logs: logs, browser: b, up: up}
}

// callbackPage waits for the fake browser and returns the one page the
// callback answered it with.
func callbackPage(t *testing.T, e *env) string {
	t.Helper()
	e.browser.wg.Wait()
	e.browser.mu.Lock()
	defer e.browser.mu.Unlock()
	if len(e.browser.pages) != 1 {
		t.Fatalf("the browser got %d callback pages, want 1", len(e.browser.pages))
	}
	return e.browser.pages[0]
}

// TestCallbackPageAfterChecks: the browser's page says "Signed in" only
// when the sign-in ended signed in; an answer whose iss is not the
// issuer's (RFC 9207 mix-up) gets a page that says the sign-in failed and
// why, and nothing is stored.
func TestCallbackPageAfterChecks(t *testing.T) {
	t.Run("wrong iss", func(t *testing.T) {
		as := realAS(t, nil)
		as.SetWrongIss(true)
		e := envFor(t, protectedBy(t, as))
		err := signInErr(t, e)
		if !strings.Contains(err.Error(), "names the issuer") {
			t.Fatalf("error %q, want the iss refused", err)
		}
		p := callbackPage(t, e)
		if strings.Contains(p, "Signed in") || strings.Contains(p, "is signed in") {
			t.Errorf("the page says signed in although the iss was refused:\n%s", p)
		}
		if !strings.Contains(p, "Sign-in failed") || !strings.Contains(p, "names the issuer") || !strings.Contains(p, "not signed in") {
			t.Errorf("the page does not say the sign-in failed, and why:\n%s", p)
		}
		if st := as.Stats(); st.TokenGrants+st.TokenErrors != 0 || st.CodesIssued != 1 {
			t.Errorf("%+v: want one code issued, and none redeemed", st)
		}
	})
	t.Run("signed in", func(t *testing.T) {
		as := realAS(t, nil)
		e := envFor(t, protectedBy(t, as))
		e.mustCall(t)
		if p := callbackPage(t, e); !strings.Contains(p, "Signed in") {
			t.Errorf("the page of a sign-in that worked does not say so:\n%s", p)
		}
	})
}

// TestCallbackSecondAnswer: a second answer to one sign-in (a reloaded
// tab, a replayed link) is told it was not used, not "Signed in".
func TestCallbackSecondAnswer(t *testing.T) {
	cb := &callback{host: "h", state: "s", serverHost: "srv", log: zap.NewNop(), results: make(chan callbackResult, 1), wait: time.Minute}
	cb.results <- callbackResult{code: "first"}
	req := httptest.NewRequest(http.MethodGet, "http://h"+callbackPath+"?state=s&code=second", nil)
	w := httptest.NewRecorder()
	cb.ServeHTTP(w, req)
	if body := w.Body.String(); w.Code != http.StatusConflict || strings.Contains(body, "Signed in") || !strings.Contains(body, "already received") {
		t.Errorf("a second answer got %d:\n%s", w.Code, body)
	}
}

// TestCallbackPageStillFinishing: a sign-in that has not ended within the
// page's bound gets a page saying it is still finishing, never "Signed
// in".
func TestCallbackPageStillFinishing(t *testing.T) {
	cb := &callback{host: "h", state: "s", serverHost: "srv", log: zap.NewNop(), results: make(chan callbackResult, 1), wait: 50 * time.Millisecond}
	req := httptest.NewRequest(http.MethodGet, "http://h"+callbackPath+"?state=s&code=c", nil)
	w := httptest.NewRecorder()
	cb.ServeHTTP(w, req)
	body := w.Body.String()
	if strings.Contains(body, "Signed in") || !strings.Contains(body, "still finishing") {
		t.Errorf("a sign-in not yet ended got %d:\n%s", w.Code, body)
	}
	if res := <-cb.results; res.code != "c" || res.verdict == nil {
		t.Errorf("the sign-in got %+v, want the code and a verdict channel", res)
	}
}

// TestAuthorizationEndpointChecked: an authorization server whose
// metadata gives an authorization or token endpoint with a fragment
// (RFC 6749 §3.1 forbids one: the sign-in's query would land after the
// #), a relative one, or plain http to another machine, is refused
// before any browser opens, naming the server's metadata.
func TestAuthorizationEndpointChecked(t *testing.T) {
	for _, c := range []struct {
		name, key string
		mod       func(string) string
		want      []string
	}{
		{"fragment", "authorization_endpoint", func(u string) string { return u + "#x" }, []string{"has a fragment", "RFC 6749", "/.well-known/oauth-authorization-server"}},
		{"empty fragment", "authorization_endpoint", func(u string) string { return u + "#" }, []string{"has a fragment"}},
		{"token fragment", "token_endpoint", func(u string) string { return u + "#x" }, []string{"its token endpoint", "has a fragment"}},
		{"relative", "authorization_endpoint", func(string) string { return "/authorize" }, []string{"not an absolute URL"}},
		{"plain http", "authorization_endpoint", func(string) string { return "http://as.example/authorize" }, []string{"plain http://"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			as := realAS(t, func(meta map[string]any) {
				meta[c.key] = c.mod(meta[c.key].(string))
			})
			e := envFor(t, protectedBy(t, as))
			err := signInErr(t, e)
			for _, w := range append([]string{"cannot start", "its "}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n := e.browser.count(); n != 0 {
				t.Errorf("a browser was opened %d times", n)
			}
			if st := as.Stats(); st.Authorizations != 0 {
				t.Errorf("%d authorization requests", st.Authorizations)
			}
		})
	}
}
