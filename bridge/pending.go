package bridge

import "sync"

// pending admits the client's requests to the in-flight slots. One that
// finds a slot free goes straight from the reader to a worker; one that
// finds none waits in a FIFO, and a worker whose request is done takes the
// oldest waiting one before it gives its slot back. Both happen under one
// lock, so no request waits while a slot is free. Workers (at most one per
// slot) stay for the next request: a fresh goroutine per request would grow
// its stack anew each time.
//
// The reader never waits for room, so the client's answers, cancels, pings
// and end of input are never stuck behind requests. What waits is bounded,
// in count and in bytes; a request over either bound is refused with an
// error at once rather than held.
type pending struct {
	mu      sync.Mutex
	calls   []*call // calls[head:] are waiting, oldest first
	head    int
	bytes   int  // the frame bytes of the waiting calls
	running int  // calls holding a slot
	nworker int  // workers started; those beyond running are between requests
	closed  bool // the session ended: nothing starts any more
	idle    chan *call
	workers sync.WaitGroup

	maxRunning, maxCalls, maxBytes int
}

func newPending(maxRunning, maxCalls, maxBytes int) *pending {
	return &pending{idle: make(chan *call), maxRunning: maxRunning, maxCalls: maxCalls, maxBytes: maxBytes}
}

// What admit did with a request.
type admission int

const (
	admitQueued  admission = iota // it waits for a slot (or the session ended)
	admitHandOff                  // it holds a slot: send it to p.idle
	admitSpawn                    // it holds a slot and a new worker (counted) is to run it
	admitRefused                  // the queue is full
)

// admit takes c, and for a refusal says how many calls of how many bytes
// were waiting. The first waiting request is always taken, whatever its
// size (it passed the per-message limit already).
func (p *pending) admit(c *call) (a admission, waiting, bytes int) {
	n := len(c.f.Raw)
	p.mu.Lock()
	defer p.mu.Unlock()
	waiting = len(p.calls) - p.head
	switch {
	case p.closed:
		return admitQueued, 0, 0
	case p.running < p.maxRunning:
		if p.running++; p.nworker >= p.running {
			return admitHandOff, 0, 0 // a worker is between requests
		}
		p.nworker++
		p.workers.Add(1)
		return admitSpawn, 0, 0
	case waiting > 0 && (waiting >= p.maxCalls || p.bytes+n > p.maxBytes):
		return admitRefused, waiting, p.bytes
	}
	if p.head > 0 && len(p.calls) == cap(p.calls) {
		// Reuse the room the consumed calls left at the front.
		k := copy(p.calls, p.calls[p.head:])
		clear(p.calls[k:])
		p.calls, p.head = p.calls[:k], 0
	}
	p.calls = append(p.calls, c)
	p.bytes += n
	return admitQueued, 0, 0
}

// next is called by a worker whose request is done: it hands over the
// oldest waiting call, which keeps the slot, or gives the slot back and
// returns nil.
func (p *pending) next() *call {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.head == len(p.calls) {
		p.running--
		return nil
	}
	c := p.calls[p.head]
	p.calls[p.head] = nil
	p.head++
	p.bytes -= len(c.f.Raw)
	if p.head == len(p.calls) {
		p.calls, p.head = p.calls[:0], 0
	}
	return c
}

// remove takes c out of the queue, if it is still waiting, and reports
// whether it did: a request the client cancelled while it waited no longer
// counts against the queue's bounds. The caller answers for it.
func (p *pending) remove(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := p.head; i < len(p.calls); i++ {
		if p.calls[i] != c {
			continue
		}
		p.bytes -= len(c.f.Raw)
		n := copy(p.calls[i:], p.calls[i+1:])
		p.calls[i+n] = nil
		p.calls = p.calls[:i+n]
		if p.head == len(p.calls) {
			p.calls, p.head = p.calls[:0], 0
		}
		return true
	}
	return false
}

// close stops admitting and starting requests, and waits for the workers,
// which end with the session's context.
func (p *pending) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.workers.Wait()
}
