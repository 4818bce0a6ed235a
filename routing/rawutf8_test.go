package routing

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"
)

// nameBody is a tools/call whose name and one argument are v.
func nameBody(v string) []byte {
	q := jsonString(v)
	if !utf8.ValidString(v) {
		// json.Marshal would replace invalid bytes with U+FFFD: put them
		// in raw, as a broken client might.
		q = `"` + v + `"`
	}
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":` + q + `,"arguments":{"a":` + q +
		`},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
}

// jsonString is s as a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

var paramA = []ParamHeader{{Name: "A", Path: "params.arguments.a"}}

// Under WithRawUTF8Headers a value that is valid UTF-8 and otherwise
// header-safe goes raw; everything else keeps the form it has without it,
// CR, LF, NUL and other control characters above all. UsesBase64 is true
// exactly when that changes a value.
func TestRawUTF8Headers(t *testing.T) {
	raw := WithRawUTF8Headers(context.Background())
	if !RawUTF8Headers(raw) || RawUTF8Headers(context.Background()) {
		t.Fatal("RawUTF8Headers does not read WithRawUTF8Headers")
	}
	tests := []struct {
		in      string
		rawSent bool // sent raw under WithRawUTF8Headers; else as EncodeValue has it
	}{
		{"grüße", true},
		{"Hello, 世界", true},
		{"file:///tmp/ü.txt", true},
		{"emoji 🙂 inside", true},
		{"line\u2028separator", true}, // not a control character; bytes >= 0x80
		{"get_weather", false},        // plain already: no change, no Base64
		{"a b", false},
		{"", false},        // empty is not missing: the sentinel stays
		{" grüße", false},  // HTTP would strip the space
		{"grüße ", false},  //
		{"grü\nße", false}, // LF never reaches a header
		{"grü\r\nX-Evil: 1", false},
		{"grü\x00ße", false},       // NUL
		{"grü\tße", false},         // tab is a control character
		{"grü\x7fße", false},       // DEL
		{"grü\u0085ße", false},     // C1 control (NEL)
		{"grü\xffße", false},       // invalid UTF-8
		{"=?base64?w7w=?=", false}, // a sentinel lookalike
		{"=?base64?ü?=", false},
	}
	for _, tt := range tests {
		body := nameBody(tt.in)
		base := Headers(body, paramA)
		got := HeadersFor(raw, body, paramA)
		want := EncodeValue(tt.in)
		if tt.rawSent {
			want = tt.in
		}
		for _, k := range []string{"Mcp-Name", "Mcp-Param-A"} {
			if g := got.Get(k); g != want {
				t.Errorf("%q: raw %s = %q, want %q", tt.in, k, g, want)
			}
			if g := base.Get(k); g != EncodeValue(tt.in) {
				t.Errorf("%q: %s = %q without raw, want %q", tt.in, k, g, EncodeValue(tt.in))
			}
			for _, v := range got.Values(k) {
				for i := 0; i < len(v); i++ {
					if c := v[i]; c < 0x20 || c == 0x7f {
						t.Errorf("%q: raw %s = %q has the control byte %#x", tt.in, k, v, c)
					}
				}
			}
		}
		if got.Get("Mcp-Method") != "tools/call" || got.Get("Mcp-Protocol-Version") != "2026-07-28" {
			t.Errorf("%q: raw headers %v", tt.in, got)
		}
		if g := HeadersFor(context.Background(), body, paramA); g.Get("Mcp-Name") != EncodeValue(tt.in) {
			t.Errorf("%q: HeadersFor without raw = %q, want %q", tt.in, g.Get("Mcp-Name"), EncodeValue(tt.in))
		}
		if u := UsesBase64(body, paramA); u != tt.rawSent {
			t.Errorf("UsesBase64 for %q = %v, want %v", tt.in, u, tt.rawSent)
		}
	}
	// Only a param in Base64: UsesBase64 sees it; without params it does not.
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"a":"Zürich"}}}`)
	if !UsesBase64(body, paramA) || UsesBase64(body, nil) {
		t.Errorf("UsesBase64 with a non-ASCII param: %v with the annotation, %v without; want true, false", UsesBase64(body, paramA), UsesBase64(body, nil))
	}
	// A method without Mcp-Name does not look at params.name.
	if UsesBase64([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"grüße"}}`), nil) {
		t.Error("UsesBase64 for tools/list looked at params.name")
	}
}

// UsesBase64 reads the body where it lies: what it allocates does not
// grow with the body (a large argument is not copied).
func TestUsesBase64DoesNotCopyBody(t *testing.T) {
	body := nameBody("grüße")
	body = append(body[:len(body)-2:len(body)-2], `,"pad":"`+strings.Repeat("x", 1<<20)+`"}}`...)
	if !UsesBase64(body, paramA) {
		t.Fatalf("UsesBase64 of %.80s… = false", body)
	}
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		UsesBase64(body, paramA)
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > uint64(len(body)/8) {
		t.Errorf("UsesBase64 allocated %d bytes a call for a body of %d", per, len(body))
	}
}

// net/http sends and accepts bytes 0x80 and above (obs-text) in header
// values: a real loopback request carries raw UTF-8 Mcp-Name and
// Mcp-Param-* byte for byte under WithRawUTF8Headers, the sentinel without
// it, and the sentinel for a CR or LF whatever the mode.
func TestPostRawUTF8OverLoopback(t *testing.T) {
	defer goleak.VerifyNone(t)
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer srv.Close()
	c, err := New(Config{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdle()
	for _, tt := range []struct {
		ctx  context.Context
		in   string
		want string
	}{
		{WithRawUTF8Headers(context.Background()), "grüße 世界", "grüße 世界"},
		{context.Background(), "grüße 世界", "=?base64?Z3LDvMOfZSDkuJbnlYw=?="},
		{WithRawUTF8Headers(context.Background()), "grü\r\nX-Evil: 1", EncodeValue("grü\r\nX-Evil: 1")},
	} {
		resp, err := c.Post(tt.ctx, nameBody(tt.in), paramA)
		if err != nil {
			t.Fatal(err)
		}
		resp.Close()
		h := <-got // the handler has run before the answer came
		for _, k := range []string{"Mcp-Name", "Mcp-Param-A"} {
			if vs := h.Values(k); len(vs) != 1 || vs[0] != tt.want {
				t.Errorf("%q: the server got %s = %q, want %q", tt.in, k, vs, tt.want)
			}
		}
		if h.Get("X-Evil") != "" {
			t.Errorf("%q: a header was injected: %v", tt.in, h)
		}
	}
}

// FuzzDeriveHeadersRaw: under raw UTF-8 no value carries a control byte
// (CR, LF and NUL above all), every value is the body's own or its
// sentinel, and UsesBase64 is true exactly when raw changes a header.
func FuzzDeriveHeadersRaw(f *testing.F) {
	f.Add("tools/call", "grüße", "Zürich")
	f.Add("resources/read", "file:///\r\nX-Injected: ü", "a\u0085b")
	f.Add("prompts/get", "=?base64?ü?=", " ü ")
	f.Add("tasks/get", "\xff\xfe", "")
	f.Fuzz(func(t *testing.T, method, name, arg string) {
		if !utf8.ValidString(method) || !utf8.ValidString(name) || !utf8.ValidString(arg) {
			return // json.Marshal would change the value
		}
		m, n, a := jsonString(method), jsonString(name), jsonString(arg)
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":` + m + `,"params":{"name":` + n + `,"uri":` + n + `,"taskId":` + n +
			`,"arguments":{"a":` + a + `},"_meta":{"io.modelcontextprotocol/protocolVersion":` + a + `}}}`)
		raw := HeadersFor(WithRawUTF8Headers(context.Background()), body, paramA)
		base := Headers(body, paramA)
		differs := len(raw) != len(base)
		for k, vs := range raw {
			if len(vs) != 1 || len(base[k]) != 1 {
				t.Fatalf("header %s: raw %q, base %q", k, vs, base[k])
			}
			v := vs[0]
			for i := 0; i < len(v); i++ {
				if c := v[i]; c < 0x20 || c == 0x7f {
					t.Fatalf("raw header %s value %q has the control byte %#x", k, v, c)
				}
			}
			if v != base[k][0] {
				differs = true
				if back, ok := DecodeValue(base[k][0]); !ok || back != v {
					t.Fatalf("raw header %s = %q is not what %q decodes to (%q)", k, v, base[k][0], back)
				}
			}
		}
		if u := UsesBase64(body, paramA); u != differs {
			t.Fatalf("UsesBase64 = %v, but raw headers differ: %v\nraw %v\nbase %v", u, differs, raw, base)
		}
	})
}
