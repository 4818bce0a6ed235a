package bridge

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than the reader's buffer
	in := "a\r\n\n" + long + "\nlast"
	lr := newLineReader(strings.NewReader(in), 1<<20)
	for _, want := range []string{"a\r", "", long, "last"} {
		got, err := lr.next()
		if err != nil || string(got) != want {
			t.Fatalf("next() = %.20q (%d bytes), %v; want %.20q", got, len(got), err, want)
		}
	}
	if _, err := lr.next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	lr = newLineReader(strings.NewReader(long+"\nok\n"), 1024)
	if _, err := lr.next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("over-long line: %v", err)
	}
	if got, err := lr.next(); err != nil || string(got) != "ok" {
		t.Fatalf("after an over-long line: %q, %v", got, err)
	}
}

// FuzzLineReader: the stdin framer returns exactly the input's lines, each
// without its newline, or reports a line over the limit; it never panics.
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
		lr := newLineReader(bytes.NewReader(in), max)
		var got [][]byte
		tooLong := false
		for range len(in) + 2 {
			line, err := lr.next()
			if errors.Is(err, errLineTooLong) {
				tooLong = true
				continue
			}
			if err != nil {
				break
			}
			if bytes.IndexByte(line, '\n') >= 0 || len(line) > max {
				t.Fatalf("line %q has a newline or is over %d bytes", line, max)
			}
			got = append(got, line)
		}
		if !tooLong {
			want := bytes.Split(in, []byte("\n"))
			if len(want) > 0 && len(want[len(want)-1]) == 0 {
				want = want[:len(want)-1]
			}
			if len(got) != len(want) {
				t.Fatalf("%d lines, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("line %d = %q, want %q", i, got[i], want[i])
				}
			}
		}
	})
}
