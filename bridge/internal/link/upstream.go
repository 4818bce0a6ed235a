package link

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// An Upstream is how a session reaches its server. There are two: the
// modern bridge (package modern: 2026-07-28, with discover, _meta, MRTR,
// listen, tasks) and the passthrough of 2025 (package passthrough, over
// Streamable HTTP or HTTP+SSE). A session starts with the modern bridge;
// the initialize that finds a 2025 server returns the passthrough it
// started as its outcome's Next, and from then on every message goes
// there. The core never asks which one it has.
//
// Request runs on the session's workers, concurrently; Local, Notified
// and Answered run on the reader, in the client's order, and must not
// block on the server.
type Upstream interface {
	// Open prepares the upstream when the session starts.
	Open()
	// Local answers a request that never reaches a worker, at once (ping,
	// logging/setLevel, a request missing what names it). It reports
	// false for a request to queue.
	Local(f *rewrite.Frame) (frame []byte, rewrites []string, ok bool)
	// Request runs one client request to its one outcome.
	Request(ctx context.Context, c *Call, f *rewrite.Frame) Outcome
	// Notified takes a client notification. cancel is set for a
	// notifications/cancelled that names a request in flight: it ends
	// that request, and the mode runs it when its order allows.
	Notified(f *rewrite.Frame, op string, cancel func())
	// Answered takes a client response to a request the proxy did not
	// make itself; it reports false when nobody waits for it.
	Answered(f *rewrite.Frame, op string) bool
	// Barrier is what a request read now must wait for before it leaves
	// (nil: nothing): the client's earlier notifications, in passthrough.
	Barrier() <-chan struct{}
	// Reached is the era and transport the last successful initialize
	// chose ("" before).
	Reached() (era, transport string)
	// Close ends the upstream when the session ends.
	Close()
}

// Outcome is what an upstream returns for a request.
type Outcome struct {
	// Frame is the client's answer; nil when there is none (the client
	// cancelled, or the session is ending).
	Frame []byte
	// Rewrites names what the answer's rewrite changed, for the Observer.
	Rewrites []string
	// After runs once the answer is queued (the input requests that must
	// follow a tasks/get answer).
	After func()
	// Next, set by an initialize, is the upstream every later message
	// takes; Era is the protocol an initialize found.
	Next Upstream
	Era  string
}

// FrameOnly is an outcome of a frame alone.
func FrameOnly(frame []byte) Outcome { return Outcome{Frame: frame} }

// Call is one client request that needs an in-flight slot.
type Call struct {
	F      rewrite.Frame // the request
	ID     []byte        // the client's raw id
	Method string
	Op     string    // the op id the Observer is told
	Stream any       // the In.Stream it came from
	Start  time.Time // when the request was read
	Ctx    context.Context
	Cancel context.CancelFunc
	// Cancelled: the client sent notifications/cancelled.
	Cancelled atomic.Bool
	// Answered is claimed by whoever delivers the one answer: the request's
	// own finish, or the drain's bound at the end of input.
	Answered atomic.Bool
	// ProgressToken is the raw _meta.progressToken, if any.
	ProgressToken []byte
	// Task is the raw params.task of a task-augmented tools/call.
	Task gjson.Result
	// InitWait and Barrier, when set, are what the core waits for before
	// the request leaves: the initialize requests read before it to be
	// answered, and the upstream's Barrier when it was read.
	InitWait, Barrier <-chan struct{}
	// LastProgress is the last progress value sent to the client.
	LastProgress float64
	ProgressSeen bool
}

// Result is what one upstream exchange of a client request came to.
type Result struct {
	Frame    []byte    // the client's answer (nil: none, or Input below)
	Rewrites []string  // what the answer's rewrite changed, for the Observer
	Code     int       // the code of the server's JSON-RPC error, if any
	Again    RetryKind // whether a failure may be retried
	Input    []byte    // an InputRequiredResult: ask the client, then retry
	After    func()    // runs once the answer is queued
}

// Failed is a result of an answer made by the proxy.
func Failed(frame []byte, again RetryKind) Result { return Result{Frame: frame, Again: again} }

func (r Result) Outcome() Outcome {
	return Outcome{Frame: r.Frame, Rewrites: r.Rewrites, After: r.After}
}
