package routing

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
)

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%23)
	}
	return b
}

// TestLineReader: lines of any length, each without its "\n" (a "\r" stays:
// stdin's bytes are the client's), an empty line, the last line without a
// "\n", then EOF. A line that fits the buffer comes in place; a longer one
// in a buffer of its own that it ends.
func TestLineReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	in := "a\r\n\n" + long + "\nlast"
	lr := NewLineReader(strings.NewReader(in), 64<<10, 1<<20, 0)
	for _, want := range []string{"a\r", "", long, "last"} {
		got, own, err := lr.Next()
		if err != nil || string(got) != want {
			t.Fatalf("Next() = %.20q (%d bytes), %v; want %.20q", got, len(got), err, want)
		}
		if isLong := len(want) > 64<<10; (own != nil) != isLong || isLong && len(own) != len(want)+1 {
			t.Errorf("%.20q: own buffer of %d bytes", want, len(own))
		}
	}
	if _, _, err := lr.Next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
}

// TestLineReaderLimit: a line over the limit is ErrTooLarge, whether it
// fits the buffer or not, and whether it ends with a "\n" or the input;
// reading goes on after it. A line of exactly the limit passes.
func TestLineReaderLimit(t *testing.T) {
	t.Parallel()
	const max = 100
	for _, size := range []int{16, 4096} { // the long path, the in-place path
		at, over := strings.Repeat("a", max), strings.Repeat("b", max+1)
		lr := NewLineReader(strings.NewReader(over+"\n"+at+"\n"+over+"\nok\n"+at+"\n"+over), size, max, 0)
		for i, want := range []string{"", at, "", "ok", at, ""} {
			got, _, err := lr.Next()
			if want == "" {
				if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "100 bytes") {
					t.Fatalf("buffer %d, line %d: %q, %v; want ErrTooLarge naming the limit", size, i, got, err)
				}
				continue
			}
			if err != nil || string(got) != want {
				t.Fatalf("buffer %d, line %d: %q, %v; want %q", size, i, got, err, want)
			}
		}
		if _, _, err := lr.Next(); err != io.EOF {
			t.Fatalf("buffer %d: after the last line: %v", size, err)
		}
	}
}

// TestLineReaderStopsAtLimit: a line over the limit is not read to its end
// before the error: memory stays with the limit, not the line.
func TestLineReaderStopsAtLimit(t *testing.T) {
	t.Parallel()
	src := bytes.NewReader(pattern(64 << 20))
	lr := NewLineReader(src, 32<<10, 1<<20, 0)
	if _, _, err := lr.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%v, want ErrTooLarge", err)
	}
	if read := src.Size() - int64(src.Len()); read > 2<<20 {
		t.Errorf("read %d bytes of a line over a 1 MiB limit", read)
	}
}

// TestLineReaderReadError: a read error in the middle of a long line is
// returned as it is.
func TestLineReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	lr := NewLineReader(io.MultiReader(bytes.NewReader(pattern(100<<10)), iotest.ErrReader(boom)), 16<<10, 0, 0)
	if _, _, err := lr.Next(); err != boom {
		t.Fatalf("%v, want %v", err, boom)
	}
}

// TestLongLineOwnBuffer: a line longer than the buffer comes after room
// spare bytes, in a buffer of its own that it ends. The first large one is
// joined into a buffer of exactly room, line and "\n"; one of about its
// size after it is read into one buffer of that size and a sixty-fourth
// more, with nothing to join; a small one gets a buffer of its own size,
// not the large one's; one larger than that buffer is joined again.
func TestLongLineOwnBuffer(t *testing.T) {
	t.Parallel()
	first := pattern(2<<20 + 17)
	lines := [][]byte{first, pattern(2<<20 + 900), pattern(40 << 10), pattern(3 << 20)}
	caps := []int{BodyRoom + len(first) + 1, BodyRoom + len(first) + 1 + (len(first)+1)/64, BodyRoom + 40<<10 + 1, BodyRoom + 3<<20 + 1}
	in := append(bytes.Join(lines, []byte("\n")), '\n')
	lr := NewLineReader(bytes.NewReader(in), 32<<10, 0, BodyRoom)
	for i, want := range lines {
		got, own, err := lr.Next()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: got %d, %v", len(want), len(got), err)
		}
		if len(own) != BodyRoom+len(want)+1 || cap(own) != caps[i] || &own[BodyRoom] != &got[0] {
			t.Errorf("line %d (%d bytes): own buffer len %d cap %d (want %d), the line after the room %v", i, len(want), len(own), cap(own), caps[i], &own[BodyRoom] == &got[0])
		}
	}
}

// TestReadBody: a body of known length is read into one buffer of its size;
// one of unknown length in chunks joined once (the last large size is
// TestChunkedJSONBody's). A small body of known length comes without room;
// one of RoomMin bytes or more, or of unknown length, with BodyRoom in
// front. Past the limit
// is ErrTooLarge, and a read error is returned as it is.
func TestReadBody(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 10, 511, 512, 1000, RoomMin - 1, RoomMin, 3<<20 + 1} {
		msg := pattern(n)
		for _, size := range []int64{-1, int64(n)} {
			buf, off, err := readBody(iotest.HalfReader(bytes.NewReader(msg)), 1<<30, size, nil)
			if err != nil || !bytes.Equal(buf[off:], msg) {
				t.Fatalf("%d bytes (length %d): %d read, %v", n, size, len(buf)-off, err)
			}
			if n < RoomMin && size >= 0 && off != 0 || (n >= RoomMin || size < 0) && off != BodyRoom {
				t.Errorf("%d bytes (length %d): offset %d", n, size, off)
			}
			if size >= 0 && cap(buf) != off+n+1 {
				t.Errorf("%d bytes of known length: a buffer of %d", n, cap(buf))
			}
		}
	}
	if _, _, err := readBody(bytes.NewReader(pattern(3<<20)), 1<<20, -1, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a body over the limit: %v, want ErrTooLarge", err)
	}
	if _, _, err := readBody(bytes.NewReader(nil), 1<<20, 2<<20, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a declared length over the limit: %v, want ErrTooLarge", err)
	}
	boom := errors.New("connection reset")
	if _, _, err := readBody(io.MultiReader(bytes.NewReader(pattern(1<<20)), iotest.ErrReader(boom)), 1<<30, -1, nil); err != boom {
		t.Errorf("a read error: %v, want %v", err, boom)
	}
}

// FuzzLineReader: the line reader returns exactly the input's lines, each
// without its "\n", or reports a line over the limit and goes on after it;
// a long line ends its own buffer after the room. It never panics. Both
// stdin's buffer and one a thirty-second of the input (most lines long,
// each in a bounded number of pieces) are tried.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\r\n\n{}"), 8)
	f.Add(bytes.Repeat([]byte("y"), 70000), 100000)
	long := append(bytes.Repeat([]byte("z"), 140000), '\n')
	f.Add(append(append(append([]byte("a\n"), long...), long...), "tail"...), 140000)
	f.Add(append(bytes.Repeat([]byte("w"), 65536*2), '\n'), 65536*2)
	f.Add(append(bytes.Repeat([]byte("v"), 65536*2), '\n'), 65536*2-1)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 {
			max = 1 + (-max)%(1<<20)
		}
		want := bytes.Split(in, []byte("\n"))
		if len(want) > 0 && len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		for _, size := range []int{16 + len(in)/32, 64 << 10} {
			lr := NewLineReader(bytes.NewReader(in), size, max, 7)
			i := 0
			for ; i < len(want); i++ {
				line, own, err := lr.Next()
				if len(want[i]) > max {
					if !errors.Is(err, ErrTooLarge) {
						t.Fatalf("buffer %d: line %d of %d bytes over %d: %v", size, i, len(want[i]), max, err)
					}
					continue
				}
				if err != nil || !bytes.Equal(line, want[i]) {
					t.Fatalf("buffer %d: line %d = %q, %v; want %q", size, i, line, err, want[i])
				}
				if own != nil && (len(own) < 7+len(line) || &own[7] != &line[0] && len(line) > 0) {
					t.Fatalf("buffer %d: line %d does not follow the room in its buffer", size, i)
				}
			}
			if _, _, err := lr.Next(); err != io.EOF {
				t.Fatalf("buffer %d: after %d lines: %v, want EOF", size, i, err)
			}
		}
	})
}

// TestLargeHintBounded: the size an earlier large message had does not
// make a smaller one reserve it: memory follows the bytes that arrive.
func TestLargeHintBounded(t *testing.T) {
	var last atomic.Int64
	last.Store(128 << 20)
	c := chunks{last: &last}
	c.add(make([]byte, largeMin+1))
	if err := c.readFrom(bytes.NewReader(make([]byte, 10)), 256<<20); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, b := range c.bufs {
		total += cap(b)
	}
	if limit := 5 * (largeMin + 11); total > limit {
		t.Errorf("a %d-byte message reserved %d bytes after a 128 MiB one, want at most %d", c.n, total, limit)
	}
}
