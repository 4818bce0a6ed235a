package heapgoal

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// goal is the runtime's heap goal after a collection that found live bytes
// live, at GOGC=percent (stacks and globals left out).
func goal(live uint64, percent int) uint64 {
	return max(heapMinimum*uint64(percent)/100, live+live*uint64(percent)/100)
}

// TestPercentPutsTheGoalAtLivePlusRoom: a small live heap may gather Room
// of garbage, a live heap of Room or more is collected at GOGC=100, and no
// GOGC is below the default or above the bound.
func TestPercentPutsTheGoalAtLivePlusRoom(t *testing.T) {
	for _, live := range []uint64{0, 1, 512 << 10, 1 << 20, 3 << 20, 8 << 20, 15 << 20, Room, Room + 1, 64 << 20, 1 << 30} {
		p := Percent(live, Room)
		if p < 100 || p > maxPercent {
			t.Errorf("live %d: GOGC %d, want 100 to %d", live, p, maxPercent)
		}
		want := live + max(live, Room)
		if live >= Room {
			if p != 100 {
				t.Errorf("live %d (Room or more): GOGC %d, want 100", live, p)
			}
			continue
		}
		// Within the rounding of a whole percent of the larger term.
		if g := goal(live, p); g > want || want-g > max(live, heapMinimum)/100+1 {
			t.Errorf("live %d: GOGC %d gives a goal of %d, want %d", live, p, g, want)
		}
	}
}

// TestTunerSetsGOGCAfterEachCollection: after every collection the Tuner
// sets GOGC for the live heap it finds, and Stop puts back the one before
// and ends the tuning.
func TestTunerSetsGOGCAfterEachCollection(t *testing.T) {
	var live atomic.Uint64
	var mu sync.Mutex
	set := []int{100}
	last := func() int {
		mu.Lock()
		defer mu.Unlock()
		return set[len(set)-1]
	}
	tr := newTuner(Room, live.Load, func(p int) int {
		mu.Lock()
		defer mu.Unlock()
		set = append(set, p)
		return set[len(set)-2]
	})
	tr.arm()
	for _, l := range []uint64{1 << 20, 64 << 20, 2 << 20} {
		live.Store(l)
		want := Percent(l, Room)
		collectUntil(t, func() bool { return last() == want })
	}
	tr.Stop()
	if got := last(); got != 100 {
		t.Errorf("after Stop, GOGC %d; want the 100 from before", got)
	}
	n := tr.tunes.Load()
	live.Store(3 << 20)
	runtime.GC()
	runtime.GC()
	if tr.tunes.Load() != n || last() != 100 {
		t.Error("a stopped Tuner tuned again")
	}
}

// TestStartTunesThisProcess: Start sets the runtime's GOGC for the live
// heap at once and after collections, and Stop puts back the one before.
func TestStartTunesThisProcess(t *testing.T) {
	before := GOGC()
	tr := Start(func(string) string { return "" })
	if tr == nil {
		t.Fatal("Start with no GOGC in the environment did not start")
	}
	defer func() {
		tr.Stop()
		if got := GOGC(); got != before {
			t.Errorf("after Stop GOGC is %d, want the %d from before", got, before)
		}
	}()
	n := tr.tunes.Load()
	live := liveHeap()
	collectUntil(t, func() bool { return tr.tunes.Load() > n && GOGC() == Percent(live(), Room) })
	if got := GOGC(); got <= 100 {
		t.Errorf("GOGC %d; want above 100 for this test's small heap", got)
	}
}

// TestStartLeavesASetGOGCAlone: GOGC in the environment is the user's
// choice.
func TestStartLeavesASetGOGCAlone(t *testing.T) {
	if tr := Start(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}); tr != nil {
		tr.Stop()
		t.Fatal("Start tuned despite GOGC=50 in the environment")
	}
}

// collectUntil collects garbage until done, for at most 10 seconds.
func collectUntil(t *testing.T, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); {
		if time.Now().After(deadline) {
			t.Fatal("waited 10s for the Tuner to run after a collection")
		}
		runtime.GC()
		time.Sleep(time.Millisecond) // cleanups run on a goroutine of their own
	}
}
