// Package heapgoal lets a process whose live heap is small collect its
// garbage less often, for a bounded amount of memory.
//
// The Go runtime starts a collection when the heap reaches its goal:
// twice the live heap at the default GOGC=100, and at least 4 MiB. A
// bridge lives on a live heap of a megabyte or two and allocates for every
// frame, so at that goal it collects dozens of times a second with calls
// in flight, and each collection wakes threads and scans every goroutine's
// stack: a fifth of its CPU (BENCHMARKS.md). A Tuner sets GOGC after every
// collection so that the next goal is the live heap plus the larger of the
// live heap and Room: a small heap may gather up to Room of garbage, and a
// heap of Room or more is collected as GOGC=100 would (so large results
// peak where they did).
package heapgoal

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Room is the garbage a small heap may gather before a collection.
const Room = 16 << 20

// heapMinimum is the runtime's least heap goal at GOGC=100; it scales with
// GOGC.
const heapMinimum = 4 << 20

// maxPercent bounds the GOGC a Tuner sets.
const maxPercent = 1000

// Percent is the GOGC that puts the heap goal after a collection that
// found live bytes live at live + max(live, room), given that the runtime's
// goal is the greater of heapMinimum×GOGC/100 and live×(1+GOGC/100). It is
// never below 100 (the runtime's default) nor above maxPercent.
func Percent(live, room uint64) int {
	target := live + max(live, room)
	p := 100 * target / heapMinimum // the minimum's term reaches the target
	if live > 0 {
		p = min(p, 100*(target-live)/live) // the live heap's term does
	}
	return int(min(max(p, 100), maxPercent))
}

// GOGC is the runtime's GOGC now, as runtime/metrics reports it
// (/gc/gogc:percent); -1 if it reports none.
func GOGC() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return -1
	}
	return int(s[0].Value.Uint64())
}

// A Tuner sets GOGC after every garbage collection (see the package doc).
type Tuner struct {
	room uint64
	live func() uint64         // the live heap the last collection found
	set  func(percent int) int // debug.SetGCPercent

	mu      sync.Mutex // orders tune against Stop
	stopped bool
	last    int // the GOGC last set; 0 before the first
	before  int // GOGC before the first
	tunes   atomic.Int64
}

// Start starts a Tuner for this process, unless the environment sets GOGC:
// the user's setting wins, and Start returns nil. A nil *Tuner's Stop does
// nothing.
func Start(getenv func(string) string) *Tuner {
	if getenv("GOGC") != "" {
		return nil
	}
	t := newTuner(Room, liveHeap(), debug.SetGCPercent)
	t.tune() // the goal from now on, not from the next collection
	t.arm()
	return t
}

func newTuner(room uint64, live func() uint64, set func(int) int) *Tuner {
	return &Tuner{room: room, live: live, set: set}
}

// liveHeap reads the live heap the last collection marked.
func liveHeap() func() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	return func() uint64 {
		metrics.Read(s) // only ever from one goroutine at a time: tune's callers
		if s[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[0].Value.Uint64()
	}
}

// sentinel is an object no one keeps: its cleanup runs after the
// collection that finds it unreachable, and arms the next one. (It holds a
// pointer so that it is not one of the tiny allocations, which are freed in
// blocks.)
type sentinel struct{ _ *byte }

// arm has tune run after the next collection, and arm again.
func (t *Tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *Tuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets GOGC for the live heap the last collection found. It reports
// false once the Tuner is stopped.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	if p := Percent(t.live(), t.room); p != t.last {
		old := t.set(p)
		if t.last == 0 {
			t.before = old
		}
		t.last = p
	}
	t.tunes.Add(1)
	return true
}

// Stop stops the Tuner and puts back the GOGC it found.
func (t *Tuner) Stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped && t.last != 0 {
		t.set(t.before)
	}
	t.stopped = true
}
