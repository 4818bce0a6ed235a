package bridge

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// queued bounds the queue in these tests.
const queued = 16

// writeBounded writes lines to the session's stdin without letting a
// session that stopped reading hang the test: the write runs aside, and the
// test fails if it has not gone through within the bound.
func (h *harness) writeBounded(lines ...string) {
	h.t.Helper()
	done := make(chan error, 1)
	go func() {
		var err error
		for _, l := range lines {
			if _, err = io.WriteString(h.in, l+"\n"); err != nil {
				break
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			h.t.Fatalf("write: %v", err)
		}
	case <-time.After(wait):
		h.t.Fatal("the session stopped reading stdin")
	}
}

// TestPipelinedCallsEachNeedingInput: a client pipelines more tools/calls
// than the in-flight bound and its queue hold, and each call needs one
// elicitation answer (MRTR). Every answer the client writes must be read,
// however many requests wait, or the session deadlocks for good.
func TestPipelinedCallsEachNeedingInput(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{MaxInFlight: 1, MaxQueued: queued})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		w.Header().Set("Content-Type", "application/json")
		id := gjson.Get(body, "id").Raw
		if ans := gjson.Get(body, "params.inputResponses.k"); ans.Exists() {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[{"type":"text","text":%s}]}}`, id, ans.Get("content.n").Raw)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{"mode":"form","message":"n?","requestedSchema":{"type":"object","properties":{"n":{"type":"number"}}}}}}}}`, id)
	})
	// 1 in flight and 16 queued per slot: 40 calls are more than both.
	const calls = 40
	var lines []string
	for i := range calls {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, 100+i))
	}
	// The first call alone, until it asks: then it holds the one slot.
	// Before that the initialize's worker may still hold it (the slot is
	// given back after the answer is queued), and a call read meanwhile
	// waits in the queue, so the queue would hold one call less.
	h.writeBounded(lines[0])
	first := h.next()
	if gjson.Get(first, "method").Str != "elicitation/create" {
		t.Fatalf("the first call did not ask: %s", first)
	}
	go func() { // the pipe is synchronous; the session must read all of it
		for _, l := range lines[1:] {
			if _, err := io.WriteString(h.in, l+"\n"); err != nil {
				return
			}
		}
	}()
	answered, refused, asked := 0, 0, 0
	for f := first; ; f = h.next() {
		switch {
		case gjson.Get(f, "method").Str == "elicitation/create":
			asked++
			h.writeBounded(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"n":%d}}}`, gjson.Get(f, "id").Raw, asked))
		case gjson.Get(f, "error").Exists():
			if !strings.Contains(gjson.Get(f, "error.message").Str, "--max-in-flight") {
				t.Errorf("unexpected error: %s", f)
			}
			refused++
		case gjson.Get(f, "result.content").Exists():
			answered++
		default:
			t.Fatalf("unexpected frame: %s", f)
		}
		if answered+refused == calls {
			break
		}
	}
	if answered != asked {
		t.Errorf("%d calls answered after %d elicitations", answered, asked)
	}
	// 1 in flight, 16 waiting, and whatever the worker took meanwhile;
	// no call may be lost either way.
	if answered < 17 {
		t.Errorf("only %d of %d calls ran (%d refused); the queue should hold 16", answered, calls, refused)
	}
}

// TestReaderNeverParksOnTheQueue: with the one slot taken by a call that
// hangs and the queue behind it full, a ping is still answered, a cancel
// still reaches a queued request, requests over the queue's bound are
// refused at once (one answer each), and end of input still ends the
// session.
func TestReaderNeverParksOnTheQueue(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{MaxInFlight: 1, MaxQueued: queued})
	release := make(chan struct{})
	defer close(release)
	arrived, started := u.hold(release)
	h.writeBounded(`{"jsonrpc":"2.0","id":"hang","method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	// 16 wait in the queue; 4 more are over its bound.
	var lines []string
	for i := range queued + 4 {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, i))
	}
	lines = append(lines,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	h.writeBounded(lines...)
	refused := map[int64]bool{}
	for {
		f := h.next()
		if gjson.Get(f, "id").Str == "p" {
			if !gjson.Get(f, "result").IsObject() {
				t.Errorf("ping answer: %s", f)
			}
			break
		}
		if gjson.Get(f, "error.data.waiting").Int() != queued {
			t.Errorf("unexpected frame before the ping's answer: %s", f)
		}
		refused[gjson.Get(f, "id").Int()] = true
	}
	for i := queued; i < queued+4; i++ {
		if !refused[int64(i)] {
			t.Errorf("request %d over the queue's bound was not refused (refused: %v)", i, refused)
		}
	}
	// End of input gets through too: Run returns, and the cancelled
	// request 3 and the hung ones get nothing more.
	rest := h.stop()
	for _, f := range rest {
		if gjson.Get(f, "id").Int() == 3 {
			t.Errorf("the cancelled request was answered: %s", f)
		}
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d calls reached the server; only the one in flight should have", n)
	}
}

// TestRequestTimeoutBoundsTheWaitForTheClient: --request-timeout bounds
// the whole request, the wait for the client's answer to an elicitation
// included. A client that never answers gets the ask cancelled, then one
// error naming the flag.
func TestRequestTimeoutBoundsTheWaitForTheClient(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{RequestTimeout: 300 * time.Millisecond})
	var calls atomic.Int32
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{"mode":"form","message":"n?","requestedSchema":{"type":"object","properties":{}}}}}}}`, gjson.Get(body, "id").Raw)
	})
	h.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
	ask := h.next()
	if gjson.Get(ask, "method").Str != "elicitation/create" {
		t.Fatalf("want an elicitation, got %s", ask)
	}
	// The client never answers.
	cancel := h.next()
	if gjson.Get(cancel, "method").Str != "notifications/cancelled" || gjson.Get(cancel, "params.requestId").Raw != gjson.Get(ask, "id").Raw {
		t.Errorf("want the ask cancelled, got %s", cancel)
	}
	r := h.next()
	if gjson.Get(r, "id").Int() != 7 || !strings.Contains(gjson.Get(r, "error.message").Str, "--request-timeout") {
		t.Errorf("want one error naming --request-timeout, got %s", r)
	}
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("frames after the answer: %v", rest)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server saw %d calls, want 1", n)
	}
}

// TestCancelledQueuedRequestsLeaveTheQueue: requests the client cancels
// while they wait for a slot leave the queue at once, so they do not count
// against its bound: with the slot held by a hung call and the queue filled
// and then cancelled, a new request is queued and answered, not refused.
func TestCancelledQueuedRequestsLeaveTheQueue(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{MaxInFlight: 1, MaxQueued: queued})
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	var calls atomic.Int32
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		if calls.Add(1) == 1 {
			arrived <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, gjson.Get(body, "id").Raw)
	})
	h.writeBounded(`{"jsonrpc":"2.0","id":"hang","method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	var lines []string
	for i := range queued {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x"}}`, i))
	}
	for i := range queued {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`, i))
	}
	lines = append(lines,
		`{"jsonrpc":"2.0","id":"new","method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	h.writeBounded(lines...)
	if f := h.next(); gjson.Get(f, "id").Str != "p" {
		t.Fatalf("want only the ping's answer while the slot is held, got %s", f)
	}
	close(release)
	got := map[string]string{}
	for len(got) < 2 {
		f := h.next()
		got[gjson.Get(f, "id").String()] = f
	}
	if f := got["new"]; !gjson.Get(f, "result").Exists() {
		t.Errorf("the request sent after the queue's requests were cancelled: %s, want its result", f)
	}
	if _, ok := got["hang"]; !ok {
		t.Errorf("answers = %v, want hang and new", got)
	}
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("frames for cancelled requests: %v", rest)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls reached the server, want 2 (hang, new)", n)
	}
}

// TestQueueBytesBoundNamesItsFlag: a request refused because the waiting
// requests' bytes reach --max-message-size (not their count) gets an error
// naming that flag, not --max-in-flight, which would not help.
func TestQueueBytesBoundNamesItsFlag(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{MaxInFlight: 1, MaxQueued: queued, MaxMessageBytes: 1000})
	release := make(chan struct{})
	defer close(release)
	arrived, _ := u.hold(release)
	h.writeBounded(`{"jsonrpc":"2.0","id":"hang","method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	pad := strings.Repeat("a", 600)
	h.writeBounded(
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"pad":"`+pad+`"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","arguments":{"pad":"`+pad+`"}}}`)
	f := h.next()
	msg := gjson.Get(f, "error.message").Str
	if gjson.Get(f, "id").Int() != 2 || !strings.Contains(msg, "--max-message-size") || strings.Contains(msg, "--max-in-flight") {
		t.Errorf("request over the queue's bytes bound: %s, want an error naming --max-message-size", f)
	}
}
