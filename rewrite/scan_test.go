package rewrite

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

var validCases = []string{
	``, ` `, `{}`, ` {} `, `[]`, `[ ]`, `{ }`, `"a"`, `"`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`,
	`"\x"`, "\"a\tb\"", "\"a\x7fb\"", "\"\xff\xfe\"", `0`, `-0`, `-`, `01`, `1.`, `1.5`, `1e`, `1e+`, `1e+5`,
	`1E-05`, `-1.5e10`, `.5`, `+1`, `true`, `tru`, `truex`, `false`, `null`, `nul`, `{"a":1}`, `{"a":1,}`,
	`{,}`, `{"a"}`, `{"a":}`, `{"a" : [1, 2 , {"b":null}] }`, `[1,]`, `[,1]`, `[1 2]`, `{"a":1 "b":2}`,
	`{"a":1}x`, `{"a":1}}`, `[[[[[]]]]]`, `[[[[[]]]]`, "{\"a\":\"" + strings.Repeat("x", 100) + "\\n\"}",
	"\"" + strings.Repeat("abcdefgh", 9) + "\"", "\"" + strings.Repeat("abcdefgh", 9) + "\x01\"",
	"\r\n{\"jsonrpc\":\"2.0\"}\r\n", "{\"a\":\"\\u12", `{"a":"é😀"}`,
}

// stringEndByBytes is stringEnd read a byte at a time: a backslash escapes
// the byte after it, and the first quote not escaped ends the string.
func stringEndByBytes(s string, i int) (end int, escaped, closed bool) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '"':
			return j + 1, escaped, true
		case '\\':
			escaped = true
			j++
		}
	}
	return len(s), escaped, false
}

// FuzzStringEnd holds the one string-end scanner, its byte-at-a-time
// prefix, its searches and its reading of backslash runs, to the plain
// reading.
func FuzzStringEnd(f *testing.F) {
	for _, c := range append(validCases, `"\\\\"x"`, `"`+strings.Repeat(`\\`, 20)+`\"`+`"`, `"`+strings.Repeat("a", 15)+`\"b"`) {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = "\"" + s
		e, esc, ok := stringEnd(s, 0)
		if we, wesc, wok := stringEndByBytes(s, 0); e != we || esc != wesc || ok != wok {
			t.Fatalf("stringEnd(%q) = %d %v %v, want %d %v %v", s, e, esc, ok, we, wesc, wok)
		}
	})
}

func TestValidMatchesGJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := validJSON([]byte(c)), gjson.Valid(c); got != want {
			t.Errorf("validJSON(%q) = %v, gjson.Valid says %v", c, got, want)
		}
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	if !validJSON([]byte(deep)) || validJSON([]byte(deep[:len(deep)-1])) {
		t.Error("deep nesting")
	}
}

// FuzzValid holds validJSON to gjson.Valid's answers: Parse and Redact
// rely on every later gjson read agreeing with the check.
func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := gjson.ValidBytes(b)
		if got := validJSON(b); got != want {
			t.Fatalf("validJSON(%q) = %v, gjson.ValidBytes says %v", b, got, want)
		}
	})
}

var keyCases = []string{
	"", "token", "TOKEN", "progressToken", "tok", "secret", "client_SECRET", "password", "passwd", "apikey", "api_key",
	"API-Key", "api key", "api__key", "apiKEY", "authorization", "Authorizatio", "x-authorization-y", "\u212aey",
	"api\u212aey", "ſecret", "to\u212aen", "é-token", "name", "_meta", "io.modelcontextprotocol/protocolVersion",
	"api", "ap", "a", "t", "[", "@", "API_KEY_2", "code_verifier", "codeVerifier", "VERIFIER", "verifie", "maxTokens",
}

func TestSensitiveKeyMatchesRegexp(t *testing.T) {
	for _, k := range keyCases {
		if got, want := secretWord(k), sensitiveKey.MatchString(k); got != want {
			t.Errorf("secretWord(%q) = %v, the pattern says %v", k, got, want)
		}
	}
}

// FuzzSensitiveKey holds the hand matcher to the regular expression, and
// SensitiveKey to the rule less the protocol's keys.
func FuzzSensitiveKey(f *testing.F) {
	for _, k := range keyCases {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		if got, want := secretWord(k), sensitiveKey.MatchString(k); got != want {
			t.Fatalf("secretWord(%q) = %v, the pattern says %v", k, got, want)
		}
		if got, want := SensitiveKey(k), sensitiveKey.MatchString(k) && !protocolKey(k); got != want {
			t.Fatalf("SensitiveKey(%q) = %v, want %v", k, got, want)
		}
	})
}

// redactTree is the recursive redaction Redact's single pass replaced; the
// fuzz target below holds the two to the same output.
func redactTree(frame []byte, sensitive func(key string) bool) []byte {
	frame = TrimFrame(frame)
	if !gjson.ValidBytes(frame) {
		return []byte(`"[unparsable frame withheld]"`)
	}
	var e edits
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		var buf [16]member
		switch {
		case v.IsObject():
			for _, m := range members(v, buf[:0]) {
				if sensitive(m.key.Str) {
					e.replace(m.value.Index, m.value.Index+len(m.value.Raw), []byte(Redacted))
					continue
				}
				walk(m.value)
			}
		case v.IsArray():
			for _, m := range elements(v, buf[:0]) {
				walk(m.value)
			}
		}
	}
	walk(valueAt(view(frame), 0))
	out := e.apply(frame)
	if len(e) == 0 {
		out = append([]byte(nil), frame...)
	}
	return out
}

var redactCases = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"token":"abc","nested":[{"api_key":1},{"Password":{"a":"b"}}],"ok":"token"}}}`,
	`{"a\u0074oken":"x","b":["secret",{"secret" : [1,2]}],"c":"\"token\":1"}`,
	` [ {"token":null} , "x" ] `, `"token"`, `{"token":"a","token":"b"}`, `not json`, `{"k":"v"}`, `{}`, ``,
	`{"params":{"_meta":{"progressToken":"p-1"},"maxTokens":64,"code_verifier":"v","access_token":"a"}}`,
}

func TestRedactMatchesTreeWalk(t *testing.T) {
	for _, c := range redactCases {
		if got, want := Redact([]byte(c), SensitiveKey), redactTree([]byte(c), SensitiveKey); string(got) != string(want) {
			t.Errorf("Redact(%q)\n got %s\nwant %s", c, got, want)
		}
	}
}

// FuzzRedact holds the single-pass redaction to the tree walk, RedactHead
// to the head and the length of Redact's output, and the unchecked forms
// (RedactValid, RedactHead with valid) to the same output on valid JSON and
// to staying in bounds on anything else.
func FuzzRedact(f *testing.F) {
	for _, c := range redactCases {
		f.Add([]byte(c), uint16(10))
	}
	f.Add([]byte(redactCases[0]), uint16(0))
	f.Add([]byte(`{"token":"[REDACTED]","a" : [1, 2]}`), uint16(5))
	f.Add([]byte(redactCases[0]), uint16(1000))
	f.Fuzz(func(t *testing.T, b []byte, max uint16) {
		got, want := Redact(b, SensitiveKey), redactTree(b, SensitiveKey)
		if string(got) != string(want) {
			t.Fatalf("Redact(%q)\n got %s\nwant %s", b, got, want)
		}
		head, n := RedactHead(b, SensitiveKey, int(max), false)
		if n != len(got) || string(head) != string(got[:min(len(got), int(max))]) {
			t.Fatalf("RedactHead(%q, %d) = %q, %d; Redact gives %q (%d bytes)", b, max, head, n, got, len(got))
		}
		unchecked := RedactValid(b, SensitiveKey) // must not panic, whatever b is
		vhead, vn := RedactHead(b, SensitiveKey, int(max), true)
		if !validJSON(b) {
			return
		}
		if string(unchecked) != string(got) {
			t.Fatalf("RedactValid(%q)\n got %s\nwant %s", b, unchecked, got)
		}
		if vn != n || string(vhead) != string(head) {
			t.Fatalf("RedactHead(%q, %d, valid) = %q, %d; want %q, %d", b, max, vhead, vn, head, n)
		}
	})
}
