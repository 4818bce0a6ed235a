package trace

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// encodeStd is the line encoding/json writes for r: what encoder.encode
// must reproduce byte for byte.
func encodeStd(t testing.TB, r Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var encodeFrames = []string{
	``, `{"jsonrpc":"2.0","id":1,"result":{}}`,
	"{ \"a\" : [ 1 ,\n\t2 ] ,\r\n \"b\" : \"x y \\\" z\\\\\" , \"c\":\"<&>\u2028\" }",
	`"a string frame"`, `{"frame":0,"k":"\"frame\":0"}`, `[1, 2, 3]`, `{"s":"é😀\u00e9"}`,
}

func TestEncoderMatchesEncodingJSON(t *testing.T) {
	ts := time.Date(2026, 12, 1, 8, 0, 0, 123456789, time.UTC)
	for _, f := range encodeFrames {
		for _, r := range []Record{
			{Time: ts, Dir: ClientToProxy, Op: "op-1", Method: "tools/call", ID: json.RawMessage(`{"frame":0}`), Frame: json.RawMessage(f)},
			{Time: ts, Dir: ProxyToServer, Rewrites: []string{"meta.inject"}, HTTP: &HTTP{Method: "POST", URL: "http://h/mcp", Header: map[string]string{"frame": "0", "B": "\"frame\":0"}},
				Frame: json.RawMessage(f), Truncated: true, LatencyMs: 1.25, Error: `"frame":0 err <&>`, Note: "n"},
		} {
			var e encoder
			got, err := e.encode(r)
			if err != nil {
				t.Fatal(err)
			}
			if want := encodeStd(t, r); !bytes.Equal(got, want) {
				t.Errorf("frame %q:\n got %s\nwant %s", f, got, want)
			}
		}
	}
}

// FuzzEncoder holds the spliced encoding to encoding/json for any frame
// that prepare lets through.
func FuzzEncoder(f *testing.F) {
	for _, s := range encodeFrames {
		f.Add([]byte(s), "x")
	}
	w := New(bytes.NewBuffer(nil), Options{})
	defer w.Close()
	f.Fuzz(func(t *testing.T, frame []byte, s string) {
		r := Record{Dir: ProxyToClient, Op: s, Frame: frame, Error: s, Note: s}
		w.prepare(&r)
		var e encoder
		got, err := e.encode(r)
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeStd(t, r); !bytes.Equal(got, want) {
			t.Fatalf("frame %q:\n got %s\nwant %s", frame, got, want)
		}
	})
}

// FuzzFrameValid holds prepare's nesting check to json.Valid on what
// redaction lets through.
func FuzzFrameValid(f *testing.F) {
	for _, s := range encodeFrames {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)))
	f.Add([]byte(`{"a":"` + strings.Repeat("[", 10001) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		red := rewrite.Redact(b, rewrite.SensitiveKey)
		if got, want := !tooDeep(red), json.Valid(red); got != want {
			t.Fatalf("frame %q: nesting check says valid=%v, json.Valid %v", red, got, want)
		}
	})
}

func TestTooDeep(t *testing.T) {
	for n, want := range map[int]bool{1: false, 10000: false, 10001: true} {
		if got := tooDeep([]byte(strings.Repeat("[", n) + strings.Repeat("]", n))); got != want {
			t.Errorf("depth %d: tooDeep = %v", n, got)
		}
	}
}
