package rewrite

import (
	"slices"
	"unsafe"

	"github.com/tidwall/gjson"
)

// view returns b as a string without copying: gjson never mutates its input,
// and every Result it returns points into b, its Index an offset into b. b
// must not change while views live. The package's one use of unsafe, for a
// need users feel: with string(b) every frame read would be copied first, a
// large result held twice (BENCHMARKS.md, "The one use of unsafe").
func view(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// edit replaces frame[start:end] with repl. An insertion has start == end; a
// deletion has an empty repl.
type edit struct {
	start, end int
	repl       []byte
	// repl2 is appended after repl; it lets callers splice "prefix + existing
	// bytes" without concatenating first.
	repl2 []byte
}

// edits is an ordered set of non-overlapping edits applied in one pass, so
// that a frame is copied once however many keys are rewritten.
type edits []edit

func (e *edits) replace(start, end int, repl ...[]byte) {
	ed := edit{start: start, end: end}
	if len(repl) > 0 {
		ed.repl = repl[0]
	}
	if len(repl) > 1 {
		ed.repl2 = repl[1]
	}
	*e = append(*e, ed)
}

func (e *edits) remove(start, end int) { *e = append(*e, edit{start: start, end: end}) }

// apply builds the output in a single allocation. Overlapping deletions are
// merged; a replacement that falls inside a deleted range is dropped.
func (e edits) apply(src []byte) []byte {
	if len(e) == 0 {
		return src
	}
	e = e.normalize()
	size := len(src)
	for _, ed := range e {
		size += len(ed.repl) + len(ed.repl2) - (ed.end - ed.start)
	}
	out := make([]byte, 0, size)
	pos := 0
	for _, ed := range e {
		out = append(out, src[pos:ed.start]...)
		out = append(out, ed.repl...)
		out = append(out, ed.repl2...)
		pos = ed.end
	}
	return append(out, src[pos:]...)
}

// normalize sorts e by offset and folds overlaps, so that the edits are
// disjoint and in order: only deletions may overlap, and a deletion that
// overlaps an earlier edit extends it. It reuses e's storage.
func (e edits) normalize() edits {
	// Insertions sort before a deletion that starts at the same offset, so
	// "replace the contents of an object" is an insertion plus deletions.
	slices.SortStableFunc(e, func(a, b edit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return (a.end - a.start) - (b.end - b.start)
	})
	out := e[:0]
	for _, ed := range e {
		if n := len(out); n > 0 && ed.start < out[n-1].end {
			out[n-1].end = max(out[n-1].end, ed.end)
			continue
		}
		out = append(out, ed)
	}
	return out
}

// applyInPlace is apply without the second copy: it writes the output over
// buf, which src ends (src is buf[off:off+len(src)], the room in front of
// it). Writing left to right is safe while the output never runs ahead of
// the input still to be read, that is while the growth so far never
// exceeds off; otherwise it returns nil, src untouched. The replacements
// are copied out first, as one may be a slice of buf that the writing would
// overwrite. Every view into src is invalid after a non-nil return. It
// normalizes *e in place, so that a fallback to apply reads the same list
// (a merged list seen through the old length would repeat its last edits).
func (e *edits) applyInPlace(buf, src []byte) []byte {
	off := cap(buf) - cap(src)
	if len(src) == 0 || off < 0 || off+len(src) > len(buf) || &buf[off] != &src[0] {
		return nil
	}
	*e = e.normalize()
	growth, repls := 0, 0
	for _, ed := range *e {
		repls += len(ed.repl) + len(ed.repl2)
		growth += len(ed.repl) + len(ed.repl2) - (ed.end - ed.start)
		if growth > off {
			return nil
		}
	}
	own := make([]byte, 0, repls)
	for i := range *e {
		ed, n := &(*e)[i], len(own)
		own = append(append(own, ed.repl...), ed.repl2...)
		ed.repl, ed.repl2 = own[n:], nil
	}
	o, pos := 0, 0
	for _, ed := range *e {
		o += copy(buf[o:], src[pos:ed.start]) // copy is memmove: overlap is fine
		o += copy(buf[o:], ed.repl)
		o += copy(buf[o:], ed.repl2)
		pos = ed.end
	}
	o += copy(buf[o:], src[pos:])
	return buf[:o:o]
}

// member is one "key": value pair of a JSON object, with offsets into the
// document the object was read from.
type member struct {
	key        gjson.Result
	value      gjson.Result
	start, end int // from the key's opening quote to the end of the value
}

// removeMembers adds to e the deletions that drop every member m of obj
// whose index i has drop(i) true (called once for each, in order), keeping
// the object's commas well formed, and reports how many members remain.
// A run of dropped members goes up to the next kept member, taking the
// comma with it; a run at the end goes back to the end of the last kept
// member (taking its comma), or to just inside the '{'.
func (e *edits) removeMembers(obj gjson.Result, ms []member, drop func(i int) bool) (kept int) {
	prev, run := -1, -1 // the last kept member; the first of a run of dropped ones
	for i := range ms {
		if drop(i) {
			if run < 0 {
				run = i
			}
			continue
		}
		if run >= 0 {
			e.remove(ms[run].start, ms[i].start)
			run = -1
		}
		prev = i
		kept++
	}
	if run >= 0 {
		from := obj.Index + 1
		if prev >= 0 {
			from = ms[prev].end
		}
		e.remove(from, ms[len(ms)-1].end)
	}
	return kept
}

// objectIsEmpty reports whether a raw JSON object has no members.
func objectIsEmpty(raw string) bool {
	i := skipSpace(raw, 1)
	return i >= len(raw) || raw[i] == '}'
}

// lastBrace returns the offset of the closing '}' of the object that starts
// at doc[obj.Index].
func lastBrace(obj gjson.Result) int {
	return obj.Index + len(obj.Raw) - 1
}
