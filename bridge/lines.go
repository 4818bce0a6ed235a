package bridge

import (
	"bufio"
	"errors"
	"io"
)

// errLineTooLong reports a stdin line over the size limit; the rest of the
// line has been discarded and reading can go on.
var errLineTooLong = errors.New("line too long")

// lineReader splits stdin into lines of any length up to max bytes. Unlike
// bufio.Scanner it has no 64 KiB ceiling, and each line it returns is a
// fresh slice the caller may keep.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its "\n". At the end of input it returns
// the final unterminated line, if any, then io.EOF.
func (l *lineReader) next() ([]byte, error) {
	chunk, err := l.r.ReadSlice('\n')
	if err == nil {
		if len(chunk)-1 > l.max {
			return nil, errLineTooLong // the whole line is consumed already
		}
		return clone(chunk[:len(chunk)-1]), nil
	}
	if err != bufio.ErrBufferFull {
		if len(chunk) > 0 && err == io.EOF {
			if len(chunk) > l.max {
				return nil, errLineTooLong
			}
			return clone(chunk), nil
		}
		return nil, err
	}
	// A long line: keep copies of the buffer-sized chunks, then join them
	// in one allocation of the exact size. Growing one slice instead
	// allocated five times the line (append grows by 1.25× at this size).
	parts := [][]byte{clone(chunk)}
	n := len(chunk)
	for {
		chunk, err = l.r.ReadSlice('\n')
		n += len(chunk)
		if n > l.max+1 || n == l.max+1 && err != nil {
			return nil, l.discard(err)
		}
		switch err {
		case bufio.ErrBufferFull:
			parts = append(parts, clone(chunk))
			continue
		case nil, io.EOF:
		default:
			return nil, err
		}
		if err == nil {
			chunk = chunk[:len(chunk)-1] // the "\n"
			n--
		}
		line := make([]byte, 0, n)
		for _, p := range parts {
			line = append(line, p...)
		}
		return append(line, chunk...), nil
	}
}

// discard skips to the end of an over-long line.
func (l *lineReader) discard(err error) error {
	for err == bufio.ErrBufferFull {
		_, err = l.r.ReadSlice('\n')
	}
	if err != nil && err != io.EOF {
		return err
	}
	return errLineTooLong
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
