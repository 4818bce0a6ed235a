package link

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// The proxy's own requests to the client (the 2025 face of 2026 input
// requests). Their ids live in the proxy's own space ("mtp-N"), apart from
// the client's ids.

// ClientError is a JSON-RPC error the client answered with.
type ClientError struct{ raw gjson.Result }

func (e *ClientError) Error() string {
	return fmt.Sprintf("the client answered with error %d: %s", e.raw.Get("code").Int(), e.raw.Get("message").String())
}

// PendingAsk is a request sent to the client, awaiting its answer.
type PendingAsk struct {
	e  *Env
	id []byte
	op string // the trace op of the request that needs the answer
	ch chan []byte
}

// AskStart sends a request to the client without waiting, so several can
// be sent in a fixed order and then awaited together.
func (e *Env) AskStart(op, method string, params []byte) *PendingAsk {
	p := &PendingAsk{e: e, id: append(strconv.AppendInt([]byte(`"mtp-`), e.askID.Add(1), 10), '"'), op: op, ch: make(chan []byte, 1)}
	e.asks.Store(string(p.id), p)
	e.Send(rewrite.RequestFrame(p.id, method, params), op, RwAsk)
	return p
}

// AskOp is the op of a pending request to the client, for its answer.
func (e *Env) AskOp(id string) string {
	if p, ok := e.asks.Load(id); ok {
		return p.(*PendingAsk).op
	}
	return ""
}

// ClientAnswered routes a response from the client to the request waiting
// for it. It reports false for an id nobody waits for.
func (e *Env) ClientAnswered(f *rewrite.Frame) bool {
	p, ok := e.asks.LoadAndDelete(f.ID.Raw)
	if ok {
		p.(*PendingAsk).ch <- Clone(f.Raw)
	}
	return ok
}

// Abandon gives up on the answer and tells the client so.
func (p *PendingAsk) Abandon() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _ = p.Wait(ctx)
}

// Wait returns the client's raw result, a *ClientError, or ctx's error; on
// ctx's end the client is told with notifications/cancelled.
func (p *PendingAsk) Wait(ctx context.Context) (gjson.Result, error) {
	e := p.e
	select {
	case resp := <-p.ch:
		f, err := rewrite.Parse(resp)
		if err != nil {
			return gjson.Result{}, err
		}
		if f.Error.Exists() {
			return gjson.Result{}, &ClientError{raw: f.Error}
		}
		return f.Result, nil
	case <-ctx.Done():
		e.asks.Delete(string(p.id))
		if e.Ctx.Err() == nil {
			e.Send(rewrite.NotificationFrame("notifications/cancelled", rewrite.CancelledParams(p.id, "no longer needed")), p.op, nil)
		}
		return gjson.Result{}, ctx.Err()
	}
}
