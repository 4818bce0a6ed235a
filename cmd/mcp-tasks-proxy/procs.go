package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// The stdio bridge's threads. Its goroutines hand each call on several
// times (reader, worker, HTTP client, writer), and with a second thread
// idle the runtime wakes that thread for each hand-off, which costs more
// CPU than the work it takes over: on one thread a call costs a fifth to a
// third less CPU (BENCHMARKS.md, "One thread for the stdio bridge"). With
// many calls in flight the other way round holds: there is work for every
// thread, and one thread holds back the throughput (BENCHMARKS.md, run V:
// 256 calls in flight at 0.82× the floor's calls/s on one thread, 1.02× on
// two). So the bridge runs on one thread, and on all the runtime would use
// (every CPU, or a container's limit) while at least
// procsBusy calls are in flight, until procsQuiet passes with fewer than
// procsBusy/4. The GOMAXPROCS environment variable fixes the number instead.
// serve keeps one per CPU: it serves many clients at once.
const (
	procsBusy  = 32
	procsQuiet = time.Second
)

// stdioProcs sets how many threads run Go code at once for the stdio
// bridge, and returns the setting before, for the caller to restore, with
// the governor that raises it while many calls are in flight (nil when
// GOMAXPROCS is set, or when the runtime would use one thread anyway). The
// governor raises it to the runtime's own setting, which heeds a
// container's CPU limit where the machine's CPU count would not.
func stdioProcs(getenv func(string) string, logger *zap.Logger) (before int, g *procsGovernor) {
	if getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0), nil
	}
	before = runtime.GOMAXPROCS(1)
	if before > 1 {
		g = newProcsGovernor(before, procsBusy, procsQuiet, runtime.GOMAXPROCS, logger)
	}
	return before, g
}

// procsGovernor raises GOMAXPROCS from one to busyProcs when a call starts
// with at least busy in flight, and lowers it back to one once a whole
// quiet period has passed in which no call started with more than busy/4
// in flight. It never wakes while it is at one.
type procsGovernor struct {
	busyProcs, busy int
	quiet           time.Duration
	set             func(int) int // runtime.GOMAXPROCS
	logger          *zap.Logger
	tick            func(time.Duration) (<-chan time.Time, func()) // a ticker; tests drive their own

	raised atomic.Bool
	active atomic.Bool // a call started with more than busy/4 in flight this period
	stop   chan struct{}
	mu     sync.Mutex // orders raising against close
	closed bool
	wg     sync.WaitGroup
}

func newProcsGovernor(busyProcs, busy int, quiet time.Duration, set func(int) int, logger *zap.Logger) *procsGovernor {
	return &procsGovernor{busyProcs: busyProcs, busy: busy, quiet: quiet, set: set, logger: logger,
		tick: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		},
		stop: make(chan struct{})}
}

// started is bridge.Config.Started: a call started with inFlight in flight.
func (g *procsGovernor) started(inFlight int) {
	if inFlight > g.busy/4 && !g.active.Load() {
		g.active.Store(true)
	}
	if inFlight < g.busy || g.raised.Load() || !g.raised.CompareAndSwap(false, true) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.set(g.busyProcs)
	g.logger.Debug("many calls in flight: Go code on every CPU", zap.Int("in_flight", inFlight), zap.Int("gomaxprocs", g.busyProcs))
	g.wg.Add(1)
	go g.watch()
}

// watch lowers GOMAXPROCS back to one after a quiet period.
func (g *procsGovernor) watch() {
	defer g.wg.Done()
	ticks, stop := g.tick(g.quiet)
	defer stop()
	g.active.Store(true) // the period that raised it counts as busy
	for {
		select {
		case <-ticks:
			if g.active.Swap(false) {
				continue
			}
			g.set(1)
			g.logger.Debug("few calls in flight: Go code on one thread again", zap.Int("gomaxprocs", 1))
			g.raised.Store(false)
			return
		case <-g.stop:
			return
		}
	}
}

// close stops the governor's goroutine; GOMAXPROCS stays as it is, for the
// caller to restore.
func (g *procsGovernor) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		close(g.stop)
	}
	g.mu.Unlock()
	g.wg.Wait()
}
