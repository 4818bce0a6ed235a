package main

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// governorUnderTest is a procsGovernor whose GOMAXPROCS settings are
// recorded and whose ticks the test sends.
type governorUnderTest struct {
	*procsGovernor
	mu    sync.Mutex
	sets  []int
	ticks chan time.Time
	armed chan struct{} // a ticker was made
}

func newGovernorUnderTest() *governorUnderTest {
	gt := &governorUnderTest{ticks: make(chan time.Time), armed: make(chan struct{}, 8)}
	gt.procsGovernor = newProcsGovernor(4, 32, time.Hour, func(n int) int {
		gt.mu.Lock()
		defer gt.mu.Unlock()
		gt.sets = append(gt.sets, n)
		return 1
	}, zap.NewNop())
	gt.procsGovernor.tick = func(time.Duration) (<-chan time.Time, func()) {
		gt.armed <- struct{}{}
		return gt.ticks, func() {}
	}
	return gt
}

func (gt *governorUnderTest) settings() []int {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	return slices.Clone(gt.sets)
}

// sendTick delivers one period's end to the watching goroutine (bounded),
// and waits until it has looked at the period: a busy one is forgotten,
// after a quiet one the governor comes to rest.
func (gt *governorUnderTest) sendTick(t *testing.T) {
	t.Helper()
	select {
	case gt.ticks <- time.Now():
	case <-time.After(10 * time.Second):
		t.Fatal("no goroutine took the tick")
	}
	waitFor(t, func() bool { return !gt.active.Load() || !gt.raised.Load() }, "the period looked at")
}

// TestProcsGovernor: GOMAXPROCS goes to every CPU when a call starts with
// 32 in flight, once however many more start, stays there while a period
// sees more than 8 in flight, and comes back to one after a period that
// does not; then it can go up again. Nothing is set below 32.
func TestProcsGovernor(t *testing.T) {
	gt := newGovernorUnderTest()
	defer gt.close()
	for n := 1; n < 32; n++ {
		gt.started(n)
	}
	if s := gt.settings(); len(s) != 0 {
		t.Fatalf("set %v with fewer than 32 in flight", s)
	}
	gt.started(32)
	gt.started(40)
	gt.started(32)
	if s := gt.settings(); !slices.Equal(s, []int{4}) {
		t.Fatalf("after 32 in flight: set %v, want [4]", s)
	}
	<-gt.armed
	gt.sendTick(t) // the period that raised it counts as busy
	gt.started(9)
	gt.sendTick(t) // 9 in flight: still busy
	gt.started(8)
	gt.started(3)
	gt.sendTick(t) // 8 at most: quiet
	waitFor(t, func() bool { return slices.Equal(gt.settings(), []int{4, 1}) }, "back to one thread")
	waitFor(t, func() bool { return !gt.raised.Load() }, "the governor at rest")
	gt.started(33)
	if s := gt.settings(); !slices.Equal(s, []int{4, 1, 4}) {
		t.Fatalf("after a second burst: set %v, want [4 1 4]", s)
	}
	<-gt.armed
}

// TestProcsGovernorClose: close stops the watching goroutine (goleak
// checks it), and a burst after close sets nothing.
func TestProcsGovernorClose(t *testing.T) {
	gt := newGovernorUnderTest()
	gt.started(64)
	<-gt.armed
	gt.close()
	gt.close() // idempotent
	gt.raised.Store(false)
	gt.started(64)
	if s := gt.settings(); !slices.Equal(s, []int{4}) {
		t.Fatalf("set %v, want [4] (nothing after close)", s)
	}
}

// TestStdioProcsDefault: without GOMAXPROCS the bridge starts on one
// thread, and its governor goes up to what the runtime had (its default,
// which heeds a container's CPU limit), not to the machine's CPU count.
func TestStdioProcsDefault(t *testing.T) {
	want := runtime.GOMAXPROCS(0)
	before, g := stdioProcs(func(string) string { return "" }, zap.NewNop())
	defer runtime.GOMAXPROCS(before)
	defer g.close()
	if before != want {
		t.Errorf("before = %d, want the runtime's %d", before, want)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS = %d after stdioProcs, want 1", got)
	}
	switch {
	case want == 1 && g != nil:
		t.Error("a governor where the runtime uses one thread anyway")
	case want > 1 && (g == nil || g.busyProcs != want):
		t.Errorf("governor %+v, want one going up to %d", g, want)
	}
}

// TestStdioProcsUnset: with GOMAXPROCS set, the number is the user's and
// there is no governor.
func TestStdioProcsUnset(t *testing.T) {
	before, g := stdioProcs(func(k string) string {
		if k == "GOMAXPROCS" {
			return "3"
		}
		return ""
	}, zap.NewNop())
	if g != nil {
		t.Error("a governor with GOMAXPROCS set")
	}
	if before <= 0 {
		t.Errorf("before = %d", before)
	}
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
