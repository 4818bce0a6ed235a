package trace

import "os"

// preallocChunk is how far ahead of the trace file's end its space is
// reserved.
const preallocChunk = 4 << 20

// preallocFile is a trace file whose disk space is reserved a chunk ahead
// of what is written (fallocate, the file's size left as written). An
// append that extends a file takes the file system's allocation work per
// page; into space already reserved it is a copy. On ext4 that halves the
// kernel's CPU per byte traced (BENCHMARKS.md). Close gives back what was
// reserved and not written. Where the file system cannot reserve space, the
// file is written as any other.
type preallocFile struct {
	f      *os.File
	off    int64 // bytes written
	ahead  int64 // space reserved up to here
	failed bool  // the file system refused: no more reservations
}

func (p *preallocFile) Write(b []byte) (int, error) {
	if end := p.off + int64(len(b)); end > p.ahead && !p.failed {
		want := end + preallocChunk
		if err := preallocate(p.f, p.ahead, want-p.ahead); err != nil {
			p.failed = true
		} else {
			p.ahead = want
		}
	}
	n, err := p.f.Write(b)
	p.off += int64(n)
	return n, err
}

// Close frees the space reserved past the end, then closes the file.
func (p *preallocFile) Close() error {
	var err error
	if p.ahead > p.off {
		err = p.f.Truncate(p.off) // to its own size: only the reservation goes
	}
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	return err
}
