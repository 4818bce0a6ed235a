package routing

import (
	"fmt"
	"io"
	"sync/atomic"
)

// gather collects a message of unknown length (a long SSE line, a JSON body
// without a Content-Length) into one heap buffer of its size, with BodyRoom
// spare bytes in front, while holding about one copy of it in memory at any
// time.
//
// The first partSize bytes go into a part allocated outside the Go heap
// (allocPart: an anonymous mapping where the system has one; the last one
// freed is kept for the next message). A message that outgrows it goes on
// in a heap buffer as large as the last such message (lastLong): results of
// one server tend to come in the same sizes, and the buffer then reuses the
// memory the last one left, which the collection collectGarbage runs at its
// start has freed; nothing else is allocated on the heap in between, so it
// fits there whole. A small message after a large one does not allocate
// that size (Go zeroes a large buffer as it allocates it: a 40 KiB message
// after a 16 MiB one took 1.5–3.8 ms here in a buffer of the last size, and
// takes about 20 µs so).
// What outgrows that buffer goes into more parts. At the end, unless the
// heap buffer holds it all, the message is copied into one new buffer, and
// each part is handed back to the system as soon as it is copied.
// So the largest amount held at once is the message and a part or two,
// where heap parts (live until the copy ends) or a buffer grown by doubling
// (the old buffer and the new) held two to three times the message.
type gather struct {
	buf   []byte // nil, or BodyRoom spare bytes and then the message's first bytes
	want  int    // bufCap of the last message: buf's capacity
	parts []part // the first part when buf is nil, else what did not fit in buf
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

// begin starts a message with its first bytes, head, after a collection
// when the last large messages are garbage by now (collectGarbage). A
// gather is empty when it begins: finish and reset leave it so.
func (g *gather) begin(head []byte) {
	collectGarbage()
	g.want = bufCap(int(lastLong.Load()))
	g.add(head)
}

// bufCap is the capacity of a buffer for a message of about n bytes after
// BodyRoom spare bytes: an eighth more, as results of one size differ by a few
// bytes (an id, a count) and one byte too many would cost a part and a
// second buffer; rounded up to a multiple of partSize (64 KiB for a
// smaller one), so that messages of about one size get buffers of one
// size, and each takes the memory the last one freed whole, rather than
// fresh pages beside it. With no last message there is only the room: the
// first message of a process stays in parts.
func bufCap(n int) int {
	if n == 0 {
		return BodyRoom
	}
	c := BodyRoom + n + n/8
	g := partSize
	if c < partSize {
		g = 64 << 10
	}
	return (c + g - 1) / g * g
}

// spare returns the free space where the next bytes go: the first part;
// once that is full, a heap buffer of want, when want holds more, with the
// part copied in; then more parts.
func (g *gather) spare() []byte {
	if g.buf == nil && len(g.parts) == 1 && len(g.parts[0].b) == partSize && g.want > BodyRoom+partSize {
		g.buf = append(make([]byte, BodyRoom, g.want), g.parts[0].b...)
		putPart(g.parts[0])
		g.parts[0] = part{}
		g.parts = g.parts[:0]
	}
	if len(g.parts) == 0 && len(g.buf) < cap(g.buf) {
		return g.buf[len(g.buf):cap(g.buf)]
	}
	if k := len(g.parts); k > 0 && len(g.parts[k-1].b) < cap(g.parts[k-1].b) {
		p := g.parts[k-1].b
		return p[len(p):cap(p)]
	}
	p := takePart()
	g.parts = append(g.parts, p)
	return p.b[:cap(p.b)]
}

// kept is the part putPart kept for the next message: a small message then
// costs no system call and no fresh pages.
var kept atomic.Pointer[part]

// takePart returns the kept part, or a new one.
func takePart() part {
	if p := kept.Swap(nil); p != nil {
		return *p
	}
	b, mapped := allocPart(partSize)
	return part{b[:0], mapped}
}

// putPart keeps p for the next message when no part is kept, and hands it
// back otherwise.
func putPart(p part) {
	p.b = p.b[:0]
	if !kept.CompareAndSwap(nil, &p) {
		freePart(p)
	}
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

// readFrom reads r into the message until EOF. More than max bytes is
// ErrTooLarge.
func (g *gather) readFrom(r io.Reader, max int) error {
	for {
		m, err := r.Read(g.spare())
		g.grow(m)
		if g.n > max {
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

// finish returns the message after BodyRoom spare bytes, in one heap
// buffer whose length is BodyRoom plus the message's: buf when it held it
// all, else a new one of bufCap. The parts go back as they are copied (putPart). The
// gather is empty after.
func (g *gather) finish() []byte {
	lastLong.Store(int64(g.n))
	msg := g.buf
	if msg == nil {
		msg = make([]byte, BodyRoom, bufCap(g.n))
	} else if len(g.parts) > 0 {
		msg = append(make([]byte, 0, bufCap(g.n)), g.buf...)
	}
	for i, p := range g.parts {
		msg = append(msg, p.b...)
		putPart(p)
		g.parts[i] = part{}
	}
	g.parts, g.buf, g.n = g.parts[:0], nil, 0
	return msg
}

// tooLarge is the error for a message over max bytes.
func tooLarge(max int) error { return fmt.Errorf("%w (%d bytes)", ErrTooLarge, max) }

// reset drops what was gathered.
func (g *gather) reset() {
	for i, p := range g.parts {
		putPart(p)
		g.parts[i] = part{}
	}
	g.parts, g.buf, g.n = g.parts[:0], nil, 0
}
