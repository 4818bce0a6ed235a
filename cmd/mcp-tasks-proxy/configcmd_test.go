package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/hostconfig"
	"github.com/tidwall/gjson"
)

const cfgExe = "/opt/mcp/bin/mcp-tasks-proxy"

func runConfig(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	old := executable
	executable = func() (string, error) { return cfgExe, nil }
	t.Cleanup(func() { executable = old })
	var out, errb bytes.Buffer
	code := run(append([]string{"config"}, args...), strings.NewReader(""), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func TestConfigCmdSnippets(t *testing.T) {
	const u = "https://mcp.example.com/mcp"
	for _, tc := range []struct{ host, key string }{
		{"claude-desktop", "mcpServers"}, {"cursor", "mcpServers"}, {"windsurf", "mcpServers"},
		{"vscode", "servers"}, {"zed", "context_servers"},
	} {
		code, out, errs := runConfig(t, tc.host, u, "--protocol", "modern")
		if code != 0 || !gjson.Valid(out) {
			t.Fatalf("%s: exit %d, stdout not JSON:\n%s\n%s", tc.host, code, out, errs)
		}
		e := gjson.Get(out, tc.key+".example")
		if e.Get("command").Str != cfgExe {
			t.Errorf("%s: command %s", tc.host, e.Get("command").Raw)
		}
		if got := compact(e.Get("args").Raw); got != `["--protocol","modern","`+u+`"]` {
			t.Errorf("%s: args %s", tc.host, got)
		}
		if a := e.Get("args").Array(); a[len(a)-1].Str != u {
			t.Errorf("%s: the URL is not last: %s", tc.host, e.Get("args").Raw)
		}
		if e.Get("env").Exists() {
			t.Errorf("%s: env without variables", tc.host)
		}
		switch tc.host {
		case "vscode":
			if e.Get("type").Str != "stdio" {
				t.Errorf("vscode: type %s", e.Get("type").Raw)
			}
		case "zed":
			if e.Get("source").Str != "custom" {
				t.Errorf("zed: source %s", e.Get("source").Raw)
			}
		}
	}
}

func TestConfigCmdNPXAndName(t *testing.T) {
	code, out, _ := runConfig(t, "cursor", "--npx", "--name", "work", "http://localhost:8080/mcp")
	e := gjson.Get(out, "mcpServers.work")
	if code != 0 || e.Get("command").Str != "npx" || compact(e.Get("args").Raw) != `["-y","mcp-tasks-proxy","http://localhost:8080/mcp"]` {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if got := defaultServerName("http://127.0.0.1:9/mcp"); got != "localhost-9" {
		t.Errorf("loopback name %q", got)
	}
}

func TestConfigCmdVariables(t *testing.T) {
	const u = "https://mcp.example.com/mcp"
	want := map[string]string{
		"claude-desktop": "<set API_KEY>", "zed": "<set API_KEY>",
		"cursor": "${env:API_KEY}", "windsurf": "${env:API_KEY}", "vscode": "${input:API_KEY}",
	}
	for host, val := range want {
		code, out, _ := runConfig(t, host, u, "--header", "X-Api-Key: ${API_KEY}")
		key := hostconfig.Key(host)
		e := gjson.Get(out, key+".example")
		if code != 0 || e.Get("args.1").Str != "X-Api-Key: ${API_KEY}" {
			t.Fatalf("%s: exit %d, ${API_KEY} not kept:\n%s", host, code, out)
		}
		if got := e.Get("env.API_KEY").Str; got != val {
			t.Errorf("%s: env %q, want %q", host, got, val)
		}
	}
	_, out, _ := runConfig(t, "vscode", u, "--header", "X-Api-Key: ${API_KEY}")
	if in := gjson.Get(out, "inputs.0"); in.Get("id").Str != "API_KEY" || !in.Get("password").Bool() {
		t.Errorf("vscode inputs: %s", gjson.Get(out, "inputs").Raw)
	}

	// A literal secret is never shown: it becomes a variable.
	code, out, errs := runConfig(t, "claude-desktop", u, "--header", "Authorization: Bearer s3cr3t-value")
	if code != 0 || strings.Contains(out+errs, "s3cr3t") {
		t.Fatalf("exit %d; the secret was shown:\n%s\n%s", code, out, errs)
	}
	e := gjson.Get(out, "mcpServers.example")
	if e.Get("args.1").Str != "Authorization: Bearer ${EXAMPLE_TOKEN}" || e.Get("env.EXAMPLE_TOKEN").Str != "<set EXAMPLE_TOKEN>" {
		t.Errorf("secret header: %s", e.Raw)
	}
	if !strings.Contains(errs, "looks like a secret") {
		t.Errorf("no warning: %s", errs)
	}
}

func TestConfigCmdClaudeCode(t *testing.T) {
	code, out, _ := runConfig(t, "claude-code", "https://mcp.example.com/mcp", "--header", "X-Api-Key: ${API_KEY}", "--name", "ex")
	want := `claude mcp add --transport stdio --scope user --env API_KEY="$API_KEY" ex -- ` + cfgExe + ` --header 'X-Api-Key: ${API_KEY}' https://mcp.example.com/mcp` + "\n"
	if code != 0 || out != want {
		t.Errorf("exit %d\n got %q\nwant %q", code, out, want)
	}
	if code, _, _ := runConfig(t, "claude-code", "https://mcp.example.com/mcp", "--write"); code != 2 {
		t.Errorf("claude-code --write: exit %d, want 2", code)
	}
}

func TestConfigCmdUsage(t *testing.T) {
	for _, args := range [][]string{
		{}, {"emacs", "https://x/mcp"}, {"cursor"}, {"cursor", "https://x/mcp", "--bogus"},
		{"cursor", "ftp://x"}, {"zed", "https://x/mcp", "--workspace"}, {"cursor", "https://x/mcp", "--demo"},
		{"cursor", "http://x.example/mcp", "--header", "Authorization: Bearer ${T}"}, // credential over plain http
	} {
		if code, _, errs := runConfig(t, args...); code != 2 || errs == "" {
			t.Errorf("%q: exit %d, stderr %q; want a usage error", args, code, errs)
		}
	}
	if code, out, _ := runConfig(t, "--help"); code != 0 || !strings.Contains(out, "Examples:") {
		t.Errorf("--help: exit %d", code)
	}
}

func TestConfigCmdRelativePaths(t *testing.T) {
	wd, _ := os.Getwd()
	_, out, _ := runConfig(t, "cursor", "https://mcp.example.com/mcp", "--log-file=proxy.log", "--trace", "-")
	args := compact(gjson.Get(out, "mcpServers.example.args").Raw)
	if !strings.Contains(args, `"--log-file","`+filepath.Join(wd, "proxy.log")+`"`) || !strings.Contains(args, `"--trace","-"`) {
		t.Errorf("args %s", args)
	}
}

func TestConfigCmdWrite(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	path := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	orig := `{"globalShortcut": "Ctrl+Space", "mcpServers": {"other": {"command": "x"}}}`
	if err := os.WriteFile(path, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runConfig(t, "claude-desktop", "https://mcp.example.com/mcp", "--header", "Authorization: Bearer ${TOK}", "--write")
	if code != 0 || !strings.Contains(out, path) || !strings.Contains(out, "backup") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
	b, _ := os.ReadFile(path)
	doc := string(b)
	if gjson.Get(doc, "globalShortcut").Str != "Ctrl+Space" || gjson.Get(doc, "mcpServers.other.command").Str != "x" || gjson.Get(doc, "mcpServers.example.command").Str != cfgExe {
		t.Fatalf("merged file:\n%s", doc)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want the old 0644", fi.Mode().Perm())
	}
	backups, _ := filepath.Glob(path + ".*.bak")
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	if bb, _ := os.ReadFile(backups[0]); string(bb) != orig {
		t.Errorf("backup holds %q", bb)
	}

	// The person fills in the variable; a second write keeps it and
	// changes nothing.
	filled := strings.Replace(doc, "<set TOK>", "real-token", 1)
	if err := os.WriteFile(path, []byte(filled), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runConfig(t, "claude-desktop", "https://mcp.example.com/mcp", "--header", "Authorization: Bearer ${TOK}", "--write")
	if code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second write: exit %d: %s", code, out)
	}
	if b, _ := os.ReadFile(path); string(b) != filled {
		t.Errorf("second write changed the file:\n%s", b)
	}
	if backups, _ := filepath.Glob(path + ".*.bak"); len(backups) != 1 {
		t.Errorf("second write made a backup: %v", backups)
	}

	// A new file is created, 0600.
	code, out, _ = runConfig(t, "windsurf", "https://mcp.example.com/mcp", "--write")
	wpath := filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")
	if fi, err := os.Stat(wpath); code != 0 || err != nil || fi.Mode().Perm() != 0o600 || !strings.Contains(out, "created") {
		t.Errorf("windsurf: exit %d %v %s", code, err, out)
	}
}

func TestConfigCmdWriteJSONC(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	jsonc := "// Zed settings\n{\n  \"theme\": \"One Dark\", // mine\n}\n"
	if err := os.WriteFile(path, []byte(jsonc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runConfig(t, "zed", "https://mcp.example.com/mcp", "--write", "--file", path)
	if code != 1 || !strings.Contains(errs, "comments") || !strings.Contains(errs, `"context_servers"`) {
		t.Errorf("exit %d: %s", code, errs)
	}
	if b, _ := os.ReadFile(path); string(b) != jsonc {
		t.Errorf("the JSONC file changed")
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runConfig(t, "zed", "https://mcp.example.com/mcp", "--write", "--file", path); code != 1 || !strings.Contains(errs, "not valid JSON") {
		t.Errorf("broken file: exit %d: %s", code, errs)
	}

	// VS Code: inputs merged by id.
	vs := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(vs, []byte(`{"inputs":[{"type":"promptString","id":"OTHER"}],"servers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if code, _, errs := runConfig(t, "vscode", "https://mcp.example.com/mcp", "--header", "X-Api-Key: ${K}", "--write", "--file", vs); code != 0 {
			t.Fatalf("vscode: exit %d %s", code, errs)
		}
	}
	b, _ := os.ReadFile(vs)
	if ids := compact(gjson.GetBytes(b, "inputs.#.id").Raw); ids != `["OTHER","K"]` {
		t.Errorf("inputs ids %s:\n%s", ids, b)
	}
}

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}
