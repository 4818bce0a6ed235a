package rewrite

import (
	"bytes"
	"slices"
	"testing"
)

// FuzzApplyInPlace holds applyInPlace to apply for any edit list: the same
// output whenever it works in place, and buf untouched when it declines.
func FuzzApplyInPlace(f *testing.F) {
	f.Add([]byte(`{"id":1,"result":{"a":1,"resultType":"complete"}}`), uint8(4), []byte{6, 7, 5, 17, 40, 0})
	f.Add([]byte(`0123456789`), uint8(0), []byte{0, 0, 3, 2, 5, 0, 4, 9, 0})
	f.Fuzz(func(t *testing.T, src []byte, room uint8, ops []byte) {
		var e edits
		for i := 0; i+2 < len(ops) && len(src) > 0; i += 3 {
			start := int(ops[i]) % (len(src) + 1)
			end := min(start+int(ops[i+1])%8, len(src))
			e = append(e, edit{start: start, end: end, repl: bytes.Repeat([]byte{'#'}, int(ops[i+2])%6)})
		}
		want := slices.Clone(edits(slices.Clone(e)).apply(src))
		buf := make([]byte, int(room)+len(src))
		copy(buf[room:], src)
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
