package trace

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Benchmarks of building trace records; numbers go to BENCHMARKS.md. Run:
//
//	go test ./trace -run '^$' -bench . -benchmem -count 6
//
// A record costs its caller Emit: method and id, redaction, the cap, one
// JSON encoding and an append to the buffer; the writer goroutine only
// writes the buffer out.
// With tracing off the bridge holds a nil *Writer, and every call is a nil
// check.

func benchFrame(size int) json.RawMessage {
	head := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	tail := `"},"_meta":{"progressToken":"p-42"}}}`
	return json.RawMessage(head + strings.Repeat("x", max(0, size-len(head)-len(tail))) + tail)
}

func clientRecord(size int) Record {
	return Record{Time: time.Now(), Dir: ClientToProxy, Op: "op-7", Method: "tools/call", ID: json.RawMessage("42"), Frame: benchFrame(size)}
}

func serverRecord(size int) Record {
	return Record{Time: time.Now(), Dir: ProxyToServer, Op: "op-7", Method: "tools/call", ID: json.RawMessage("9"),
		Rewrites: []string{"id.remap", "meta.inject"}, Frame: benchFrame(size),
		HTTP: &HTTP{Method: "POST", URL: "https://mcp.example.com/mcp?key=abc", Header: map[string]string{
			"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
			"Mcp-Method": "tools/call", "Mcp-Name": "echo", "Mcp-Protocol-Version": "2026-07-28", "Authorization": "Bearer x",
		}}}
}

// BenchmarkEmitOff is tracing off: the bridge's Enabled check and a nil
// Writer's Emit.
func BenchmarkEmitOff(b *testing.B) {
	var w *Writer
	r := clientRecord(1 << 10)
	b.ReportAllocs()
	for b.Loop() {
		if w.Enabled() {
			b.Fatal("enabled")
		}
		w.Emit(r)
	}
}

func benchPrepare(b *testing.B, r Record) {
	w := &Writer{frameCap: DefaultFrameCap, sensitive: rewrite.SensitiveKey, secretHdr: map[string]bool{"authorization": true}}
	b.SetBytes(int64(len(r.Frame)))
	b.ReportAllocs()
	for b.Loop() {
		c := r
		w.prepare(&c)
	}
}

// BenchmarkPrepare is redact and cap, all before encoding (the reference
// path: Emit redacts a valid frame under the cap as it encodes it).
func BenchmarkPrepareClient1KB(b *testing.B)   { benchPrepare(b, clientRecord(1<<10)) }
func BenchmarkPrepareUpstream1KB(b *testing.B) { benchPrepare(b, serverRecord(1<<10)) }
func BenchmarkPrepareClient1MiB(b *testing.B)  { benchPrepare(b, clientRecord(1<<20)) }
func BenchmarkPrepareClient16MiB(b *testing.B) { benchPrepare(b, clientRecord(16<<20)) }

// BenchmarkEncode is one JSONL line of a prepared record, spliced
// (encoder); Std is encoding/json encoding the whole record, as before.
func benchEncode(b *testing.B, r Record, std bool) {
	w := &Writer{frameCap: DefaultFrameCap, sensitive: rewrite.SensitiveKey, secretHdr: map[string]bool{"authorization": true}}
	w.prepare(&r)
	var e encoder
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	b.SetBytes(int64(len(r.Frame)))
	b.ReportAllocs()
	for b.Loop() {
		if std {
			line.Reset()
			if err := enc.Encode(r); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if _, err := e.encode(&r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeClient1KB(b *testing.B)      { benchEncode(b, clientRecord(1<<10), false) }
func BenchmarkEncodeUpstream1KB(b *testing.B)    { benchEncode(b, serverRecord(1<<10), false) }
func BenchmarkEncodeStdClient1KB(b *testing.B)   { benchEncode(b, clientRecord(1<<10), true) }
func BenchmarkEncodeStdUpstream1KB(b *testing.B) { benchEncode(b, serverRecord(1<<10), true) }

// BenchmarkEmitOn1KB is Emit of an upstream record with tracing on, on the
// caller's side: ns/op and allocs/op are the caller's alone. Every 32
// records (under the 64 KiB that wake the writer goroutine, and the flush
// interval is an hour away) the timer stops while Close writes them out
// and a new Writer starts, so the write is not counted and nothing is
// dropped.
func BenchmarkEmitOn1KB(b *testing.B) {
	r := serverRecord(1 << 10)
	o := Options{FlushInterval: time.Hour}
	w := New(io.Discard, o)
	var dropped int64
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		w.Emit(r)
		if n++; n%32 == 0 {
			b.StopTimer()
			d, err := w.Close()
			if err != nil {
				b.Fatal(err)
			}
			dropped += d
			w = New(io.Discard, o)
			b.StartTimer()
		}
	}
	d, err := w.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(dropped+d), "dropped")
}

// BenchmarkEmitOnAll1KB is the whole cost of a record with tracing on, to
// io.Discard: Emit, and the writer goroutine's write, waited for by a
// Close every 256 records so that nothing is dropped.
func BenchmarkEmitOnAll1KB(b *testing.B) {
	r := serverRecord(1 << 10)
	o := Options{Buffer: 256}
	w := New(io.Discard, o)
	var dropped int64
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		w.Emit(r)
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

// BenchmarkEmitOnPaced1KB is Emit as a sequential client's calls make
// records: one upstream record, then 50 µs of other work while the writer
// goroutine catches up (or sleeps). emit-ns/op is the caller's time in Emit
// alone; ns/op is dominated by the pause. allocs/op include the writer
// goroutine's.
func BenchmarkEmitOnPaced1KB(b *testing.B) {
	r := serverRecord(1 << 10)
	w := New(io.Discard, Options{})
	var inEmit time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		w.Emit(r)
		t1 := time.Now()
		inEmit += t1.Sub(t0)
		n++
		for time.Since(t1) < 50*time.Microsecond {
		}
	}
	dropped, err := w.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(inEmit.Nanoseconds())/float64(n), "emit-ns/op")
	b.ReportMetric(float64(dropped), "dropped")
}

// echoCall is the four records of one sequential echo call through the
// proxy, as the bridge emits them (from a trace of the bench): all but the
// server's answer marked FrameValid.
func echoCall() []Record {
	// The POST's headers as the bridge passes them: the HTTP client's own.
	hdr := http.Header{"Accept": {"application/json, text/event-stream"}, "Content-Type": {"application/json"},
		"Mcp-Method": {"tools/call"}, "Mcp-Name": {"echo"}, "Mcp-Protocol-Version": {"2026-07-28"}, "User-Agent": {"mcp-tasks-proxy/devel"}}
	return []Record{
		{Dir: ClientToProxy, Op: "op-206", MethodIDFromFrame: true, FrameValid: true,
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":206,"method":"tools/call","params":{"name":"echo","arguments":{"text":"bench seq-0 199"}}}`)},
		{Dir: ProxyToServer, Op: "op-206", MethodIDFromFrame: true, FrameValid: true, Rewrites: []string{"id.remap", "meta.inject"},
			HTTP:  &HTTP{Method: "POST", URL: "http://127.0.0.1:44209/mcp", Request: hdr},
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":207,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"mcp-tasks-bench","version":"1"}},"name":"echo","arguments":{"text":"bench seq-0 199"}}}`)},
		{Dir: ServerToProxy, Op: "op-206", MethodIDFromFrame: true, HTTP: &HTTP{Status: 200}, LatencyMs: 0.359,
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":207,"result":{"content":[{"type":"text","text":"bench seq-0 199"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-tasks-bench-upstream","version":"1"}}}}`)},
		{Dir: ProxyToClient, Op: "op-206", MethodIDFromFrame: true, FrameValid: true, Rewrites: []string{"id.restore", "serverInfo.strip", "resultType.strip"},
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":206,"result":{"content":[{"type":"text","text":"bench seq-0 199"}]}}`)},
	}
}

// BenchmarkEchoCallRecords is all the trace does for one echo call but the
// append to the buffer and the write: for each of its four records, Emit's
// method and id, redaction and encoding. "clean" is the records as the
// bridge emits them: the client's line checked first (Check, which the
// parse then relies on), and it and the frames made from clean frames
// marked FrameClean; "scanned", with every frame scanned.
func BenchmarkEchoCallRecords(b *testing.B) {
	for _, clean := range []bool{false, true} {
		b.Run(cleanName(clean), func(b *testing.B) {
			w := bareWriter()
			recs := markClean(echoCall(), clean)
			var e encoder
			ts := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				if err := traceCall(w, &e, recs, ts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func cleanName(clean bool) string {
	if clean {
		return "clean"
	}
	return "scanned"
}

// bareWriter is a Writer with the default rule, for recordLine alone: no
// goroutine, no output.
func bareWriter() *Writer {
	return &Writer{frameCap: DefaultFrameCap, sensitive: rewrite.SensitiveKey, secretHdr: map[string]bool{}}
}

// traceCall is the trace's work for one call's records, as the bridge
// emits them but for the buffering: a client's line marked clean is
// checked first (Check, which the parse then relies on), then each
// record's line is made.
func traceCall(w *Writer, e *encoder, recs []Record, ts time.Time) error {
	for i := range recs {
		r := recs[i]
		r.Time = ts
		if r.Dir == ClientToProxy && r.FrameClean {
			// Check's work with e: under -race, sync.Pool drops pooled
			// encoders at random, and a new one allocates.
			if w.checks(r.Frame) {
				w.checkWith(e, r.Frame)
			}
		}
		if _, _, err := w.recordLine(e, &r); err != nil {
			return err
		}
	}
	return nil
}

// markClean marks, when clean, the records the bridge emits FrameClean for
// a call whose frames are clean: the client's line (checked first), the
// request it sends, made from it, and the answer it makes of the server's.
func markClean(recs []Record, clean bool) []Record {
	for i := range recs {
		recs[i].FrameClean = clean && recs[i].Dir != ServerToProxy
	}
	return recs
}

// BenchmarkPrepareResult16MiB is a traced 16 MiB result as the bridge
// emits it, method and id read from the frame, redacted and cut to
// FrameCap.
func BenchmarkPrepareResult16MiB(b *testing.B) {
	frame := json.RawMessage(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 16<<20) + `"}]}}`)
	benchPrepare(b, Record{Dir: ServerToProxy, Op: "op-7", MethodIDFromFrame: true, Frame: frame})
}

// echoCalls are n echo calls as echoCall, each with its own ids and a text
// of its own length, as a session's calls differ.
func echoCalls(n int) [][]Record {
	calls := make([][]Record, n)
	for i := range calls {
		recs := echoCall()
		text := strings.Repeat("t", 5+i*37%60)
		for j := range recs {
			f := string(recs[j].Frame)
			f = strings.ReplaceAll(f, "bench seq-0 199", text)
			f = strings.ReplaceAll(f, `"id":206`, `"id":`+strconv.Itoa(1000+2*i))
			f = strings.ReplaceAll(f, `"id":207`, `"id":`+strconv.Itoa(1001+2*i))
			recs[j].Frame = json.RawMessage(f)
			recs[j].Op = "op-" + strconv.Itoa(1000+i)
		}
		calls[i] = recs
	}
	return calls
}

// BenchmarkEchoCallRecordsCold is BenchmarkEchoCallRecords as the proxy
// runs it: each call's frames differ, and between two calls the rest of the
// proxy's work (HTTP, the other calls in flight) takes the caches, which
// disturb walks through 256 KiB of other memory. BenchmarkDisturb is that
// walk alone, to subtract.
func BenchmarkEchoCallRecordsCold(b *testing.B) {
	for _, clean := range []bool{false, true} {
		b.Run(cleanName(clean), func(b *testing.B) {
			w := bareWriter()
			calls := echoCalls(256)
			for _, c := range calls {
				markClean(c, clean)
			}
			var e encoder
			ts := time.Now()
			mem := make([]byte, 8<<20)
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				disturb(mem, n)
				call := calls[n%len(calls)]
				for _, r := range call {
					warm(r.Frame) // the proxy has just read or built the frames
				}
				if err := traceCall(w, &e, call, ts); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}

func BenchmarkDisturb(b *testing.B) {
	mem := make([]byte, 8<<20)
	n := 0
	calls := echoCalls(256)
	for b.Loop() {
		disturb(mem, n)
		for _, r := range calls[n%len(calls)] {
			warm(r.Frame)
		}
		n++
	}
}

func warm(f []byte) {
	var x byte
	for i := 0; i < len(f); i += 64 {
		x ^= f[i]
	}
	disturbed ^= x ^ f[len(f)-1]
}

var disturbed byte

func disturb(mem []byte, n int) {
	off := n * (256 << 10) % len(mem)
	var x byte
	for i := off; i < off+256<<10; i += 64 {
		mem[i]++
		x ^= mem[i]
	}
	disturbed ^= x
}
