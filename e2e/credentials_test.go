package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRedirectToAnotherOriginEndToEnd: an upstream that redirects every
// request to another origin (another port) gets no credential through the
// proxy: the other origin sees no request at all, and the client's
// initialize is answered with an error that names the target, without its
// secrets, and the fix. No credentials over plain http to another
// machine, in both eras: --protocol auto probes
// with a 2026 POST, --protocol legacy forwards the client's own initialize.
func TestRedirectToAnotherOriginEndToEnd(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"auto", "legacy"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			other := newDemoUpstream(t)
			target := other.URL + "?token=querysecret"
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(front.Close)
			p := startProxy(t, []string{"--protocol", protocol, "--header", "Authorization: Bearer e2esecret", front.URL + "/mcp"})
			if protocol == "legacy" {
				p.passthrough()
			}
			e := errorOf(t, p.call(`"init"`, "initialize", initParams))
			msg := e.Get("message").String()
			host := strings.TrimPrefix(other.URL, "http://")
			for _, want := range []string{host, "point the proxy at the final URL"} {
				if !strings.Contains(msg, want) {
					t.Errorf("initialize error %q does not mention %q", msg, want)
				}
			}
			for _, secret := range []string{"e2esecret", "querysecret"} {
				if strings.Contains(e.Raw, secret) || strings.Contains(p.stderr.String(), secret) {
					t.Errorf("the secret %q shows in the error %s or on stderr", secret, e.Raw)
				}
			}
			if got := other.requests(""); len(got) != 0 {
				t.Errorf("the other origin got %d requests, want none", len(got))
			}
		})
	}
}

// TestAllowHTTPEndToEnd: a bearer for a plain-http host that is not
// loopback is refused at start-up, exit 2, one line naming --allow-http.
func TestAllowHTTPEndToEnd(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, nil, "--header", "Authorization: Bearer e2esecret", "http://mcp.example.com/mcp")
	if code != 2 || stdout != "" || !strings.Contains(stderr, "--allow-http") || strings.Count(stderr, "\n") != 1 || strings.Contains(stderr, "e2esecret") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, one line naming --allow-http and no secret", code, stdout, stderr)
	}
}
