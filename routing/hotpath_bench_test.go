package routing_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Benchmarks of the upstream hot paths; numbers go to BENCHMARKS.md. Run:
//
//	go test ./routing -run '^$' -bench . -benchmem -count 6

// sseStream is n events: progress notifications of about size bytes each,
// as a server sends them on a tools/call stream, with a comment and an id.
func sseStream(n, size int) []byte {
	var b bytes.Buffer
	for i := range n {
		b.WriteString(": keep-alive\n")
		b.WriteString("id: ev-")
		b.WriteString(strings.Repeat("1", 1+i%3))
		b.WriteString("\nevent: message\ndata: ")
		head := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"message":"`
		b.WriteString(head)
		b.WriteString(strings.Repeat("m", max(0, size-len(head)-3)))
		b.WriteString("\"}}\n\n")
	}
	return b.Bytes()
}

func benchSSE(b *testing.B, events, size int) {
	stream := sseStream(events, size)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	r := bytes.NewReader(stream)
	for b.Loop() {
		r.Reset(stream)
		s := routing.NewSSEReader(r, 128<<20)
		got := 0
		for {
			data, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil || len(data) == 0 {
				b.Fatal(err)
			}
			got++
		}
		if got != events {
			b.Fatalf("%d events, want %d", got, events)
		}
	}
}

// BenchmarkSSE reads a whole stream: 100 small events, or one 1 MiB event.
func BenchmarkSSE100x200B(b *testing.B) { benchSSE(b, 100, 200) }
func BenchmarkSSE1x1MiB(b *testing.B)   { benchSSE(b, 1, 1<<20) }
func BenchmarkSSE1x16MiB(b *testing.B)  { benchSSE(b, 1, 16<<20) }

const upBody = `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"claude-desktop","version":"1.0.0"}},"name":"weather","arguments":{"city":"Zürich","days":3,"text":"` + "%PAD%" + `"}}}`

func benchHeaders(b *testing.B, params []protocol.ParamHeader, pad int) {
	body := []byte(strings.Replace(upBody, "%PAD%", strings.Repeat("x", pad), 1))
	h := http.Header{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		clear(h)
		routing.DeriveHeaders(h, body, params)
	}
	if h.Get("Mcp-Name") != "weather" || h.Get("Mcp-Method") != "tools/call" {
		b.Fatalf("headers: %v", h)
	}
}

// BenchmarkDeriveHeaders derives MCP-Protocol-Version, Mcp-Method and
// Mcp-Name from the final body; WithParams adds two Mcp-Param-* headers,
// one of them Base64-wrapped (non-ASCII); Large has a 100 KB argument
// after the members the headers read.
func BenchmarkDeriveHeaders(b *testing.B) { benchHeaders(b, nil, 0) }
func BenchmarkDeriveHeadersWithParams(b *testing.B) {
	benchHeaders(b, []protocol.ParamHeader{{Name: "City", Path: "params.arguments.city"}, {Name: "Days", Path: "params.arguments.days"}}, 0)
}
func BenchmarkDeriveHeadersLarge(b *testing.B) { benchHeaders(b, nil, 100<<10) }
