package routing

import (
	"bytes"
	"io"
	"strconv"
	"sync/atomic"
	"time"
)

// SSEReader reads the data of Server-Sent Events (text/event-stream) one
// event at a time. Every event carries one JSON-RPC message in its data
// (multi-line data is joined with "\n"); comments are ignored. "id:" and
// "retry:" are kept for resumption, which 2025 streams offer; 2026-07-28
// streams are not resumable. "event:" names the 2024-11-05 endpoint event.
type SSEReader struct {
	lines *LineReader
	max   int
	data  []byte
	own   []byte        // the buffer of a line longer than the read buffer (LineReader.Next)
	room  []byte        // data's whole buffer, when data is a long line handed over whole
	saw   bool          // the current event has at least one data line
	id    string        // the last event id the stream set ("id:"), what a GET with Last-Event-ID resumes from
	next  string        // the id field of the event being read
	retry time.Duration // the reconnection delay the stream asked for ("retry:"), 0 for none
	event string        // the type ("event:") of the event Next last returned, "" for "message"
	typ   string        // the event field of the event being read
}

// newSSEReaderSize reads events from r through a read buffer of size
// bytes (tests make it tiny so that every line takes the long-line path);
// max bounds one event's data (0: unlimited), and last, unless nil, is the
// size of the last large message of the reader's owner (chunks.last).
func newSSEReaderSize(r io.Reader, max, size int, last *atomic.Int64) *SSEReader {
	lineMax := 0
	if max > 0 {
		lineMax = max + len("data: \r") // the data limit is checked on the value (field)
	}
	lines := NewLineReader(r, size, lineMax, BodyRoom)
	if last != nil {
		lines.last = last
	}
	return &SSEReader{lines: lines, max: max}
}

// Next returns the data of the next event that has any. The slice is valid
// until the next call. At the end of the stream it returns io.EOF; a stream
// ended in the middle of an event delivers what it had.
func (s *SSEReader) Next() ([]byte, error) {
	s.data = s.data[:0]
	s.room = nil
	s.saw = false
	for {
		line, own, err := s.lines.Next()
		if err == io.EOF {
			// The stream ended: an event without its closing blank line
			// is still delivered; the caller checks that it is complete.
			if s.saw && len(s.data) > 0 {
				s.event, s.typ = s.typ, ""
				return s.data, nil // its id is not committed: resume before it
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		line, s.own = trimCR(line), own
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
	case "id":
		// An id with NUL is ignored; an empty id resets it (the SSE spec).
		if bytes.IndexByte(value, 0) < 0 {
			s.next = string(value)
		}
	case "event":
		s.typ = string(value)
	case "retry":
		if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
			s.retry = time.Duration(ms) * time.Millisecond
		}
	}
	if string(name) != "data" {
		return nil
	}
	if s.saw {
		s.data = append(s.data, '\n')
	}
	s.saw = true
	if s.max > 0 && len(s.data)+len(value) > s.max {
		return tooLarge(s.max)
	}
	if s.own != nil && len(s.data) == 0 && len(value) > cap(s.data) {
		// A long line, in a buffer of its own already: it becomes the
		// data rather than being copied again, and its buffer, with the
		// room in front, is what Room hands out.
		s.data = value
		s.room = s.own[:cap(s.own)-cap(value)+len(value)]
		s.own = nil
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

// trimCR drops the "\r" of a line that ended with CRLF.
func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}
