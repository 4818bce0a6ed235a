package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// The built binary checks the demo server: JSON for scripts, exit 0; a
// dead URL exits 1 with the reason.
func TestCheckCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, stop, err := demo.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cmd := exec.CommandContext(ctx, binPath, "check", "--json", "--timeout", "30", u)
	cmd.Env = proxyEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	var r struct {
		Usable      bool     `json:"usable"`
		Era         string   `json:"era"`
		Extensions  []string `json:"extensions"`
		Base64Names string   `json:"base64Names"`
	}
	if err := json.Unmarshal(out, &r); err != nil || !r.Usable || r.Era != "2026-07-28" || r.Base64Names != "accepted" || len(r.Extensions) == 0 {
		t.Fatalf("report %+v (%v):\n%s", r, err, out)
	}

	stop()
	cmd = exec.CommandContext(ctx, binPath, "check", "--timeout", "30", u)
	cmd.Env = proxyEnv("NO_COLOR=1")
	out, err = cmd.Output()
	var ee *exec.ExitError
	if !errorAs(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "not usable: cannot connect") {
		t.Fatalf("dead URL: %v\n%s", err, out)
	}
}

// checkReport is the part of check --json the tests read.
type checkReport struct {
	Usable    bool   `json:"usable"`
	Reason    string `json:"reason"`
	Era       string `json:"era"`
	Transport string `json:"transport"`
	Tools     *struct {
		Count int `json:"count"`
	} `json:"tools"`
	Auth *struct {
		Required            bool   `json:"required"`
		AuthorizationServer string `json:"authorizationServer"`
	} `json:"auth"`
	Next    string `json:"next"`
	Clients []struct {
		Client string `json:"client"`
		Gets   string `json:"gets"`
		Error  string `json:"error"`
	} `json:"clients"`
}

// gets is what the report says a client of version v gets ("" when it is
// refused, or not reported).
func (r checkReport) gets(v string) string {
	for _, c := range r.Clients {
		if c.Client == v {
			return c.Gets
		}
	}
	return ""
}

// runCheckJSON runs the binary's check --json and returns its exit status
// and report.
func runCheckJSON(t *testing.T, ctx context.Context, args ...string) (int, checkReport) {
	t.Helper()
	cmd := exec.CommandContext(ctx, binPath, append([]string{"check", "--json", "--timeout", "30"}, args...)...)
	cmd.Env = proxyEnv()
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errorAs(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("check %v: %v", args, err)
	}
	var r checkReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("check %v: no JSON (%v):\n%s", args, err, out)
	}
	return code, r
}

// The built binary checks a 2025 server (passed through), an old HTTP+SSE
// server, and a server that wants an OAuth sign-in (exit 3, the way to
// sign in named).
func TestCheckCommandEras(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, r := runCheckJSON(t, ctx, "--demo-legacy")
	if code != 0 || !r.Usable || r.Era != "2025-11-25" || r.Transport != "streamable-http" || r.Tools == nil || r.Tools.Count == 0 {
		t.Errorf("legacy demo: exit %d report %+v", code, r)
	}
	if !strings.Contains(r.gets("2025-11-25"), "passed through") || !strings.Contains(r.gets("2026-07-28"), "reverse bridge") {
		t.Errorf("legacy demo: what each client era gets: %+v", r.Clients)
	}
	_, r = runCheckJSON(t, ctx, "--demo")
	if !strings.Contains(r.gets("2025-11-25"), "bridged to 2025-11-25") || !strings.Contains(r.gets("2026-07-28"), "relayed as it is") {
		t.Errorf("demo: what each client era gets: %+v", r.Clients)
	}
	_, r = runCheckJSON(t, ctx, "--demo", "--client-era", "legacy")
	if len(r.Clients) != 2 || r.gets("2026-07-28") != "" || !strings.Contains(r.Clients[1].Error, "--client-era legacy") {
		t.Errorf("demo, --client-era legacy: a 2026 client should be refused, naming the flag: %+v", r.Clients)
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "go-sdk-sse", Version: "1.8.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echoes"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	code, r = runCheckJSON(t, ctx, ts.URL)
	if code != 0 || !r.Usable || r.Transport != "http+sse" || r.Era != "2025-11-25" || r.Tools == nil || r.Tools.Count != 1 {
		t.Errorf("HTTP+SSE server: exit %d report %+v", code, r)
	}

	code, r = runCheckJSON(t, ctx, "--demo", "--demo-oauth")
	if code != 3 || r.Usable || r.Auth == nil || !r.Auth.Required || r.Auth.AuthorizationServer == "" || !strings.HasPrefix(r.Next, "mcp-tasks-proxy auth login http://") {
		t.Errorf("OAuth demo: exit %d report %+v", code, r)
	}
}

func errorAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}
