package bridge

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestDrainAnswersInFlightAtEOF: the end of input no longer cancels the
// requests already read: the one in flight and the one waiting for a slot
// are both answered, then Run returns.
func TestDrainAnswersInFlightAtEOF(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{MaxInFlight: 1, DrainTimeout: wait})
	arrived := make(chan struct{}, 2)
	release := make(chan struct{})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[]}}`, gjson.Get(body, "id").Raw)
	})
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	h.in.Close() // end of input with one request in flight and one queued
	close(release)
	got := map[string]string{}
	for l := range h.lines {
		got[gjson.Get(l, "id").Raw] = l
	}
	for _, id := range []string{"1", "2"} {
		if !gjson.Get(got[id], "result").Exists() {
			t.Errorf("request %s: answer %q, want a result after the end of input", id, got[id])
		}
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		h.done <- nil
	case <-time.After(wait):
		t.Fatal("Run did not return after the drain")
	}
}

// TestDrainBoundAnswersWithError: a request still unanswered when the
// drain's bound passes gets one error answer naming --drain-timeout, and
// its upstream request is cancelled.
func TestDrainBoundAnswersWithError(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{DrainTimeout: time.Millisecond})
	arrived := make(chan struct{})
	cancelled := make(chan struct{})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		close(arrived)
		<-r.Context().Done()
		close(cancelled)
	})
	h.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	rest := h.stop()
	if len(rest) != 1 {
		t.Fatalf("after the end of input: %d frames %q, want one error answer", len(rest), rest)
	}
	e := gjson.Get(rest[0], "error")
	if gjson.Get(rest[0], "id").Raw != `"slow"` || !strings.Contains(e.Get("message").Str, "--drain-timeout") || e.Get("data.drainTimeoutMs").Int() != 1 {
		t.Errorf("answer %s, want an error for \"slow\" naming --drain-timeout", rest[0])
	}
	select {
	case <-cancelled:
	case <-time.After(wait):
		t.Fatal("the upstream request was not cancelled")
	}
}

// TestNoDrainByDefault: a zero DrainTimeout keeps the old end of input:
// in-flight work is cancelled and gets no answer.
func TestNoDrainByDefault(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{})
	arrived, _ := u.hold(nil)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("after the end of input: %q, want nothing", rest)
	}
}

// TestDrainSkipsCancelled: a request the client cancelled before the end
// of input gets no answer from the drain either.
func TestDrainSkipsCancelled(t *testing.T) {
	u := newUpstream(t)
	h := initialized(t, u, Config{DrainTimeout: wait})
	arrived, _ := u.hold(nil)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	<-arrived
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	if rest := h.stop(); len(rest) != 0 {
		t.Errorf("after the end of input: %q, want nothing", rest)
	}
}

// TestPipedInput: initialize and a call written at once, then the end of
// input (printf … | mcp-tasks-proxy): the call waits for initialize, and
// both are answered, in order, before Run returns.
func TestPipedInput(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			url := ""
			if legacy {
				url = newLegacyFake(t).URL
			} else {
				url = newUpstream(t).URL
			}
			h := start(t, url, Config{DrainTimeout: wait})
			h.send(initReq, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
			rest := h.stop()
			if len(rest) != 2 || gjson.Get(rest[0], "id").Raw != "0" || !gjson.Get(rest[0], "result").Exists() ||
				gjson.Get(rest[1], "id").Raw != "1" || !gjson.Get(rest[1], "result").Exists() {
				t.Errorf("answers %q, want initialize's then the call's results", rest)
			}
		})
	}
}
