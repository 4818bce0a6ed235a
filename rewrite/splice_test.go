package rewrite

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzApplyInPlace holds applyInPlace to apply for any edit list: the same
// output whenever it works in place, and buf untouched when it declines.
// A replacement may be a slice of the frame itself (an op byte of 0x80 and
// more), which the writing must not overwrite before it is read.
func FuzzApplyInPlace(f *testing.F) {
	f.Add([]byte(`{"id":1,"result":{"a":1,"resultType":"complete"}}`), uint8(4), []byte{6, 7, 5, 17, 40, 0})
	f.Add([]byte(`0123456789`), uint8(0), []byte{0, 0, 3, 2, 5, 0, 4, 9, 0})
	f.Add([]byte(`0123456789`), uint8(6), []byte{0, 0, 3, 4, 3, 0x80})
	f.Fuzz(func(t *testing.T, in []byte, room uint8, ops []byte) {
		buf := make([]byte, int(room)+len(in))
		copy(buf[room:], in)
		src := buf[room:]
		var e edits
		for i := 0; i+2 < len(ops) && len(src) > 0; i += 3 {
			start := int(ops[i]) % (len(src) + 1)
			end := min(start+int(ops[i+1])%8, len(src))
			repl := bytes.Repeat([]byte{'#'}, int(ops[i+2])%6)
			if ops[i+2] >= 0x80 {
				from := int(ops[i+2]&0x7f) % len(src)
				repl = src[from : from+min(len(src)-from, int(ops[i+1])%6)]
			}
			e = append(e, edit{start: start, end: end, repl: repl})
		}
		want := slices.Clone(edits(slices.Clone(e)).apply(src))
		before := slices.Clone(buf)
		got := e.applyInPlace(buf, buf[room:])
		if got == nil {
			if !bytes.Equal(buf, before) {
				t.Fatalf("declined but changed buf")
			}
			return
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("room %d src %q edits %v:\n got %q\nwant %q", room, src, e, got, want)
		}
	})
}

// A result rewritten with too little room in front of it falls back to the
// copying rewrite, which must apply the same edits once each. The two
// deletions (resultType, ttlMs) merge when the list is normalized, and the
// related-task insertion does not fit in 8 bytes of room: before the fix,
// the fallback read the merged list through its old length and inserted
// the related task twice.
func TestResponseDownDeclinedInPlaceAppliesEditsOnce(t *testing.T) {
	in := []byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":1,"_meta":{"a":1}}}`)
	down := Down{ID: []byte("1"), Method: "resources/read", RelatedTask: "t"}
	f, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ResponseDown(&f, down)
	if err != nil {
		t.Fatal(err)
	}
	const room = 8
	buf := make([]byte, room+len(in))
	copy(buf[room:], in)
	f2, err := Parse(buf[room:])
	if err != nil {
		t.Fatal(err)
	}
	down.Room = buf
	got, err := ResponseDown(&f2, down)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Frame, want.Frame) {
		t.Fatalf("with %d bytes of room:\n got %s\nwant %s", room, got.Frame, want.Frame)
	}
	if n := bytes.Count(got.Frame, []byte("related-task")); n != 1 {
		t.Fatalf("related-task appears %d times in %s", n, got.Frame)
	}
	if len(got.Frame)-len(in) <= room {
		t.Fatalf("the case no longer exercises the fallback: it grows by %d bytes, room %d", len(got.Frame)-len(in), room)
	}
}
