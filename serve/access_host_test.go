package serve

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostNeedsListenerPort: a Host names this listener only with its
// port (none when it is 80): loopback names, *.localhost and the listen
// host alike; an --allow-origin host also with the origin's port (none or
// the default for an origin without one). With a token on every
// interface, anything passes.
func TestHostNeedsListenerPort(t *testing.T) {
	a := newAccess("mybox.lan", []string{"https://app.example", "http://dev.example:3000"}, false)
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"localhost:8931", 8931, true},
		{"LOCALHOST:8931", 8931, true},
		{"127.0.0.2:8931", 8931, true},
		{"[::1]:8931", 8931, true},
		{"x.localhost:8931", 8931, true},
		{"mybox.lan:8931", 8931, true},
		{"localhost", 80, true},
		{"localhost:80", 80, true},
		{"app.example", 8931, true},
		{"app.example:443", 8931, true},
		{"app.example:8931", 8931, true},
		{"dev.example:3000", 8931, true},
		{"localhost", 8931, false},
		{"localhost:", 8931, false},
		{"localhost:8932", 8931, false},
		{"localhost:08931", 8931, false},
		{"[::1]:1", 8931, false},
		{"x.localhost", 8931, false},
		{"x.localhost:1", 8931, false},
		{"mybox.lan", 8931, false},
		{"mybox.lan:1", 8931, false},
		{"app.example:444", 8931, false},
		{"dev.example", 8931, false},
		{"dev.example:80", 8931, false},
		{"evil.example:8931", 8931, false},
		{"localhost:1", 0, true}, // not from a listener: the port is unknown
	} {
		if got := a.hostOK(c.host, c.port); got != c.want {
			t.Errorf("hostOK(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	balanced := newAccess("0.0.0.0", nil, true)
	for _, h := range []string{"balancer.example", "10.0.0.1:1", "localhost:1"} {
		if !balanced.hostOK(h, 8931) {
			t.Errorf("with a token on every interface, Host %q was refused", h)
		}
	}
}

// TestHostCheckUsesListenerPort: the check takes the port from the
// connection the request came in on, and its refusal names that port.
func TestHostCheckUsesListenerPort(t *testing.T) {
	a := newAccess("127.0.0.1", nil, false)
	var reasons []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reasons = append(reasons, a.check(r))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	for _, host := range []string{"localhost:" + port, "localhost:1"} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Host = host
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(reasons) != 2 || reasons[0] != "" || !strings.Contains(reasons[1], `"localhost:1"`) || !strings.Contains(reasons[1], "port, "+port) {
		t.Errorf("reasons %q: want the listener's port accepted, another refused naming the port", reasons)
	}
}
