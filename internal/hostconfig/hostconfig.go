// Package hostconfig knows the MCP hosts (client applications) that
// `mcp-tasks-proxy config` writes for: where each keeps its servers, how
// its entries look and how it fills in variables. It makes an entry, the
// snippet to paste, Claude Code's command line, and merges an entry into a
// host's file (a backup first, the rest of the file kept). It never writes
// a secret the caller did not put in the entry, and never rewrites a file
// it would lose something of (comments, trailing commas).
package hostconfig

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/safefile"
)

// Hosts are the hosts known, in the order messages list them.
var Hosts = []string{"claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed"}

// host is what an entry needs of its host. Claude Code keeps its own
// configuration, so it has none of it (ClaudeCode is its line).
type host struct {
	key       string    // the member of the file that holds the servers
	first     [2]string // a member every entry of the host has, if any
	env       string    // the env block's reference to a variable (%s); "": the value, filled in by hand
	workspace string    // the project's file, under the working directory
	// files is the user's file by GOOS ("": any other), under the user's
	// configuration directory, or under their home with ~/.
	files map[string]string
}

var hosts = map[string]host{
	"claude-desktop": {key: "mcpServers", files: map[string]string{"": "Claude/claude_desktop_config.json"}},
	"cursor":         {key: "mcpServers", env: "${env:%s}", workspace: ".cursor/mcp.json", files: map[string]string{"": "~/.cursor/mcp.json"}},
	"vscode": {key: "servers", first: [2]string{"type", "stdio"}, env: "${input:%s}", workspace: ".vscode/mcp.json",
		files: map[string]string{"": "Code/User/mcp.json"}},
	"windsurf": {key: "mcpServers", env: "${env:%s}", files: map[string]string{"": "~/.codeium/windsurf/mcp_config.json"}},
	"zed": {key: "context_servers", first: [2]string{"source", "custom"},
		files: map[string]string{"": "zed/settings.json", "windows": "Zed/settings.json", "darwin": "~/.config/zed/settings.json"}},
}

// HasWorkspace reports whether the host has a project file (--workspace).
func HasWorkspace(name string) bool { return hosts[name].workspace != "" }

// Key is the member of the host's file that holds the servers.
func Key(name string) string { return hosts[name].key }

// File is the host's configuration file on goos: the project's under wd
// with workspace, else the user's; "" for a host without one.
func File(name, goos, home, configDir, wd string, workspace bool) string {
	h := hosts[name]
	f := cmp.Or(h.files[goos], h.files[""])
	switch rest, inHome := strings.CutPrefix(f, "~/"); {
	case workspace:
		return filepath.Join(wd, filepath.FromSlash(h.workspace))
	case f == "":
		return ""
	case inHome:
		return filepath.Join(home, filepath.FromSlash(rest))
	}
	return filepath.Join(configDir, filepath.FromSlash(f))
}

// Entry is one server's entry in a host.
type Entry struct {
	Host, Name string
	// Command and Args launch the proxy; Vars are the ${VAR} names the
	// arguments use, in order, which the entry's env block supplies.
	Command string
	Args    []string
	Vars    []string
}

const placeholder = "<set %s>"

// object is the entry's JSON object. Hosts that expand variables read them
// from their own environment or secret storage; for the others the env
// block holds a placeholder the person replaces with the value.
func (e Entry) object() []byte {
	h := hosts[e.Host]
	out := []byte(`{}`)
	if h.first[0] != "" {
		out, _ = sjson.SetBytes(out, h.first[0], h.first[1])
	}
	out, _ = sjson.SetBytes(out, "command", e.Command)
	out, _ = sjson.SetBytes(out, "args", e.Args)
	if len(e.Vars) > 0 {
		form, env := cmp.Or(h.env, placeholder), []byte(`{}`)
		for _, v := range e.Vars { // in the order the variables came
			env, _ = sjson.SetBytes(env, gjson.Escape(v), fmt.Sprintf(form, v))
		}
		out, _ = sjson.SetRawBytes(out, "env", env)
	}
	return out
}

// inputs are VS Code's prompts for the variables: it asks once and keeps
// the value in its secret storage.
func (e Entry) inputs() [][]byte {
	if e.Host != "vscode" {
		return nil
	}
	var in [][]byte
	for _, v := range e.Vars {
		b, _ := json.Marshal(struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			Description string `json:"description"`
			Password    bool   `json:"password"`
		}{"promptString", v, v + " for " + e.Name, true})
		in = append(in, b)
	}
	return in
}

// Snippet is the entry inside the file's shape, ready to paste.
func (e Entry) Snippet() []byte {
	doc := []byte(`{}`)
	if in := e.inputs(); in != nil {
		doc, _ = sjson.SetRawBytes(doc, "inputs", []byte("["+string(bytes.Join(in, []byte(",")))+"]"))
	}
	doc, _ = sjson.SetRawBytes(doc, Key(e.Host)+"."+gjson.Escape(e.Name), e.object())
	return indentJSON(doc)
}

// ClaudeCode is the `claude mcp add` line that adds the entry to Claude
// Code. The shell reads each variable when the line runs; Claude Code
// keeps the value in its own configuration.
func (e Entry) ClaudeCode() string {
	parts := []string{"claude", "mcp", "add", "--transport", "stdio", "--scope", "user"}
	for _, v := range e.Vars {
		parts = append(parts, "--env", v+`="$`+v+`"`)
	}
	parts = append(parts, ShellQuote(e.Name), "--", ShellQuote(e.Command))
	for _, a := range e.Args {
		parts = append(parts, ShellQuote(a))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// VarNote says where the variables' values go ("" without variables);
// path is the file written, if any.
func (e Entry) VarNote(path string) string {
	vars, path := strings.Join(e.Vars, ", "), cmp.Or(path, "the file")
	switch {
	case len(e.Vars) == 0:
		return ""
	case hosts[e.Host].env == "${env:%s}":
		return fmt.Sprintf("%s reads %s from its own environment (${env:…}): set it where %s is started", e.Host, vars, e.Host)
	case e.Host == "vscode":
		return fmt.Sprintf("VS Code asks for %s when it first starts the server, and keeps the answer in its secret storage", vars)
	}
	return fmt.Sprintf("replace <set …> in the env block of %q in %s with the value of %s: %s does not read your shell's environment", e.Name, path, vars, e.Host)
}

// ErrJSONC is a file with comments or trailing commas, which is not
// rewritten: they would be lost.
var ErrJSONC = errors.New("has comments or trailing commas")

// merge puts the entry in doc (a JSON object), with VS Code's inputs that
// are not there yet. It reports whether doc changed and whether an entry
// of that name was replaced.
func (e Entry) merge(doc []byte) (out []byte, changed, replaced bool, err error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte(`{}`)
	}
	root, key := gjson.ParseBytes(doc), gjson.Escape(Key(e.Host))
	switch {
	case !gjson.ValidBytes(doc) && gjson.Valid(stripJSONC(string(doc))):
		return nil, false, false, ErrJSONC
	case !gjson.ValidBytes(doc):
		return nil, false, false, errors.New("is not valid JSON")
	case !root.IsObject():
		return nil, false, false, errors.New("does not hold a JSON object")
	case root.Get(key).Exists() && !root.Get(key).IsObject():
		return nil, false, false, fmt.Errorf("has %q, but not as an object", Key(e.Host))
	}
	path := key + "." + gjson.Escape(e.Name)
	old, entry := root.Get(path), e.object()
	// A value the person put in place of a placeholder stays.
	for _, v := range e.Vars {
		p := "env." + gjson.Escape(v)
		if ov := old.Get(p); gjson.GetBytes(entry, p).Str == fmt.Sprintf(placeholder, v) && ov.Type == gjson.String {
			entry, _ = sjson.SetBytes(entry, p, ov.Str)
		}
	}
	out = doc
	if !old.Exists() || !sameJSON([]byte(old.Raw), entry) {
		if out, err = sjson.SetRawBytes(out, path, entry); err != nil {
			return nil, false, false, err
		}
		changed, replaced = true, old.Exists()
	}
	have := gjson.GetBytes(out, "inputs")
	if in := e.inputs(); len(in) > 0 && have.Exists() && !have.IsArray() {
		return nil, false, false, errors.New(`has "inputs", but not as an array`)
	}
	for _, in := range e.inputs() {
		id := gjson.GetBytes(in, "id").Str
		if !slices.ContainsFunc(have.Array(), func(h gjson.Result) bool { return h.Get("id").Str == id }) {
			if out, err = sjson.SetRawBytes(out, "inputs.-1", in); err != nil {
				return nil, false, false, err
			}
			changed = true
		}
	}
	if changed {
		out = indentJSON(out)
	}
	return out, changed, replaced, nil
}

func indentJSON(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		return b
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func sameJSON(a, b []byte) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

var trailingComma = regexp.MustCompile(`,(\s*[}\]])`)

// stripJSONC removes // and /* */ comments outside strings, and trailing
// commas before } and ], to tell JSONC from a broken file.
func stripJSONC(s string) string {
	var b strings.Builder
	inStr := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case inStr:
			b.WriteByte(ch)
			if ch == '\\' && i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
			inStr = ch != '"'
		case strings.HasPrefix(s[i:], "//"):
			i += strings.IndexByte(s[i:]+"\n", '\n') - 1
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return b.String()
			}
			i += end + 3
		default:
			inStr = ch == '"'
			b.WriteByte(ch)
		}
	}
	return trailingComma.ReplaceAllString(b.String(), "$1")
}

// Write merges the entry into path: a backup of the old file first, then
// an atomic replace with the old file's mode (0600 for a new file). It
// returns the backup's path ("" when there was no file), whether anything
// changed, and whether an entry of that name was replaced.
func (e Entry) Write(path string, now time.Time) (backup string, changed, replaced bool, err error) {
	old, err := os.ReadFile(path)
	mode := os.FileMode(0o600)
	switch {
	case errors.Is(err, os.ErrNotExist):
		old = nil
	case err != nil:
		return "", false, false, err
	default:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	out, changed, replaced, err := e.merge(old)
	if err != nil || !changed {
		return "", changed, replaced, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, false, err
	}
	if old != nil {
		// A new file only, never through a link planted under the name.
		stamp := now.Format("20060102-150405")
		backup = path + "." + stamp + ".bak"
		f, err := os.OpenFile(backup, os.O_WRONLY|os.O_CREATE|os.O_EXCL|safefile.NoFollow, mode)
		for n := 2; errors.Is(err, os.ErrExist); n++ {
			backup = fmt.Sprintf("%s.%s-%d.bak", path, stamp, n)
			f, err = os.OpenFile(backup, os.O_WRONLY|os.O_CREATE|os.O_EXCL|safefile.NoFollow, mode)
		}
		if err == nil {
			_, err = f.Write(old)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			return "", false, false, fmt.Errorf("cannot make the backup %s: %w", backup, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return backup, false, false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(out)
	if cerr := tmp.Chmod(mode); err == nil && runtime.GOOS != "windows" {
		err = cerr
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return backup, err == nil, replaced, err
}
