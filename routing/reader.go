package routing

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// The one reader for messages of unknown length: a stdin line (NDJSON), an
// SSE line longer than the stream's read buffer, a JSON body without a
// Content-Length. Such a message is read once, into heap chunks, and
// joined once at the end into a buffer of its own size (with room in front
// when the caller asks). The limit is checked as the bytes arrive, so
// memory grows with what arrives and stops at the limit, never with what a
// peer declares.
//
// Joined, a message is held twice for a moment, and a collection that
// starts then sets a heap goal that lets two more pile up. Results of one
// server tend to come in one size, so a message that reaches largeMin goes
// on in one buffer of the size of the last large message its owner (a
// Client, or the LineReader) read, and a sixty-fourth more: then it is
// held once, with nothing to join. The owner keeps only that size: no
// package state, no pool.
//
// Each new chunk is as large as the message so far (at least minChunk, or
// the piece about to be copied in): one allocation each time the message
// doubles, and the heap grows in steps as large as what was read, so that
// a collection tends to start while a message is read rather than while
// it is held twice.
const (
	minChunk = 512
	largeMin = 1 << 20 // a message from this size on takes the last large one's size
)

// chunks holds one message as it arrives.
type chunks struct {
	bufs   [][]byte      // the first one starts with room spare bytes
	n      int           // bytes of message
	room   int           // spare bytes in front of the first chunk
	first  int           // the first chunk's size, when the caller knows the message's
	last   *atomic.Int64 // the size of the owner's last large message; nil: none kept
	hinted bool          // last was looked at
}

// spare returns the free space at the end of the last chunk, after
// starting a new chunk if that one is full; want is how many bytes are
// about to come, when that is known.
func (c *chunks) spare(want int) []byte {
	if k := len(c.bufs); k > 0 {
		if b := c.bufs[k-1]; len(b) < cap(b) {
			return b[len(b):cap(b)]
		}
	}
	if c.last != nil && !c.hinted && c.n >= largeMin {
		c.hinted = true
		// At most four times what has come: memory follows the bytes
		// that arrive, whatever size an earlier message had.
		if last := int(c.last.Load()); last > c.n {
			return c.regather(min(last, 4*c.n))
		}
	}
	size, room := max(c.n, want, minChunk), 0
	if len(c.bufs) == 0 {
		room = c.room
		if c.first > 0 {
			size = c.first
		}
	}
	b := make([]byte, room, room+size)
	c.bufs = append(c.bufs, b)
	return b[room:cap(b)]
}

// regather moves the message so far into one chunk for a message of about
// last bytes, and returns its free space.
func (c *chunks) regather(last int) []byte {
	b := c.copyOut(c.room + last + last/64)
	clear(c.bufs) // the old chunks are garbage now
	c.bufs = append(c.bufs[:0], b)
	return b[len(b):cap(b)]
}

// copyOut copies the message into one new buffer of the given capacity,
// after the room.
func (c *chunks) copyOut(capacity int) []byte {
	b := make([]byte, c.room, capacity)
	b = append(b, c.bufs[0][c.room:]...)
	for _, p := range c.bufs[1:] {
		b = append(b, p...)
	}
	return b
}

// grow records that the first n bytes of the last spare are filled.
func (c *chunks) grow(n int) {
	k := len(c.bufs) - 1
	c.bufs[k] = c.bufs[k][:len(c.bufs[k])+n]
	c.n += n
}

// add copies p in.
func (c *chunks) add(p []byte) {
	for len(p) > 0 {
		m := copy(c.spare(len(p)), p)
		c.grow(m)
		p = p[m:]
	}
}

// readFrom reads r to its end. More than max bytes is ErrTooLarge.
func (c *chunks) readFrom(r io.Reader, max int) error {
	for {
		m, err := r.Read(c.spare(0))
		c.grow(m)
		if c.n > max {
			return tooLarge(max)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// join returns the room and then the message: the first chunk itself when
// it holds the whole message, else one new buffer of exactly that length.
func (c *chunks) join() []byte {
	if c.last != nil && c.n >= largeMin {
		c.last.Store(int64(c.n))
	}
	if len(c.bufs) == 1 {
		return c.bufs[0]
	}
	return c.copyOut(c.room + c.n)
}

// ErrTooLarge is returned when one message exceeds the configured limit.
var ErrTooLarge = errors.New("upstream message exceeds the size limit")

// tooLarge is the error for a message over max bytes.
func tooLarge(max int) error { return fmt.Errorf("%w (%d bytes)", ErrTooLarge, max) }

// LineReader reads lines of any length up to a limit: the proxy's stdin
// (one JSON-RPC message a line) and the lines of an SSE stream.
type LineReader struct {
	r    *bufio.Reader
	max  int           // the longest line, without its "\n"; 0: no limit
	room int           // spare bytes in front of a line longer than the read buffer
	skip bool          // the rest of a line over max is still unread
	last *atomic.Int64 // the size of the last large line (chunks.last)
}

// NewLineReader reads r through a buffer of size bytes. A line over max
// bytes (0: no limit) is ErrTooLarge; a line longer than the buffer comes in
// a buffer of its own with room spare bytes in front of it.
func NewLineReader(r io.Reader, size, max, room int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, size), max: max, room: room, last: new(atomic.Int64)}
}

// Next returns the next line without its "\n" (a "\r" before it stays). A
// line that fits in the read buffer is returned in place, valid until the
// next call, and own is nil. A longer one is gathered (chunks) and returned
// in own, a buffer of its own: room spare bytes, then the line, which ends
// own but for the "\n". At the end of the input it returns the last line
// if it has no "\n", then io.EOF. A line over the limit is ErrTooLarge, and
// the next call starts after it.
func (l *LineReader) Next() (line, own []byte, err error) {
	for l.skip {
		_, err = l.r.ReadSlice('\n')
		l.skip = err == bufio.ErrBufferFull
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return nil, nil, err
		}
	}
	chunk, err := l.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return l.long(chunk)
	case err == nil:
		line = chunk[:len(chunk)-1]
	case err == io.EOF && len(chunk) > 0:
		line = chunk
	default:
		return nil, nil, err
	}
	if l.max > 0 && len(line) > l.max {
		return nil, nil, tooLarge(l.max)
	}
	return line, nil, nil
}

// long gathers a line longer than the read buffer; chunk is its start.
func (l *LineReader) long(chunk []byte) (line, own []byte, err error) {
	c := chunks{room: l.room, last: l.last}
	err = bufio.ErrBufferFull
	for {
		n := c.n + len(chunk)
		if err == nil {
			n-- // the "\n"
		}
		if l.max > 0 && n > l.max {
			l.skip = err == bufio.ErrBufferFull
			return nil, nil, tooLarge(l.max)
		}
		c.add(chunk)
		if err != bufio.ErrBufferFull {
			break
		}
		chunk, err = l.r.ReadSlice('\n')
	}
	if err != nil && err != io.EOF {
		return nil, nil, err
	}
	own = c.join()
	line = own[l.room:]
	if err == nil {
		line = line[:len(line)-1]
	}
	return line, own, nil
}
