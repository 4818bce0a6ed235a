package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

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

func errorAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}
