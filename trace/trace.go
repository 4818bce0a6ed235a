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
// batches: every Options.FlushInterval, sooner once a share of the buffer
// is filled, and on Close. Until then a line is only in memory.
package trace

import (
	"encoding/json"
	"time"
)

// Dir is the hop a record was seen on.
type Dir string

// The four hops of a frame through the bridge, and the proxy's own events
// (a Note and no frame, such as the upstream era verdict).
const (
	ClientToProxy Dir = "client->proxy"
	ProxyToServer Dir = "proxy->server"
	ServerToProxy Dir = "server->proxy" // a frame, or an HTTP answer
	ProxyToClient Dir = "proxy->client"
	Proxy         Dir = "proxy"
)

// HTTP describes the HTTP exchange of a server hop. The writer hides the
// URL's userinfo and query values, and redacts credential headers.
type HTTP struct {
	Method string            `json:"method,omitempty"`
	URL    string            `json:"url,omitempty"`
	Status int               `json:"status,omitempty"` // of an answer
	Header map[string]string `json:"header,omitempty"` // one value per name
}

// Record is one line of a trace: one frame on one hop.
type Record struct {
	// Time is when the frame was seen; Emit fills in time.Now when zero.
	Time time.Time `json:"ts"`
	Dir  Dir       `json:"dir"`
	// Session names the client session the record belongs to, when a
	// process serves several (serve mode).
	Session string `json:"session,omitempty"`
	// Op links a client request to everything it caused: discover, MRTR
	// retries, task polls and updates, and the final answer.
	Op string `json:"op,omitempty"`
	// Method and ID (raw) are the frame's JSON-RPC method and id.
	Method string          `json:"method,omitempty"`
	ID     json.RawMessage `json:"id,omitempty"`
	// Rewrites names the rewrites applied on this hop, e.g. "meta.inject",
	// "task.nest", "resultType.strip", "ttl.rename".
	Rewrites []string `json:"rewrites,omitempty"`
	HTTP     *HTTP    `json:"http,omitempty"`
	// Frame is the JSON-RPC message; the writer redacts and caps it, and
	// writes it last in the line, as it was sent (compacted when it spans
	// lines). A frame that is not valid JSON is stored as a JSON string (or
	// withheld when redacting, since its secrets cannot be found).
	Frame json.RawMessage `json:"frame,omitempty"`
	// Truncated reports that the frame was cut to Options.FrameCap.
	Truncated bool    `json:"truncated,omitempty"`
	LatencyMs float64 `json:"latencyMs,omitempty"`
	// Error is a failure on this hop, e.g. a transport error; URLs in it
	// are redacted by the writer.
	Error string `json:"error,omitempty"`
	// Note describes a Proxy event, e.g. "era: legacy (…); mode: passthrough".
	Note string `json:"note,omitempty"`
}
