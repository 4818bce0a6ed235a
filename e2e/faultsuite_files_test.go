package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fault suite's cases about what the proxy reads and writes on the
// user's side: trace rendering, the files it opens, and the local
// listener's Host check.

// fsfTerminalSafe fails t when out holds a character a terminal acts on or
// that reorders text: a C0 control other than '\n', DEL, a C1 control, a
// bidi control, U+2028/U+2029, or a byte that is not UTF-8.
func fsfTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not valid UTF-8:\n%q", what, out)
	}
	for i, r := range out {
		bidi := r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || bidi || r == 0x2028 || r == 0x2029 {
			t.Errorf("%s: output holds %U at byte %d:\n%q", what, r, i, out)
			return
		}
	}
}

// TestFaultSuiteFilesTraceControls: a client whose method, id and tool name
// carry terminal controls (ESC sequences, CR, LF, BEL), DEL, a C1 control
// and bidi overrides, sent raw inside JSON strings where JSON allows it,
// is traced by the proxy; `trace view` and `trace stats` of that trace,
// and of a hand-written one with the same characters in every text field,
// show each of them as a visible escape and write none of them.
func TestFaultSuiteFilesTraceControls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live := filepath.Join(dir, "live.trace")
	// JSON forbids raw C0 controls in strings, so they come escaped; DEL,
	// C1 (U+009B, CSI) and bidi characters come as raw bytes.
	raw := "\x7f\u009b2J\u202egnp.exe\u2066"
	in := strings.Join([]string{
		pipedInit,
		`{"jsonrpc":"2.0","id":"a\u001b]0;owned\u0007\r\n","method":"\u001b[2J\u001b[H\r\nfake` + raw + `","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"e\u001b[2Jcho` + raw + `","arguments":{}}}`,
	}, "\n") + "\n"
	code, stdout, stderr := runCLIStdin(t, nil, []byte(in), "--demo", "--trace", live)
	if code != 0 {
		t.Fatalf("proxy: exit %d, stderr %q", code, stderr)
	}
	if n := strings.Count(stdout, "\n"); n != 3 {
		t.Fatalf("proxy answered %d lines, want 3:\n%s", n, stdout)
	}

	// Every text field of a record, as a trace file may hold it.
	hostile := `\u001b[2J\u001b[H\r\n\tfake\u0007\u007f\u009b31m\u202egnp.exe\u2066\u2069\u200f\u2028`
	hand := filepath.Join(dir, "hand.trace")
	lines := []string{
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00Z","dir":"client->proxy","op":"op%s","session":"s%s","frame":{"jsonrpc":"2.0","id":"i%s","method":"m%s"}}`, hostile, hostile, hostile, hostile),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.001Z","dir":"proxy->server","op":"op%s","method":"m%s","rewrites":["rw%s"],"http":{"method":"POST","url":"http://h/%s","status":502},"error":"err%s"}`, hostile, hostile, hostile, hostile, hostile),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.002Z","dir":"d%s","op":"op%s","note":"note%s"}`, hostile, hostile, hostile),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.003Z","dir":"proxy->client","op":"op%s","frame":{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"%s"}}}`, hostile, raw),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.004Z","dir":"client->proxy","op":"t","truncated":true,"frame":{"head":"{\"method\":\"t%s"}}`, hostile),
	}
	if err := os.WriteFile(hand, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		file string
		want map[string][]string // by command: visible escapes
	}{
		{live, map[string][]string{
			"view":  {`\x1b[2J\x1b[H\r\nfake\x7f\u009b2J\u202egnp.exe\u2066`, `id "a\u001b]0;owned\u0007\r\n"`, `e\\x1b[2Jcho\\x7f\\u009b2J\\u202egnp.exe\\u2066`},
			"stats": {`\x1b[2J\x1b[H\r\nfake\x7f\u009b2J\u202egnp.exe\u2066  `},
		}},
		{hand, map[string][]string{
			"view": {`op op\x1b[2J\x1b[H\r\n\tfake\x07\x7f\u009b31m\u202egnp.exe\u2066\u2069\u200f\u2028`,
				`m\x1b[2J`, `id "i\u001b[2J`, `[rw\x1b[2J`, `error: err\x1b[2J`, `d\x1b[2J`, `note\x1b[2J`,
				`"message":"\x7f\u009b2J\u202egnp.exe\u2066"`, `"method":"t\x1b[2J`},
			"stats": {`m\x1b[2J\x1b[H\r\n\tfake\x07\x7f\u009b31m\u202egnp.exe\u2066\u2069\u200f\u2028  `},
		}},
	} {
		for _, cmd := range []string{"view", "stats"} {
			code, out, errOut := runCLI(t, nil, "trace", cmd, c.file)
			what := fmt.Sprintf("trace %s %s", cmd, filepath.Base(c.file))
			if code != 0 || errOut != "" {
				t.Fatalf("%s: exit %d, stderr %q", what, code, errOut)
			}
			fsfTerminalSafe(t, what, out)
			for _, want := range c.want[cmd] {
				if !strings.Contains(out, want) {
					t.Errorf("%s lacks the escaped %q:\n%s", what, want, out)
				}
			}
		}
	}
}

// fsfPlant writes a file (content, mode 0644) and a symbolic link to it,
// and returns a check that the file is unchanged.
func fsfPlant(t *testing.T, dir, name string) (link string, unchanged func(what string)) {
	t.Helper()
	target := filepath.Join(dir, name+".target")
	const content = "precious\n"
	if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o644); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, name)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link, func(what string) {
		t.Helper()
		b, err := os.ReadFile(target)
		st, serr := os.Stat(target)
		if err != nil || serr != nil {
			t.Fatalf("%s: %v %v", what, err, serr)
		}
		if string(b) != content || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: the link's target now holds %q with mode %04o, want %q and 0644", what, b, st.Mode().Perm(), content)
		}
	}
}

// fsfMode is path's permission bits.
func fsfMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestFaultSuiteFilesNoSymlinks: a symbolic link planted at the --trace or
// --log-file path (to a file, or dangling) makes the proxy exit 2 at
// start-up with one line on stderr naming the path and the fix; the link's
// target keeps its content and mode, and a dangling link's target is not
// created. A log file that already exists with mode 0666 is appended to
// and ends 0600; /dev/null still works as --trace and keeps its mode.
func TestFaultSuiteFilesNoSymlinks(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir := t.TempDir()
	in := []byte(pipedInit + "\n" + pipedEcho + "\n")
	for _, flag := range []string{"--trace", "--log-file"} {
		name := strings.TrimPrefix(flag, "--")
		link, unchanged := fsfPlant(t, dir, name)
		dangling := filepath.Join(dir, name+".dangling")
		missing := filepath.Join(dir, name+".missing")
		if err := os.Symlink(missing, dangling); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{link, dangling} {
			code, stdout, stderr := runCLIStdin(t, nil, in, "--demo", flag, p)
			what := flag + " " + filepath.Base(p)
			if code != 2 || stdout != "" {
				t.Errorf("%s: exit %d, stdout %q; want exit 2 before any frame", what, code, stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, flag+": "+p+" is a symbolic link") || !strings.Contains(stderr, "remove the link") {
				t.Errorf("%s: stderr %q; want one line naming the flag, the path and the fix", what, stderr)
			}
		}
		unchanged(flag + " through a link")
		if _, err := os.Lstat(missing); err == nil {
			t.Errorf("%s through a dangling link created its target", flag)
		}
	}

	// A log file open to everyone is kept (appended to) and made private.
	logPath := filepath.Join(dir, "open.log")
	const old = "an earlier line\n"
	if err := os.WriteFile(logPath, []byte(old), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(logPath, 0o666); err != nil {
		t.Fatal(err)
	}
	tracePath := filepath.Join(dir, "open.trace")
	if err := os.WriteFile(tracePath, []byte("old trace\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tracePath, 0o666); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLIStdin(t, nil, in, "--demo", "--log-level", "debug", "--log-file", logPath, "--trace", tracePath)
	if code != 0 || strings.Count(stdout, "\n") != 2 {
		t.Fatalf("with a 0666 log file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if m := fsfMode(t, logPath); m != 0o600 {
		t.Errorf("the 0666 log file ends %04o, want 0600", m)
	}
	if m := fsfMode(t, tracePath); m != 0o600 {
		t.Errorf("the 0666 trace file ends %04o, want 0600", m)
	}
	if b, _ := os.ReadFile(logPath); !strings.HasPrefix(string(b), old) || len(b) == len(old) {
		t.Errorf("the log file was not appended to: %q", b)
	}
	if b, _ := os.ReadFile(tracePath); strings.Contains(string(b), "old trace") || !strings.Contains(string(b), `"tools/call"`) {
		t.Errorf("the trace file was not started afresh: %q", b)
	}

	// A device is written as it is.
	before := fsfMode(t, os.DevNull)
	code, stdout, stderr = runCLIStdin(t, nil, in, "--demo", "--trace", os.DevNull, "--log-file", os.DevNull)
	if code != 0 || strings.Count(stdout, "\n") != 2 {
		t.Errorf("--trace %s: exit %d, stdout %q, stderr %q", os.DevNull, code, stdout, stderr)
	}
	if after := fsfMode(t, os.DevNull); after != before {
		t.Errorf("%s changed mode from %04o to %04o", os.DevNull, before, after)
	}
}
