package rewrite

import (
	"slices"
	"unsafe"

	"github.com/tidwall/gjson"
)

// view returns b as a string without copying. gjson never mutates its input
// and every Result.Raw it hands back points into b, so offsets (Result.Index)
// are offsets into b. The caller must not modify b while views are alive.
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
	// Insertions sort before a deletion that starts at the same offset, so
	// "replace the contents of an object" is an insertion plus deletions.
	slices.SortStableFunc(e, func(a, b edit) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return (a.end - a.start) - (b.end - b.start)
	})
	// Size the output exactly, merging overlaps as the copy loop does.
	size, pos := 0, 0
	for _, ed := range e {
		if ed.start < pos {
			if ed.end > pos {
				pos = ed.end
			}
			continue
		}
		size += ed.start - pos + len(ed.repl) + len(ed.repl2)
		pos = ed.end
	}
	size += len(src) - pos
	out := make([]byte, 0, size)
	pos = 0
	for _, ed := range e {
		if ed.start < pos {
			// Overlaps an earlier edit: only deletions may overlap.
			if ed.end > pos {
				pos = ed.end
			}
			continue
		}
		out = append(out, src[pos:ed.start]...)
		out = append(out, ed.repl...)
		out = append(out, ed.repl2...)
		pos = ed.end
	}
	return append(out, src[pos:]...)
}

// member is one "key": value pair of a JSON object, with offsets into the
// document the object was read from.
type member struct {
	key        gjson.Result
	value      gjson.Result
	start, end int // from the key's opening quote to the end of the value
}

// removeMembers adds to e the deletions that drop every member m of obj for
// whose index i has drop(i) true, keeping the object's commas well formed. It reports
// how many members remain.
func (e *edits) removeMembers(obj gjson.Result, ms []member, drop func(i int) bool) (kept int) {
	dropped := make([]bool, len(ms))
	for i := range ms {
		dropped[i] = drop(i)
		if !dropped[i] {
			kept++
		}
	}
	for i := range ms {
		if !dropped[i] {
			continue
		}
		if next := nextKept(dropped, i); next >= 0 {
			// Delete up to the next kept member: takes the comma with it.
			e.remove(ms[i].start, ms[next].start)
			continue
		}
		// No kept member follows: delete back to the end of the previous
		// kept member (taking its trailing comma), or to just inside '{'.
		from := obj.Index + 1
		if prev := prevKept(dropped, i); prev >= 0 {
			from = ms[prev].end
		}
		e.remove(from, ms[i].end)
	}
	return kept
}

func nextKept(dropped []bool, i int) int {
	for j := i + 1; j < len(dropped); j++ {
		if !dropped[j] {
			return j
		}
	}
	return -1
}

func prevKept(dropped []bool, i int) int {
	for j := i - 1; j >= 0; j-- {
		if !dropped[j] {
			return j
		}
	}
	return -1
}

// objectIsEmpty reports whether a raw JSON object has no members.
func objectIsEmpty(raw string) bool {
	for i := 1; i < len(raw); i++ {
		switch raw[i] {
		case ' ', '\t', '\r', '\n':
			continue
		case '}':
			return true
		default:
			return false
		}
	}
	return true
}

// lastBrace returns the offset of the closing '}' of the object that starts
// at doc[obj.Index].
func lastBrace(obj gjson.Result) int {
	return obj.Index + len(obj.Raw) - 1
}
