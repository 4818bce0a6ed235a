package trace

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Benchmarks of the trace's cost per frame; numbers go to BENCHMARKS.md.
// Run:
//
//	go test ./trace -run '^$' -bench . -benchmem -count 6
//
// A record costs its caller one Observer call: method and id, validation,
// redaction, the cap, one encoding/json line and an append to the buffer;
// the writer goroutine only writes the buffer out. With tracing off a
// session has no Observer, and a hop is a nil check (see the bridge's
// BenchmarkSessionEcho against BenchmarkSessionEchoTrace).

func benchFrame(size int) []byte {
	head := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	tail := `"},"_meta":{"progressToken":"p-42"}}}`
	return []byte(head + strings.Repeat("x", max(0, size-len(head)-len(tail))) + tail)
}

// benchHeader is a POST's headers as the HTTP client holds them.
var benchHeader = http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
	"Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Authorization": {"Bearer x"}}

// benchEmit runs hop on a Writer to io.Discard; every 256 records a Close
// writes them out and a new Writer starts, so that nothing is dropped and
// the writer goroutine's work is counted.
func benchEmit(b *testing.B, size int, hop func(w *Writer, frame []byte)) {
	frame := benchFrame(size)
	o := Options{Buffer: 1024, BufferBytes: 1 << 30}
	w := New(io.Discard, o)
	var dropped int64
	n := 0
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		hop(w, frame)
		if n++; n%256 == 0 {
			d, err := w.Close()
			if err != nil {
				b.Fatal(err)
			}
			dropped += d
			w = New(io.Discard, o)
		}
	}
	d, err := w.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(dropped+d), "dropped")
}

func fromClient(w *Writer, frame []byte) { w.FromClient("", "op-7", frame) }

func toServer(w *Writer, frame []byte) {
	w.ToServer("", "op-7", []string{"id.remap", "meta.inject"}, "POST", "https://mcp.example.com/mcp", benchHeader, frame)
}

// A frame from the client, and a request to the server (with its headers).
func BenchmarkFromClient1KB(b *testing.B)  { benchEmit(b, 1<<10, fromClient) }
func BenchmarkFromClient1MiB(b *testing.B) { benchEmit(b, 1<<20, fromClient) }
func BenchmarkToServer1KB(b *testing.B)    { benchEmit(b, 1<<10, toServer) }

// BenchmarkEchoCall is the four records of one echo call.
func BenchmarkEchoCall(b *testing.B) {
	answer := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	benchEmit(b, 200, func(w *Writer, frame []byte) {
		w.FromClient("", "op-7", frame)
		toServer(w, frame)
		w.FromServer("", "op-7", 200, answer, time.Millisecond, nil)
		w.ToClient("", "op-7", answer, []string{"resultType.strip"})
	})
}

// BenchmarkTraceEncode is the encoding of one record's line alone, its
// frame redacted already: what the splice of the frame saves.
func BenchmarkTraceEncode1KB(b *testing.B)  { benchEncode(b, 1<<10) }
func BenchmarkTraceEncode64KB(b *testing.B) { benchEncode(b, 64<<10) }

func benchEncode(b *testing.B, size int) {
	frame := benchFrame(size)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		r := Record{Time: time.Now(), Dir: ClientToProxy, Op: "op-7", Method: "tools/call", ID: []byte("42"), Frame: frame}
		if _, err := encodeLine(&r); err != nil {
			b.Fatal(err)
		}
	}
}
