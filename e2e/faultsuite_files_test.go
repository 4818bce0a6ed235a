package e2e

import (
	"fmt"
	"os"
	"path/filepath"
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
