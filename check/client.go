package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// client is the check's side of a bridge session run in process: it writes
// what a 2025-11-25 client would, over an in-memory bridge.Conn, and reads
// the session's answers. Requests go one at a time.
type client struct {
	sess   *bridge.Session
	in     chan []byte   // to the session's reader
	out    chan []byte   // from the session's writer
	inEnd  chan struct{} // closed: the check sends no more
	gone   chan struct{} // closed: the check reads no more
	served chan error    // Serve's result
	endMu  sync.Once
	ids    int
}

// start runs the session over a new client's Conn until end.
func start(ctx context.Context, sess *bridge.Session) *client {
	c := &client{sess: sess, in: make(chan []byte), out: make(chan []byte), inEnd: make(chan struct{}), gone: make(chan struct{}), served: make(chan error, 1)}
	go func() { c.served <- sess.Serve(ctx, pipe{c}) }()
	return c
}

// end ends the session's input and waits up to bound for the session to
// answer what it has read, end its upstream session and return.
func (c *client) end(bound time.Duration) {
	c.endMu.Do(func() {
		close(c.inEnd)
		t := time.NewTimer(bound)
		defer t.Stop()
	wait:
		for {
			select {
			case <-c.out: // a frame nobody waits for any more
			case <-c.served:
				break wait
			case <-t.C:
				break wait
			}
		}
		close(c.gone)
	})
}

// send hands one message to the session.
func (c *client) send(ctx context.Context, msg []byte) error {
	select {
	case c.in <- msg:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case err := <-c.served:
		c.served <- err
		return errEnded
	}
}

var errEnded = errors.New("the session ended before it answered")

// call sends a request and returns the session's answer: the whole frame.
// Requests from the server on the way are answered as a client without
// those features would answer them; notifications are skipped.
func (c *client) call(ctx context.Context, method string, params []byte) (gjson.Result, error) {
	c.ids++
	id := strconv.AppendQuote(nil, "check-"+strconv.Itoa(c.ids))
	msg := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
	if err := c.send(ctx, msg); err != nil {
		return gjson.Result{}, err
	}
	for {
		var frame []byte
		select {
		case frame = <-c.out:
		case <-ctx.Done():
			return gjson.Result{}, ctx.Err()
		case err := <-c.served:
			c.served <- err
			return gjson.Result{}, errEnded
		}
		m, err := rewrite.Parse(frame)
		switch {
		case err != nil:
		case m.Kind == rewrite.KindResponse && m.ID.Raw == string(id):
			return gjson.ParseBytes(frame), nil
		case m.Kind == rewrite.KindRequest:
			if err := c.send(ctx, serverAnswer(&m)); err != nil {
				return gjson.Result{}, err
			}
		}
	}
}

// serverAnswer answers a request of the server: ping and roots/list as a
// client does, anything else as a method this client does not offer.
func serverAnswer(m *rewrite.Frame) []byte {
	id := []byte(m.ID.Raw)
	switch m.Method {
	case "ping":
		return rewrite.ResultFrame(id, []byte(`{}`))
	case "roots/list":
		return rewrite.ResultFrame(id, []byte(`{"roots":[]}`))
	}
	return rewrite.ErrorFrame(id, -32601, "mcp-tasks-proxy check does not answer "+m.Method, nil)
}

// pipe is the session's Conn: the client's messages in, its frames out.
type pipe struct{ c *client }

func (p pipe) Read() (bridge.In, error) {
	select {
	case msg := <-p.c.in:
		return bridge.In{Frame: msg}, nil
	case <-p.c.inEnd:
		return bridge.In{}, io.EOF
	}
}

func (p pipe) Write(o bridge.Out) error {
	if o.Frame == nil {
		return nil
	}
	select {
	case p.c.out <- o.Frame:
	case <-p.c.gone:
	}
	return nil
}

func (p pipe) Flush() error { return nil }
