package rewrite

import "github.com/tidwall/gjson"

// MethodID returns the raw values of the first top-level "method" and "id"
// members of the object frame (nil for one it lacks), slices of frame. It
// reads the members in order and stops once it has both (a request names
// both first), or the id and a "result" or "error" member: a response
// names no method, and its result, the bulk of a large frame, is not read.
// A frame the fast scan cannot read (a key with an escape, malformed JSON)
// is read through gjson with the same rule.
func MethodID(frame []byte) (method, id []byte) {
	s := view(frame)
	answer, bad := false, false
	ok := topMembers(s, func(key string, v int) bool {
		answer = answer || key == "result" || key == "error"
		if id != nil && (method != nil || answer) {
			return false
		}
		if key == "method" && method == nil || key == "id" && id == nil {
			vend, valid := valueEnd(s, v)
			if bad = !valid; bad {
				return false
			}
			if key == "method" {
				method = frame[v:vend:vend]
			} else {
				id = frame[v:vend:vend]
			}
		}
		return id == nil || method == nil && !answer
	})
	if ok && !bad {
		return method, id
	}
	return methodIDSlow(frame)
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
	for i++; ; {
		k, kend, v, escaped, ok := memberAt(s, i)
		if !ok {
			return k < len(s) && s[k] == '}'
		}
		if escaped {
			return false
		}
		if !visit(s[k+1:kend-1], v) {
			return true
		}
		if i, ok = valueEnd(s, v); !ok {
			return false
		}
		if j := skipSpace(s, i); j >= len(s) || s[j] != ',' && s[j] != '}' {
			return false
		}
	}
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
