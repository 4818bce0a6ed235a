package bridge

import (
	"strings"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// TestPendingAdmission: a request that finds a slot free starts on a new
// worker, or on one between requests; the rest wait in order, within the
// count and byte bounds, and a worker that is done takes the oldest waiting
// one before it gives its slot back.
func TestPendingAdmission(t *testing.T) {
	p := &pending{maxRunning: 2, maxCalls: 2, maxBytes: 100}
	mk := func(size int) *link.Call { return &link.Call{F: rewrite.Frame{Raw: []byte(strings.Repeat("x", size))}} }
	c1, c2, c3, c4, c5, c6, c7 := mk(10), mk(10), mk(90), mk(20), mk(5), mk(10), mk(10)
	what := p.admit
	admit := func(c *link.Call, want admission) {
		t.Helper()
		if got, _, _ := what(c); got != want {
			t.Fatalf("admit = %d, want %d", got, want)
		}
	}
	admit(c1, admitSpawn)
	admit(c2, admitSpawn)
	admit(c3, admitQueued) // over nothing: the first waiting one is always taken
	if got, n, size := what(c4); got != admitRefused || n != 1 || size != 90 {
		t.Fatalf("over the byte bound: admit = %d (%d waiting, %d bytes), want refused (1, 90)", got, n, size)
	}
	admit(c5, admitQueued)
	if got, n, _ := what(c6); got != admitRefused || n != 2 {
		t.Fatalf("over the count bound: admit = %d (%d waiting), want refused (2)", got, n)
	}
	if !p.remove(c3) || p.remove(c3) {
		t.Fatal("a waiting call is removed once")
	}
	admit(c6, admitQueued)
	for _, want := range []*link.Call{c5, c6, nil, nil} {
		if got := p.next(); got != want {
			t.Fatalf("next = %p, want %p", got, want)
		}
	}
	if p.running != 0 || p.bytes != 0 {
		t.Fatalf("running %d, %d bytes waiting; want 0, 0", p.running, p.bytes)
	}
	// Both slots are free again, and both workers wait between requests:
	// new requests go to them, and no third starts for two slots.
	admit(c7, admitHandOff)
	admit(mk(1), admitHandOff)
	if got, n, _ := what(mk(1)); got != admitQueued || n != 0 {
		t.Fatalf("a third request with both slots taken: admit = %d (%d waiting), want queued", got, n)
	}
	p.workers.Add(-2) // the two workers counted at spawn
	p.close()
	admit(mk(1), admitQueued) // after close nothing starts
	if p.next() != nil {
		t.Fatal("a call started after close")
	}
}
