package rewrite_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Fuzz targets, one per exported entry point. Seeds: the corpus in
// testdata/fuzz plus every frame of the golden files. Run one with e.g.
//
//	go test ./rewrite -run '^$' -fuzz FuzzRequestUp -fuzztime 60s

// goldenFrames returns every JSON line of the golden files: legacy requests
// and server messages.
func goldenFrames(f *testing.F) [][]byte {
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.txtar"))
	var out [][]byte
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, sec := range ar.Files {
			for _, line := range bytes.Split(sec.Data, []byte("\n")) {
				if len(line) > 0 && line[0] == '{' {
					out = append(out, line)
				}
			}
		}
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, fr := range goldenFrames(f) {
		f.Add(fr)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fr, err := rewrite.Parse(rewrite.TrimFrame(in))
		if err != nil {
			if c := rewrite.Code(err); c != -32700 && c != -32600 && c != -32602 {
				t.Fatalf("Code(%v) = %d", err, c)
			}
			return
		}
		if fr.Kind == rewrite.KindInvalid {
			t.Fatal("no error but an invalid kind")
		}
		if fr.ID.Exists() && !bytes.Contains(in, []byte(fr.ID.Raw)) {
			t.Fatalf("id %q is not a slice of the input", fr.ID.Raw)
		}
	})
}

func FuzzRequestUp(f *testing.F) {
	for _, fr := range goldenFrames(f) {
		f.Add(fr, "progressToken")
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"a.b":1,"io.modelcontextprotocol/logLevel":"x"},"task":{}}}`), "a.b")
	f.Fuzz(func(t *testing.T, in []byte, key string) {
		fr, err := rewrite.Parse(rewrite.TrimFrame(in))
		if err != nil || fr.Kind != rewrite.KindRequest {
			return
		}
		meta := rewrite.NewMetaBlock(
			rewrite.MetaPair{Key: protocol.MetaProtocolVersion, Value: []byte(`"2026-07-28"`)},
			rewrite.MetaPair{Key: key, Value: []byte(`{"k":[1,"2"]}`)},
		)
		out, err := rewrite.RequestUp(&fr, rewrite.Up{ID: []byte(`"up-1"`), Meta: meta, DropParams: []string{"task"}})
		if err != nil {
			return
		}
		if !gjson.ValidBytes(out) {
			t.Fatalf("invalid JSON out of %s:\n%s", in, out)
		}
		got, err := rewrite.Parse(out)
		// The proxy's own _meta keys are constants; a fuzzed one may spell
		// a member the proxy reads in another case, which Parse refuses
		// (some decoders ignore case). An exact duplicate is still a fault.
		var dup *rewrite.DuplicateKeyError
		if errors.As(err, &dup) && dup.Key == key && dup.Key != dup.Name {
			return
		}
		if err != nil || got.Kind != rewrite.KindRequest {
			t.Fatalf("output is not a request (%v): %s", err, out)
		}
		if got.ID.Raw != `"up-1"` || got.Method != fr.Method {
			t.Fatalf("id %s method %q after rewrite of %s", got.ID.Raw, got.Method, in)
		}
		if v := got.Params.Get(`_meta.io\.modelcontextprotocol/protocolVersion`); v.Str != "2026-07-28" {
			t.Fatalf("protocolVersion missing in %s", out)
		}
		if got.Params.Get("task").Exists() {
			t.Fatalf("task kept in %s", out)
		}
	})
}

func FuzzResponseDown(f *testing.F) {
	for _, fr := range goldenFrames(f) {
		f.Add(fr, "tools/list", 200)
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":{}}}`), "x", 400)
	f.Fuzz(func(t *testing.T, in []byte, method string, status int) {
		fr, err := rewrite.Parse(rewrite.TrimFrame(in))
		if err != nil || fr.Kind != rewrite.KindResponse {
			return
		}
		d, err := rewrite.ResponseDown(&fr, rewrite.Down{ID: []byte(`"c"`), Method: method, HTTPStatus: status, TaskSupport: true})
		if err != nil || d.Frame == nil {
			return
		}
		if !gjson.ValidBytes(d.Frame) {
			t.Fatalf("invalid JSON out of %s:\n%s", in, d.Frame)
		}
		if id := gjson.GetBytes(d.Frame, "id"); id.Raw != `"c"` {
			t.Fatalf("id %s after rewrite of %s", id.Raw, in)
		}
		if gjson.GetBytes(d.Frame, "result.resultType").Exists() {
			t.Fatalf("resultType kept: %s", d.Frame)
		}
	})
}

// FuzzResponseDownInPlace holds the in-place rewrite (Down.Room) to the
// copying one: the same bytes out, whether the rewrite is done in place or
// declined for lack of room (then the copying fallback must see the same
// edits). related adds an insertion (a tasks/result payload's related-task
// _meta), which makes a decline more likely.
func FuzzResponseDownInPlace(f *testing.F) {
	for _, fr := range goldenFrames(f) {
		f.Add(fr, "tools/call", uint8(16), "")
		f.Add(fr, "resources/read", uint8(0), "")
		f.Add(fr, "tools/call", uint8(8), "task-1")
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":"complete"}}`), "tools/call", uint8(2), "")
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":1,"_meta":{"a":1}}}`), "resources/read", uint8(8), "t")
	f.Fuzz(func(t *testing.T, in []byte, method string, room uint8, related string) {
		in = rewrite.TrimFrame(in)
		fr, err := rewrite.Parse(in)
		if err != nil || fr.Kind != rewrite.KindResponse {
			return
		}
		down := rewrite.Down{ID: []byte(`"client-id"`), Method: method, RelatedTask: related}
		want, err := rewrite.ResponseDown(&fr, down)
		if err != nil || want.Frame == nil {
			return
		}
		buf := make([]byte, int(room)+len(in))
		copy(buf[room:], in)
		fr2, err := rewrite.Parse(buf[room:])
		if err != nil {
			t.Fatalf("parse of the same bytes failed: %v", err)
		}
		down.Room = buf
		got, err := rewrite.ResponseDown(&fr2, down)
		if err != nil {
			t.Fatalf("in place: %v", err)
		}
		if !bytes.Equal(got.Frame, want.Frame) {
			t.Fatalf("in place with room %d:\n got %s\nwant %s", room, got.Frame, want.Frame)
		}
	})
}

func FuzzErrorFrame(f *testing.F) {
	f.Add("plain", []byte("1"), -32603)
	f.Add("quote \" backslash \\ newline \n nul \x00 bad \xff <&>", []byte(`"id"`), 1)
	f.Fuzz(func(t *testing.T, msg string, id []byte, code int) {
		if !gjson.ValidBytes(id) || len(bytes.TrimSpace(id)) == 0 {
			id = nil
		}
		out := rewrite.ErrorFrame(bytes.TrimSpace(id), code, msg, nil)
		if !gjson.ValidBytes(out) || bytes.ContainsAny(out, "\n\r") {
			t.Fatalf("ErrorFrame(%q) = %s", msg, out)
		}
		if utf8.ValidString(msg) {
			if got := gjson.GetBytes(out, "error.message").Str; got != msg {
				t.Fatalf("message %q came back as %q", msg, got)
			}
		}
	})
}

// FuzzTrimFrame holds TrimFrame's shortcut to bytes.TrimSpace.
func FuzzTrimFrame(f *testing.F) {
	for _, s := range []string{"", "{}", " {} ", "{}\r", "\u00a0{}", "{}\u0085", "\x7f", "!", "~", "\t", "x \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := rewrite.TrimFrame(b), bytes.TrimSpace(b); !bytes.Equal(got, want) {
			t.Fatalf("TrimFrame(%q) = %q, bytes.TrimSpace gives %q", b, got, want)
		}
	})
}
