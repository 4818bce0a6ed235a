package bridge

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// chanConn is a Conn with streams, as an HTTP front would be: each message
// carries the name of the stream it came on.
type chanConn struct {
	in  chan In
	out chan Out
}

func newChanConn() *chanConn {
	return &chanConn{in: make(chan In, 16), out: make(chan Out, 256)}
}

func (c *chanConn) Read() (In, error) {
	m, ok := <-c.in
	if !ok {
		return In{}, io.EOF
	}
	if m.Frame == nil { // a stand-in for an over-long message
		return In{}, &TooLargeError{Limit: 7, Stream: m.Stream}
	}
	return m, nil
}

func (c *chanConn) Write(o Out) error { c.out <- o; return nil }
func (c *chanConn) Flush() error      { return nil }

func (c *chanConn) send(stream, frame string) { c.in <- In{Frame: []byte(frame), Stream: stream} }

func (c *chanConn) next(t *testing.T) Out {
	t.Helper()
	select {
	case o := <-c.out:
		return o
	case <-time.After(wait):
		t.Fatal("no frame from the session")
	}
	return Out{}
}

// serveConn runs a session over a chanConn until the test ends.
func serveConn(t *testing.T, url string, cfg Config) *chanConn {
	t.Helper()
	client, err := routing.New(routing.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = client
	conn := newChanConn()
	done := make(chan error, 1)
	go func() { done <- New(cfg).Serve(context.Background(), conn); client.CloseIdle() }()
	t.Cleanup(func() {
		close(conn.in)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(wait):
			t.Error("Serve did not return after the end of input")
		}
	})
	return conn
}

// Every frame a request causes comes back tagged with the stream the
// request came on; its answer is marked final; a cancelled request ends
// with an empty final; what belongs to no request has no stream.
func TestConnTagsFramesWithTheirStream(t *testing.T) {
	u := newUpstream(t)
	release := make(chan struct{})
	u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
		id := gjson.Get(body, "id").Raw
		name := gjson.Get(body, "params.name").Str
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n")
		w.(http.Flusher).Flush()
		if name == "held" {
			<-r.Context().Done()
			return
		}
		<-release
		fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"content\":[]}}\n\n", id)
	})
	conn := serveConn(t, u.URL, Config{})

	conn.send("s-init", initReq)
	if o := conn.next(t); o.Stream != "s-init" || !o.Final || gjson.GetBytes(o.Frame, "result.protocolVersion").Str == "" {
		t.Fatalf("initialize answer: %+v %s", o, o.Frame)
	}
	conn.send("s-note", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	conn.send("s-a", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","_meta":{"progressToken":"p"}}}`)
	o := conn.next(t)
	if gjson.GetBytes(o.Frame, "method").Str != "notifications/progress" || o.Stream != "s-a" || o.Final || o.Op == "" {
		t.Fatalf("progress of a: stream %v final %v op %q: %s", o.Stream, o.Final, o.Op, o.Frame)
	}
	op := o.Op
	close(release)
	o = conn.next(t)
	if gjson.GetBytes(o.Frame, "id").Str != "a" || o.Stream != "s-a" || !o.Final || o.Op != op {
		t.Fatalf("answer of a: stream %v final %v op %q (want %q): %s", o.Stream, o.Final, o.Op, op, o.Frame)
	}

	conn.send("s-b", `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"held","_meta":{"progressToken":"p"}}}`)
	if o := conn.next(t); o.Stream != "s-b" || o.Final {
		t.Fatalf("progress of b: %+v", o)
	}
	conn.send("s-cancel", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}`)
	if o := conn.next(t); o.Stream != "s-b" || !o.Final || o.Frame != nil {
		t.Fatalf("the cancelled request's end: stream %v final %v frame %s", o.Stream, o.Final, o.Frame)
	}

	conn.send("s-ping", `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if o := conn.next(t); o.Stream != "s-ping" || !o.Final || gjson.GetBytes(o.Frame, "id").Str != "p" {
		t.Fatalf("ping: %+v %s", o, o.Frame)
	}
	conn.send("s-bad", `{"jsonrpc":"2.0","id":9,"method":`)
	if o := conn.next(t); o.Stream != "s-bad" || !o.Final || gjson.GetBytes(o.Frame, "error.code").Int() != -32700 {
		t.Fatalf("parse error: %+v %s", o, o.Frame)
	}
	conn.in <- In{Stream: "s-big"}
	if o := conn.next(t); o.Stream != "s-big" || !o.Final || gjson.GetBytes(o.Frame, "error.code").Int() != -32600 {
		t.Fatalf("over-long message: %+v %s", o, o.Frame)
	}
}
