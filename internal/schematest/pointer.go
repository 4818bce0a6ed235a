package schematest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// escapePointerToken escapes one JSON Pointer reference token (RFC 6901).
func escapePointerToken(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// ResolvePointer returns the bytes of the value the RFC 6901 JSON Pointer ptr
// names inside the JSON document doc. The empty pointer names the whole
// document. The returned bytes are a sub-slice copy of doc, untouched (no
// re-encoding), so numbers and key order are preserved.
func ResolvePointer(doc []byte, ptr string) (json.RawMessage, error) {
	if ptr == "" {
		return json.RawMessage(doc), nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("JSON pointer %q does not start with /", ptr)
	}
	cur := json.RawMessage(doc)
	for _, tok := range strings.Split(ptr[1:], "/") {
		next, err := step(cur, unescapePointerToken(tok))
		if err != nil {
			return nil, fmt.Errorf("JSON pointer %q: %w", ptr, err)
		}
		cur = next
	}
	return cur, nil
}

// ResolvePointerAll is ResolvePointer with one extension used by the golden
// vectors (e.g. "/cases/*/legacy"): a reference token that is exactly "*"
// matches every element of an array (in order) or every member of an object
// (in document order). It returns the matched values and their concrete
// pointers.
func ResolvePointerAll(doc []byte, ptr string) (values []json.RawMessage, pointers []string, err error) {
	if ptr != "" && !strings.HasPrefix(ptr, "/") {
		return nil, nil, fmt.Errorf("JSON pointer %q does not start with /", ptr)
	}
	var toks []string
	if ptr != "" {
		toks = strings.Split(ptr[1:], "/")
	}
	type item struct {
		val json.RawMessage
		ptr string
	}
	cur := []item{{json.RawMessage(doc), ""}}
	for _, raw := range toks {
		var next []item
		for _, it := range cur {
			if raw == "*" {
				kids, names, err := children(it.val)
				if err != nil {
					return nil, nil, fmt.Errorf("JSON pointer %q at %q: %w", ptr, it.ptr, err)
				}
				for i := range kids {
					next = append(next, item{kids[i], it.ptr + "/" + escapePointerToken(names[i])})
				}
				continue
			}
			v, err := step(it.val, unescapePointerToken(raw))
			if err != nil {
				return nil, nil, fmt.Errorf("JSON pointer %q at %q: %w", ptr, it.ptr, err)
			}
			next = append(next, item{v, it.ptr + "/" + raw})
		}
		cur = next
	}
	for _, it := range cur {
		values = append(values, it.val)
		pointers = append(pointers, it.ptr)
	}
	return values, pointers, nil
}

func unescapePointerToken(tok string) string {
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
}

// step descends one reference token into an object or array.
func step(cur json.RawMessage, tok string) (json.RawMessage, error) {
	switch firstByte(cur) {
	case '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(cur, &m); err != nil {
			return nil, err
		}
		v, ok := m[tok]
		if !ok {
			return nil, fmt.Errorf("no member %q", tok)
		}
		return v, nil
	case '[':
		var a []json.RawMessage
		if err := json.Unmarshal(cur, &a); err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(tok)
		if err != nil || i < 0 || i >= len(a) || (len(tok) > 1 && tok[0] == '0') {
			return nil, fmt.Errorf("bad array index %q (length %d)", tok, len(a))
		}
		return a[i], nil
	}
	return nil, fmt.Errorf("cannot descend into a scalar with %q", tok)
}

// children lists the elements of an array or the members of an object, in
// document order, with their reference tokens (unescaped).
func children(cur json.RawMessage) ([]json.RawMessage, []string, error) {
	switch firstByte(cur) {
	case '[':
		var a []json.RawMessage
		if err := json.Unmarshal(cur, &a); err != nil {
			return nil, nil, err
		}
		names := make([]string, len(a))
		for i := range a {
			names[i] = strconv.Itoa(i)
		}
		return a, names, nil
	case '{':
		dec := json.NewDecoder(strings.NewReader(string(cur)))
		if _, err := dec.Token(); err != nil {
			return nil, nil, err
		}
		var vals []json.RawMessage
		var names []string
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, nil, err
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, nil, err
			}
			names = append(names, t.(string))
			vals = append(vals, v)
		}
		return vals, names, nil
	}
	return nil, nil, fmt.Errorf("wildcard on a scalar")
}

func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}
