package passthrough

import (
	"context"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// A carrier is how passthrough messages travel to and from a legacy
// server: streamable (2025 Streamable HTTP: each request is answered on its
// own response, the GET stream carries the rest) or sseCarrier (2024-11-05
// HTTP+SSE: one GET stream carries every server message, answers included).
type carrier interface {
	// name names the transport, for logs.
	name() string
	// connect prepares a new upstream session before its initialize is
	// sent (a re-initialization): HTTP+SSE opens a new event stream.
	connect(ctx context.Context) error
	// started is called once an upstream session is initialized.
	started()
	// wait holds a client message until the carrier can send it. It
	// returns false when it cannot, with the error for c (nil when c is
	// nil or ctx ended).
	wait(ctx context.Context, c *link.Call) ([]byte, bool)
	// exchange sends one request and returns its one answer.
	exchange(ctx context.Context, c *link.Call, body []byte, st routing.Stamp) passResult
	// fire sends a message that expects no answer and returns the HTTP
	// status; errExpired when it means that the session st names has ended.
	fire(ctx context.Context, op string, body []byte, st routing.Stamp) (int, error)
	// openGet starts receiving the server's own messages, after
	// notifications/initialized.
	openGet(ctx context.Context)
	// end ends the upstream session (on exit, or a refused handshake).
	end()
}

// streamable is the 2025 Streamable HTTP carrier.
type streamable struct{ p *passthrough }

func (t *streamable) name() string                  { return "streamable-http" }
func (t *streamable) connect(context.Context) error { return nil }
func (t *streamable) started()                      {}

func (t *streamable) wait(context.Context, *link.Call) ([]byte, bool) { return nil, true }
