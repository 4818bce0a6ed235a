package bridge

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// The frame trace is an Observer.
var _ Observer = (*trace.Writer)(nil)

// hops is an Observer that keeps a line per hop.
type hops struct {
	mu    sync.Mutex
	lines []string
}

func (o *hops) add(format string, a ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, fmt.Sprintf(format, a...))
}

func (o *hops) FromClient(session, op string, frame []byte) {
	o.add("%s %s client %s", session, op, gjson.GetBytes(frame, "method").Str)
}

func (o *hops) ToClient(session, op string, frame []byte, rewrites []string) {
	o.add("%s %s to-client %v", session, op, rewrites)
}

func (o *hops) ToServer(session, op string, rewrites []string, method, url string, h http.Header, body []byte) {
	o.add("%s %s to-server %s %v", session, op, gjson.GetBytes(body, "method").Str, rewrites)
}

func (o *hops) FromServer(session, op string, status int, msg []byte, latency time.Duration, err error) {
	o.add("%s %s from-server %d", session, op, status)
}

func (o *hops) Note(session, op, note string) { o.add("%s %s note", session, op) }

// TestObserverSeesEveryHop: a request's four hops reach the Observer with
// the session's name, the request's op and the rewrites of each.
func TestObserverSeesEveryHop(t *testing.T) {
	u := newUpstream(t)
	o := &hops{}
	h := initialized(t, u, Config{Observer: o, SessionID: "s-1"})
	h.send(`{"jsonrpc":"2.0","id":"c1","method":"prompts/list"}`)
	h.next()
	h.stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	var op string
	for _, l := range o.lines {
		if _, err := fmt.Sscanf(l, "s-1 %s client prompts/list", &op); err == nil {
			break
		}
	}
	if op == "" {
		t.Fatalf("no client hop for the request:\n%v", o.lines)
	}
	for _, want := range []string{
		"s-1 " + op + " to-server prompts/list " + fmt.Sprint(link.RwForward),
		"s-1 " + op + " from-server 200",
		"s-1 " + op + " to-client [id.restore resultType.strip]",
	} {
		if !slices.Contains(o.lines, want) {
			t.Errorf("no hop %q in:\n%v", want, o.lines)
		}
	}
}

// TestTracedSessionRefusesBrokenFrames: with a trace, a client line cut
// short is a parse error (-32700) and a server answer that is not valid
// JSON becomes the proxy's error, as without one; the session goes on.
func TestTracedSessionRefusesBrokenFrames(t *testing.T) {
	u := newUpstream(t)
	u.setHandler(func(w http.ResponseWriter, r *http.Request, b string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","messages":[}}`, gjson.Get(b, "id").Raw)
	})
	var buf syncBuf
	tw := trace.New(&buf, trace.Options{})
	h := initialized(t, u, Config{Observer: tw})
	h.send(`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p"}`)
	if a := h.next(); gjson.Get(a, "error.code").Int() != -32700 {
		t.Errorf("the answer to a line cut short: %s", a)
	}
	h.send(`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"p"}}`)
	if a := h.next(); gjson.Get(a, "id").Raw != "8" || gjson.Get(a, "error.code").Int() != -32603 {
		t.Errorf("the answer to a broken server answer: %s", a)
	}
	h.stop()
	if _, err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
