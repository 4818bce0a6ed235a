package bridge

import (
	"bufio"
	"bytes"
	"io"
	"runtime"
	"sync/atomic"
)

// flusher writes newline-terminated frames and flushes when asked, so that a
// burst of frames costs one write system call.
type flusher struct {
	w *bufio.Writer
}

func newFlusher(w io.Writer) *flusher { return &flusher{w: bufio.NewWriterSize(w, 64<<10)} }

// writeLine writes one frame and its newline. A raw CR or LF in a frame can
// only be whitespace between JSON tokens (a pretty-printed upstream body, or
// multi-line SSE data): it becomes a space, so one frame is one line.
func (f *flusher) writeLine(frame []byte, flush bool) error {
	if bytes.IndexByte(frame, '\n') >= 0 || bytes.IndexByte(frame, '\r') >= 0 {
		for i, c := range frame {
			if c == '\n' || c == '\r' {
				frame[i] = ' '
			}
		}
	}
	if _, err := f.w.Write(frame); err != nil {
		return err
	}
	if err := f.w.WriteByte('\n'); err != nil {
		return err
	}
	if len(frame) >= collectAfter {
		collectSoon()
	}
	if flush {
		return f.w.Flush()
	}
	return nil
}

// collectAfter is the frame size from which a written frame is followed by
// a garbage collection. Such a frame was read into a buffer of its own size
// (two, while an SSE event's long line was joined), and that buffer is
// garbage once written. Left to GOGC, the next collection comes only when
// the heap has doubled from the live set measured while the buffer was
// live: the next large result is then read into fresh memory while the
// last one's still counts, and a 16 MiB result peaked at twice the RSS.
// A collection of the proxy's small live heap costs about a millisecond of
// CPU, against tens of milliseconds for moving such a frame.
const collectAfter = 4 << 20

// collecting is set while a collection started by collectSoon runs.
var collecting atomic.Bool

// collectSoon starts a garbage collection in the background, unless one
// it started is still running.
func collectSoon() {
	if collecting.CompareAndSwap(false, true) {
		go func() {
			runtime.GC()
			collecting.Store(false)
		}()
	}
}

func (f *flusher) flush() error { return f.w.Flush() }
