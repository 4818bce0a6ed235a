package rewrite

import (
	"fmt"
	"strings"
	"testing"
)

// fuzzMemo is shared by the fuzz targets' iterations (one at a time in a
// worker), so that they meet keys the memo remembers as well as new ones.
var fuzzMemo = NewKeyMemo(SensitiveKey)

// TestKeyMemoInPlace: a key's verdict is the rule's, whether it is asked
// by value (Sensitive) or where it lies in a frame (as the scans ask it),
// at every length around the fingerprint's eight and sixteen bytes and up
// to the very end of a frame; and a key remembered one way is found the
// other way without asking the rule again (its two fingerprints agree).
func TestKeyMemoInPlace(t *testing.T) {
	calls := 0
	rule := func(k string) bool { calls++; return strings.Contains(k, "7") || len(k)%5 == 0 }
	var keys []string
	for n := 1; n <= 20; n++ {
		keys = append(keys, strings.Repeat("k", n-1)+"7", strings.Repeat("k", n))
	}
	for _, k := range keys {
		want := strings.Contains(k, "7") || len(k)%5 == 0
		for _, frame := range []string{
			fmt.Sprintf(`{"%s":1,"padding":"........"}`, k), // room after the key
			fmt.Sprintf(`{"%s":1}`, k),                      // little room
			fmt.Sprintf(`"%s"`, k),                          // none: the end of the frame
		} {
			i := strings.IndexByte(frame, '"')
			end := i + len(k) + 2
			byValue := NewKeyMemo(rule) // one key each: no other can take its slots
			if got := byValue.Sensitive(k); got != want {
				t.Fatalf("Sensitive(%q) = %v, want %v", k, got, want)
			}
			calls = 0
			if got := byValue.at(frame, i, end); got != want || calls != 0 {
				t.Fatalf("at(%s, %q) after Sensitive = %v asking the rule %d times, want %v without asking", frame, k, got, calls, want)
			}
			inPlace := NewKeyMemo(rule)
			if got := inPlace.at(frame, i, end); got != want {
				t.Fatalf("at(%s, %q) = %v, want %v", frame, k, got, want)
			}
			calls = 0
			if got := inPlace.Sensitive(k); got != want || calls != 0 {
				t.Fatalf("Sensitive(%q) after at(%s) = %v asking the rule %d times, want %v without asking", k, frame, got, calls, want)
			}
		}
	}
}
