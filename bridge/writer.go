package bridge

import (
	"bufio"
	"bytes"
	"io"
)

// flusher writes newline-terminated frames and flushes when asked, so that a
// burst of frames costs one write system call.
type flusher struct {
	w *bufio.Writer
}

func newFlusher(w io.Writer) *flusher { return &flusher{w: bufio.NewWriterSize(w, 64<<10)} }

// writeLine writes one frame (made OneLine) and its newline.
func (f *flusher) writeLine(frame []byte, flush bool) error {
	if _, err := f.w.Write(OneLine(frame)); err != nil {
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

// OneLine makes a frame one line, in place, and returns it: a raw CR or LF
// in a frame can only be whitespace between JSON tokens (a pretty-printed
// upstream body, or multi-line SSE data), and becomes a space. A front
// calls it on the frames Conn.Write hands it, which it owns.
func OneLine(frame []byte) []byte {
	if bytes.IndexByte(frame, '\n') >= 0 || bytes.IndexByte(frame, '\r') >= 0 {
		for i, c := range frame {
			if c == '\n' || c == '\r' {
				frame[i] = ' '
			}
		}
	}
	return frame
}
