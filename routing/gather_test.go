package routing

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// gatherAll gathers msg in chunks of the given size and returns the
// finished buffer, the heap buffers the gather read into, in order (the
// first byte of each), and how many parts it made.
func gatherAll(msg []byte, chunk int) (out []byte, bufs []*byte, parts int) {
	var g gather
	g.begin(nil)
	note := func() {
		if g.buf == nil {
			return
		}
		if b := &g.buf[:cap(g.buf)][0]; len(bufs) == 0 || bufs[len(bufs)-1] != b {
			bufs = append(bufs, b)
		}
	}
	note()
	for c := range slicesOf(msg, chunk) {
		g.add(c)
		note()
		parts = max(parts, len(g.parts))
	}
	return g.finish(), bufs, parts
}

func slicesOf(b []byte, n int) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			k := min(n, len(b))
			if !yield(b[:k]) {
				return
			}
			b = b[k:]
		}
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%23)
	}
	return b
}

// TestGatherFirstOfItsSize: with no message gathered before, everything goes
// into parts, and the message comes back after BodyRoom spare bytes in a
// buffer of bufCap, with no part left.
func TestGatherFirstOfItsSize(t *testing.T) {
	for _, n := range []int{1, partSize - 1, partSize, partSize + 1, 3*partSize + 17} {
		lastLong.Store(0)
		msg := pattern(n)
		var g gather
		g.begin(nil)
		for c := range slicesOf(msg, 7001) {
			g.add(c)
		}
		if want := (n + partSize - 1) / partSize; len(g.parts) != want {
			t.Errorf("%d bytes: %d parts, want %d", n, len(g.parts), want)
		}
		out := g.finish()
		if len(out) != BodyRoom+n || cap(out) != bufCap(n) || !bytes.Equal(out[BodyRoom:], msg) {
			t.Fatalf("%d bytes: len %d cap %d, content equal %v", n, len(out), cap(out), bytes.Equal(out[BodyRoom:], msg))
		}
		if len(g.parts) != 0 || g.n != 0 || g.buf != nil {
			t.Errorf("%d bytes: the gather kept %d parts, %d bytes", n, len(g.parts), g.n)
		}
		if got := lastLong.Load(); got != int64(n) {
			t.Errorf("%d bytes: lastLong %d", n, got)
		}
	}
}

// TestGatherReusesLastSize: a message up to an eighth longer than the last
// one starts in a part, goes on in a heap buffer of the last size once it
// outgrows that, and is handed over in it: no part left, no copy at the
// end. One byte more than that buffer holds takes a part, and the message
// comes back in a new buffer of bufCap.
func TestGatherReusesLastSize(t *testing.T) {
	const n = 2*partSize + 333
	lastLong.Store(0)
	gatherAll(pattern(n), 4096)

	fits := pattern(n + n/8)
	out, bufs, parts := gatherAll(fits, 4096)
	if !bytes.Equal(out[BodyRoom:], fits) || len(out) != BodyRoom+len(fits) {
		t.Fatalf("%d bytes after %d: content or length wrong (len %d)", len(fits), n, len(out))
	}
	if parts != 1 || len(bufs) != 1 || &out[0] != bufs[0] || cap(out) != bufCap(n) {
		t.Errorf("%d bytes after %d: %d parts, %d buffers, cap %d; handed over in the last one %v", len(fits), n, parts, len(bufs), cap(out), &out[0] == bufs[len(bufs)-1])
	}

	lastLong.Store(n)
	over := pattern(bufCap(n) - BodyRoom + 1)
	out, bufs, parts = gatherAll(over, 4096)
	if !bytes.Equal(out[BodyRoom:], over) || len(out) != BodyRoom+len(over) || cap(out) != bufCap(len(over)) {
		t.Fatalf("%d bytes after %d: len %d cap %d", len(over), n, len(out), cap(out))
	}
	if parts != 1 || len(bufs) != 1 || &out[0] == bufs[0] {
		t.Errorf("%d bytes after %d: %d parts (want 1 past the buffer), %d buffers, handed over in the buffer it was read into %v", len(over), n, parts, len(bufs), len(bufs) > 0 && &out[0] == bufs[0])
	}
}

// TestGatherSmallAfterLarge: a small message after a large one is read into
// a part, and handed over in a buffer of its own size: no heap buffer of the
// large size (which is zeroed when it is allocated) is made.
func TestGatherSmallAfterLarge(t *testing.T) {
	lastLong.Store(64 << 20)
	small := pattern(40 << 10)
	out, bufs, parts := gatherAll(small, 4096)
	if !bytes.Equal(out[BodyRoom:], small) || len(out) != BodyRoom+len(small) {
		t.Fatalf("40 KiB after 64 MiB: content or length wrong (len %d)", len(out))
	}
	if parts != 1 || len(bufs) != 0 || cap(out) != bufCap(len(small)) {
		t.Errorf("40 KiB after 64 MiB: %d parts, %d heap buffers while reading, cap %d (want %d)", parts, len(bufs), cap(out), bufCap(len(small)))
	}
}

// TestBufCap: a buffer holds the message and an eighth more after the room,
// in whole parts (whole 64 KiB under a part), and messages a few bytes apart
// get buffers of one size.
func TestBufCap(t *testing.T) {
	if got := bufCap(0); got != BodyRoom {
		t.Errorf("bufCap(0) = %d, want BodyRoom alone", got)
	}
	for _, n := range []int{1, 40 << 10, partSize - 1, 16 << 20, 16<<20 + 37, 64<<20 + 5} {
		c := bufCap(n)
		g := partSize
		if BodyRoom+n+n/8 < partSize {
			g = 64 << 10
		}
		if c < BodyRoom+n+n/8 || c%g != 0 || c-(BodyRoom+n+n/8) >= g {
			t.Errorf("bufCap(%d) = %d", n, c)
		}
	}
	if a, b := bufCap(16<<20+100), bufCap(16<<20+180); a != b {
		t.Errorf("16 MiB messages 80 bytes apart get buffers of %d and %d bytes", a, b)
	}
}

// TestGatherReadFrom: readFrom reads to EOF through the start buffer and
// the parts, returns a read error as it is, and stops with ErrTooLarge once
// more than max bytes are in.
func TestGatherReadFrom(t *testing.T) {
	msg := pattern(2*partSize + 5)
	lastLong.Store(partSize / 2)
	var g gather
	g.begin(nil)
	if err := g.readFrom(iotest.HalfReader(bytes.NewReader(msg)), 1<<30); err != nil {
		t.Fatal(err)
	}
	if out := g.finish(); !bytes.Equal(out[BodyRoom:], msg) {
		t.Fatalf("read %d bytes, want %d, equal %v", len(out)-BodyRoom, len(msg), bytes.Equal(out[BodyRoom:], msg))
	}

	boom := errors.New("connection reset")
	g.begin(nil)
	if err := g.readFrom(io.MultiReader(bytes.NewReader(msg[:partSize*3/2]), iotest.ErrReader(boom)), 1<<30); err != boom {
		t.Fatalf("read error %v, want %v", err, boom)
	}
	g.reset()
	if len(g.parts) != 0 || g.n != 0 || g.buf != nil {
		t.Errorf("reset kept %d parts, %d bytes", len(g.parts), g.n)
	}

	g.begin(nil)
	if err := g.readFrom(strings.NewReader(strings.Repeat("z", 3*partSize)), partSize); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("more than max: %v, want ErrTooLarge", err)
	}
	if g.n <= partSize || g.n >= 3*partSize {
		t.Errorf("read %d bytes with max %d: want past max and short of the end", g.n, partSize)
	}
	g.reset()
}

// TestReadBodyUnknownLength: a body without a Content-Length is read whole:
// a small one without room, one of RoomMin bytes or more gathered with
// BodyRoom in front (one a little shorter may be either). One over the
// limit fails with ErrTooLarge.
func TestReadBodyUnknownLength(t *testing.T) {
	for _, n := range []int{0, 10, 1000, RoomMin - 1, RoomMin, 3*partSize + 1} {
		msg := pattern(n)
		buf, off, err := readBody(iotest.HalfReader(bytes.NewReader(msg)), 1<<30, -1)
		if err != nil || !bytes.Equal(buf[off:], msg) {
			t.Fatalf("%d bytes: %d read, %v", n, len(buf)-off, err)
		}
		if n <= 1000 && off != 0 || n >= RoomMin && off != BodyRoom {
			t.Errorf("%d bytes: offset %d", n, off)
		}
	}
	if _, _, err := readBody(bytes.NewReader(pattern(2*partSize)), partSize, -1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a body over the limit: %v, want ErrTooLarge", err)
	}
}

// benchGather gathers a message of size bytes after one of last bytes, as a
// long SSE line or a JSON body of unknown length is read. After a large
// message, a small one must not pay for a buffer of the large size.
func benchGather(b *testing.B, size int, last int64) {
	msg := pattern(size)
	b.SetBytes(int64(size))
	for b.Loop() {
		lastLong.Store(last)
		var g gather
		g.begin(msg)
		_ = g.finish()
	}
}

func BenchmarkGather40KAfter40K(b *testing.B) { benchGather(b, 40<<10, 40<<10) }
func BenchmarkGather40KAfter16M(b *testing.B) { benchGather(b, 40<<10, 16<<20) }
func BenchmarkGather40KAfter64M(b *testing.B) { benchGather(b, 40<<10, 64<<20) }
func BenchmarkGather16MAfter16M(b *testing.B) { benchGather(b, 16<<20, 16<<20) }
