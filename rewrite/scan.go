package rewrite

import (
	"strings"

	"github.com/tidwall/gjson"
)

// The JSON byte primitives of the proxy, in one place: one whitespace
// skipper (skipSpace), one string-end scanner (stringEnd), one value
// skipper (skipValue) and one member reader (memberAt). The validator
// (validJSON) checks a frame with them; every other reader here runs over
// JSON it has accepted. Strings, most of a frame's bytes, are crossed with
// strings.IndexByte, so a large result costs one fast pass; a reader lists
// members into the caller's buffer, without a callback, so that the
// buffer can live on the stack.

// skipSpace returns the offset of the first byte from s[i] that is not
// JSON whitespace.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset just past the string literal at s[i], or
// len(s) and closed false when it is not terminated, and whether it holds a
// backslash. The first bytes are read one at a time: most keys and many
// values end there, before a search would pay for its call. Past them, the
// next quote strings.IndexByte finds ends the string unless an odd run of
// backslashes escapes it, and one more search looks for a backslash.
func stringEnd(s string, i int) (end int, escaped, closed bool) {
	j := i + 1
	for ; j < len(s) && j <= i+16; j++ {
		switch s[j] {
		case '"':
			return j + 1, escaped, true
		case '\\':
			escaped = true
			j++
		}
	}
	for j = min(j, len(s)); ; {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			return len(s), strings.IndexByte(s[i+1:], '\\') >= 0, false
		}
		q := j + k
		p := q - 1
		for p > i && s[p] == '\\' {
			p--
		}
		if (q-p)%2 == 1 { // an even run of backslashes before it, none escaping it
			return q + 1, strings.IndexByte(s[i+1:q], '\\') >= 0, true
		}
		j = q + 1
	}
}

// skipValue returns the offset just past the value at s[i].
func skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		end, _, _ := stringEnd(s, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j, _, _ = stringEnd(s, j)
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	j := i
	for j < len(s) {
		switch s[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// memberAt reads the member of an object that starts at or after s[i],
// where i is just past the '{' or just past the previous member's value:
// the span [k, kend) of its key, whether the key holds an escape, and the
// offset v of its value. ok is false at the end of the object, k then the
// offset of what ended it, and where s does not go on as an object does.
func memberAt(s string, i int) (k, kend, v int, escaped, ok bool) {
	if k = skipSpace(s, i); k < len(s) && s[k] == ',' {
		k = skipSpace(s, k+1)
	}
	if k >= len(s) || s[k] != '"' {
		return k, k, k, false, false
	}
	kend, escaped, closed := stringEnd(s, k)
	c := skipSpace(s, kend)
	if !closed || c >= len(s) || s[c] != ':' {
		return k, kend, c, escaped, false
	}
	return k, kend, skipSpace(s, c+1), escaped, true
}

// keyText is the text of the key s[k:kend] as memberAt read it.
func keyText(s string, k, kend int, escaped bool) string {
	if escaped {
		return stringValue(s[k:kend])
	}
	return s[k+1 : kend-1]
}

// members lists the members of the object obj in order, appending to buf.
// obj.Index must be the offset of obj in the document.
func members(obj gjson.Result, buf []member) []member {
	ms, _ := scanMembers(obj.Raw, obj.Index, buf, nil)
	return ms
}

// scanMembers is members of the object s at offset base; with w, the first
// member named w.path whose value is an object is checked against w by the
// same scan that steps over it (checkedEnd), and dup is the first member
// of it refused.
func scanMembers(s string, base int, buf []member, w *watch) (_ []member, dup *DuplicateKeyError) {
	for i := 1; ; {
		k, kend, v, escaped, ok := memberAt(s, i)
		if !ok {
			return buf, dup
		}
		key := gjson.Result{Type: gjson.String, Raw: s[k:kend], Str: keyText(s, k, kend, escaped), Index: base + k}
		if w != nil && key.Str == w.path && s[v] == '{' {
			i, dup = checkedEnd(s, v, w)
			w = nil
		} else {
			i = skipValue(s, v)
		}
		buf = append(buf, member{key: key, value: valueAt(s[v:i], base+v), start: base + k, end: base + i})
	}
}

// elements lists the elements of the array arr; start and end of each
// member are the element's own bytes.
func elements(arr gjson.Result, buf []member) []member {
	s := arr.Raw
	for i := 1; i < len(s); {
		i = skipSpace(s, i)
		if i >= len(s) || s[i] == ']' {
			break
		}
		if s[i] == ',' {
			i++
			continue
		}
		vend := skipValue(s, i)
		if vend == i {
			break
		}
		buf = append(buf, member{value: valueAt(s[i:vend], arr.Index+i), start: arr.Index + i, end: arr.Index + vend})
		i = vend
	}
	return buf
}

// valueAt makes a gjson.Result for the raw value at offset index.
func valueAt(raw string, index int) gjson.Result {
	if raw == "" {
		return gjson.Result{}
	}
	switch raw[0] {
	case '{', '[':
		return gjson.Result{Type: gjson.JSON, Raw: raw, Index: index}
	case '"':
		return gjson.Result{Type: gjson.String, Raw: raw, Str: stringValue(raw), Index: index}
	}
	r := gjson.Parse(raw)
	r.Index = index
	return r
}

// stringValue returns the contents of a JSON string literal.
func stringValue(raw string) string {
	inner := raw[1 : len(raw)-1]
	if strings.IndexByte(inner, '\\') < 0 {
		return inner
	}
	return gjson.Parse(raw).Str
}

// Valid reports whether data is one JSON value with optional surrounding
// whitespace, as gjson.Valid does (see validJSON).
func Valid(data []byte) bool { return validJSON(data) }

// validJSON reports whether data is one JSON value with optional surrounding
// whitespace. It accepts exactly what gjson.Valid accepts (RFC 8259
// grammar; bytes of 0x80 and above are not checked as UTF-8), so every
// later gjson read of an accepted frame sees what this check saw; FuzzValid
// holds the two to the same answers.
func validJSON(data []byte) bool {
	s := view(data)
	i := skipSpace(s, 0)
	if i == len(s) {
		return false
	}
	i, ok := validValue(s, i)
	return ok && skipSpace(s, i) == len(s)
}

// validValue checks the value at s[i] (i < len(s), not whitespace) and
// returns the offset just past it.
func validValue(s string, i int) (int, bool) {
	switch c := s[i]; c {
	case '{':
		return validList(s, i+1, '}')
	case '[':
		return validList(s, i+1, ']')
	case '"':
		return validString(s, i)
	case 't':
		return validLiteral(s, i, "true")
	case 'f':
		return validLiteral(s, i, "false")
	case 'n':
		return validLiteral(s, i, "null")
	default:
		if c == '-' || isDigit(c) {
			return validNumber(s, i)
		}
		return i, false
	}
}

// validList checks the members of an object (end '}') or the elements of
// an array (end ']') from just past its opening bracket.
func validList(s string, i int, end byte) (int, bool) {
	if i = skipSpace(s, i); i < len(s) && s[i] == end {
		return i + 1, true
	}
	for ok := true; ; {
		if end == '}' {
			if i >= len(s) || s[i] != '"' {
				return i, false
			}
			if i, ok = validString(s, i); !ok {
				return i, false
			}
			if i = skipSpace(s, i); i >= len(s) || s[i] != ':' {
				return i, false
			}
			i = skipSpace(s, i+1)
		}
		if i >= len(s) {
			return i, false
		}
		if i, ok = validValue(s, i); !ok {
			return i, false
		}
		if i = skipSpace(s, i); i >= len(s) {
			return i, false
		}
		switch s[i] {
		case end:
			return i + 1, true
		case ',':
			i = skipSpace(s, i+1)
		default:
			return i, false
		}
	}
}

// validString checks the string at s[i]: closed, without a control byte,
// and with only the escapes JSON has.
func validString(s string, i int) (int, bool) {
	end, escaped, closed := stringEnd(s, i)
	if !closed || hasControl(s[i+1:end-1]) {
		return end, false
	}
	for j := i + 1; escaped; {
		b := strings.IndexByte(s[j:end-1], '\\')
		if b < 0 {
			break
		}
		j += b + 1 // the escaped byte, inside the string: stringEnd read it so
		switch s[j] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			j++
		case 'u':
			if j+5 > end-1 || !isHex(s[j+1]) || !isHex(s[j+2]) || !isHex(s[j+3]) || !isHex(s[j+4]) {
				return end, false
			}
			j += 5
		default:
			return end, false
		}
	}
	return end, true
}

// hasControl reports whether s holds a byte below 0x20, eight bytes at a
// time: (w - 0x20 in each byte) &^ w has a byte's high bit set exactly when
// some byte of w is below 0x20.
func hasControl(s string) bool {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	var m uint64
	for ; len(s) >= 8; s = s[8:] {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		m |= (w - lsb*0x20) &^ w
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return m&msb != 0
}

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// validNumber checks the number at s[i] ('-' or a digit): an optional
// minus, 0 or a run of digits, an optional fraction and exponent. What
// follows it is the caller's to check, as in gjson.
func validNumber(s string, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		if i == len(s) || !isDigit(s[i]) {
			return i, false
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i, true
	}
	if s[i] == '-' {
		i++
	}
	var ok bool
	if i < len(s) && s[i] == '0' {
		i++
	} else if i, ok = digits(i); !ok {
		return i, false
	}
	if i < len(s) && s[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		return digits(i)
	}
	return i, true
}

// validLiteral checks true, false or null.
func validLiteral(s string, i int, lit string) (int, bool) {
	if !strings.HasPrefix(s[i:], lit) {
		return i, false
	}
	return i + len(lit), true
}
