package routing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrTooLarge is returned when one message exceeds the configured limit.
var ErrTooLarge = errors.New("upstream message exceeds the size limit")

// SSEReader reads the data of Server-Sent Events (text/event-stream) one
// event at a time. Comments, "id:", "retry:" and "event:" fields are ignored:
// 2026-07-28 streams are not resumable and every event carries one JSON-RPC
// message in its data (multi-line data is joined with "\n").
type SSEReader struct {
	r    *bufio.Reader
	max  int
	data []byte
	line []byte
	saw  bool // the current event has at least one data line
}

// NewSSEReader reads events from r; max bounds one event's data (0 means
// unlimited).
func NewSSEReader(r io.Reader, max int) *SSEReader {
	return &SSEReader{r: bufio.NewReaderSize(r, 32<<10), max: max}
}

// Next returns the data of the next event that has any. The slice is valid
// until the next call. At the end of the stream it returns io.EOF; a stream
// ended in the middle of an event delivers what it had.
func (s *SSEReader) Next() ([]byte, error) {
	s.data = s.data[:0]
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
			if s.saw {
				return s.data, nil
			}
			return nil, io.EOF
		}
		if len(line) == 0 {
			if s.saw {
				return s.data, nil
			}
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
	if string(name) != "data" {
		return nil
	}
	if s.saw {
		s.data = append(s.data, '\n')
	}
	s.saw = true
	if s.max > 0 && len(s.data)+len(value) > s.max {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, s.max)
	}
	s.data = append(s.data, value...)
	return nil
}

// readLine returns one line without its terminator (LF, CRLF or CR-less LF).
// Lines of any length are read; the line is bounded by the event limit.
func (s *SSEReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.line = append(s.line, chunk...)
		if s.max > 0 && len(s.line) > s.max+16 {
			return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, s.max)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return s.line, err
		}
		line := s.line[:len(s.line)-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		return line, nil
	}
}
