package bridge

import (
	"slices"
	"sync"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
)

// pending admits the client's requests to the in-flight slots. One that
// finds a slot free goes straight from the reader to a worker (at most one
// per slot, kept between requests: a new goroutine would grow its stack
// anew for every request, which BENCHMARKS.md shows users pay for); one
// that finds none waits in a FIFO, and a worker whose request is done takes the
// oldest waiting one before it gives its slot back, under the same lock, so
// no request waits while a slot is free.
// The reader never waits for room: what waits is bounded, in count and in
// bytes, and a request over either bound is refused at once.
type pending struct {
	mu      sync.Mutex
	calls   []*link.Call // waiting, oldest first
	bytes   int          // the frame bytes of the waiting calls
	running int          // calls holding a slot
	nworker int          // workers started; those beyond running wait on idle
	idle    chan *link.Call
	closed  bool // the session ended: nothing starts any more
	workers sync.WaitGroup

	maxRunning, maxCalls, maxBytes int
}

// What admit did with a request.
type admission int

const (
	admitQueued  admission = iota // it waits for a slot (or the session ended)
	admitHandOff                  // it holds a slot: send it to idle, where a worker waits
	admitSpawn                    // it holds a slot and a new worker (counted) is to run it
	admitRefused                  // the queue is full: waiting calls of bytes bytes are queued
)

// admit takes c. The first waiting request is always taken, whatever its
// size (it passed the per-message limit already).
func (p *pending) admit(c *link.Call) (a admission, waiting, bytes int) {
	n := len(c.F.Raw)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch w := len(p.calls); {
	case p.closed:
		return admitQueued, 0, 0
	case p.running < p.maxRunning:
		if p.running++; p.nworker >= p.running {
			return admitHandOff, 0, 0
		}
		p.nworker++
		p.workers.Add(1)
		return admitSpawn, 0, 0
	case w > 0 && (w >= p.maxCalls || p.bytes+n > p.maxBytes):
		return admitRefused, w, p.bytes
	}
	p.calls = append(p.calls, c)
	p.bytes += n
	return admitQueued, 0, 0
}

// next is called by a worker whose request is done: it hands over the
// oldest waiting call, which keeps the slot, or gives the slot back and
// returns nil.
func (p *pending) next() *link.Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.calls) == 0 {
		p.running--
		return nil
	}
	c := p.calls[0]
	p.calls[0] = nil
	p.calls = p.calls[1:]
	p.bytes -= len(c.F.Raw)
	return c
}

// remove takes c out of the queue, if it is still waiting, and reports
// whether it did: a request the client cancelled while it waited no longer
// counts against the queue's bounds. The caller answers for it.
func (p *pending) remove(c *link.Call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.calls, c)
	if i < 0 {
		return false
	}
	p.bytes -= len(c.F.Raw)
	p.calls = slices.Delete(p.calls, i, i+1)
	return true
}

// close stops admitting and starting requests, and waits for the workers,
// which end with the session's context.
func (p *pending) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.workers.Wait()
}
