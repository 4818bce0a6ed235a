package serve

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
)

// postStream is one POST that carried a request: the frames the bridge
// sends for it, until its one answer (or its end without one).
type postStream struct {
	id     []byte // the request's raw id
	method string
	sse    bool // the client accepts text/event-stream
	wake   chan struct{}

	mu     sync.Mutex
	frames [][]byte // not yet written
	final  []byte   // the answer (nil: ended without one)
	done   bool     // the answer, or the end, has come
	gone   bool     // the HTTP request has ended
	// cancelled: the client sent notifications/cancelled for the request,
	// so nothing more is sent for it, not even the error of a session
	// that ends first.
	cancelled atomic.Bool
}

func newPostStream(id []byte, method string, sse bool) *postStream {
	return &postStream{id: id, method: method, sse: sse, wake: make(chan struct{}, 1)}
}

// push queues a frame for the POST. A frame before the answer is taken only
// while the POST is open and can carry it (text/event-stream).
func (st *postStream) push(o bridge.Out) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.gone || st.done:
		return false
	case o.Final:
		st.final, st.done = o.Frame, true
	case !st.sse:
		return false
	default:
		st.frames = append(st.frames, o.Frame)
	}
	select {
	case st.wake <- struct{}{}:
	default:
	}
	return true
}

func (st *postStream) take() (frames [][]byte, final []byte, done bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	frames, st.frames = st.frames, nil
	return frames, st.final, st.done
}

// leave marks the POST gone: later frames go to the GET stream.
func (st *postStream) leave() {
	st.mu.Lock()
	st.gone = true
	st.mu.Unlock()
}

type event struct {
	id    int64
	frame []byte
}

// eventOverhead is what the log counts for an event besides its frame:
// its id, its slice header and its place in the log.
const eventOverhead = 64

func eventCost(frame []byte) int { return len(frame) + eventOverhead }

// eventLog is the GET stream's frames, with ids, kept for Last-Event-ID:
// the newest of them, within max bytes (frames and eventOverhead each);
// past it the oldest are dropped. One event larger than max is kept alone,
// until the next, so that a GET stream open at the time still gets it. A
// GET without Last-Event-ID starts after the last event any GET stream
// was sent, so frames sent while no GET was open are delivered to the next
// one, and none twice.
type eventLog struct {
	ids *atomic.Int64 // the session's event ids
	max int           // bytes

	mu        sync.Mutex
	events    []event
	size      int           // the events' cost
	dropped   int64         // the newest event dropped for the bound (0: none)
	delivered int64         // the last id written to a GET stream
	wake      chan struct{} // closed at the next append
}

func newEventLog(max int, ids *atomic.Int64) *eventLog {
	return &eventLog{ids: ids, max: max, wake: make(chan struct{})}
}

func (l *eventLog) append(frame []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event{id: l.ids.Add(1), frame: frame})
	l.size += eventCost(frame)
	n := 0
	for l.size > l.max && n < len(l.events)-1 {
		l.size -= eventCost(l.events[n].frame)
		l.dropped = l.events[n].id
		n++
	}
	if n > 0 {
		clear(l.events[:n]) // their frames go now, not when the array does
		l.events = l.events[n:]
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// after returns the events after id, and a channel closed at the next
// append. lost reports that events after id were dropped for the bound:
// what is returned starts at the oldest event kept.
func (l *eventLog) after(id int64) (events []event, lost bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.events)
	for i > 0 && l.events[i-1].id > id {
		i--
	}
	return append([]event(nil), l.events[i:]...), id < l.dropped, l.wake
}

// start is where a GET without Last-Event-ID starts.
func (l *eventLog) start() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delivered
}

func (l *eventLog) sent(id int64) {
	l.mu.Lock()
	l.delivered = max(l.delivered, id)
	l.mu.Unlock()
}

// postEventPrefix starts the ids of a POST stream's events, so that a
// GET's Last-Event-ID tells which stream it would resume. Only the GET
// stream is resumable: a request's answer goes on the POST that carried
// it, and a GET that resumes a POST stream gets a stream that ends at
// once. The numbers come from the GET stream's counter, so ids are unique
// in the session.
const postEventPrefix = "p"

// writeEvent writes one SSE event: its id, and the frame, already one
// line (conn.Write made it so), as its data line, not copied behind the
// event's head.
func writeEvent(w io.Writer, prefix string, id int64, frame []byte) error {
	if _, err := fmt.Fprintf(w, "id: %s%d\nevent: message\ndata: ", prefix, id); err != nil {
		return err
	}
	if _, err := w.Write(frame); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n\n")
	return err
}

// retryMillis is the reconnection time (SSE retry) each priming event
// announces: how long a client that lost a stream waits to resume it.
const retryMillis = 1000

// lastEventID reads a GET's Last-Event-ID: the GET stream's position it
// names (an event's id, or a priming id: resume), or a POST stream's event
// (post). Anything else, or none, is a GET that does not resume.
func lastEventID(v string) (cursor int64, resume, post bool) {
	if rest, ok := strings.CutPrefix(v, postEventPrefix); ok {
		_, err := strconv.ParseUint(rest, 10, 63)
		return 0, false, err == nil
	}
	pos, unique, primed := strings.Cut(v, ".")
	n, err := strconv.ParseUint(pos, 10, 63)
	if err != nil {
		return 0, false, false
	}
	if primed {
		if _, err := strconv.ParseUint(unique, 10, 63); err != nil {
			return 0, false, false
		}
	}
	return int64(n), true, false
}
