package routing

import (
	"io"
	"sync/atomic"
)

// gather collects a message of unknown length (a long SSE line, a JSON body
// without a Content-Length) into one heap buffer of its size, with room
// spare bytes in front, while holding about one copy of it in memory at any
// time.
//
// It starts in a heap buffer as large as the last such message (lastLong):
// results of one server tend to come in the same sizes, and the buffer then
// reuses the memory the last one left, which the collection collectGarbage
// runs at its start has freed; the message is read once, with no second
// copy. What does not fit goes into parts of partSize allocated outside the
// Go heap (allocPart: anonymous mappings where the system has them), and at
// the end the heap buffer and the parts are copied into one new buffer,
// each part handed back to the system as soon as it is copied.
// So the largest amount held at once is the message and one part, where
// heap parts (live until the copy ends) or a buffer grown by doubling (the
// old buffer and the new) held two to three times the message.
type gather struct {
	buf   []byte // room spare bytes, then the first bytes gathered
	room  int
	parts []part // what did not fit in buf
	n     int    // bytes gathered
}

// part is one buffer of overflow; mapped says it came from allocPart's
// mapping rather than the heap, and must be handed back with freePart.
type part struct {
	b      []byte
	mapped bool
}

// partSize is the size of each overflow part.
const partSize = 1 << 20

// lastLong is the length of the last message gathered: the capacity the
// next one starts with.
var lastLong atomic.Int64

// start begins a message with room spare bytes in front of it, in a
// buffer of bufCap for the last message's length.
func (g *gather) start(room int) {
	g.reset()
	g.room = room
	g.buf = make([]byte, room, bufCap(room, int(lastLong.Load())))
}

// bufCap is the capacity of a buffer for a message of about n bytes after
// room spare bytes: an eighth more, as results of one size differ by a few
// bytes (an id, a count) and one byte too many would cost a part and a
// second buffer; rounded up to a multiple of partSize (64 KiB for a
// smaller one), so that messages of about one size get buffers of one
// size, and each takes the memory the last one freed whole, rather than
// fresh pages beside it. With no last message there is only the room: the
// first message of a process goes into parts.
func bufCap(room, n int) int {
	if n == 0 {
		return room
	}
	c := room + n + n/8
	g := partSize
	if c < partSize {
		g = 64 << 10
	}
	return (c + g - 1) / g * g
}

// spare returns the free space where the next bytes go, making a new part
// when the last buffer is full.
func (g *gather) spare() []byte {
	if len(g.parts) == 0 && len(g.buf) < cap(g.buf) {
		return g.buf[len(g.buf):cap(g.buf)]
	}
	if k := len(g.parts); k > 0 && len(g.parts[k-1].b) < cap(g.parts[k-1].b) {
		p := g.parts[k-1].b
		return p[len(p):cap(p)]
	}
	b, mapped := allocPart(partSize)
	g.parts = append(g.parts, part{b[:0], mapped})
	return b
}

// grow records that the first n bytes of the last spare are filled.
func (g *gather) grow(n int) {
	g.n += n
	if k := len(g.parts); k > 0 {
		g.parts[k-1].b = g.parts[k-1].b[:len(g.parts[k-1].b)+n]
		return
	}
	g.buf = g.buf[:len(g.buf)+n]
}

// add copies chunk in.
func (g *gather) add(chunk []byte) {
	for len(chunk) > 0 {
		c := copy(g.spare(), chunk)
		g.grow(c)
		chunk = chunk[c:]
	}
}

// readFrom reads r into the message until EOF, or until more than max bytes
// are in (max 0: no bound; the caller checks g.n against it).
func (g *gather) readFrom(r io.Reader, max int) error {
	for {
		m, err := r.Read(g.spare())
		g.grow(m)
		if max > 0 && g.n > max {
			return nil
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// finish returns the message after room spare bytes, in one heap buffer
// whose length is room plus the message's: the start buffer when it held it
// all, else a new one of bufCap. The parts go back as they are copied. The
// gather is empty after.
func (g *gather) finish() []byte {
	lastLong.Store(int64(g.n))
	if len(g.parts) == 0 {
		b := g.buf
		g.buf = nil
		g.n = 0
		return b
	}
	msg := make([]byte, g.room, bufCap(g.room, g.n))
	msg = append(msg, g.buf[g.room:]...)
	g.buf = nil
	for i, p := range g.parts {
		msg = append(msg, p.b...)
		freePart(p)
		g.parts[i] = part{}
	}
	g.parts, g.n = g.parts[:0], 0
	return msg
}

// reset drops what was gathered.
func (g *gather) reset() {
	for i, p := range g.parts {
		freePart(p)
		g.parts[i] = part{}
	}
	g.parts, g.buf, g.n = g.parts[:0], nil, 0
}
