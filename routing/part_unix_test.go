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

// TestPartKept: putPart keeps one part for the next message, and takePart
// hands that very part out again; a second part put while one is kept is
// unmapped.
func TestPartKept(t *testing.T) {
	if p := kept.Swap(nil); p != nil {
		freePart(*p)
	}
	a, b := takePart(), takePart()
	if !a.mapped || !b.mapped || cap(a.b) != partSize || len(a.b) != 0 {
		t.Fatalf("takePart: mapped %v %v, len %d cap %d", a.mapped, b.mapped, len(a.b), cap(a.b))
	}
	a.b = append(a.b, "x"...)
	putPart(a)
	putPart(b)
	if err := unix.Munmap(b.b[:cap(b.b)]); err != unix.EINVAL {
		t.Errorf("a second part was kept too (munmap: %v)", err)
	}
	c := takePart()
	if &c.b[:1][0] != &a.b[0] || len(c.b) != 0 {
		t.Errorf("takePart did not hand out the kept part empty (len %d)", len(c.b))
	}
	freePart(c)
}

// TestFinishHandsPartsBack: once a message in four parts is finished, one
// part is kept for the next message and the other three are unmapped.
func TestFinishHandsPartsBack(t *testing.T) {
	if p := kept.Swap(nil); p != nil {
		freePart(*p)
	}
	lastLong.Store(0)
	var g gather
	g.begin(pattern(3*partSize + 17))
	parts := append([]part(nil), g.parts...)
	if len(parts) != 4 {
		t.Fatalf("%d parts, want 4", len(parts))
	}
	g.finish()
	k := kept.Load()
	if k == nil {
		t.Fatal("no part kept after finish")
	}
	unmapped := 0
	for _, p := range parts {
		if &p.b[:1][0] == &k.b[:1][0] {
			continue
		}
		if err := unix.Munmap(p.b[:cap(p.b)]); err == unix.EINVAL {
			unmapped++
		}
	}
	if unmapped != 3 {
		t.Errorf("%d of the 3 parts not kept were unmapped", unmapped)
	}
}
