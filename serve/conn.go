package serve

import (
	"errors"
	"io"
	"math"
	"net/http"
	"sync/atomic"
	"time"
)

// What a connection may hold of the process.
//
// net/http bounds a request's headers (ReadHeaderTimeout) and an idle
// keep-alive connection (IdleTimeout); the command sets both. It leaves
// the body to the handler: read for as long as the client takes, and
// drained (net/http reads a little of it) after a refusal that did not read
// it, so a client that declares a body and sends none would hold the
// connection for good; http.Server.ReadTimeout would still make the
// refusals wait. So ServeHTTP bounds each request itself (bound): a body
// has a read deadline of ReadTimeout, lifted once it is read to its end
// (the SSE answers that follow run with none); a request answered without
// its body read has the deadline cut, so its answer goes out at once with
// Connection: close; every answer's last write has a write deadline
// (writing).
//
// Memory grows with the bytes that arrive (readAll), never with a declared
// Content-Length, and the body bytes held across every connection are
// bounded by MaxBodyMemory: past it a request gets 503 with Retry-After at
// once. Waiting for room would keep the partial bodies, the very memory
// the bound is for.

// Defaults of the connection bounds.
const (
	// DefaultReadTimeout is Config.ReadTimeout's default, and the headers'
	// bound the command gives the http.Server: as nginx's
	// client_header_timeout and client_body_timeout.
	DefaultReadTimeout = time.Minute
	// ConnIdleTimeout closes a keep-alive connection idle this long
	// between two requests (the http.Server's IdleTimeout). Longer than
	// the idle timeouts of HTTP clients (Go's 90 s), so that the client,
	// not the server, closes an idle connection: a server that closes
	// first races with the client's next POST, which is not retried.
	ConnIdleTimeout = 2 * time.Minute
	// BodyMemoryMessages is Config.MaxBodyMemory's default, in maximum
	// messages (Bridge.MaxMessageBytes).
	BodyMemoryMessages = 4
)

// DefaultBodyMemory is Config.MaxBodyMemory's default for a maximum
// message size: BodyMemoryMessages of them.
func DefaultBodyMemory(maxMessage int) int64 {
	if int64(maxMessage) > math.MaxInt64/BodyMemoryMessages {
		return math.MaxInt64
	}
	return BodyMemoryMessages * int64(maxMessage)
}

// reqBody stands in for the body of a request that declares one while its
// handler runs.
type reqBody struct {
	io.ReadCloser // the request's own body
	s             *Server
	r             *http.Request
	rc            *http.ResponseController
	done          bool  // read to its end
	held          int64 // bytes of s.bodies the body's buffer holds
}

// bound arms the bounds of one request; the handler's defer calls end on
// what it returns, nil for a request without a body.
func (s *Server) bound(w http.ResponseWriter, r *http.Request) *reqBody {
	if r.ContentLength == 0 { // no body: net/http gives it http.NoBody
		return nil
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.ReadTimeout))
	b := &reqBody{ReadCloser: r.Body, s: s, r: r, rc: rc}
	r.Body = b
	return b
}

// Read reads the body; at its end it lifts the read deadline: from there
// on net/http reads the connection only to see the client go away, maybe
// hours into an SSE answer, and a deadline there would cancel the request.
func (b *reqBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// end runs when the handler returns: it arms the answer's write deadline,
// gives back the body's memory and the request's own body, and cuts the
// read deadline of a body not read to its end, so that net/http closes the
// connection after the answer instead of waiting for the rest.
func (b *reqBody) end(w http.ResponseWriter) {
	writing(w)
	if b == nil {
		return
	}
	b.r.Body = b.ReadCloser
	b.s.bodies.release(b.held)
	b.held = 0
	if !b.done {
		_ = b.rc.SetReadDeadline(time.Now())
	}
}

// bodyMemory is the process's budget of request body bytes, across every
// connection.
type bodyMemory struct {
	max  int64
	used atomic.Int64
}

func (m *bodyMemory) reserve(n int64) bool {
	for {
		u := m.used.Load()
		if u+n > m.max {
			return false
		}
		if m.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (m *bodyMemory) release(n int64) {
	if n != 0 {
		m.used.Add(-n)
	}
}

var (
	errBodyMemory = errors.New("the request bodies in progress hold the proxy's body memory")
	errLonger     = errors.New("the body is longer than its Content-Length")
)

// firstBuffer is the first buffer of a body that declares more, or does
// not say: one that declares less is read in one buffer of its size.
const firstBuffer = 16 << 10

// readAll reads a body that declares n bytes (-1: not said, as chunked),
// at most limit, in a buffer that grows with the bytes that arrive: it
// doubles when full, to at most n (or limit), so that it is never more
// than twice what has arrived (or firstBuffer). Each growth is first
// taken from mem (nil: no budget) and added to *held, which the caller
// gives back; when mem has no room, readAll fails with errBodyMemory.
// Past limit, r (an http.MaxBytesReader) fails.
func readAll(r io.Reader, n int64, limit int, mem *bodyMemory, held *int64) ([]byte, error) {
	most := int64(limit) // the most the buffer may need
	if n >= 0 && n < most {
		most = n
	}
	var buf []byte
	var one [1]byte
	for {
		if len(buf) == cap(buf) && int64(cap(buf)) < most {
			size := min(max(2*int64(cap(buf)), firstBuffer), most)
			grow := size - int64(cap(buf))
			if mem != nil && !mem.reserve(grow) {
				return nil, errBodyMemory
			}
			*held += grow
			buf = append(make([]byte, 0, size), buf...)
		}
		// Full with all the body may hold, the buffer can only be followed
		// by the body's end (or r's error past limit): one byte tells.
		dst := one[:]
		if len(buf) < cap(buf) {
			dst = buf[len(buf):cap(buf)]
		}
		m, err := r.Read(dst)
		if len(buf) == cap(buf) && m > 0 {
			return nil, errLonger
		}
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
