package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openTraceFile is Open's file: created 0600, truncated, and written
// directly when the file system takes direct I/O.
func openTraceFile(t *testing.T) (string, *directFile) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d := openDirect(path, f)
	if d == nil {
		f.Close()
		if oDirect != 0 {
			t.Skipf("SKIP: the file system of %s takes no direct I/O (O_DIRECT): the trace is written through the page cache there", path)
		}
		t.Skip("SKIP: no direct I/O on this system: the trace is written through the page cache")
	}
	return path, d
}

// linesOf makes n JSONL lines of sizes from 1 byte to a few blocks.
func linesOf(rng *rand.Rand, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		size := rng.IntN(64)
		if rng.IntN(8) == 0 {
			size = rng.IntN(3 * dioAlign)
		}
		out[i] = fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`+"\n", i, strings.Repeat("x", size))
	}
	return out
}

// TestDirectFileShowsWhatWasWritten: written in chunks of every size, a
// directFile's file always holds a prefix of what was written that misses
// at most the tail it holds (less than a block), and all of it once it
// settles, whether direct I/O works or the file system refuses it at the
// first write or midway (then everything goes through the page cache).
func TestDirectFileShowsWhatWasWritten(t *testing.T) {
	for _, refuseAt := range []int{-1, 0, 7} { // the write whose direct I/O is refused; -1: none
		t.Run(fmt.Sprintf("refused at %d", refuseAt), func(t *testing.T) {
			path, d := openTraceFile(t)
			rng := rand.New(rand.NewPCG(1, uint64(refuseAt+2)))
			var want []byte
			for i, l := range linesOf(rng, 600) {
				if i == refuseAt {
					d.direct.Close()
					d.direct = refuser{}
				}
				chunk := l
				if i%3 == 0 { // several lines at once, as the writer's chunks
					chunk = append(append([]byte(nil), l...), l...)
				}
				if _, err := d.Write(chunk); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
				want = append(want, chunk...)
				got := readFile(t, path)
				if !bytes.HasPrefix(want, got) || len(want)-len(got) >= dioAlign {
					t.Fatalf("after write %d the file holds %d of %d bytes written (a prefix: %v)", i, len(got), len(want), bytes.HasPrefix(want, got))
				}
				if i%50 == 0 {
					if err := d.settle(); err != nil {
						t.Fatal(err)
					}
					if got := readFile(t, path); !bytes.Equal(got, want) {
						t.Fatalf("settled after write %d: the file holds %d bytes, want the %d written", i, len(got), len(want))
					}
				}
			}
			if refuseAt >= 0 && d.direct != nil {
				t.Error("a refused direct write left direct I/O on")
			}
			if refuseAt < 0 && d.direct == nil {
				t.Error("direct I/O was given up without a refusal")
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, path); !bytes.Equal(got, want) {
				t.Fatalf("after Close the file holds %d bytes, want the %d written", len(got), len(want))
			}
		})
	}
}

// refuser refuses direct writes as a file system without direct I/O, or
// with larger blocks, does.
type refuser struct{}

func (refuser) WriteAt([]byte, int64) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "trace", Err: syscall.EINVAL}
}

func (refuser) Close() error { return nil }

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOpenWritesDirectlyAndSettles: a trace opened on a file that takes
// direct I/O writes it so, and its records reach the file without Close,
// within FlushInterval: a record alone (under a block, held until the timer
// settles it), and a burst whose wake-ups write blocks directly and leave a
// tail with no record behind it.
func TestOpenWritesDirectlyAndSettles(t *testing.T) {
	path, d := openTraceFile(t) // only to know the file system takes direct I/O
	d.Close()
	w, err := Open(path, Options{FlushInterval: 10 * time.Millisecond, BufferBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, ok := w.out.(*directFile); !ok {
		t.Fatalf("Open wrote through %T, want a directFile", w.out)
	}
	frame := json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("y", 300) + `"}}`)
	emit := func(n int) {
		for range n {
			w.Emit(Record{Dir: ServerToProxy, Op: "op-1", Frame: frame})
		}
	}
	waitLines := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := bytes.Count(readFile(t, path), newline)
			if got == want {
				return
			}
			if got > want || time.Now().After(deadline) {
				t.Fatalf("the file holds %d records, want %d", got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	emit(1) // quiet: under a block, written when the timer fires
	waitLines(1)
	emit(150) // over a quarter of BufferBytes: a wake-up, whose last block is held, then settled
	waitLines(151)
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if recs := lines(t, readFile(t, path)); len(recs) != 151 {
		t.Errorf("after Close: %d records, want 151", len(recs))
	}
}
