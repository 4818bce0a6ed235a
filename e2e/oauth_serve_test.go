package e2e

import (
	"net/http"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

// TestOAuthServe: serve mode signs in toward an OAuth-protected upstream
// as the stdio mode does (a real authorization server, the browser
// following the sign-in page), once for the process: two client sessions
// reach the upstream with a bearer, and the second needs no sign-in of
// its own. Nothing on the client side carries the upstream's credentials.
func TestOAuthServe(t *testing.T) {
	t.Parallel()
	f := newOAuthFixture(t, authserver.Config{}, nil)
	b := newBrowser(t, "follow")
	s := startServe(t, f.args(b)...)

	echo := func(c *serveSession, id, text string) {
		t.Helper()
		res := resultOf(t, c.call(id, "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"}}`))
		if got := res.Get("content.0.text").Str; got != text {
			t.Errorf("echo %s = %q, want %q (result %s)", id, got, text, shortBytes([]byte(res.Raw)))
		}
	}
	frames := newServeFrames(t, false)
	one := s.rawSession(t, frames)
	one.initialize(serveInit)
	echo(one, "2", "signed in, session one")
	two := s.rawSession(t, frames)
	two.initialize(serveInit)
	echo(two, "2", "signed in, session two")

	st := f.stats()
	if st.Registrations != 1 || st.Authorizations != 1 || st.TokenGrants != 1 || st.TokenErrors != 0 {
		t.Errorf("authorization server stats %+v, want 1 registration, 1 authorization, 1 token grant, no error: one sign-in for the process", st)
	}
	if runs := b.runs(); len(runs) != 1 {
		t.Errorf("the browser was opened %d times, want once: %v", len(runs), runs)
	}
	// Refused: the first initialize's probe, which starts the sign-in, and
	// the health probe at start when it ran before the sign-in ended (a
	// health probe never starts one). After the sign-in, every POST to the
	// upstream carries the bearer.
	refused := 0
	for _, seen := range f.up.seen(func(s authSeen) bool { return s.HTTPMethod == http.MethodPost }) {
		switch {
		case seen.Status == http.StatusUnauthorized:
			refused++
			if seen.RPCMethod != "server/discover" || seen.Bearer() != "" {
				t.Errorf("%s refused with 401 (bearer %v): only the probes before the sign-in may be", seen.RPCMethod, seen.Bearer() != "")
			}
		case seen.Bearer() == "":
			t.Errorf("%s reached the upstream without a bearer after the sign-in", seen.RPCMethod)
		}
	}
	if refused < 1 || refused > 2 {
		t.Errorf("%d upstream requests refused with 401, want the first initialize's probe and at most the start-up health probe; upstream saw:\n%s", refused, f.up.dump())
	}
	if one.del() != http.StatusOK || two.del() != http.StatusOK {
		t.Errorf("DELETE of a signed-in session did not answer 200")
	}
	// The upstream's tokens reach neither the serve client nor the logs.
	var sent []byte
	for _, fr := range frames.all() {
		sent = append(append(sent, fr...), '\n')
	}
	secretScan(t, f.as, map[string]string{"frames the clients got": string(sent), "stderr": s.stderr.String(), "stdout": s.stdout.String()})
}
