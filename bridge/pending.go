package bridge

import "sync"

// pending admits the requests read from the client to the in-flight slots.
// A request that finds a slot free starts at once: the reader hands it to
// an idle worker, or starts one (at most one per slot); one that finds none
// waits in a FIFO, and a worker that finishes takes the oldest waiting
// request before it gives its slot back. Taking a slot and queueing, and
// giving one back and dequeuing, happen under one lock, so no request
// waits while a slot is free, and no goroutine sits between the reader and
// the workers. Workers stay for the next request: a fresh goroutine per
// request would grow its stack anew each time.
//
// The reader never waits here, so it keeps reading whatever is queued: the
// client's answers to the proxy's own requests, its cancels, pings and end
// of input are never stuck behind requests. What
// waits is bounded, in count and in bytes; a request over either bound is
// refused with an error at once rather than held, so memory stays bounded
// without ever blocking the reader.
type pending struct {
	mu      sync.Mutex
	calls   []*call // calls[head:] are waiting, oldest first
	head    int
	bytes   int  // the frame bytes of the waiting calls
	running int  // calls holding a slot
	closed  bool // the session ended: nothing starts any more
	nworker int  // workers started
	workers sync.WaitGroup
	idle    chan *call // to a worker between requests

	maxRunning int
	maxCalls   int
	maxBytes   int
}

func newPending(maxRunning, maxCalls, maxBytes int) *pending {
	return &pending{idle: make(chan *call), maxRunning: maxRunning, maxCalls: maxCalls, maxBytes: maxBytes}
}

// admit takes c: start reports that c holds a slot and the caller is to
// hand it to a worker; otherwise c waits, or, when that
// would take the queue over its bounds, ok is false, with the calls waiting
// and their bytes. The first waiting request is always taken, whatever its
// size (it passed the per-message limit already). Once closed, admit neither
// starts nor queues.
func (p *pending) admit(c *call) (start, ok bool, waiting, bytes int) {
	n := len(c.f.Raw)
	p.mu.Lock()
	defer p.mu.Unlock()
	waiting = len(p.calls) - p.head
	switch {
	case p.closed:
		return false, true, 0, 0
	case p.running < p.maxRunning:
		p.running++
		return true, true, 0, 0
	case waiting > 0 && (waiting >= p.maxCalls || p.bytes+n > p.maxBytes):
		return false, false, waiting, p.bytes
	}
	if p.head > 0 && len(p.calls) == cap(p.calls) {
		// Reuse the room the consumed calls left at the front.
		k := copy(p.calls, p.calls[p.head:])
		clear(p.calls[k:])
		p.calls, p.head = p.calls[:k], 0
	}
	p.calls = append(p.calls, c)
	p.bytes += n
	return false, true, 0, 0
}

// next is called by a worker whose call is done: it hands over the oldest
// waiting call, which keeps the slot, or gives the slot back and returns
// nil.
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
// counts against the queue's bounds. The caller answers for it (no worker
// sees it).
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

// spawn reports whether a new worker may start (and counts it in workers):
// not once every slot has one, nor once closed.
func (p *pending) spawn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.nworker == p.maxRunning {
		return false
	}
	p.nworker++
	p.workers.Add(1)
	return true
}

// close stops admitting and starting requests, and waits for the workers
// to end (their calls' contexts are cancelled by then).
func (p *pending) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.workers.Wait()
}
