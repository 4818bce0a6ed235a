package rewrite

import (
	"encoding/binary"
	"math/bits"
)

// Valid reports whether data is one JSON value with optional surrounding
// whitespace, as gjson.Valid does (see validJSON).
func Valid(data []byte) bool { return validJSON(data) }

// ValidKeys is Valid that also tests, on the way, each object key at any
// depth by keys' rule (stopping the tests at the first that matches:
// dirty), and notices whitespace outside the value's strings (spaced). One
// pass, where Valid and then AppendCompact would take two: a frame that is
// valid, clean and not spaced is what AppendCompact and Redact would
// return, as it is.
func ValidKeys(data []byte, keys *KeyMemo) (valid, dirty, spaced bool) {
	kc := keyCheck{keys: keys}
	valid = kc.valid(data)
	return valid, kc.match, kc.spaced
}

// keyCheck is what validation finds out besides validity, for ValidKeys;
// validation for Valid runs with a nil *keyCheck.
type keyCheck struct {
	keys   *KeyMemo
	match  bool // a key matched
	spaced bool // whitespace lies outside strings
}

// ws skips whitespace from data[i], noting it.
func (kc *keyCheck) ws(data []byte, i int) int {
	j := skipWS(data, i)
	if j != i && kc != nil {
		kc.spaced = true
	}
	return j
}

// key tests the object key data[i:end] (a valid string literal, quotes
// included; escaped when it holds a backslash).
func (kc *keyCheck) key(data []byte, i, end int, escaped bool) {
	if kc == nil || kc.match || kc.keys == nil {
		return
	}
	if escaped {
		kc.match = kc.keys.Sensitive(stringValue(view(data[i:end])))
	} else {
		kc.match = kc.keys.at(view(data), i, end)
	}
}

// validJSON reports whether data is one JSON value with optional surrounding
// whitespace. It accepts exactly what gjson.Valid accepts (RFC 8259
// grammar; bytes of 0x80 and above are not checked as UTF-8), so every
// later gjson read of an accepted frame sees what this check saw; a fuzz
// target holds the two to the same answers. It is faster because strings,
// which are most of a frame's bytes, are scanned eight bytes at a time.
func validJSON(data []byte) bool { return (*keyCheck)(nil).valid(data) }

func (kc *keyCheck) valid(data []byte) bool {
	i := kc.ws(data, 0)
	if i == len(data) {
		return false
	}
	i, ok := kc.value(data, i)
	if !ok {
		return false
	}
	return kc.ws(data, i) == len(data)
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
func (kc *keyCheck) value(data []byte, i int) (int, bool) {
	switch c := data[i]; c {
	case '{':
		return kc.object(data, i+1)
	case '[':
		return kc.array(data, i+1)
	case '"':
		j, ok, _ := validString(data, i+1)
		return j, ok
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

func (kc *keyCheck) object(data []byte, i int) (int, bool) {
	i = kc.ws(data, i)
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
		start := i
		var ok, escaped bool
		if i, ok, escaped = validString(data, i+1); !ok {
			return i, false
		}
		kc.key(data, start, i, escaped)
		i = kc.ws(data, i)
		if i == len(data) || data[i] != ':' {
			return i, false
		}
		i = kc.ws(data, i+1)
		if i == len(data) {
			return i, false
		}
		if i, ok = kc.value(data, i); !ok {
			return i, false
		}
		i = kc.ws(data, i)
		if i == len(data) {
			return i, false
		}
		switch data[i] {
		case '}':
			return i + 1, true
		case ',':
			i = kc.ws(data, i+1)
			if i == len(data) {
				return i, false
			}
		default:
			return i, false
		}
	}
}

func (kc *keyCheck) array(data []byte, i int) (int, bool) {
	i = kc.ws(data, i)
	if i == len(data) {
		return i, false
	}
	if data[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = kc.value(data, i); !ok {
			return i, false
		}
		i = kc.ws(data, i)
		if i == len(data) {
			return i, false
		}
		switch data[i] {
		case ']':
			return i + 1, true
		case ',':
			i = kc.ws(data, i+1)
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

// validString checks a string whose opening quote is at data[i-1], and
// reports whether it holds an escape.
func validString(data []byte, i int) (end int, ok, escaped bool) {
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
			return i, false, escaped
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true, escaped
		case c == '\\':
			escaped = true
			i++
			if i == len(data) {
				return i, false, escaped
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+4 >= len(data) || !isHex(data[i+1]) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) {
					return i, false, escaped
				}
				i += 5
			default:
				return i, false, escaped
			}
		case c < ' ':
			return i, false, escaped
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
