package main_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
)

// TestFakeBrowser builds the command and signs in with it, in each mode.
func TestFakeBrowser(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build fakebrowser with")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "fakebrowser")
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	var mu sync.Mutex
	var states []string
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		states = append(states, r.URL.Query().Get("state"))
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer cb.Close()
	as, err := authserver.Start(ctx, authserver.Config{
		Resources: []string{"http://127.0.0.1:9/mcp"},
		Clients:   []authserver.Client{{ID: "c", RedirectURIs: []string{cb.URL + "/callback"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	authURL := as.AuthorizationEndpoint() + "?" + url.Values{
		"response_type": {"code"}, "client_id": {"c"}, "redirect_uri": {cb.URL + "/callback"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"},
		"resource": {"http://127.0.0.1:9/mcp"}, "state": {"s1"},
	}.Encode()

	logFile := filepath.Join(t.TempDir(), "log")
	for _, tc := range []struct {
		args   []string
		env    string
		states string
		stdout bool
	}{
		{nil, "", "s1", false},
		{[]string{"-mode", "twice"}, "", "s1 s1", false},
		{nil, "tamper-state", "tampered-s1", false},
		{[]string{"-mode=never"}, "", "", false},
		{[]string{"-mode", "print", "-log", logFile}, "", "", true},
	} {
		mu.Lock()
		states = nil
		mu.Unlock()
		cmd := exec.CommandContext(ctx, bin, append(tc.args, authURL)...)
		cmd.Env = append(os.Environ(), "FAKEBROWSER_MODE="+tc.env)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v %s: %v", tc.args, tc.env, err)
		}
		mu.Lock()
		got := strings.Join(states, " ")
		mu.Unlock()
		if got != tc.states || (len(out) > 0) != tc.stdout {
			t.Errorf("%v %s: callback states %q, stdout %q", tc.args, tc.env, got, out)
		}
		if tc.stdout && !strings.HasPrefix(string(out), cb.URL+"/callback?") {
			t.Errorf("print mode wrote %q", out)
		}
	}
	if b, err := os.ReadFile(logFile); err != nil || !strings.HasPrefix(string(b), authURL+"\t"+cb.URL) {
		t.Errorf("log %q, %v", b, err)
	}
	if err := exec.CommandContext(ctx, bin, as.AuthorizationEndpoint()+"?client_id=nobody").Run(); err == nil {
		t.Error("an error page did not fail the command")
	}
}
