package bridge

import (
	"bufio"
	"io"
)

// flusher writes newline-terminated frames and flushes when asked, so that a
// burst of frames costs one write system call.
type flusher struct {
	w *bufio.Writer
}

func newFlusher(w io.Writer) *flusher { return &flusher{w: bufio.NewWriterSize(w, 64<<10)} }

func (f *flusher) writeLine(frame []byte, flush bool) error {
	if _, err := f.w.Write(frame); err != nil {
		return err
	}
	if err := f.w.WriteByte('\n'); err != nil {
		return err
	}
	if flush {
		return f.w.Flush()
	}
	return nil
}

func (f *flusher) flush() error { return f.w.Flush() }
