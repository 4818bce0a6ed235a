package routing

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"
)

// ErrTooLarge is returned when one message exceeds the configured limit.
var ErrTooLarge = errors.New("upstream message exceeds the size limit")

// SSEReader reads the data of Server-Sent Events (text/event-stream) one
// event at a time. Every event carries one JSON-RPC message in its data
// (multi-line data is joined with "\n"); comments and "event:" fields are
// ignored. "id:" and "retry:" are kept for resumption, which 2025 streams
// offer (LastEventID, Retry); 2026-07-28 streams are not resumable.
type SSEReader struct {
	r     *bufio.Reader
	max   int
	data  []byte
	base  []byte // a line longer than the reader's buffer, after BodyRoom spare bytes
	line  gather // the long line being read
	long  bool   // the line being handled is in base
	room  []byte // data's whole buffer, when data is a long line handed over whole
	saw   bool   // the current event has at least one data line
	id    string // the committed last event id
	next  string // the id field of the event being read
	retry time.Duration
	event string // the type of the event Next last returned
	typ   string // the event field of the event being read
}

// LastEventID is the last event id the stream set (the SSE "id:" field),
// or "" when it set none: what a GET with Last-Event-ID resumes from.
func (s *SSEReader) LastEventID() string { return s.id }

// Retry is the reconnection delay the stream asked for (the SSE "retry:"
// field), or 0 when it asked for none.
func (s *SSEReader) Retry() time.Duration { return s.retry }

// Event is the type of the event Next last returned (its "event:" field),
// "" when it named none (a "message" event).
func (s *SSEReader) Event() string { return s.event }

// NewSSEReader reads events from r; max bounds one event's data (0 means
// unlimited).
func NewSSEReader(r io.Reader, max int) *SSEReader { return newSSEReaderSize(r, max, 32<<10) }

// newSSEReaderSize is NewSSEReader with a given read buffer; tests make it
// tiny so that every line takes the long-line path.
func newSSEReaderSize(r io.Reader, max, size int) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, size), max: max}
}

// Next returns the data of the next event that has any. The slice is valid
// until the next call. At the end of the stream it returns io.EOF; a stream
// ended in the middle of an event delivers what it had.
func (s *SSEReader) Next() ([]byte, error) {
	s.data = s.data[:0]
	s.room = nil
	s.saw = false
	for {
		line, err := s.readLine()
		if err != nil {
			if err != io.EOF {
				return nil, err
			}
			// The stream ended: an event without its closing blank line
			// is still delivered; the caller checks that it is complete.
			if len(line) > 0 {
				if ferr := s.field(line); ferr != nil {
					return nil, ferr
				}
			}
			if s.saw && len(s.data) > 0 {
				s.event, s.typ = s.typ, ""
				return s.data, nil // its id is not committed: resume before it
			}
			return nil, io.EOF
		}
		if len(line) == 0 {
			// The end of an event: its id counts from here, even for an
			// event without data (a priming event).
			s.id = s.next
			if s.saw && len(s.data) > 0 {
				s.event, s.typ = s.typ, ""
				return s.data, nil
			}
			s.saw, s.typ = false, "" // an event with empty data is not dispatched (the SSE spec)
			continue
		}
		if err := s.field(line); err != nil {
			return nil, err
		}
	}
}

func (s *SSEReader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment / keep-alive
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "data":
	case "id":
		// An id with NUL is ignored; an empty id resets it (the SSE spec).
		if bytes.IndexByte(value, 0) < 0 {
			s.next = string(value)
		}
		return nil
	case "event":
		s.typ = string(value)
		return nil
	case "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
			s.retry = time.Duration(ms) * time.Millisecond
		}
		return nil
	default:
		return nil
	}
	if s.saw {
		s.data = append(s.data, '\n')
	}
	s.saw = true
	if s.max > 0 && len(s.data)+len(value) > s.max {
		return tooLarge(s.max)
	}
	if s.long && len(s.data) == 0 && len(value) > cap(s.data) {
		// A long line, copied out of the reader already: it becomes the
		// data rather than being copied again, and its buffer, with the
		// room in front, is what Room hands out.
		s.data = value
		s.room = s.base[:cap(s.base)-cap(value)+len(value)]
		s.base = nil
		return nil
	}
	s.room = nil // data is about to be a copy
	s.data = append(s.data, value...)
	return nil
}

// takeRoom returns the buffer of the data Next last returned, with BodyRoom
// spare bytes in front, when that data was one long line; nil otherwise.
// The reader gives the buffer up: the data stays valid after later calls.
func (s *SSEReader) takeRoom() []byte {
	r := s.room
	if r != nil {
		s.room, s.data = nil, nil
	}
	return r
}

// readLine returns one line without its terminator (LF, CRLF or CR-less LF).
// Lines of any length are read; the line is bounded by the event limit. A
// line that fits in the reader's buffer is returned in place, without a
// copy; it is valid until the next read. A longer line is gathered
// (gather) into one heap buffer with BodyRoom spare bytes in front, while
// holding about one copy of it: a buffer grown by doubling held up to three
// times the line while it was copied (the old buffer and a new one of twice
// its size), and heap parts joined at the end twice.
func (s *SSEReader) readLine() ([]byte, error) {
	chunk, err := s.r.ReadSlice('\n')
	s.long = err == bufio.ErrBufferFull
	if !s.long {
		if s.max > 0 && len(chunk) > s.max+16 {
			return nil, tooLarge(s.max)
		}
		if err != nil {
			return chunk, err
		}
		return trimEOL(chunk), nil
	}
	s.line.begin(chunk)
	for {
		chunk, err = s.r.ReadSlice('\n')
		s.line.add(chunk)
		if s.max > 0 && s.line.n > s.max+16 {
			s.line.reset()
			return nil, tooLarge(s.max)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		s.base = s.line.finish()
		countLarge(len(s.base) - BodyRoom)
		if err != nil {
			return s.base[BodyRoom:], err
		}
		return trimEOL(s.base[BodyRoom:]), nil
	}
}

// gathered counts the bytes of the large lines (largeLine or longer)
// gathered, and of the JSON bodies of that size read, since the last
// collection collectGarbage started: garbage by the time the next long line
// or large body comes, unless results overlap.
var gathered atomic.Int64

// countLarge counts a message of n bytes in gathered when it is a large
// one (largeLine or longer).
func countLarge(n int) {
	if n >= largeLine {
		gathered.Add(int64(n))
	}
}

const (
	// largeLine is the length from which a line counts in gathered. The
	// garbage of shorter ones is left to GOGC: the heap goal it sets for
	// them is small, and a collection for them would cost more than it
	// saves (a 1 MiB event's peak RSS is the same with it).
	largeLine = 2 << 20
	// garbageMin is how many bytes of large lines must have been
	// gathered since the last collection for the next long line to start
	// with one: every time after a line of 4 MiB or more.
	garbageMin = 4 << 20
)

// collecting is set while collectGarbage runs a collection.
var collecting atomic.Bool

// collectGarbage runs a garbage collection when garbageMin bytes or more
// of large lines and bodies were gathered since the last one, unless one is
// running. It is called when a line turns out longer than the read buffer,
// and before a JSON body of largeLine bytes or more is read: most likely a
// large result. (A 16 MiB JSON result peaked at 47 MiB without it, and at
// 63 MiB when the frame trace's work on it shifted the collections; with
// it, at 31 MiB.) The last large result's buffers are garbage by
// then, but they still count in the heap: left to GOGC, the next
// collection comes only once the heap has doubled from the live set
// measured while those buffers were live, and this line would be gathered
// in fresh pages on top of them (a 16 MiB event peaked at 80 MiB of RSS).
// Collected here, their memory is reused at once.
// (Collecting right after a result is written instead gives the runtime
// time to return the freed pages to the system, and the next result pays
// a page fault for each page again: 30 ms per 16 MiB here.) The collection
// costs about a millisecond of CPU: the proxy's live heap is small. It is
// waited for: run in the background, on a loaded machine it ended after
// the line was gathered, and a 16 MiB event peaked at 67 MiB.
func collectGarbage() {
	if gathered.Load() < garbageMin || !collecting.CompareAndSwap(false, true) {
		return
	}
	gathered.Store(0)
	runtime.GC()
	collecting.Store(false)
}

func trimEOL(line []byte) []byte {
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}
