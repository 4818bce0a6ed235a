//go:build unix

package routing

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFreePartUnmaps: a part comes from a mapping of its own, and freePart
// hands it back: the mapping is gone after (unmapping it again is refused).
func TestFreePartUnmaps(t *testing.T) {
	b, mapped := allocPart(partSize)
	if !mapped || len(b) != partSize {
		t.Fatalf("allocPart: %d bytes, mapped %v", len(b), mapped)
	}
	b[0], b[partSize-1] = 1, 2
	freePart(part{b[:10], mapped})
	if err := unix.Munmap(b); err != unix.EINVAL {
		t.Errorf("the part's mapping is still there after freePart (munmap: %v)", err)
	}
}
