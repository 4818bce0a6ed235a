package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// serveInit is the initialize params of the raw client in these tests.
const serveInit = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"e2e-serve","version":"1"}}`

// serveUpKind is an upstream the HTTP-level tests run against, with a way
// to count the requests that reached it and carried a marker.
type serveUpKind struct {
	name     string
	verbatim bool
	start    func(t *testing.T) (url string, count func(marker string) int)
}

var serveUpKinds = []serveUpKind{
	{name: "demo", start: func(t *testing.T) (string, func(string) int) {
		up := newServeUp(t, demo.Handler(), true)
		return up.URL, up.count
	}},
	{name: "2025", verbatim: true, start: func(t *testing.T) (string, func(string) int) {
		up := newLegacyUpstream(t, demo.NewLegacy())
		return up.URL, func(marker string) int {
			return len(up.seen(func(s legacySeen) bool { return bytes.Contains(s.Body, []byte(marker)) }))
		}
	}},
}

// serveOn starts k's upstream and serve in front of it (args before the
// upstream's URL), and opens one raw session on it, initialized. f makes
// the frames of more sessions; count counts the upstream's requests that
// carried a marker.
func serveOn(t *testing.T, k serveUpKind, args ...string) (s *serveProc, f *serveFrames, c *serveSession, count func(marker string) int) {
	t.Helper()
	url, count := k.start(t)
	s, f, c = serveAt(t, url, k.verbatim, args...)
	return s, f, c, count
}

// serveAt is serveOn for an upstream already running at url (verbatim for
// a 2025 one).
func serveAt(t *testing.T, url string, verbatim bool, args ...string) (s *serveProc, f *serveFrames, c *serveSession) {
	t.Helper()
	s = startServe(t, append(slices.Clip(args), url)...)
	f = newServeFrames(t, verbatim)
	c = s.rawSession(t, f)
	c.initialize(serveInit)
	return s, f, c
}

// serveEcho calls echo on c and requires text back.
func serveEcho(t *testing.T, c *serveSession, id, text string) {
	t.Helper()
	res := resultOf(t, c.call(id, "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"}}`))
	if got := tkText(res); got != text {
		t.Errorf("echo = %q, want %q", got, text)
	}
}

// TestServeStartup: the listening line and an empty stdout, the --url form,
// and the refusal of a non-loopback --listen without a token.
func TestServeStartup(t *testing.T) {
	t.Parallel()

	t.Run("listening line, --url, empty stdout", func(t *testing.T) {
		t.Parallel()
		up := newServeUp(t, demo.Handler(), true)
		s := startServe(t, "--url", up.URL)
		if !strings.HasPrefix(s.Host, "127.0.0.1:") || strings.HasSuffix(s.Host, ":0") {
			t.Errorf("listening on %s, want 127.0.0.1 and the real port (not 0)", s.URL)
		}
		c := s.rawSession(t, newServeFrames(t, false))
		c.initialize(serveInit)
		serveEcho(t, c, `"e"`, "started with --url")
		if n := s.listenLines(); n != 1 {
			t.Errorf("%d \"listening on\" lines on stderr, want exactly 1", n)
		}
		s.stop(t)
		if out := s.stdout.String(); out != "" {
			t.Errorf("stdout = %q, want empty", out)
		}
		// Quiet by default: a healthy run says where it listens, and no
		// more.
		if got, want := strings.TrimSpace(s.stderr.String()), "listening on "+s.URL; got != want {
			t.Errorf("stderr of a healthy run at the default log level:\n%s\nwant only %q", got, want)
		}
	})

	t.Run("non-loopback listen without a token", func(t *testing.T) {
		t.Parallel()
		up := newServeUp(t, demo.Handler(), true)
		s := startServeCmd(t, "--listen", "0.0.0.0:0", up.URL)
		if code := s.wait(t, cleanupExitTimeout); code != 2 {
			t.Errorf("exit status %d, want 2; stderr:\n%s", code, s.stderr.String())
		}
		stderr := s.stderr.String()
		if !strings.Contains(stderr, "--auth-token-file") {
			t.Errorf("stderr does not name --auth-token-file as the fix:\n%s", stderr)
		}
		if _, ok := s.listening(); ok {
			t.Errorf("serve printed a listening line although it refused to start:\n%s", stderr)
		}
		if n := up.count(""); n != 0 {
			t.Errorf("the upstream got %d requests from a refused start", n)
		}
	})

	t.Run("non-loopback listen with a token", func(t *testing.T) {
		t.Parallel()
		tok := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tok, []byte("s3cret-serve-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := startServe(t, "--listen", "0.0.0.0:0", "--auth-token-file", tok, "--demo")
		if strings.HasSuffix(s.Host, ":0") {
			t.Errorf("listening on %s, want the real port", s.URL)
		}
		if strings.Contains(s.stderr.String(), "s3cret-serve-token") {
			t.Errorf("the token reached stderr")
		}
	})
}

// TestServeSessionIDs: Mcp-Session-Id is issued on the initialize answer;
// a later request without it gets 400, an unknown one 404, an ended one
// 404; an unsupported MCP-Protocol-Version gets 400.
func TestServeSessionIDs(t *testing.T) {
	t.Parallel()
	for _, k := range serveUpKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s, f, c, _ := serveOn(t, k)
			if !regexp.MustCompile(`^[\x21-\x7e]+$`).MatchString(c.sid) {
				t.Errorf("Mcp-Session-Id %q: want visible ASCII only (0x21 to 0x7E)", c.sid)
			}
			serveEcho(t, c, `"e1"`, "with the id")

			noID := s.rawSession(t, f)
			a := noID.send(http.MethodPost, serveRequest(`"x"`, "tools/list", ""), http.Header{"MCP-Protocol-Version": {legacyVersion}})
			if a.status != http.StatusBadRequest {
				t.Errorf("a request without Mcp-Session-Id: status %d, want 400; body %s", a.status, shortBytes(a.body))
			}
			for _, m := range []struct{ method, body string }{
				{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
				{http.MethodGet, ""},
				{http.MethodDelete, ""},
			} {
				var b []byte
				if m.body != "" {
					b = []byte(m.body)
				}
				if a := noID.send(m.method, b, http.Header{"MCP-Protocol-Version": {legacyVersion}}); a.status != http.StatusBadRequest {
					t.Errorf("%s %s without Mcp-Session-Id: status %d, want 400", m.method, m.body, a.status)
				}
			}

			unknown := s.rawSession(t, f)
			unknown.sid = "no-such-session-e2e"
			if a := unknown.send(http.MethodPost, serveRequest(`"x"`, "tools/list", ""), nil); a.status != http.StatusNotFound {
				t.Errorf("an unknown Mcp-Session-Id: status %d, want 404; body %s", a.status, shortBytes(a.body))
			}

			a = c.send(http.MethodPost, serveRequest(`"v"`, "tools/list", ""), http.Header{"MCP-Protocol-Version": {"1999-01-01"}})
			if a.status != http.StatusBadRequest {
				t.Errorf("MCP-Protocol-Version 1999-01-01: status %d, want 400; body %s", a.status, shortBytes(a.body))
			}
			// The session is unharmed.
			serveEcho(t, c, `"e2"`, "still here")
			// Without the header the server assumes a version it speaks
			// (2025-03-26, by the 2025 transport rules): no 400.
			a = c.send(http.MethodPost, serveRequest(`"nov"`, "ping", ""), http.Header{"MCP-Protocol-Version": nil})
			if a.status != http.StatusOK {
				t.Errorf("a request without MCP-Protocol-Version: status %d, want 200; body %s", a.status, shortBytes(a.body))
			}
			if a := unknown.send(http.MethodDelete, nil, nil); a.status != http.StatusNotFound {
				t.Errorf("DELETE of an unknown session: status %d, want 404", a.status)
			}

			two := s.rawSession(t, f)
			two.initialize(serveInit)
			if two.sid == c.sid {
				t.Errorf("two sessions got the same Mcp-Session-Id %q", c.sid)
			}
			serveEndSession(t, c)
			serveEcho(t, two, `"e3"`, "the other session lives on")
		})
	}
}

// TestServeOrigin: a request whose Origin is not loopback, or whose Host is
// not, gets 403 and nothing of it reaches the upstream; loopback origins
// and --allow-origin ones pass.
func TestServeOrigin(t *testing.T) {
	t.Parallel()
	for _, k := range serveUpKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			s, f, c, count := serveOn(t, k, "--allow-origin", "https://app.example")
			_, port, _ := strings.Cut(s.Host, ":")

			const marker = "FORBIDDEN-MARKER"
			forbidden := []struct {
				name string
				h    http.Header
			}{
				{"foreign Origin", http.Header{"Origin": {"http://evil.example"}}},
				{"foreign Origin on the same port", http.Header{"Origin": {"http://evil.example:" + port}}},
				{"https Origin not listed", http.Header{"Origin": {"https://other.example"}}},
				{"null Origin", http.Header{"Origin": {"null"}}},
				{"foreign Host", http.Header{"Host": {"evil.example:" + port}}},
			}
			for _, tc := range forbidden {
				t.Run(tc.name, func(t *testing.T) {
					h := tc.h.Clone()
					host := h.Get("Host")
					h.Del("Host")
					send := func(method, sid, body string) serveAnswer {
						fresh := s.rawSession(t, f)
						fresh.sid = sid
						fresh.header = h
						if host != "" {
							fresh.hc = serveHostClient(t, f, host)
						}
						var b []byte
						if body != "" {
							b = []byte(body)
						}
						return fresh.send(method, b, nil)
					}
					post := func(sid, body string) serveAnswer { return send(http.MethodPost, sid, body) }
					a := post("", string(serveRequest(`"init"`, "initialize",
						`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+marker+`","version":"1"}}`)))
					if a.status != http.StatusForbidden {
						t.Errorf("initialize: status %d, want 403; body %s", a.status, shortBytes(a.body))
					}
					a = post(c.sid, string(serveRequest(`"call"`, "tools/call", `{"name":"echo","arguments":{"text":"`+marker+`"}}`)))
					if a.status != http.StatusForbidden {
						t.Errorf("tools/call in a live session: status %d, want 403; body %s", a.status, shortBytes(a.body))
					}
					// Nor may such a page read the session's stream or end
					// it (the session's last echo below shows it lives).
					for _, m := range []string{http.MethodGet, http.MethodDelete} {
						if a := send(m, c.sid, ""); a.status != http.StatusForbidden {
							t.Errorf("%s of a live session: status %d, want 403", m, a.status)
						}
					}
				})
			}

			allowed := map[string]string{
				"localhost":        "http://localhost:" + port,
				"127.0.0.1":        "http://127.0.0.1:" + port,
				"[::1]":            "http://[::1]:" + port,
				"--allow-origin":   "https://app.example",
				"no Origin at all": "",
			}
			for name, origin := range allowed {
				t.Run("allowed "+name, func(t *testing.T) {
					c2 := s.rawSession(t, f)
					if origin != "" {
						c2.header.Set("Origin", origin)
					}
					c2.initialize(serveInit)
					serveEcho(t, c2, `"ok"`, "allowed "+name)
				})
			}
			for _, host := range []string{"localhost:" + port, "[::1]:" + port, "app.example"} {
				t.Run("allowed Host "+host, func(t *testing.T) {
					c2 := s.rawSession(t, f)
					c2.hc = serveHostClient(t, f, host)
					c2.initialize(serveInit)
					serveEcho(t, c2, `"ok"`, "allowed Host "+host)
				})
			}

			// A last call through the same session: whatever the refused
			// requests could have sent upstream would be there by now.
			serveEcho(t, c, `"last"`, "after the refusals")
			if n := count(marker); n != 0 {
				t.Errorf("%d upstream requests carry the marker of refused requests, want 0", n)
			}
		})
	}
}

// serveHostClient is a validating client that sends Host: host.
func serveHostClient(t *testing.T, f *serveFrames, host string) *http.Client {
	hc := newServeHTTPClient(t, f)
	rt := hc.Transport
	hc.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Host = host
		return rt.RoundTrip(r)
	})
	return hc
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestServeToken: with --auth-token-file, every request without the bearer
// token gets 401 and reaches nothing upstream; with it, the session works.
func TestServeToken(t *testing.T) {
	t.Parallel()
	const token = "e2e-serve-token-4f1c"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	up := newServeUp(t, demo.Handler(), true)
	s := startServe(t, "--auth-token-file", file, up.URL)
	f := newServeFrames(t, false)
	const marker = "UNAUTHORIZED-MARKER"
	initMarked := serveRequest(`"init"`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+marker+`","version":"1"}}`)

	for name, auth := range map[string]string{
		"none":         "",
		"wrong token":  "Bearer not-" + token,
		"not a bearer": "Basic " + token,
		"bare token":   token,
	} {
		c := s.rawSession(t, f)
		if auth != "" {
			c.header.Set("Authorization", auth)
		}
		if a := c.send(http.MethodPost, initMarked, nil); a.status != http.StatusUnauthorized {
			t.Errorf("initialize with Authorization %s: status %d, want 401; body %s", name, a.status, shortBytes(a.body))
		}
	}

	c := s.rawSession(t, f)
	c.header.Set("Authorization", "Bearer "+token)
	c.initialize(serveInit)
	serveEcho(t, c, `"e1"`, "with the token")

	// The same live session, without the token.
	bare := s.rawSession(t, f)
	bare.sid = c.sid
	if a := bare.send(http.MethodPost, serveRequest(`"x"`, "tools/call", `{"name":"echo","arguments":{"text":"`+marker+`"}}`), nil); a.status != http.StatusUnauthorized {
		t.Errorf("tools/call in a live session without the token: status %d, want 401; body %s", a.status, shortBytes(a.body))
	}
	if a := bare.send(http.MethodGet, nil, nil); a.status != http.StatusUnauthorized {
		t.Errorf("GET stream without the token: status %d, want 401", a.status)
	}
	if a := bare.send(http.MethodDelete, nil, nil); a.status != http.StatusUnauthorized {
		t.Errorf("DELETE without the token: status %d, want 401", a.status)
	}
	serveEcho(t, c, `"e2"`, "the session survived")
	if n := up.count(marker); n != 0 {
		t.Errorf("%d upstream requests carry the marker of unauthorized requests, want 0", n)
	}

	// The go-sdk client with the token in its HTTP client.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	hc := newServeHTTPClient(t, newServeFrames(t, false))
	rt := hc.Transport
	hc.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+token)
		return rt.RoundTrip(r)
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-serve-sdk", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatalf("go-sdk connect with the token: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sdk with token"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sdkText(t, res); got != "sdk with token" {
		t.Errorf("echo = %q", got)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if strings.Contains(s.stderr.String(), token) {
		t.Errorf("the token reached stderr")
	}
}

// TestServeMaxSessions: one session past --max-sessions gets 503 with
// Retry-After; a DELETE makes room. With --session-idle-timeout, an idle
// session expires (then 404) and frees its place.
func TestServeMaxSessions(t *testing.T) {
	t.Parallel()

	t.Run("bound", func(t *testing.T) {
		t.Parallel()
		for _, k := range serveUpKinds {
			t.Run(k.name, func(t *testing.T) {
				s, f, one, count := serveOn(t, k, "--max-sessions", "2")
				two := s.rawSession(t, f)
				two.initialize(serveInit)

				const marker = "ONE-TOO-MANY"
				third := s.rawSession(t, f)
				a := third.send(http.MethodPost, serveRequest(`"init"`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+marker+`","version":"1"}}`), nil)
				if a.status != http.StatusServiceUnavailable {
					t.Fatalf("initialize past --max-sessions 2: status %d, want 503; body %s", a.status, shortBytes(a.body))
				}
				if ra := a.header.Get("Retry-After"); !regexp.MustCompile(`^\d+$`).MatchString(ra) && !serveHTTPDate(ra) {
					t.Errorf("503 Retry-After = %q, want seconds or an HTTP date", ra)
				}
				if a.header.Get("Mcp-Session-Id") != "" {
					t.Errorf("the 503 issued a session id %q", a.header.Get("Mcp-Session-Id"))
				}
				serveEcho(t, one, `"e1"`, "the first session still works")
				if n := count(marker); n != 0 {
					t.Errorf("the refused initialize reached the upstream (%d requests)", n)
				}

				if st := one.del(); st < 200 || st > 299 {
					t.Fatalf("DELETE: status %d", st)
				}
				third.initialize(serveInit)
				serveEcho(t, third, `"e3"`, "room after a DELETE")
				serveEcho(t, two, `"e2"`, "the second session still works")
			})
		}
	})

	t.Run("idle timeout", func(t *testing.T) {
		t.Parallel()
		s := startServe(t, "--max-sessions", "1", "--session-idle-timeout", "1s", "--demo")
		f := newServeFrames(t, false)
		idle := s.rawSession(t, f)
		idle.initialize(serveInit)
		// A new session is refused while the idle one holds the only
		// place; once it expires the place is free. The attempts do not
		// touch the idle session.
		deadline := time.Now().Add(waitTimeout)
		next := s.rawSession(t, f)
		for {
			a := next.send(http.MethodPost, serveRequest(`"init"`, "initialize", serveInit), nil)
			if a.status == http.StatusOK {
				next.sid = a.header.Get("Mcp-Session-Id")
				next.notify("notifications/initialized", "")
				break
			}
			if a.status != http.StatusServiceUnavailable {
				t.Fatalf("initialize while the idle session holds the only place: status %d, want 503 then 200; body %s", a.status, shortBytes(a.body))
			}
			if time.Now().After(deadline) {
				t.Fatalf("the idle session (--session-idle-timeout 1s) did not expire within %v", waitTimeout)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if a := idle.send(http.MethodPost, serveRequest(`"late"`, "ping", ""), nil); a.status != http.StatusNotFound {
			t.Errorf("a request in the expired session: status %d, want 404", a.status)
		}
		serveEcho(t, next, `"e"`, "the new session works")
	})
}

// serveHTTPDate reports whether s is an HTTP date.
func serveHTTPDate(s string) bool { _, err := http.ParseTime(s); return err == nil }

// TestServeGetStream: the session's GET stream carries list_changed and
// resources/updated; its events carry ids; after a drop, a GET with
// Last-Event-ID resumes with what was missed and nothing already seen.
func TestServeGetStream(t *testing.T) {
	t.Parallel()

	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		lw := newERListenWatch(demo.Handler())
		up := newServeUp(t, lw, true)
		s := startServe(t, up.URL)
		c := s.rawSession(t, newServeFrames(t, false))
		c.initialize(serveInit)
		st := c.openStream("")

		lc := lw.wait(t, "the list-change subscriptions/listen", (*erListen).isListChange)
		erWait(t, lc.acked, "the acknowledgement of the list-change stream")
		resultOf(t, c.call(`"touch-tools"`, "tools/call", `{"name":"touch","arguments":{"what":"tools"}}`))
		st.wait(t, "notifications/tools/list_changed", func(ev sseEvent) bool {
			return gjson.GetBytes(ev.data, "method").String() == "notifications/tools/list_changed"
		})

		uris := []string{"demo://echo/resume-1", "demo://echo/resume-2", "demo://echo/resume-3"}
		for i, u := range uris {
			resultOf(t, c.call(fmt.Sprintf(`"sub-%d"`, i), "resources/subscribe", `{"uri":"`+u+`"}`))
			l := lw.wait(t, "the listen for "+u, func(l *erListen) bool {
				return strings.Contains(l.filter.Get("resourceSubscriptions").Raw, `"`+u+`"`)
			})
			erWait(t, l.acked, "the acknowledgement of the listen for "+u)
		}
		touch := func(i int) {
			t.Helper()
			resultOf(t, c.call(fmt.Sprintf(`"touch-%d"`, i), "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"`+uris[i]+`"}}`))
		}
		serveResume(t, c, st, uris, touch)
	})

	t.Run("2025", func(t *testing.T) {
		t.Parallel()
		up := newLegacyUpstream(t, demo.NewLegacy())
		s := startServe(t, up.URL)
		c := s.rawSession(t, newServeFrames(t, true))
		c.initialize(serveInit)
		st := c.openStream("")
		sid := up.sessionOf(t, 1)
		up.wait(t, "the proxy's GET stream", isGetStream(sid))

		resultOf(t, c.call(`"add"`, "tools/call", `{"name":"add_tool","arguments":{"name":"added_by_e2e"}}`))
		st.wait(t, "notifications/tools/list_changed", func(ev sseEvent) bool {
			return gjson.GetBytes(ev.data, "method").String() == "notifications/tools/list_changed"
		})
		uris := []string{"legacy://resume-1", "legacy://resume-2", "legacy://resume-3"}
		for i, u := range uris {
			resultOf(t, c.call(fmt.Sprintf(`"sub-%d"`, i), "resources/subscribe", `{"uri":"`+u+`"}`))
		}
		touch := func(i int) {
			t.Helper()
			resultOf(t, c.call(fmt.Sprintf(`"touch-%d"`, i), "tools/call", `{"name":"touch","arguments":{"uri":"`+uris[i]+`"}}`))
		}
		serveResume(t, c, st, uris, touch)
	})
}

// serveResume: uris[0] is updated while st is open, uris[1] after st is
// dropped, uris[2] after a GET with Last-Event-ID resumed it. The resumed
// stream carries uris[1] (missed) and uris[2] once each, and neither
// uris[0] nor an event id seen before.
func serveResume(t *testing.T, c *serveSession, st *serveStream, uris []string, touch func(int)) {
	t.Helper()
	isUpdate := func(uri string) func(sseEvent) bool {
		return func(ev sseEvent) bool {
			return gjson.GetBytes(ev.data, "method").String() == "notifications/resources/updated" &&
				gjson.GetBytes(ev.data, "params.uri").String() == uri
		}
	}
	touch(0)
	first := st.wait(t, "resources/updated for "+uris[0], isUpdate(uris[0]))
	before := st.all()
	seen := map[string]bool{}
	for _, ev := range before {
		if !ev.hasID || ev.id == "" {
			t.Errorf("a GET stream event without an id: %s", shortBytes(ev.data))
		}
		seen[ev.id] = true
	}
	if !first.hasID || first.id == "" {
		t.Fatalf("the resources/updated event has no id; Last-Event-ID cannot resume")
	}
	last := before[len(before)-1].id

	st.close()
	touch(1) // missed while no stream is open

	resumed := c.openStream(last)
	resumed.wait(t, "the missed resources/updated for "+uris[1]+" after Last-Event-ID "+last, isUpdate(uris[1]))
	touch(2)
	resumed.wait(t, "resources/updated for "+uris[2]+" on the resumed stream", isUpdate(uris[2]))
	check := func(st *serveStream, what string) {
		t.Helper()
		counts := map[string]int{}
		for _, ev := range st.all() {
			if isResponse(ev.data) {
				t.Errorf("%s carries a response, which belongs on its request's POST: %s", what, shortBytes(ev.data))
			}
			if ev.hasID && seen[ev.id] {
				t.Errorf("%s repeats event id %s, seen before Last-Event-ID %s: %s", what, ev.id, last, shortBytes(ev.data))
			}
			if gjson.GetBytes(ev.data, "method").String() == "notifications/resources/updated" {
				counts[gjson.GetBytes(ev.data, "params.uri").String()]++
			}
		}
		if counts[uris[0]] != 0 || counts[uris[1]] != 1 || counts[uris[2]] != 1 {
			t.Errorf("resources/updated on %s by URI: %v; want %s once, %s once, %s never (no duplicates)", what, counts, uris[1], uris[2], uris[0])
		}
	}
	check(resumed, "the resumed stream")

	// The same Last-Event-ID again, after both were delivered: the server
	// replays what follows that id, not what it last delivered.
	resumed.close()
	again := c.openStream(last)
	again.wait(t, "the replayed resources/updated for "+uris[1], isUpdate(uris[1]))
	again.wait(t, "the replayed resources/updated for "+uris[2], isUpdate(uris[2]))
	check(again, "the stream resumed a second time from "+last)

	// DELETE ends the session, and with it its open stream.
	if st := c.del(); st < 200 || st > 299 {
		t.Errorf("DELETE: status %d", st)
	}
	again.until(t, func() bool { return again.ended }, func() string {
		return fmt.Sprintf("the GET stream did not end within %v of the session's DELETE", waitTimeout)
	})
}

// TestServeSIGTERM: SIGTERM with calls in flight (held by the upstream,
// raw and go-sdk): every in-flight request gets its JSON-RPC response (a
// result or an error), and serve exits 0, within the bound.
func TestServeSIGTERM(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"demo", "2025"} {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			verbatim := k == "2025"
			hold, url, _ := startHeld(t, k)
			s := startServe(t, url)
			f := newServeFrames(t, verbatim)
			call := `{"name":"echo","arguments":{"text":"` + serveHoldMark + `"}}`

			raw := 3
			type outcome struct {
				id    string
				frame []byte
				err   error
			}
			results := make(chan outcome, raw+1)
			if k == "demo" {
				// One more whose answer is already a stream (progress
				// sent): its error must come as an event on that stream.
				raw++
				c := s.rawSession(t, f)
				c.initialize(serveInit)
				streaming := make(chan struct{})
				go func() {
					fr, err := serveTryCall(c, `"streaming"`, "tools/call", `{"name":"slow_count","arguments":{"n":50,"delay_ms":1000},"_meta":{"progressToken":"p"}}`, streaming)
					results <- outcome{`"streaming"`, fr, err}
				}()
				select {
				case <-streaming:
				case <-time.After(waitTimeout):
					t.Fatalf("slow_count sent no progress within %v", waitTimeout)
				}
			}
			for i := 0; i < 3; i++ {
				c := s.rawSession(t, f)
				c.initialize(serveInit)
				id := fmt.Sprintf(`"inflight-%d"`, i)
				go func() {
					fr, err := serveTryCall(c, id, "tools/call", call, nil)
					results <- outcome{id, fr, err}
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			cs := sdkServeConnect(t, ctx, s, mcp.NewClient(&mcp.Implementation{Name: "e2e-serve-sdk", Version: "1"}, nil), newServeFrames(t, verbatim))
			sdkDone := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveHoldMark}})
				sdkDone <- err
			}()
			hold.wait(t, 3+1)

			s.signal(syscall.SIGTERM)
			bound := time.After(cleanupExitTimeout)
			for i := 0; i < raw; i++ {
				select {
				case o := <-results:
					if o.err != nil {
						t.Errorf("in-flight %s: %v", o.id, o.err)
					} else if gjson.GetBytes(o.frame, "id").Raw != o.id || !isResponse(o.frame) {
						t.Errorf("in-flight %s: answer %s is not its response", o.id, shortBytes(o.frame))
					} else {
						t.Logf("in-flight %s answered: %s", o.id, shortBytes(o.frame))
					}
				case <-bound:
					t.Fatalf("in-flight requests were not all answered within %v of SIGTERM", cleanupExitTimeout)
				}
			}
			select {
			case err := <-sdkDone:
				// A result or a JSON-RPC error; a broken connection is
				// no answer.
				var wire *jsonrpc.Error
				if err != nil && !errors.As(err, &wire) {
					t.Errorf("the go-sdk client's in-flight call ended without an answer: %v", err)
				}
				t.Logf("the go-sdk call returned: %v", err)
			case <-bound:
				t.Errorf("the go-sdk client's in-flight call did not return within %v of SIGTERM", cleanupExitTimeout)
			}
			if code := s.wait(t, cleanupExitTimeout); code != 0 {
				t.Errorf("exit status %d after SIGTERM, want 0", code)
			}
		})
	}
}

// serveTryCall is call without failing the test (for goroutines): the
// response to id, from a JSON body or the POST's stream. noted, when not
// nil, is closed at the first notification on the stream.
func serveTryCall(c *serveSession, id, method, params string, noted chan struct{}) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.s.URL, bytes.NewReader(serveRequest(id, method, params)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("MCP-Protocol-Version", legacyVersion)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("status %d, body %s", resp.StatusCode, shortBytes(b))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		return io.ReadAll(resp.Body)
	}
	if mt != "text/event-stream" {
		return nil, fmt.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	r := newSSEReader(resp.Body)
	for {
		ev, err := r.next()
		if err != nil {
			return nil, fmt.Errorf("the stream ended (%w) without the response", err)
		}
		if isResponse(ev.data) && gjson.GetBytes(ev.data, "id").Raw == id {
			return ev.data, nil
		}
		if noted != nil && gjson.GetBytes(ev.data, "method").Exists() && !gjson.GetBytes(ev.data, "id").Exists() {
			close(noted)
			noted = nil
		}
	}
}

// TestServeHealthMetrics: /healthz answers 200 while the upstream's last
// discover succeeded, and not 200 once it failed; /metrics is Prometheus
// text with sessions, requests and an upstream latency histogram.
func TestServeHealthMetrics(t *testing.T) {
	t.Parallel()
	get := func(t *testing.T, url string) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}

	// healthy waits (bounded) for /healthz to answer 200: the first look
	// at the upstream may still be under way when serve listens.
	healthy := func(t *testing.T, s *serveProc) {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for {
			st, _, body := get(t, s.Base+"/healthz")
			if st == http.StatusOK {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/healthz = %d %q for %v with the upstream up, want 200", st, body, waitTimeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	t.Run("2025 upstream, before any session", func(t *testing.T) {
		t.Parallel()
		s := startServe(t, newLegacyUpstream(t, demo.NewLegacy()).URL)
		healthy(t, s)
	})

	t.Run("up", func(t *testing.T) {
		t.Parallel()
		up := newServeUp(t, demo.Handler(), true)
		s := startServe(t, up.URL)
		// Healthy before any client session: a balancer routes to it.
		healthy(t, s)
		c := s.rawSession(t, newServeFrames(t, false))
		c.initialize(serveInit)
		serveEcho(t, c, `"e"`, "for the metrics")
		if st, _, body := get(t, s.Base+"/healthz"); st != http.StatusOK {
			t.Errorf("/healthz = %d %q, want 200 after a successful discover", st, body)
		}
		st, ct, body := get(t, s.Base+"/metrics")
		if st != http.StatusOK || !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("/metrics = %d %q, want 200 text/plain", st, ct)
		}
		types := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`).FindAllStringSubmatch(body, -1) {
			types[m[1]] = m[2]
		}
		var sessions, requests, histogram bool
		for name, typ := range types {
			sessions = sessions || strings.Contains(name, "session")
			requests = requests || strings.Contains(name, "request")
			histogram = histogram || typ == "histogram" && strings.Contains(name, "upstream")
		}
		if !sessions || !requests || !histogram {
			t.Errorf("/metrics families %v: want a sessions metric (%v), a requests metric (%v) and an upstream histogram (%v)", types, sessions, requests, histogram)
		}
		// The samples: the echo counted by method and outcome, the one
		// open session, and upstream exchanges in the histogram.
		var counted, open, observed bool
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "#") || line == "" {
				continue
			}
			series := strings.Fields(line)[0]
			name, rest, _ := strings.Cut(series, "{")
			value := line[strings.LastIndexByte(line, ' ')+1:]
			if strings.Contains(rest, `method="tools/call"`) && strings.Contains(rest, `outcome="result"`) && value != "0" {
				counted = true
			}
			if types[name] == "gauge" && strings.Contains(name, "session") && value == "1" {
				open = true
			}
			if strings.HasSuffix(name, "_count") && types[strings.TrimSuffix(name, "_count")] == "histogram" &&
				strings.Contains(name, "upstream") && value != "0" {
				observed = true
			}
		}
		if !counted || !open || !observed {
			t.Errorf("/metrics: echo counted by method and outcome %v, 1 open session %v, upstream latencies observed %v:\n%s", counted, open, observed, body)
		}
	})

	t.Run("down", func(t *testing.T) {
		t.Parallel()
		s := startServe(t, "--max-sessions", "1", closedURL(t))
		c := s.rawSession(t, newServeFrames(t, false))
		// A failed initialize is answered with an error and makes no
		// session: it holds no place under --max-sessions 1, so a client
		// may try again at once.
		for i := 0; i < 3; i++ {
			a := c.send(http.MethodPost, serveRequest(`"init"`, "initialize", serveInit), nil)
			if a.status != http.StatusOK || !gjson.GetBytes(a.body, "error").IsObject() {
				t.Errorf("initialize #%d with the upstream down: %d %s, want 200 with a JSON-RPC error", i+1, a.status, shortBytes(a.body))
			}
			if sid := a.header.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("the failed initialize #%d issued a session id %q", i+1, sid)
			}
		}
		if st, _, body := get(t, s.Base+"/healthz"); st == http.StatusOK {
			t.Errorf("/healthz = 200 %q with the upstream down (its discover failed), want an error status", body)
		}
	})
}

// TestServeTraceLogs: the trace and the logs of a serve process name the
// session of each record as well as its op: every hop of one session's
// echo carries that session's Mcp-Session-Id and one op.
func TestServeTraceLogs(t *testing.T) {
	t.Parallel()
	tracePath := filepath.Join(t.TempDir(), "trace.jsonl")
	up := newServeUp(t, demo.Handler(), true)
	s := startServe(t, "--trace", tracePath, "--log-level", "info", "--log-format", "json", up.URL)
	f := newServeFrames(t, false)
	sids := map[string]string{} // echo text → session id
	for i := 0; i < 2; i++ {
		c := s.rawSession(t, f)
		c.initialize(serveInit)
		text := "trace " + serveTag(i)
		serveEcho(t, c, `"echo"`, text)
		sids[text] = c.sid
	}
	s.stop(t)
	if n := s.listenLines(); n != 1 {
		t.Errorf("%d \"listening on\" lines with --log-format json, want exactly 1:\n%s", n, s.stderr.String())
	}

	t.Run("logs name the session", func(t *testing.T) {
		for _, sid := range sids {
			logged := false
			for _, l := range logLines(s.stderr.String()) {
				logged = logged || l.Get("session").Str == sid
			}
			if !logged {
				t.Errorf("no log line names the session %s:\n%s", sid, s.stderr.String())
			}
		}
	})

	recs := dbgReadTrace(t, tracePath)
	// echoRecords are the trace records of the echo with text.
	echoRecords := func(text string) []gjson.Result {
		var out []gjson.Result
		for _, r := range recs {
			if strings.Contains(r.Get("frame").Raw, text) {
				out = append(out, r)
			}
		}
		return out
	}

	t.Run("trace hops and op", func(t *testing.T) {
		for text := range sids {
			dirs, ops := map[string]bool{}, map[string]bool{}
			for _, r := range echoRecords(text) {
				dirs[r.Get("dir").Str] = true
				ops[r.Get("op").Str] = true
			}
			for _, d := range []string{"client->proxy", "proxy->server", "server->proxy", "proxy->client"} {
				if !dirs[d] {
					t.Errorf("the trace has no %s record of the echo %q", d, text)
				}
			}
			if len(ops) != 1 || ops[""] {
				t.Errorf("the echo %q has ops %v in the trace, want one", text, ops)
			}
		}
	})

	t.Run("trace names the session", func(t *testing.T) {
		for text, sid := range sids {
			for _, r := range echoRecords(text) {
				if got := r.Get("session").Str; got != sid {
					t.Errorf("trace record %s of session %s carries session %q", shortBytes([]byte(r.Raw)), sid, got)
				}
			}
		}
	})
}

// TestServePostStream: a request's own notifications travel on its POST's
// stream, before its answer, as SSE events with ids: progress and a log
// message of the demo's slow_count, and progress of a 2025 server's call
// whose upstream stream drops and is resumed (drop_stream).
func TestServePostStream(t *testing.T) {
	t.Parallel()
	for _, k := range serveUpKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			_, _, c, _ := serveOn(t, k)
			var resp []byte
			want := 1
			if k.name == "demo" {
				resultOf(t, c.call(`"level"`, "logging/setLevel", `{"level":"info"}`))
				want = 3
				resp = c.call(`"count"`, "tools/call", `{"name":"slow_count","arguments":{"n":3},"_meta":{"progressToken":"tok-post"}}`)
				if got := tkText(resultOf(t, resp)); got != "counted to 3" {
					t.Errorf("slow_count = %q", got)
				}
			} else {
				resp = c.call(`"drop"`, "tools/call", `{"name":"drop_stream","arguments":{},"_meta":{"progressToken":"tok-post"}}`)
				if got := tkText(resultOf(t, resp)); got != "resumed" {
					t.Errorf("drop_stream = %q", got)
				}
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			progress, logs := 0, 0
			for _, n := range c.notes {
				switch gjson.GetBytes(n, "method").String() {
				case "notifications/progress":
					progress++
					if tok := gjson.GetBytes(n, "params.progressToken").String(); tok != "tok-post" {
						t.Errorf("progress with token %q on the POST's stream, want tok-post: %s", tok, n)
					}
				case "notifications/message":
					logs++
				}
			}
			if progress != want {
				t.Errorf("%d progress notifications on the POST's stream before its answer, want %d (notes %q)", progress, want, c.notes)
			}
			if k.name == "demo" && logs != 1 {
				t.Errorf("%d log messages on the POST's stream before its answer, want 1", logs)
			}
			if c.noID != 0 {
				t.Errorf("%d events on POST streams carried no id", c.noID)
			}
		})
	}
}

// TestServeCancel: a client's notifications/cancelled for a call in flight
// ends the upstream request, and nothing more is sent for that id: the
// POST ends without its response (raw), and the go-sdk client's cancelled
// context does the same through its own notifications/cancelled.
func TestServeCancel(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"demo", "2025"} {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			hold, url, legacy := startHeld(t, k)
			s, _, c := serveAt(t, url, k == "2025")

			type posted struct {
				status int
				body   []byte
				err    error
			}
			out := make(chan posted, 1)
			go func() {
				// The answer's headers wait for its first frame, so the
				// POST runs on its own goroutine.
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				defer cancel()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(serveRequest(`"doomed"`, "tools/call", `{"name":"echo","arguments":{"text":"`+serveHoldMark+`"}}`)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Session-Id", c.sid)
				req.Header.Set("Mcp-Protocol-Version", legacyVersion)
				resp, err := c.hc.Do(req)
				if err != nil {
					out <- posted{err: err}
					return
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				out <- posted{status: resp.StatusCode, body: b, err: err}
			}()
			hold.wait(t, 1)
			c.notify("notifications/cancelled", `{"requestId":"doomed","reason":"the user changed their mind"}`)
			hold.waitEnded(t, 1)
			if legacy != nil {
				// A 2025 server learns of it by a POSTed cancel (a closed
				// stream is no cancellation in 2025).
				call := legacy.wait(t, "the held call", isToolCall("echo"))
				legacy.wait(t, "notifications/cancelled naming the held call "+call.ID, func(ls legacySeen) bool {
					return isPost("notifications/cancelled")(ls) && gjson.GetBytes(ls.Body, "params.requestId").Raw == call.ID
				})
			}

			// The POST ends (bounded by its context) with no response.
			p := <-out
			if p.err != nil {
				t.Fatalf("the cancelled call's POST: %v", p.err)
			}
			for _, line := range strings.Split(string(p.body), "\n") {
				line = strings.TrimPrefix(strings.TrimSpace(line), "data:")
				if line = strings.TrimSpace(line); line != "" && gjson.Valid(line) && isResponse([]byte(line)) && gjson.Get(line, "id").Raw == `"doomed"` {
					t.Errorf("the cancelled call was answered (status %d): %s", p.status, line)
				}
			}
			t.Logf("the cancelled call's POST ended with status %d, body %q", p.status, shortBytes(p.body))
			serveEcho(t, c, `"after"`, "the session goes on")

			// go-sdk: cancelling the call's context.
			ctx, stop := context.WithTimeout(context.Background(), waitTimeout)
			defer stop()
			cs := sdkServeConnect(t, ctx, s, mcp.NewClient(&mcp.Implementation{Name: "e2e-serve-sdk", Version: "1"}, nil), newServeFrames(t, k == "2025"))
			defer cs.Close()
			cctx, ccancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": serveHoldMark}})
				done <- err
			}()
			hold.wait(t, 2)
			ccancel()
			if err := <-done; err == nil {
				t.Errorf("the cancelled go-sdk call succeeded")
			}
			hold.waitEnded(t, 2)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "sdk after cancel"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := sdkText(t, res); got != "sdk after cancel" {
				t.Errorf("echo = %q", got)
			}
		})
	}
}

// TestServeGetStreamRequest: a request that belongs to no POST (a 2025
// server's roots/list, sent on its own GET stream after the call that
// caused it was answered) reaches the client on the session's GET stream,
// and the client's answer, POSTed back (202), reaches the server.
func TestServeGetStreamRequest(t *testing.T) {
	t.Parallel()
	roots := make(chan string, 1)
	srv := mcp.NewServer(&mcp.Implementation{Name: "e2e-later", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask_later", Description: "Asks the client for its roots after answering."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ss := req.Session
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				defer cancel()
				//lint:ignore SA1019 roots is a 2025 feature a 2025 server uses, and what passthrough carries.
				res, err := ss.ListRoots(ctx, nil)
				switch {
				case err != nil:
					roots <- "error: " + err.Error()
				case len(res.Roots) != 1:
					roots <- fmt.Sprintf("%d roots", len(res.Roots))
				default:
					roots <- res.Roots[0].URI
				}
			}()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil, nil
		})
	up := newLegacyUpstream(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	s := startServe(t, up.URL)
	c := s.rawSession(t, newServeFrames(t, true))
	c.initialize(`{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"e2e-serve","version":"1"}}`)
	st := c.openStream("")
	up.wait(t, "the proxy's GET stream", isGetStream(up.sessionOf(t, 1)))

	if got := tkText(resultOf(t, c.call(`"ask"`, "tools/call", `{"name":"ask_later","arguments":{}}`))); got != "asked" {
		t.Errorf("ask_later = %q", got)
	}
	ev := st.wait(t, "the server's roots/list request", func(ev sseEvent) bool {
		return gjson.GetBytes(ev.data, "method").String() == "roots/list" && gjson.GetBytes(ev.data, "id").Exists()
	})
	req := gjson.ParseBytes(ev.data)
	answer := `{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"result":{"roots":[{"uri":"file:///e2e-later","name":"e2e"}]}}`
	if a := c.send(http.MethodPost, []byte(answer), nil); a.status != http.StatusAccepted {
		t.Fatalf("POST of the roots/list answer: status %d, want 202; body %s", a.status, shortBytes(a.body))
	}
	select {
	case got := <-roots:
		if got != "file:///e2e-later" {
			t.Errorf("the server's ListRoots got %q, want the client's file:///e2e-later", got)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("the server's ListRoots did not return within %v", waitTimeout)
	}
}

// TestServeDeleteInFlight: a DELETE while a call is in flight ends the
// session, and the call still gets exactly one answer, an error.
func TestServeDeleteInFlight(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"demo", "2025"} {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			hold, url, _ := startHeld(t, k)
			_, _, c := serveAt(t, url, k == "2025")
			type outcome struct {
				frame []byte
				err   error
			}
			out := make(chan outcome, 1)
			go func() {
				fr, err := serveTryCall(c, `"held"`, "tools/call", `{"name":"echo","arguments":{"text":"`+serveHoldMark+`"}}`, nil)
				out <- outcome{fr, err}
			}()
			hold.wait(t, 1)
			if st := c.del(); st < 200 || st > 299 {
				t.Fatalf("DELETE: status %d", st)
			}
			select {
			case o := <-out:
				if o.err != nil {
					t.Fatalf("the call in flight at DELETE got no answer: %v", o.err)
				}
				errorOf(t, o.frame)
				t.Logf("the call in flight at DELETE: %s", o.frame)
			case <-time.After(waitTimeout):
				t.Fatalf("the call in flight at DELETE was not answered within %v", waitTimeout)
			}
			hold.waitEnded(t, 1)
			if a := c.send(http.MethodPost, serveRequest(`"x"`, "ping", ""), nil); a.status != http.StatusNotFound {
				t.Errorf("after DELETE: status %d, want 404", a.status)
			}
		})
	}
}

// TestServeNotIdleInFlight: a session with a call open is not idle: it
// outlives several --session-idle-timeout periods while the call runs.
func TestServeNotIdleInFlight(t *testing.T) {
	t.Parallel()
	hold, url, _ := startHeld(t, "demo")
	s := startServe(t, "--session-idle-timeout", "1s", url)
	c := s.rawSession(t, newServeFrames(t, false))
	c.initialize(serveInit)
	out := make(chan error, 1)
	go func() {
		_, err := serveTryCall(c, `"held"`, "tools/call", `{"name":"echo","arguments":{"text":"`+serveHoldMark+`"}}`, nil)
		out <- err
	}()
	hold.wait(t, 1)
	// Three idle periods pass with the call open (a lower bound, not a
	// speed requirement: waiting longer only makes expiry more likely).
	time.Sleep(3 * time.Second)
	c.notify("notifications/cancelled", `{"requestId":"held"}`)
	hold.waitEnded(t, 1)
	select {
	case <-out:
	case <-time.After(waitTimeout):
		t.Fatalf("the cancelled call's POST did not end within %v", waitTimeout)
	}
	serveEcho(t, c, `"after"`, "still alive after a long call")
}
