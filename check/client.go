package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// client is the check's side of a bridge session run in process: it is
// the session's Conn, and writes what a 2025-11-25 client would, one
// request at a time.
type client struct {
	in    chan []byte   // to the session's reader
	out   chan []byte   // from the session's writer
	inEnd chan struct{} // closed: the check sends no more
	done  chan struct{} // closed: the session has ended
	ids   int
}

var errEnded = errors.New("the session ended before it answered")

// clientResults are the check's answers to the server's requests it takes.
var clientResults = map[string]string{"ping": `{}`, "roots/list": `{"roots":[]}`}

// end ends the session's input and waits, up to bound, for the session to
// end (it ends its upstream session too).
func (c *client) end(bound time.Duration) {
	close(c.inEnd)
	select {
	case <-c.done:
	case <-time.After(bound):
	}
}

// send hands one message to the session.
func (c *client) send(ctx context.Context, msg []byte) error {
	select {
	case c.in <- msg:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return errEnded
	}
}

// call sends a request and returns the session's answer, the whole frame.
// The server's requests on the way are answered as a client with none of
// their features answers them (ping and roots/list as a client does);
// notifications are skipped.
func (c *client) call(ctx context.Context, method string, params []byte) (gjson.Result, error) {
	c.ids++
	id := strconv.Quote("check-" + strconv.Itoa(c.ids))
	if err := c.send(ctx, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)); err != nil {
		return gjson.Result{}, err
	}
	for {
		var frame []byte
		select {
		case frame = <-c.out:
		case <-ctx.Done():
			return gjson.Result{}, ctx.Err()
		case <-c.done:
			return gjson.Result{}, errEnded
		}
		m, err := rewrite.Parse(frame)
		switch {
		case err != nil:
		case m.Kind == rewrite.KindResponse && m.ID.Raw == id:
			return gjson.ParseBytes(frame), nil
		case m.Kind == rewrite.KindRequest:
			answer := rewrite.ErrorFrame([]byte(m.ID.Raw), protocol.CodeMethodNotFound, "mcp-tasks-proxy check does not answer "+m.Method, nil)
			if res, ok := clientResults[m.Method]; ok {
				answer = rewrite.ResultFrame([]byte(m.ID.Raw), []byte(res))
			}
			if err := c.send(ctx, answer); err != nil {
				return gjson.Result{}, err
			}
		}
	}
}

// Read, Write and Flush make the client the session's bridge.Conn.
func (c *client) Read() (bridge.In, error) {
	select {
	case msg := <-c.in:
		return bridge.In{Frame: msg}, nil
	case <-c.inEnd:
		return bridge.In{}, io.EOF
	}
}

func (c *client) Write(o bridge.Out) error {
	if o.Frame != nil {
		select {
		case c.out <- o.Frame:
		case <-c.inEnd: // nobody reads any more
		}
	}
	return nil
}

func (c *client) Flush() error { return nil }
