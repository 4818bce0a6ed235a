package serve

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// rawEvent is one SSE event as written: its fields, comments apart.
type rawEvent struct {
	id, retry, data string
	hasData         bool
	comments        []string
}

// rawEvents reads a stream's events, comments kept, until its end or n
// events.
func rawEvents(sc *bufio.Scanner, n int) []rawEvent {
	var out []rawEvent
	var ev rawEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			out = append(out, ev)
			ev = rawEvent{}
			if len(out) == n {
				return out
			}
		case strings.HasPrefix(line, ":"):
			ev.comments = append(ev.comments, line)
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				ev.id = value
			case "retry":
				ev.retry = value
			case "data":
				ev.data, ev.hasData = ev.data+value, true
			}
		}
	}
	return out
}

// isPriming: an event with an id, empty data and the retry field.
func (ev rawEvent) isPriming() bool {
	return ev.id != "" && ev.hasData && ev.data == "" && ev.retry == fmt.Sprint(retryMillis)
}

// getRaw opens the GET stream (with Last-Event-ID when last is not "").
func (h *harness) getRaw(sid, last string) (*http.Response, *bufio.Scanner, context.CancelFunc) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		cancel()
		h.t.Fatalf("GET (Last-Event-ID %q): %d %q", last, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	return resp, sc, func() { cancel(); resp.Body.Close() }
}

func notification(n int, pad int) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"n":%d,"pad":%q}}`, n, strings.Repeat("x", pad))
}

// TestGetStreamPrimedResume: the GET stream starts with a priming event
// (an id, empty data, retry), and a client that got nothing more before
// it lost the stream resumes with that id and gets the events the
// connection had yet to send, not what follows them.
func TestGetStreamPrimedResume(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	sess := h.srv.lookup(sid)
	c := &conn{sess: sess}
	for i := 1; i <= 2; i++ {
		_ = c.Write(bridge.Out{Frame: notification(i, 0)})
	}
	_, sc, closeGet := h.getRaw(sid, "")
	first := rawEvents(sc, 1)
	closeGet() // lost right after the priming event
	if len(first) != 1 || !first[0].isPriming() {
		t.Fatalf("the GET stream's first event: %+v, want an id, empty data and retry: %d", first, retryMillis)
	}
	primed := first[0].id
	waitGetClosed(t, sess)
	_ = c.Write(bridge.Out{Frame: notification(3, 0)})
	_, sc, closeGet = h.getRaw(sid, primed)
	defer closeGet()
	got := rawEvents(sc, 4)
	if len(got) != 4 || !got[0].isPriming() || got[0].id == primed {
		t.Fatalf("resumed from %s: %+v, want a new priming event first", primed, got)
	}
	for i, ev := range got[1:] {
		if n := gjson.Get(ev.data, "params.n").Int(); n != int64(i+1) || ev.id == "" {
			t.Errorf("resumed from the priming id %s: event %d is %+v, want n=%d with an id", primed, i+1, ev, i+1)
		}
	}
	// Ids are unique in the session: the priming ids too.
	seen := map[string]bool{primed: true}
	for _, ev := range got {
		if seen[ev.id] {
			t.Errorf("event id %s twice", ev.id)
		}
		seen[ev.id] = true
	}
}

// TestPostStreamPrimed: a POST answered as an event stream starts with a
// priming event whose id is a POST stream's; a GET that resumes a POST
// stream gets a stream that ends at once, with nothing of the GET
// stream's, and takes no GET stream's place.
func TestPostStreamPrimed(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.initialize()
	resp, sc := h.openStream(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow_count","arguments":{"n":1},"_meta":{"progressToken":"p"}}}`)
	evs := rawEvents(sc, -1)
	resp.Body.Close()
	if len(evs) < 3 || !evs[0].isPriming() || !strings.HasPrefix(evs[0].id, postEventPrefix) {
		t.Fatalf("POST stream: %+v, want a priming event with a POST stream's id first", evs)
	}
	if last := evs[len(evs)-1]; gjson.Get(last.data, "id").Raw != "3" || !gjson.Get(last.data, "result").Exists() {
		t.Errorf("POST stream ends with %+v, want its response", last)
	}

	sess := h.srv.lookup(sid)
	_ = (&conn{sess: sess}).Write(bridge.Out{Frame: notification(1, 0)})
	_, open, closeOpen := h.getRaw(sid, "")
	defer closeOpen()
	if evs := rawEvents(open, 2); len(evs) != 2 || gjson.Get(evs[1].data, "params.n").Int() != 1 {
		t.Fatalf("the GET stream: %+v", evs)
	}
	_, sc, closeGet := h.getRaw(sid, evs[0].id)
	defer closeGet()
	if got := rawEvents(sc, -1); len(got) != 0 {
		t.Errorf("a GET resuming the POST stream %s got %+v, want a stream that ends at once", evs[0].id, got)
	}
	// The open GET stream was not taken over: it still gets the next event.
	_ = (&conn{sess: sess}).Write(bridge.Out{Frame: notification(2, 0)})
	if evs := rawEvents(open, 1); len(evs) != 1 || gjson.Get(evs[0].data, "params.n").Int() != 2 {
		t.Errorf("the GET stream after a POST stream's resume: %+v", evs)
	}
}

// TestEventLogBytes: the log of large events stays within its byte bound,
// dropping the oldest; a resume within it gets exactly what followed; one
// from before it is told that events were dropped and gets what was kept.
func TestEventLogBytes(t *testing.T) {
	const bound = 16 << 10
	var ids atomic.Int64
	l := newEventLog(bound, &ids)
	for i := 1; i <= 40; i++ {
		l.append(notification(i, 3000))
		held := 0
		for _, e := range l.events {
			held += len(e.frame)
		}
		if l.bytes() > bound || held > bound {
			t.Fatalf("after %d events of %d bytes the log holds %d (frames %d), over its bound %d", i, len(notification(i, 3000)), l.bytes(), held, bound)
		}
	}
	kept, lost, _ := l.after(0)
	if !lost || len(kept) == 0 || len(kept) >= 40 {
		t.Fatalf("from id 0: %d events, lost %v; want the newest few and lost", len(kept), lost)
	}
	if kept[len(kept)-1].id != 40 || kept[0].id != int64(41-len(kept)) {
		t.Errorf("kept ids %d..%d, want the newest, up to 40", kept[0].id, kept[len(kept)-1].id)
	}
	within, lost, _ := l.after(kept[1].id)
	if lost || len(within) != len(kept)-2 || within[0].id != kept[2].id {
		t.Errorf("from kept id %d: %d events from %d, lost %v; want the %d after it", kept[1].id, len(within), within[0].id, lost, len(kept)-2)
	}
	// One event larger than the bound is kept alone, until the next.
	l.append(notification(41, 2*bound))
	if all, _, _ := l.after(0); len(all) != 1 || all[0].id != 41 {
		t.Errorf("after an event over the bound: %d events", len(all))
	}
	l.append(notification(42, 10))
	if all, _, _ := l.after(0); len(all) != 1 || all[0].id != 42 || l.bytes() > bound {
		t.Errorf("after a small event: %d events, %d bytes", len(all), l.bytes())
	}
}

// TestGetStreamLost: over HTTP, a resume from an id that fell out of the
// log gets an SSE comment naming the loss and the setting, then what was
// kept; a resume within it gets no such comment.
func TestGetStreamLost(t *testing.T) {
	const bound = 4 << 10
	h := newHarness(t, func(c *Config) { c.EventLogBytes = bound })
	sid := h.initialize()
	c := &conn{sess: h.srv.lookup(sid)}
	for i := 1; i <= 10; i++ {
		_ = c.Write(bridge.Out{Frame: notification(i, 1000)})
	}
	kept, _, _ := c.sess.events.after(0)
	_, sc, closeGet := h.getRaw(sid, "1")
	evs := rawEvents(sc, 2+len(kept))
	closeGet()
	if len(evs) != 2+len(kept) || len(evs[1].comments) != 1 || evs[1].hasData || !strings.Contains(evs[1].comments[0], "dropped") || !strings.Contains(evs[1].comments[0], string(rewrite.HintEventLogBytes)) {
		t.Fatalf("resume from a dropped id: %+v, want the priming event, then a comment naming the loss and %s", evs, rewrite.HintEventLogBytes)
	}
	for i, ev := range evs[2:] {
		if ev.id != fmt.Sprint(kept[i].id) {
			t.Errorf("replayed event %d has id %s, want %d (the kept ones, oldest first)", i, ev.id, kept[i].id)
		}
	}
	waitGetClosed(t, c.sess)
	_, sc, closeGet = h.getRaw(sid, fmt.Sprint(kept[0].id))
	defer closeGet()
	evs = rawEvents(sc, len(kept))
	for _, ev := range evs {
		if len(ev.comments) != 0 {
			t.Errorf("a resume within the log: comment %q", ev.comments)
		}
	}
	if len(evs) != len(kept) || evs[1].id != fmt.Sprint(kept[1].id) {
		t.Errorf("resume from kept id %d: %+v", kept[0].id, evs)
	}
}

func TestLastEventID(t *testing.T) {
	for _, tc := range []struct {
		in           string
		cursor       int64
		resume, post bool
	}{
		{"", 0, false, false},
		{"12", 12, true, false},
		{"12.40", 12, true, false},
		{"p7", 0, false, true},
		{"p", 0, false, false},
		{"12.", 0, false, false},
		{"-1", 0, false, false},
		{"x", 0, false, false},
	} {
		cursor, resume, post := lastEventID(tc.in)
		if cursor != tc.cursor || resume != tc.resume || post != tc.post {
			t.Errorf("lastEventID(%q) = %d %v %v, want %d %v %v", tc.in, cursor, resume, post, tc.cursor, tc.resume, tc.post)
		}
	}
}

// bytes is what the log holds, as it counts it.
func (l *eventLog) bytes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size
}
