package e2e

import (
	"sync"
	"testing"
	"time"
)

// changes is the lock of a recorder that tests wait on: every change,
// made under mu, calls notifyLocked, and until waits for the next one.
type changes struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

// notifyLocked wakes the waiters; mu is held.
func (c *changes) notifyLocked() {
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

// until waits (bounded) until found, called with mu held, is true. Past
// waitTimeout it fails t with what fail, called without mu, says.
func (c *changes) until(t testing.TB, found func() bool, fail func() string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		c.mu.Lock()
		if found() {
			c.mu.Unlock()
			return
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatal(fail())
		}
	}
}
