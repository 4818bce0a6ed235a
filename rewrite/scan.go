package rewrite

import (
	"strings"

	"github.com/tidwall/gjson"
)

// The JSON byte primitives of the bridge, in one place: a small scanner
// over JSON that validJSON (gjson.Valid's grammar) has already accepted.
// It lists an object's members (or an array's elements) with their byte
// offsets without a callback, so the caller's member buffer can live on
// the stack, and it skips strings with IndexByte, so a large result costs
// one fast pass.

// members lists the members of the object obj in order, appending to buf.
// obj.Index must be the offset of obj in the document.
func members(obj gjson.Result, buf []member) []member {
	s := obj.Raw
	for i := 1; i < len(s); {
		i = skipSpace(s, i)
		if i >= len(s) || s[i] == '}' || s[i] != '"' && s[i] != ',' {
			break
		}
		if s[i] == ',' {
			i++
			continue
		}
		kstart := i
		kend := skipString(s, i)
		key := gjson.Result{Type: gjson.String, Raw: s[kstart:kend], Index: obj.Index + kstart}
		key.Str = stringValue(key.Raw)
		i = skipSpace(s, kend)
		if i >= len(s) || s[i] != ':' {
			break
		}
		i = skipSpace(s, i+1)
		vend := skipValue(s, i)
		buf = append(buf, member{
			key:   key,
			value: valueAt(s[i:vend], obj.Index+i),
			start: obj.Index + kstart,
			end:   obj.Index + vend,
		})
		i = vend
	}
	return buf
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

// skipSpace returns the offset of the first byte from s[i] that is not
// JSON whitespace.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just past the string literal at s[i], or
// len(s) when it is not terminated.
func skipString(s string, i int) int {
	end, _, _ := stringEnd(s, i)
	return end
}

// stringEnd returns the offset just past the string literal at s[i], or
// len(s) and closed false when it is not terminated, and whether it holds a
// backslash. Each byte is read at most twice: once in the search for the
// next quote, once in the search for a backslash before it.
func stringEnd(s string, i int) (end int, escaped, closed bool) {
	j, q := i+1, i // q: the next quote at or after j, once j <= q
	for {
		if q < j {
			k := strings.IndexByte(s[j:], '"')
			if k < 0 {
				return len(s), escaped || strings.IndexByte(s[j:], '\\') >= 0, false
			}
			q = j + k
		}
		b := strings.IndexByte(s[j:q], '\\')
		if b < 0 {
			return q + 1, escaped, true
		}
		escaped = true
		j += b + 2 // the backslash and the byte it escapes
	}
}

// skipValue returns the offset just past the value at s[i].
func skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				j = skipString(s, j) - 1
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

// MethodID returns the raw values of the first top-level "method" and "id"
// members of the object frame (nil for one it lacks), slices of frame. It
// reads the members in order and stops once it has both (a request names
// both first), or the id and a "result" or "error" member: a response
// names no method, and its result, the bulk of a large frame, is not read.
// A frame the fast scan cannot read (a key with an escape, malformed JSON)
// is read through gjson with the same rule.
func MethodID(frame []byte) (method, id []byte) {
	if m, i, ok := scanMethodID(view(frame)); ok {
		return bytesOf(frame, m), bytesOf(frame, i)
	}
	return methodIDSlow(frame)
}

// span is a part of a frame, [start, end); end 0 for none.
type span struct{ start, end int }

func bytesOf(f []byte, s span) []byte {
	if s.end == 0 {
		return nil
	}
	return f[s.start:s.end:s.end]
}

// scanMethodID is MethodID's fast scan; ok is false for what it does not
// read.
func scanMethodID(s string) (method, id span, ok bool) {
	answer := false
	done := func() bool { return id.end != 0 && (method.end != 0 || answer) }
	var bad bool
	ok = topMembers(s, func(key string, v int) bool {
		if key == "result" || key == "error" {
			answer = true
		}
		if done() {
			return false
		}
		if key == "method" && method.end == 0 || key == "id" && id.end == 0 {
			vend, valid := valueEnd(s, v)
			if bad = !valid; bad {
				return false
			}
			if key == "method" {
				method = span{v, vend}
			} else {
				id = span{v, vend}
			}
		}
		return !done()
	})
	if !ok || bad {
		return span{}, span{}, false
	}
	return method, id, true
}

// topMembers calls visit with the key and the offset of the value of each
// member of the object s, in order, until visit returns false. It reports
// false when its fast scan cannot read s as far as it went (not an object,
// a key with an escape, malformed JSON): the caller then reads it through
// gjson.
func topMembers(s string, visit func(key string, v int) bool) bool {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	for i = skipSpace(s, i+1); i < len(s) && s[i] != '}'; {
		if s[i] != '"' {
			return false
		}
		end := skipString(s, i)
		if end > len(s) || s[end-1] != '"' || end-1 == i {
			return false
		}
		key := s[i+1 : end-1]
		if strings.IndexByte(key, '\\') >= 0 {
			return false
		}
		if i = skipSpace(s, end); i >= len(s) || s[i] != ':' {
			return false
		}
		i = skipSpace(s, i+1)
		if !visit(key, i) {
			return true
		}
		vend, ok := valueEnd(s, i)
		if !ok {
			return false
		}
		if i = skipSpace(s, vend); i < len(s) && s[i] == ',' {
			i = skipSpace(s, i+1)
		} else if i >= len(s) || s[i] != '}' {
			return false
		}
	}
	return i < len(s)
}

// valueEnd is the offset just past the value at s[v], and false when the
// fast scan sees it is not one.
func valueEnd(s string, v int) (int, bool) {
	vend := skipValue(s, v)
	if vend <= v || vend > len(s) || s[v] == '"' && (s[vend-1] != '"' || vend-1 == v) {
		return vend, false
	}
	return vend, true
}

// methodIDSlow is MethodID for any frame, through gjson (which has parsed
// each member's value by the time the rule stops it).
func methodIDSlow(f []byte) (method, id []byte) {
	v := gjson.Parse(view(f))
	if !v.IsObject() {
		return nil, nil
	}
	var m, d gjson.Result
	answer := false
	v.ForEach(func(k, val gjson.Result) bool {
		if k.Str == "result" || k.Str == "error" {
			answer = true
		}
		if d.Exists() && (m.Exists() || answer) {
			return false
		}
		switch {
		case k.Str == "method" && !m.Exists():
			m = val
		case k.Str == "id" && !d.Exists():
			d = val
		}
		return !d.Exists() || !m.Exists() && !answer
	})
	if m.Exists() {
		method = []byte(m.Raw)
	}
	if d.Exists() {
		id = []byte(d.Raw)
	}
	return method, id
}

// IsError reports whether the response frame is an error: its first
// top-level "result" or "error" member is "error". It stops there, so a
// large result is not read; a frame the scan cannot read goes to gjson.
func IsError(frame []byte) bool {
	s := view(frame)
	found, isError := false, false
	ok := topMembers(s, func(key string, _ int) bool {
		found, isError = key == "result" || key == "error", key == "error"
		return !found
	})
	if ok && found {
		return isError
	}
	return gjson.Get(s, "error").Exists()
}
