// Package trace owns the JSONL trace format, the bounded non-blocking writer,
// redaction of trace records, and rendering traces (trace view, trace stats).
//
// A trace holds one Record per frame per hop, one JSON object per line. A
// *Writer is a bridge session's Observer (FromClient, ToClient, ToServer,
// FromServer, Note): the session calls it at its hops and knows nothing of
// records. Tracing never blocks or changes the data path: the Writer
// validates, redacts and encodes the record's line on the caller's
// goroutine, appends it to a bounded buffer and returns, keeping nothing of
// the caller's; a record that does not fit is dropped and counted, and
// Close reports the count. The writer goroutine writes the buffer out in
// batches: every Options.FlushInterval (100 ms by default), whenever 64 KiB
// is buffered, and on Close. Until then a line is only in memory.
package trace

import (
	"encoding/json"
	"time"
)

// Dir is the hop a record was seen on.
type Dir string

// The four hops of a frame through the bridge.
const (
	// ClientToProxy is a frame read from the legacy client on stdin.
	ClientToProxy Dir = "client->proxy"
	// ProxyToServer is a frame sent to the modern server over HTTP.
	ProxyToServer Dir = "proxy->server"
	// ServerToProxy is a frame (or HTTP answer) received from the server.
	ServerToProxy Dir = "server->proxy"
	// ProxyToClient is a frame written to the legacy client on stdout.
	ProxyToClient Dir = "proxy->client"
	// Proxy is an event of the proxy itself, with a Note and no frame
	// (for example the upstream era verdict).
	Proxy Dir = "proxy"
)

// HTTP describes the HTTP exchange of a server hop.
type HTTP struct {
	// Method is the HTTP method, e.g. POST.
	Method string `json:"method,omitempty"`
	// URL is the request URL; the writer hides userinfo and query values.
	URL string `json:"url,omitempty"`
	// Status is the HTTP status code of an answer.
	Status int `json:"status,omitempty"`
	// Header holds one value per header name; the writer redacts the values
	// of credential headers.
	Header map[string]string `json:"header,omitempty"`
}

// Record is one line of a trace: one frame on one hop.
type Record struct {
	// Time is when the frame was seen; Emit fills in time.Now when zero.
	Time time.Time `json:"ts"`
	// Dir is the hop.
	Dir Dir `json:"dir"`
	// Session names the client session the record belongs to, when a
	// process serves several (serve mode).
	Session string `json:"session,omitempty"`
	// Op links a client request to everything it caused: discover, MRTR
	// retries, task polls and updates, and the final answer.
	Op string `json:"op,omitempty"`
	// Method is the JSON-RPC method, when the frame has one.
	Method string `json:"method,omitempty"`
	// ID is the JSON-RPC id on this hop, raw.
	ID json.RawMessage `json:"id,omitempty"`
	// Rewrites names the rewrites applied on this hop, e.g. "meta.inject",
	// "task.nest", "resultType.strip", "ttl.rename".
	Rewrites []string `json:"rewrites,omitempty"`
	// HTTP describes the HTTP exchange of a server hop.
	HTTP *HTTP `json:"http,omitempty"`
	// Frame is the JSON-RPC message; the writer redacts and caps it, and
	// writes it last in the line, as it was sent (compacted when it spans
	// lines). A frame that is not valid JSON is stored as a JSON string (or
	// withheld when redacting, since its secrets cannot be found).
	Frame json.RawMessage `json:"frame,omitempty"`
	// Truncated reports that the frame was cut to Options.FrameCap.
	Truncated bool `json:"truncated,omitempty"`
	// LatencyMs is the latency of this hop in milliseconds, when known.
	LatencyMs float64 `json:"latencyMs,omitempty"`
	// Error is a failure on this hop, e.g. a transport error; URLs in it
	// are redacted by the writer.
	Error string `json:"error,omitempty"`
	// Note describes a Proxy event, e.g. "era: legacy (…); mode: passthrough".
	Note string `json:"note,omitempty"`
}
