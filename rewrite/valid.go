package rewrite

import (
	"encoding/binary"
	"math/bits"
)

// Valid reports whether data is one JSON value with optional surrounding
// whitespace, as gjson.Valid does (see validJSON).
func Valid(data []byte) bool { return validJSON(data) }

// validJSON reports whether data is one JSON value with optional surrounding
// whitespace. It accepts exactly what gjson.Valid accepts (RFC 8259
// grammar; bytes of 0x80 and above are not checked as UTF-8), so every
// later gjson read of an accepted frame sees what this check saw; a fuzz
// target holds the two to the same answers. It is faster because strings,
// which are most of a frame's bytes, are scanned eight bytes at a time.
func validJSON(data []byte) bool {
	i := skipWS(data, 0)
	if i == len(data) {
		return false
	}
	i, ok := validValue(data, i)
	if !ok {
		return false
	}
	return skipWS(data, i) == len(data)
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// value checks the value starting at data[i] (i < len(data), not
// whitespace) and returns the offset just past it.
func validValue(data []byte, i int) (int, bool) {
	switch c := data[i]; c {
	case '{':
		return validObject(data, i+1)
	case '[':
		return validArray(data, i+1)
	case '"':
		return validString(data, i+1)
	case 't':
		return validLiteral(data, i+1, "rue")
	case 'f':
		return validLiteral(data, i+1, "alse")
	case 'n':
		return validLiteral(data, i+1, "ull")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return validNumber(data, i)
		}
		return i, false
	}
}

func validObject(data []byte, i int) (int, bool) {
	i = skipWS(data, i)
	if i == len(data) {
		return i, false
	}
	if data[i] == '}' {
		return i + 1, true
	}
	for {
		if data[i] != '"' {
			return i, false
		}
		var ok bool
		if i, ok = validString(data, i+1); !ok {
			return i, false
		}
		i = skipWS(data, i)
		if i == len(data) || data[i] != ':' {
			return i, false
		}
		i = skipWS(data, i+1)
		if i == len(data) {
			return i, false
		}
		if i, ok = validValue(data, i); !ok {
			return i, false
		}
		i = skipWS(data, i)
		if i == len(data) {
			return i, false
		}
		switch data[i] {
		case '}':
			return i + 1, true
		case ',':
			i = skipWS(data, i+1)
			if i == len(data) {
				return i, false
			}
		default:
			return i, false
		}
	}
}

func validArray(data []byte, i int) (int, bool) {
	i = skipWS(data, i)
	if i == len(data) {
		return i, false
	}
	if data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = validValue(data, i); !ok {
			return i, false
		}
		i = skipWS(data, i)
		if i == len(data) {
			return i, false
		}
		switch data[i] {
		case ']':
			return i + 1, true
		case ',':
			i = skipWS(data, i+1)
			if i == len(data) {
				return i, false
			}
		default:
			return i, false
		}
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// specialMask marks with its high bit each of the eight bytes of w
// (little-endian) that is a quote, a backslash or a control character
// (below 0x20), using the "has a zero byte" / "has a byte less than n" bit
// tricks. A borrow can mark a byte above a marked one too, but never one
// below: the lowest mark is exact, and firstMarked finds it.
func specialMask(w uint64) uint64 {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b | (w-lsb*0x20)&^w) & msb
}

// firstMarked is the index of the lowest byte marked in m (m != 0).
func firstMarked(m uint64) int { return bits.TrailingZeros64(m) >> 3 }

// validString checks a string whose opening quote is at data[i-1].
func validString(data []byte, i int) (end int, ok bool) {
	for {
		// Eight bytes at a time, to the first that needs a look.
		for i+8 <= len(data) {
			if m := specialMask(binary.LittleEndian.Uint64(data[i:])); m != 0 {
				i += firstMarked(m)
				break
			}
			i += 8
		}
		if i >= len(data) {
			return i, false
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			i++
			if i == len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
					return i, false
				}
				i += 5
			default:
				return i, false
			}
		case c < ' ':
			return i, false
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// validNumber checks the number at data[i] ('-' or a digit): an optional
// minus, 0 or a run of digits, an optional fraction and exponent. What
// follows it is the caller's to check, as in gjson.
func validNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
		if i == len(data) || !isDigit(data[i]) {
			return i, false
		}
	}
	if data[i] == '0' {
		i++
	} else {
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i == len(data) || !isDigit(data[i]) {
			return i, false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i == len(data) || !isDigit(data[i]) {
			return i, false
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	return i, true
}

// validLiteral checks the rest of true, false or null.
func validLiteral(data []byte, i int, rest string) (int, bool) {
	if len(data)-i < len(rest) || string(data[i:i+len(rest)]) != rest {
		return i, false
	}
	return i + len(rest), true
}
