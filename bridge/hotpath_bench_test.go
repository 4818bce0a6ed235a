package bridge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// Benchmarks of the bridge's hot paths; numbers go to BENCHMARKS.md. Run:
//
//	go test ./bridge -run '^$' -bench . -benchmem -count 6

// loopReader returns block over and over.
type loopReader struct {
	block []byte
	off   int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.block[l.off:])
	l.off = (l.off + n) % len(l.block)
	return n, nil
}

func benchLines(b *testing.B, size int) {
	line := append(bytes.Repeat([]byte("x"), size-1), '\n')
	r := NewStdio(&loopReader{block: line}, io.Discard, 128<<20)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		got, err := r.Read()
		if err != nil || len(got.Frame) != size-1 {
			b.Fatalf("%d bytes, %v", len(got.Frame), err)
		}
	}
}

// BenchmarkLineReader is stdin framing: one line per op, each a fresh slice.
func BenchmarkLineReader1KB(b *testing.B)   { benchLines(b, 1<<10) }
func BenchmarkLineReader1MiB(b *testing.B)  { benchLines(b, 1<<20) }
func BenchmarkLineReader16MiB(b *testing.B) { benchLines(b, 16<<20) }

// benchUpstream is a minimal 2026 server: discover, tools/list, and
// tools/call answering echo with its text, or blob with n bytes.
func benchUpstream(b *testing.B) *httptest.Server {
	blobs := map[int64]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		res := gjson.GetManyBytes(body, "id", "method", "params.name", "params.arguments.text", "params.arguments.bytes")
		var result string
		switch res[1].String() {
		case "server/discover":
			result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"b","version":"1"}}}`
		case "tools/list":
			result = `{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"blob","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			text := res[3].Raw
			if res[2].String() == "blob" {
				n := res[4].Int()
				if blobs[n] == "" {
					blobs[n] = `"` + strings.Repeat("y", int(n)) + `"`
				}
				text = blobs[n]
			}
			result = `{"content":[{"type":"text","text":` + text + `}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"b","version":"1"}}}`
		default:
			http.Error(w, "no", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+res[0].Raw+`,"result":`+result+`}`)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchSession runs one Session in process, as a client would drive it
// over stdio, and measures one sequential tools/call per op.
func benchSession(b *testing.B, obs Observer, tool, args string, resultBytes int) {
	srv := benchUpstream(b)
	client, err := routing.New(routing.Config{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	s := New(Config{Client: client, Observer: obs, StatePath: ""})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, inR, outW)
		outW.Close()
		client.CloseIdle()
	}()
	out := bufio.NewReaderSize(outR, 1<<20)
	ask := func(line string) []byte {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		got, err := out.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		return got
	}
	ask(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	call := func(id int) {
		got := ask(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
		if r := gjson.GetBytes(got, "id"); r.Raw != strconv.Itoa(id) || !gjson.GetBytes(got, "result.content").Exists() {
			b.Fatalf("answer: %.300s", got)
		}
	}
	call(1) // the proxy fetches tools/list first
	if resultBytes > 0 {
		b.SetBytes(int64(resultBytes))
	}
	b.ReportAllocs()
	id := 2
	for b.Loop() {
		call(id)
		id++
	}
	b.StopTimer()
	inW.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	cancel()
	_, _ = io.Copy(io.Discard, outR)
}

// BenchmarkSessionEcho is the whole proxy path for one sequential echo call,
// in process (no pipes to another process): stdin line, Parse, rewrite,
// POST, response, rewrite, stdout line. Trace adds --trace to io.Discard:
// the two are tracing's cost per call (four frames), on and off.
func BenchmarkSessionEcho(b *testing.B) {
	benchSession(b, nil, "echo", `{"text":"hello"}`, 0)
}

func BenchmarkSessionEchoTrace(b *testing.B) {
	tr := trace.New(io.Discard, trace.Options{})
	defer tr.Close()
	benchSession(b, tr, "echo", `{"text":"hello"}`, 0)
}

// BenchmarkSessionResult is the result path end to end at 1 KiB and 1 MiB.
func BenchmarkSessionResult1KB(b *testing.B) {
	benchSession(b, nil, "blob", `{"bytes":1024}`, 1<<10)
}

func BenchmarkSessionResult1MiB(b *testing.B) {
	benchSession(b, nil, "blob", `{"bytes":1048576}`, 1<<20)
}
