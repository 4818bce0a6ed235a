package bridge

import "sync"

// pending is the FIFO of requests read from stdin and waiting for an
// in-flight slot. The reader only ever appends without waiting, so it keeps
// reading stdin whatever is queued: the client's answers to the proxy's own
// requests, its cancels, pings and end of input are never stuck behind
// requests (DESIGN.md invariant 11). The starter is its one consumer.
//
// What it holds is bounded, in count and in bytes; a request over either
// bound is refused with an error at once rather than held, so memory stays
// bounded without ever blocking the reader.
type pending struct {
	mu    sync.Mutex
	jobs  []job // jobs[head:] are waiting, oldest first
	head  int
	bytes int           // the frame bytes of the waiting jobs
	wake  chan struct{} // signalled (never blocking) when a job is added

	maxJobs  int
	maxBytes int
}

func newPending(maxJobs, maxBytes int) *pending {
	return &pending{wake: make(chan struct{}, 1), maxJobs: maxJobs, maxBytes: maxBytes}
}

// push appends j, unless that would take the queue over its bounds; then
// it reports false, with the jobs waiting and their bytes. The first
// waiting request is always taken, whatever its size (it passed the
// per-message limit already).
func (p *pending) push(j job) (ok bool, waiting, bytes int) {
	n := len(j.c.f.Raw)
	p.mu.Lock()
	waiting = len(p.jobs) - p.head
	if waiting > 0 && (waiting >= p.maxJobs || p.bytes+n > p.maxBytes) {
		bytes = p.bytes
		p.mu.Unlock()
		return false, waiting, bytes
	}
	if p.head > 0 && len(p.jobs) == cap(p.jobs) {
		// Reuse the room the consumed jobs left at the front.
		k := copy(p.jobs, p.jobs[p.head:])
		clear(p.jobs[k:])
		p.jobs, p.head = p.jobs[:k], 0
	}
	p.jobs = append(p.jobs, j)
	p.bytes += n
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default: // a wake-up is already due
	}
	return true, 0, 0
}

// pop takes the oldest waiting job, if any.
func (p *pending) pop() (job, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.head == len(p.jobs) {
		return job{}, false
	}
	j := p.jobs[p.head]
	p.jobs[p.head] = job{}
	p.head++
	p.bytes -= len(j.c.f.Raw)
	if p.head == len(p.jobs) {
		p.jobs, p.head = p.jobs[:0], 0
	}
	return j, true
}

// remove takes the job of c out of the queue, if it is still waiting, and
// reports whether it did: a request the client cancelled while it waited no
// longer counts against the queue's bounds. The caller answers for it (the
// starter never sees it).
func (p *pending) remove(c *call) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := p.head; i < len(p.jobs); i++ {
		if p.jobs[i].c != c {
			continue
		}
		p.bytes -= len(p.jobs[i].c.f.Raw)
		n := copy(p.jobs[i:], p.jobs[i+1:])
		p.jobs[i+n] = job{}
		p.jobs = p.jobs[:i+n]
		if p.head == len(p.jobs) {
			p.jobs, p.head = p.jobs[:0], 0
		}
		return true
	}
	return false
}
