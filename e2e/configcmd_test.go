package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The built binary writes its own path into a Cursor file under a temporary
// HOME, keeping what was there, and a second write changes nothing.
func TestConfigCmdWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	home := t.TempDir()
	path := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"other":{"command":"x"}},"keep":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		cmd := exec.CommandContext(ctx, binPath, "config", "cursor", "https://mcp.example.com/mcp", "--header", "Authorization: Bearer ${EX_TOKEN}", "--write")
		cmd.Env = proxyEnv("HOME="+home, "USERPROFILE="+home)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), path) {
			t.Fatalf("write %d: %v\n%s", i, err, out)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Keep       int `json:"keep"`
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	e := doc.MCPServers["example"]
	exe, _ := filepath.EvalSymlinks(binPath)
	if doc.Keep != 1 || doc.MCPServers["other"].Command != "x" || e.Command != exe || e.Env["EX_TOKEN"] != "${env:EX_TOKEN}" {
		t.Fatalf("file:\n%s", b)
	}
	if backups, _ := filepath.Glob(path + ".*.bak"); len(backups) != 1 {
		t.Errorf("backups %v, want one", backups)
	}
}
