package rewrite

import (
	"strconv"
	"unicode/utf8"
)

// NullID is the id of an answer to a message whose id could not be read.
var NullID = []byte("null")

// ErrorFrame builds a JSON-RPC error response. id is the raw id (NullID when
// unknown); data is raw JSON or nil.
func ErrorFrame(id []byte, code int, message string, data []byte) []byte {
	if !scalarID(id) {
		// No id, or one JSON-RPC does not allow (an array or object, which
		// may hold a raw CR): the answer's id is null, as JSON-RPC asks
		// when the request's id cannot be read.
		id = NullID
	}
	b := make([]byte, 0, 64+len(id)+len(message)+len(data))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = AppendString(b, message)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, "}}"...)
}

// scalarID reports whether id is a string, a number or null: the only ids
// JSON-RPC allows, none of which can hold a raw line break.
func scalarID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9', c == 'n':
		return true
	}
	return false
}

// ResultFrame builds a JSON-RPC result response from a raw result object.
func ResultFrame(id []byte, result []byte) []byte {
	b := make([]byte, 0, 36+len(id)+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// load64 is the eight bytes of s from i, little-endian (one load).
func load64(s string, i int) uint64 {
	b := s[i : i+8] // one bounds check for the eight
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// plainPrefix is the length of the longest prefix of s that is plain
// ASCII (no quote, backslash or control byte), which a JSON string holds
// as it is: eight bytes at a time, and the last few in one load too when
// s has eight bytes or more; four to seven bytes in one word, unless one is
// not plain.
func plainPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := load64(s, i)
		if m := specialMask(w) | w&msb; m != 0 {
			return i + firstMarked(m)
		}
	}
	if i == len(s) {
		return i
	}
	if len(s) >= 8 {
		// The last eight bytes, of which the first 8-(len(s)-i) are
		// checked plain: a plain byte marks none, nor lends a borrow to
		// the next (see specialMask).
		w := load64(s, len(s)-8)
		m := (specialMask(w) | w&msb) >> (8 * (8 - (len(s) - i)))
		if m == 0 {
			return len(s)
		}
		return i + firstMarked(m)
	}
	if len(s) >= 4 {
		// Four to seven bytes (an op id, a method, "POST"), most often all
		// plain: the first four and the last four in one word.
		w := uint64(load32(s, 0)) | uint64(load32(s, len(s)-4))<<32
		if specialMask(w)|w&msb == 0 {
			return len(s)
		}
	}
	for i < len(s) && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\' && s[i] < utf8.RuneSelf {
		i++
	}
	return i
}

// load32 is the four bytes of s from i, little-endian (one load).
func load32(s string, i int) uint32 {
	b := s[i : i+4]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// AppendString appends s as a JSON string, as encoding/json writes it with
// HTML escaping off: <, > and & stay as they are, invalid UTF-8 bytes
// become U+FFFD, and U+2028 and U+2029 are escaped
// (TestAppendStringMatchesEncodingJSON).
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	// From one byte that is not plain ASCII (a quote, a backslash, a
	// control byte or part of a multi-byte rune) to the next; a plain
	// string is copied at once.
	for i := plainPrefix(s); i < len(s); i += plainPrefix(s[i:]) {
		if c := s[i]; c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
