package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Timeouts and progress: the idle and request bounds, retries of safe requests, and progress that
// never goes backwards.

// TestEraTimeouts: --idle-timeout against a silent server and
// --request-timeout against one that keeps sending progress.
func TestEraTimeouts(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		headers bool // send SSE headers, then nothing
	}{
		{"no answer at all", false},
		{"silent event stream", true},
	} {
		t.Run("idle: "+tc.name, func(t *testing.T) {
			t.Parallel()
			gone := make(chan struct{})
			var once sync.Once
			up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, r *http.Request, name, id string, _ []byte) {
				if name != "silent" {
					writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}]}}`)
					return
				}
				if tc.headers {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					_ = http.NewResponseController(w).Flush()
				}
				<-r.Context().Done()
				once.Do(func() { close(gone) })
			}})
			p := startProxy(t, []string{"--idle-timeout", "500ms", up.URL})
			erInit(p, `{}`)
			e := errorOf(t, p.call(`"idle"`, "tools/call", `{"name":"silent","arguments":{}}`))
			if e.Get("code").Int() != -32603 || !strings.Contains(e.Get("message").String(), "--idle-timeout") {
				t.Errorf("error %s, want -32603 naming --idle-timeout", e.Raw)
			}
			erWait(t, gone, "the server seeing the timed-out request closed")
			resultOf(t, p.call(`"after"`, "ping", ""))
			if got := resultOf(t, p.call(`"works"`, "tools/call", `{"name":"fine","arguments":{}}`)).Get("content.0.text").String(); got != "ok" {
				t.Errorf("call after the timeout answered %q", got)
			}
		})
	}

	t.Run("request timeout with steady progress", func(t *testing.T) {
		t.Parallel()
		gone := make(chan struct{})
		var once sync.Once
		up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, r *http.Request, _, _ string, body []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			tok := gjson.GetBytes(body, "params._meta.progressToken").Raw
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 1; ; i++ {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d}}\n\n", tok, i)
				_ = http.NewResponseController(w).Flush()
				select {
				case <-r.Context().Done():
					once.Do(func() { close(gone) })
					return
				case <-tick.C:
				}
			}
		}})
		// The idle timeout is far longer than the gap between two progress
		// notifications and far shorter than the hard maximum: the call
		// outlives it only because progress restarts it.
		p := startProxy(t, []string{"--idle-timeout", "1s", "--request-timeout", "2500ms", up.URL})
		erInit(p, `{}`)
		mark := p.mark()
		e := errorOf(t, p.call(`"long"`, "tools/call", `{"name":"forever","arguments":{},"_meta":{"progressToken":"long"}}`))
		if e.Get("code").Int() != -32603 || !strings.Contains(e.Get("message").String(), "--request-timeout") {
			t.Errorf("error %s, want -32603 naming --request-timeout", e.Raw)
		}
		erWait(t, gone, "the server seeing the timed-out request closed")
		progress := 0
		for _, l := range p.all()[mark:] {
			if gjson.GetBytes(l, "method").String() == "notifications/progress" {
				progress++
			}
		}
		if progress == 0 {
			t.Errorf("no progress reached the client before the timeout")
		}
		resultOf(t, p.call(`"after"`, "ping", ""))
	})
}

// TestEraProgressMonotonic: progress that goes backwards or repeats on the
// stream is dropped; the rest reaches the client in order, before the
// response.
func TestEraProgressMonotonic(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, _ *http.Request, _, id string, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		tok := gjson.GetBytes(body, "params._meta.progressToken").Raw
		for _, v := range []string{"1", "3", "2", "3", "4"} {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%s}}\n\n", tok, v)
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
	}})
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	mark := p.mark()
	resultOf(t, p.call(`"p"`, "tools/call", `{"name":"steps","arguments":{},"_meta":{"progressToken":7}}`))
	var seen []string
	answered := false
	for _, l := range p.all()[mark:] {
		switch {
		case gjson.GetBytes(l, "method").String() == "notifications/progress":
			if answered {
				t.Errorf("progress after the response: %s", l)
			}
			if tok := gjson.GetBytes(l, "params.progressToken").Raw; tok != "7" {
				t.Errorf("progress token %s, want 7", tok)
			}
			seen = append(seen, gjson.GetBytes(l, "params.progress").Raw)
		case gjson.GetBytes(l, "id").Raw == `"p"`:
			answered = true
		}
	}
	if want := []string{"1", "3", "4"}; !slices.Equal(seen, want) {
		t.Errorf("progress seen %v, want %v", seen, want)
	}
}
