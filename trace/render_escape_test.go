package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile holds what a peer can put in a trace to drive the reader's
// terminal: C0 controls (ESC, CR, LF, TAB, BEL), DEL, a C1 control (CSI,
// U+009B), bidi overrides and isolates, and a line separator.
const hostile = "\x1b[2J\x1b[H\r\n\tfake\a\x7f\u009b31m\u202egnp.exe\u2066\u2069\u200f\u2028"

// terminalSafe fails t when out holds a control byte other than '\n', a
// C1 control, a bidi control, a line or paragraph separator, or a byte
// that is not UTF-8.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not valid UTF-8:\n%q", what, out)
	}
	for i, r := range out {
		if (r < 0x20 && r != '\n') || r == 0x7f || unsafeRune(r) {
			t.Errorf("%s: output holds %U at byte %d:\n%q", what, r, i, out)
			return
		}
	}
}

// TestPrintable: each character a terminal would act on becomes a visible
// escape, and everything else (printable ASCII, backslashes, accented and
// CJK text, U+FFFD) is kept as it is.
func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"tools/call", "tools/call"},
		{`a\x1b"q"`, `a\x1b"q"`},
		{"héllo 世界 \ufffd", "héllo 世界 \ufffd"},
		{"\x1b[2J", `\x1b[2J`},
		{"a\r\nb\tc\x00\a", `a\r\nb\tc\x00\x07`},
		{"\x7f", `\x7f`},
		{"\u0085\u009b\u0080\u009f", `\u0085\u009b\u0080\u009f`},
		{"\u202a\u202b\u202c\u202d\u202e", `\u202a\u202b\u202c\u202d\u202e`},
		{"\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"\u200e\u200f\u061c\u2028\u2029", `\u200e\u200f\u061c\u2028\u2029`},
		{"x\x9by\xff", `x\x9by\xff`},
		{"\xe2\x80", `\xe2\x80`},
	} {
		if got := printable(c.in); got != c.want {
			t.Errorf("printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRenderEscapesControls: a trace whose every text field a peer or the
// wire can fill holds hostile characters is shown by View (plain and
// coloured) and Stats with each of them escaped.
func TestRenderEscapesControls(t *testing.T) {
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	// Raw (unescaped) bytes inside JSON strings, as a peer may send them:
	// JSON forbids only C0 controls raw, so DEL, C1 and bidi characters
	// arrive as they are, and so does a byte that is not UTF-8 (0x9b alone
	// is CSI to an 8-bit terminal); a frame is kept as its bytes.
	rawText := "\x7f\u009b31m\u202e\u2066\x9b"
	frame := `{"jsonrpc":"2.0","id":` + str("id"+hostile) + `,"method":` + str("m"+hostile) + `}`
	head, _ := json.Marshal(map[string]string{"head": `{"jsonrpc":"2.0","method":"t` + hostile + ``})
	recs := []string{
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00Z","dir":"client->proxy","op":%s,"session":%s,"frame":%s}`,
			str("op"+hostile), str("s"+hostile), frame),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.001Z","dir":"proxy->server","op":%s,"method":%s,"rewrites":[%s],"http":{"method":"POST","url":%s,"status":500},"error":%s}`,
			str("op"+hostile), str("m"+hostile), str("rw"+hostile), str("http://h/"+hostile), str("err"+hostile)),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.002Z","dir":%s,"op":%s,"note":%s}`,
			str("dir"+hostile), str("op"+hostile), str("note"+hostile)),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.003Z","dir":"proxy->client","op":%s,"frame":{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"%s"}}}`,
			str("op"+hostile), rawText),
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.004Z","dir":"client->proxy","op":"op-t","truncated":true,"frame":%s}`, head),
		// A frame that is not JSON is shown as its raw text.
		fmt.Sprintf(`{"ts":"2026-01-01T00:00:00.005Z","dir":"server->proxy","op":"op-t","frame":%s}`, str("garbage"+hostile)),
	}
	in := strings.Join(recs, "\n") + "\n"
	for _, color := range []bool{false, true} {
		var out bytes.Buffer
		if err := View(&out, strings.NewReader(in), color); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if color {
			// The renderer's own colours are the only escapes.
			got = strings.NewReplacer(ansiReset, "", ansiBold, "", ansiDim, "", ansiRed, "", ansiGreen, "",
				ansiYellow, "", ansiMagenta, "", ansiCyan, "").Replace(got)
		}
		what := fmt.Sprintf("View(color=%v)", color)
		terminalSafe(t, what, got)
		for _, want := range []string{
			`op op\x1b[2J\x1b[H\r\n\tfake\x07\x7f\u009b31m\u202egnp.exe\u2066\u2069\u200f\u2028  `,
			`m\x1b[2J`, `id "id\u001b[2J`, `rw\x1b[2J`, `err\x1b[2J`, `note\x1b[2J`, `dir\x1b[2J`,
			`"message":"\x7f\u009b31m\u202e\u2066\x9b"`,
			`"method":"t\x1b[2J`, `"garbage\u001b[2J`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, got)
			}
		}
	}
	var out bytes.Buffer
	if err := Stats(&out, strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	terminalSafe(t, "Stats", out.String())
	if want := `m\x1b[2J\x1b[H\r\n\tfake\x07\x7f\u009b31m\u202egnp.exe\u2066\u2069\u200f\u2028  `; !strings.Contains(out.String(), want) {
		t.Errorf("Stats lacks the escaped method %q:\n%s", want, out.String())
	}
	// The columns stay aligned: every row is as wide as the header.
	rows := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, r := range rows[:3] {
		if utf8.RuneCountInString(r) != utf8.RuneCountInString(rows[0]) {
			t.Errorf("Stats rows differ in width:\n%s", out.String())
			break
		}
	}
}
