package serve

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"
)

// trickle is a body that arrives in pieces and then ends.
type trickle struct{ parts [][]byte }

func (r *trickle) Read(p []byte) (int, error) {
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.parts[0])
	if r.parts[0] = r.parts[0][n:]; len(r.parts[0]) == 0 {
		r.parts = r.parts[1:]
	}
	return n, nil
}

// A body that declares 128 MiB and sends 200 bytes takes a buffer of the
// first size, not of its declaration: what is allocated, and what is taken
// from the body memory, grows with the bytes that arrive.
func TestReadAllGrowsWithArrivals(t *testing.T) {
	const declared, limit = 128 << 20, 128 << 20
	sent := bytes.Repeat([]byte("x"), 200)
	mem := &bodyMemory{max: 1 << 40}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var held int64
	got, err := readAll(&trickle{parts: [][]byte{sent}}, declared, limit, mem, &held)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(got, sent) {
		t.Fatalf("readAll = %d bytes, %v; want the 200 sent", len(got), err)
	}
	if cap(got) > firstBuffer || held != int64(cap(got)) || mem.used.Load() != held {
		t.Errorf("buffer of %d bytes, %d held, %d taken from the memory; want at most %d, all of it held and taken", cap(got), held, mem.used.Load(), firstBuffer)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("reading 200 bytes of a body that declares %d allocated %d bytes; want what arrived, not what was declared", declared, alloc)
	}
	mem.release(held)
	if mem.used.Load() != 0 {
		t.Errorf("%d bytes still taken after the release", mem.used.Load())
	}
}

// A body grows its buffer by doubling to the size it declares (or, with no
// Content-Length, to what arrives): the buffer is never more than twice the
// bytes that came (or the first size).
func TestReadAllSizes(t *testing.T) {
	for _, c := range []struct {
		name           string
		declared, sent int
		maxCap         int
	}{
		{"small, declared", 300, 300, 300},
		{"large, declared", 100 << 10, 100 << 10, 100 << 10},
		{"large, not declared", -1, 100 << 10, 128 << 10},
		{"at the limit, not declared", -1, 1 << 20, 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			sent := bytes.Repeat([]byte("y"), c.sent)
			var parts [][]byte
			for b := sent; len(b) > 0; b = b[min(len(b), 7000):] {
				parts = append(parts, b[:min(len(b), 7000)])
			}
			var held int64
			got, err := readAll(&trickle{parts: parts}, int64(c.declared), 1<<20, nil, &held)
			if err != nil || !bytes.Equal(got, sent) {
				t.Fatalf("readAll = %d bytes, %v; want the %d sent", len(got), err, c.sent)
			}
			if cap(got) > c.maxCap || held != int64(cap(got)) {
				t.Errorf("buffer of %d bytes (held %d) for %d sent; want at most %d", cap(got), held, c.sent, c.maxCap)
			}
		})
	}
}

// Past the body memory, readAll fails with errBodyMemory, having taken no
// more than there was; given back, the memory serves the next body.
func TestReadAllBodyMemory(t *testing.T) {
	mem := &bodyMemory{max: 48 << 10}
	var a int64
	if _, err := readAll(&trickle{parts: [][]byte{make([]byte, 40<<10)}}, 40<<10, 1<<20, mem, &a); err != nil {
		t.Fatalf("the first body: %v", err)
	}
	var b int64
	_, err := readAll(&trickle{parts: [][]byte{make([]byte, 20<<10)}}, 20<<10, 1<<20, mem, &b)
	if !errors.Is(err, errBodyMemory) || b != 0 || mem.used.Load() != a {
		t.Fatalf("a second body past the memory: %v, held %d, used %d; want errBodyMemory, nothing taken", err, b, mem.used.Load())
	}
	mem.release(a)
	if _, err := readAll(&trickle{parts: [][]byte{make([]byte, 20<<10)}}, 20<<10, 1<<20, mem, &b); err != nil {
		t.Fatalf("the second body once the first gave its memory back: %v", err)
	}
}

// A body that goes on past its Content-Length is refused, not cut to it;
// one that ends there is read whole.
func TestReadAllLongerThanDeclared(t *testing.T) {
	var held int64
	if _, err := readAll(&trickle{parts: [][]byte{[]byte("0123456789x")}}, 10, 1<<20, nil, &held); !errors.Is(err, errLonger) {
		t.Errorf("a body past its declared 10 bytes: err = %v, want errLonger", err)
	}
	got, err := readAll(&trickle{parts: [][]byte{[]byte("01234"), []byte("56789")}}, 10, 1<<20, nil, &held)
	if err != nil || string(got) != "0123456789" {
		t.Errorf("a body of its declared 10 bytes: %q, %v", got, err)
	}
}
