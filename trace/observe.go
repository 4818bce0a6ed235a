package trace

import (
	"net/http"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// The methods of bridge.Observer (documented there): each makes the record
// of one hop, with the frame's method and id, and emits it, keeping nothing
// of what it is given.

// FromClient records a frame read from the client.
func (w *Writer) FromClient(session, op string, frame []byte) {
	w.Emit(frameRecord(ClientToProxy, session, op, frame))
}

// ToClient records a frame written to the client, with its rewrites.
func (w *Writer) ToClient(session, op string, frame []byte, rewrites []string) {
	r := frameRecord(ProxyToClient, session, op, frame)
	r.Rewrites = rewrites
	w.Emit(r)
}

// ToServer records a request to the server, with the first value of each
// header.
func (w *Writer) ToServer(session, op string, rewrites []string, method, url string, h http.Header, body []byte) {
	r := frameRecord(ProxyToServer, session, op, body)
	r.Rewrites = rewrites
	header := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			header[k] = v[0]
		}
	}
	r.HTTP = &HTTP{Method: method, URL: url, Header: header}
	w.Emit(r)
}

// FromServer records what came back from the server.
func (w *Writer) FromServer(session, op string, status int, msg []byte, latency time.Duration, err error) {
	r := frameRecord(ServerToProxy, session, op, msg)
	r.LatencyMs = float64(latency.Microseconds()) / 1000
	if status != 0 {
		r.HTTP = &HTTP{Status: status}
	}
	if err != nil {
		r.Error = err.Error()
	}
	w.Emit(r)
}

// Note records an event of the proxy itself.
func (w *Writer) Note(session, op, note string) {
	w.Emit(Record{Time: time.Now(), Dir: Proxy, Session: session, Op: op, Note: note})
}

// frameRecord is the record of frame on hop dir, with the frame's method
// and id (its first top-level "method" and "id" members, as gjson reads
// them).
func frameRecord(dir Dir, session, op string, frame []byte) Record {
	r := Record{Time: time.Now(), Dir: dir, Session: session, Op: op}
	if len(frame) == 0 {
		return r
	}
	r.Frame = frame
	method, id := rewrite.MethodID(frame)
	if method != nil {
		r.Method = gjson.ParseBytes(method).String()
	}
	r.ID = id
	return r
}
