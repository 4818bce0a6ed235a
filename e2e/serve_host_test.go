package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// serveRawStatus sends one raw HTTP/1.1 initialize POST to addr with the
// given Host header (and bearer, when set), and returns the status.
func serveRawStatus(t *testing.T, addr, host, bearer string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitTimeout))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":` + serveInit + `}`
	auth := ""
	if bearer != "" {
		auth = "Authorization: Bearer " + bearer + "\r\n"
	}
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		host, auth, len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("Host %q: %v", host, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode
}

// TestServeHostPort: the Host header must be what a browser sends for a
// page that targets this listener: a loopback name (localhost,
// *.localhost, 127.0.0.1, [::1]) with the listener's own port (a port-less
// Host means port 80), or an --allow-origin host with that port or the
// origin's. Any other port, or no port, is refused with 403. With a token
// and a listen address on every interface, any Host passes (a balancer's
// names), as before.
func TestServeHostPort(t *testing.T) {
	t.Parallel()
	t.Run("loopback listener", func(t *testing.T) {
		t.Parallel()
		s := startServe(t, "--demo", "--allow-origin", "https://app.example", "--allow-origin", "http://dev.example:3000")
		_, port, err := net.SplitHostPort(s.Host)
		if err != nil || port == "80" {
			t.Fatalf("listening on %s: %v (the test needs a port other than 80)", s.Host, err)
		}
		n, _ := strconv.Atoi(port)
		other := strconv.Itoa(n%60000 + 1)
		for host, want := range map[string]int{
			"localhost:" + port:      http.StatusOK,
			"LocalHost:" + port:      http.StatusOK,
			"127.0.0.1:" + port:      http.StatusOK,
			"[::1]:" + port:          http.StatusOK,
			"app.localhost:" + port:  http.StatusOK,
			"app.example":            http.StatusOK, // the origin's own (a TLS front keeping the Host)
			"app.example:443":        http.StatusOK,
			"app.example:" + port:    http.StatusOK,
			"dev.example:3000":       http.StatusOK,
			"localhost":              http.StatusForbidden, // port 80, not this listener's
			"localhost:" + other:     http.StatusForbidden,
			"localhost:0" + port:     http.StatusForbidden,
			"127.0.0.1:" + other:     http.StatusForbidden,
			"[::1]:" + other:         http.StatusForbidden,
			"app.localhost":          http.StatusForbidden,
			"app.localhost:" + other: http.StatusForbidden,
			"app.example:8443":       http.StatusForbidden,
			"dev.example":            http.StatusForbidden,
			"dev.example:80":         http.StatusForbidden,
			"evil.example:" + port:   http.StatusForbidden,
		} {
			if got := serveRawStatus(t, s.Host, host, ""); got != want {
				t.Errorf("Host %q: status %d, want %d", host, got, want)
			}
		}
	})
	t.Run("token on every interface", func(t *testing.T) {
		t.Parallel()
		tok := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tok, []byte("host-test-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := startServe(t, "--listen", "0.0.0.0:0", "--auth-token-file", tok, "--demo")
		_, port, err := net.SplitHostPort(s.Host)
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.1", port)
		for _, host := range []string{"mcp.internal.example", "10.1.2.3:8931", "replica-7:" + port, "localhost:1"} {
			if got := serveRawStatus(t, addr, host, "host-test-token"); got != http.StatusOK {
				t.Errorf("Host %q behind a balancer: status %d, want 200", host, got)
			}
		}
		if got := serveRawStatus(t, addr, "mcp.internal.example", ""); got != http.StatusUnauthorized {
			t.Errorf("no token: status %d, want 401", got)
		}
	})
}
