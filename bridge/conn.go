package bridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// A Conn is the client side of a session: the messages the legacy client
// sends, and the frames the session sends back. The session core speaks
// only to a Conn, never to stdin and stdout: Stdio is one implementation,
// an HTTP front with one stream per request is another.
//
// Concurrency: Read is called by one goroutine (the session's reader), and
// Write and Flush by one other (the session's writer). Neither is called
// again once Serve has returned.
type Conn interface {
	// Read returns the client's next message: one JSON-RPC message, its
	// framing removed. It returns io.EOF at the end of input, after which
	// the session drains and ends. A *TooLargeError reports a message over
	// the size limit that was skipped: the session answers it and reads
	// on. Any other error ends the session.
	Read() (In, error)
	// Write sends one frame to the client. An Out with a nil Frame and
	// Final set tells that its request ended without an answer (the client
	// cancelled it, or the session is ending): a front that holds a stream
	// open for the request closes it. Write may keep the frame.
	Write(Out) error
	// Flush pushes out what Write buffered. The session calls it whenever
	// it has nothing more to write for now, so a burst costs one write.
	Flush() error
}

// In is one message from the client.
type In struct {
	// Frame is the message's bytes. The session keeps them.
	Frame []byte
	// Stream is the front's handle for where this message came from; the
	// session gives it back, untouched, on every frame that belongs to
	// the request this message carries. Stdio leaves it nil.
	Stream any
}

// TooLargeError reports a skipped message over Limit bytes.
type TooLargeError struct {
	Limit  int
	Stream any // the In.Stream the answer goes to
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("message larger than %d bytes", e.Limit)
}

// Stdio is the NDJSON Conn: one message per line in, one frame per line
// out. A pipe is read through a description of its own (see ownPipe).
type Stdio struct {
	lines *routing.LineReader
	max   int
	out   *bufio.Writer
	own   *os.File // the pipe's description of our own, if opened
}

// NewStdio reads lines of at most maxBytes from in and writes frames to out.
func NewStdio(in io.Reader, out io.Writer, maxBytes int) *Stdio {
	own := ownPipe(in)
	if own != nil {
		in = own
	}
	return &Stdio{lines: routing.NewLineReader(in, 64<<10, maxBytes, 0), max: maxBytes, out: bufio.NewWriterSize(out, 64<<10), own: own}
}

// ownPipe opens a pipe anew (Linux), non-blocking, so that its reads park
// in the runtime's poller: a blocking read(2) holds a thread that hands
// every line over to another, a wake-up on every call's path (BENCHMARKS.md
// has the figures). The host's description, which it may share, keeps its
// mode, so nothing is left behind for whoever shares the pipe. nil for
// anything else.
func ownPipe(in io.Reader) *os.File {
	f, ok := in.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var fd uintptr
	_ = rc.Control(func(d uintptr) { fd = d })
	own, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", fd), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	return own
}

// Close releases what NewStdio opened; a Read still waiting ends.
func (c *Stdio) Close() error {
	if c.own == nil {
		return nil
	}
	return c.own.Close()
}

// Read returns the next line, in a slice of its own: the frame outlives
// the next read.
func (c *Stdio) Read() (In, error) {
	line, own, err := c.lines.Next()
	if errors.Is(err, routing.ErrTooLarge) {
		return In{}, &TooLargeError{Limit: c.max}
	}
	if own == nil {
		line = link.Clone(line)
	}
	return In{Frame: line}, err
}

// Write writes one frame (made OneLine) as a line; the end of a request
// without an answer writes nothing.
func (c *Stdio) Write(o Out) error {
	if o.Frame == nil {
		return nil
	}
	if _, err := c.out.Write(OneLine(o.Frame)); err != nil {
		return err
	}
	return c.out.WriteByte('\n')
}

func (c *Stdio) Flush() error { return c.out.Flush() }

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
