package rewrite_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// More hot paths, beside bench_test.go. Run:
//
//	go test ./rewrite -run '^$' -bench . -benchmem -count 6

func benchParse(b *testing.B, frame []byte) {
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rewrite.Parse(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse is Parse alone: validation of the whole line plus the
// classification of its top-level members.
func BenchmarkParseRequest1KB(b *testing.B)   { benchParse(b, toolsCall(1<<10)) }
func BenchmarkParseRequest100KB(b *testing.B) { benchParse(b, toolsCall(100<<10)) }
func BenchmarkParseResult1MiB(b *testing.B)   { benchParse(b, callResult(1<<20)) }

// BenchmarkResponseDown16MiB is the result path at the largest size the
// bench tool sends.
func BenchmarkResponseDown16MiB(b *testing.B) { benchResponseDown(b, 16<<20) }

// A realistic result with many small strings and escapes, where validation
// costs more per byte than in one long string.
func structuredResult(size int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1234,"result":{"content":[`)
	for i := 0; sb.Len() < size-200; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"type":"text","text":"line \"quoted\" \u00e9 with\ttabs","annotations":{"priority":0.5,"audience":["user","assistant"]},"n":12345}`)
	}
	sb.WriteString(`],"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}`)
	return []byte(sb.String())
}

func BenchmarkResponseDownStructured1MiB(b *testing.B) {
	frame := structuredResult(1 << 20)
	d := rewrite.Down{ID: []byte("42"), Method: "tools/call"}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := rewrite.Parse(frame)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rewrite.ResponseDown(&f, d); err != nil {
			b.Fatal(err)
		}
	}
}

const (
	createdTask   = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"working","statusMessage":"The operation is now in progress.","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttlMs":60000,"pollIntervalMs":5000,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"},"x.example/trace":"abc"}}}`
	completedTask = `{"jsonrpc":"2.0","id":8,"result":{"resultType":"complete","taskId":"786512e2-9e0d-44bd-8f29-789f320fe840","status":"completed","statusMessage":"done","createdAt":"2025-11-25T10:30:00Z","lastUpdatedAt":"2025-11-25T10:40:00Z","ttlMs":60000,"pollIntervalMs":5000,"result":{"resultType":"complete","content":[{"type":"text","text":"slept 300 ms"}]},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}`
)

// BenchmarkTaskCreate is task reshaping for a created task: Parse, read the
// flat 2026 CreateTaskResult and build the nested 2025 one.
func BenchmarkTaskCreate(b *testing.B) {
	frame := []byte(createdTask)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := rewrite.Parse(frame)
		if err != nil {
			b.Fatal(err)
		}
		t := rewrite.ReadTask(f.Result)
		if out := rewrite.CreateTaskResult(t, rewrite.TaskOptions{}); len(out) == 0 {
			b.Fatal("empty")
		}
	}
}

// BenchmarkTaskCompleted is a tasks/get answer for a completed task: the
// 2025 Task view, and the inlined result as the answer of a followed call.
func BenchmarkTaskCompleted(b *testing.B) {
	frame := []byte(completedTask)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := rewrite.Parse(frame)
		if err != nil {
			b.Fatal(err)
		}
		t := rewrite.ReadTask(f.Result)
		if v := rewrite.TaskResult(t, rewrite.TaskOptions{}, rewrite.ViewOverride{}); len(v) == 0 {
			b.Fatal("empty")
		}
		if _, err := rewrite.ResultFrameFor([]byte("3"), "tools/call", t.Result, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedact is the frame redaction that logs and the trace apply.
func benchRedact(b *testing.B, frame []byte) {
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if out := rewrite.Redact(frame, rewrite.SensitiveKey); len(out) == 0 {
			b.Fatal("empty")
		}
	}
}

func BenchmarkRedactRequest1KB(b *testing.B)     { benchRedact(b, toolsCall(1<<10)) }
func BenchmarkRedactStructured1MiB(b *testing.B) { benchRedact(b, structuredResult(1<<20)) }

// BenchmarkSensitiveKey is the key test redaction runs on every key.
func BenchmarkSensitiveKey(b *testing.B) {
	keys := []string{"jsonrpc", "id", "method", "params", "_meta", "io.modelcontextprotocol/protocolVersion", "name", "arguments", "text", "progressToken"}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range keys {
			_ = rewrite.SensitiveKey(k)
		}
	}
}

// BenchmarkValid is the validator Parse runs first, by itself.
func BenchmarkValid1MiB(b *testing.B) {
	frame := structuredResult(1 << 20)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if !gjson.ValidBytes(frame) {
			b.Fatal("invalid")
		}
	}
}

// BenchmarkResponseDownInPlace16MiB is the same result rewritten in the
// buffer it was read into (Down.Room, as the bridge does for a large JSON
// body): no second copy. Each round copies the frame back into the buffer;
// that copy is the benchmark's own and allocates nothing, so B/op, against
// BenchmarkResponseDown16MiB's, is what the rewrite allocates.
func BenchmarkResponseDownInPlace16MiB(b *testing.B) {
	const room = 4 << 10
	frame := callResult(16 << 20)
	buf := make([]byte, room+len(frame))
	d := rewrite.Down{ID: []byte("42"), Method: "tools/call", Room: buf}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		copy(buf[room:], frame)
		f, err := rewrite.Parse(buf[room:])
		if err != nil {
			b.Fatal(err)
		}
		out, err := rewrite.ResponseDown(&f, d)
		if err != nil || out.Frame == nil || &out.Frame[0] != &buf[0] {
			b.Fatal("not rewritten in place", err)
		}
	}
}
