package serve

import (
	"io"
	"strconv"
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
	cancelled bool
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

// cancel notes the client's notifications/cancelled for the request.
func (st *postStream) cancel() {
	st.mu.Lock()
	st.cancelled = true
	st.mu.Unlock()
}

// wasCancelled reports whether the client cancelled the request.
func (st *postStream) wasCancelled() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cancelled
}

// take returns what is queued, and the answer once it has come.
func (st *postStream) take() (frames [][]byte, final []byte, done bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	frames, st.frames = st.frames, nil
	return frames, st.final, st.done
}

// leave marks the POST as gone: later frames go to the GET stream.
func (st *postStream) leave() {
	st.mu.Lock()
	st.gone = true
	st.mu.Unlock()
}

// event is one frame of the GET stream.
type event struct {
	id    int64
	frame []byte
}

// eventLog is the GET stream's frames, with ids, kept for Last-Event-ID
// (at most max of them). A GET without Last-Event-ID starts after the last
// event any GET stream was sent, so frames sent while no GET was open are
// delivered to the next one, and none twice.
type eventLog struct {
	ids *atomic.Int64 // the session's event ids
	max int

	mu        sync.Mutex
	events    []event
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
	if len(l.events) >= 2*l.max { // trimmed once per max appends, not at each
		l.events = append(l.events[:0:0], l.events[len(l.events)-l.max:]...)
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// after returns the events after id, and a channel closed at the next
// append.
func (l *eventLog) after(id int64) ([]event, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := max(0, len(l.events)-l.max) // the log keeps max events
	i := len(l.events)
	for i > first && l.events[i-1].id > id {
		i--
	}
	return append([]event(nil), l.events[i:]...), l.wake
}

// start is where a GET without Last-Event-ID starts.
func (l *eventLog) start() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delivered
}

// sent notes that a GET stream was sent the events up to id.
func (l *eventLog) sent(id int64) {
	l.mu.Lock()
	l.delivered = max(l.delivered, id)
	l.mu.Unlock()
}

// postEventPrefix starts the ids of a POST stream's events: a GET's
// Last-Event-ID tells by it which stream it would resume (only the GET
// stream is resumable). The numbers after it come from the same counter
// as the GET stream's, so ids are unique in the session.
const postEventPrefix = "p"

// writeEvent writes one SSE event: its id (prefix and number), and the
// frame, already one line (conn.Write made it so), as its data line. The
// frame is written as it is, not copied behind the event's head.
func writeEvent(w io.Writer, prefix string, id int64, frame []byte) error {
	var head [64]byte
	b := append(head[:0], "id: "...)
	b = append(b, prefix...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, "\nevent: message\ndata: "...)
	if _, err := w.Write(b); err != nil {
		return err
	}
	if _, err := w.Write(frame); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n\n")
	return err
}
