package main

import (
	"runtime/debug"
	"testing"
)

// The stdio bridge sets its GC pace and soft memory limit once, at start,
// only where the environment leaves them open, and says what is in force.
func TestStdioGC(t *testing.T) {
	pace, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(pace); debug.SetMemoryLimit(limit) })

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(1 << 40)
	gogc, memLimit := stdioGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != stdioGOGC || gogc != "400" {
		t.Errorf("no GOGC in the environment: the pace is %d (said %q), want %d", got, gogc, stdioGOGC)
	}
	if got := debug.SetMemoryLimit(-1); got != stdioMemLimit || memLimit != "48MiB" {
		t.Errorf("no GOMEMLIMIT in the environment: the limit is %d (said %q), want %d", got, memLimit, stdioMemLimit)
	}

	debug.SetGCPercent(100)
	debug.SetMemoryLimit(1 << 40)
	env := map[string]string{"GOGC": "100", "GOMEMLIMIT": "1TiB"}
	gogc, memLimit = stdioGC(func(k string) string { return env[k] })
	if got := debug.SetGCPercent(100); got != 100 || gogc != "100" {
		t.Errorf("GOGC=100 in the environment: the pace is %d (said %q), want it left at 100", got, gogc)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<40 || memLimit != "1TiB" {
		t.Errorf("GOMEMLIMIT=1TiB in the environment: the limit is %d (said %q), want it left alone", got, memLimit)
	}
}
