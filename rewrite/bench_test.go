package rewrite_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Benchmarks of the hot paths; numbers go to BENCHMARKS.md. Run:
//
//	go test ./rewrite -run '^$' -bench . -benchmem -count 6

// toolsCall builds a legacy tools/call of about size bytes.
func toolsCall(size int) []byte {
	head := `{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`
	tail := `"},"_meta":{"progressToken":"p-42"}}}`
	pad := size - len(head) - len(tail)
	if pad < 0 {
		pad = 0
	}
	return []byte(head + strings.Repeat("x", pad) + tail)
}

func benchMeta() rewrite.MetaBlock {
	caps := capabilities.ClientCapabilities([]byte(`{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}`))
	return capabilities.Meta(caps, []byte(`{"name":"claude-desktop","version":"1.0.0"}`), "info")
}

func benchRequestUp(b *testing.B, size int, parse bool) {
	frame := toolsCall(size)
	up := rewrite.Up{ID: []byte("1234"), Meta: benchMeta()}
	f, err := rewrite.Parse(frame)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if parse {
			if f, err = rewrite.Parse(frame); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := rewrite.RequestUp(&f, up); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRequestUp is the request rewrite alone: the splice of id and
// _meta into an already parsed frame.
func BenchmarkRequestUp1KB(b *testing.B)   { benchRequestUp(b, 1<<10, false) }
func BenchmarkRequestUp100KB(b *testing.B) { benchRequestUp(b, 100<<10, false) }

// BenchmarkRequestPath adds Parse, which validates the whole line (-32700
// for garbage) and classifies it: everything the proxy does to a request
// line before the HTTP POST.
func BenchmarkRequestPath1KB(b *testing.B)   { benchRequestUp(b, 1<<10, true) }
func BenchmarkRequestPath100KB(b *testing.B) { benchRequestUp(b, 100<<10, true) }

// callResult builds a modern tools/call response whose text is about size bytes.
func callResult(size int) []byte {
	head := `{"jsonrpc":"2.0","id":1234,"result":{"content":[{"type":"text","text":"`
	tail := `"}],"isError":false,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}}}`
	return []byte(head + strings.Repeat("y", size-len(head)-len(tail)) + tail)
}

func benchResponseDown(b *testing.B, size int) {
	frame := callResult(size)
	d := rewrite.Down{ID: []byte("42"), Method: "tools/call"}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := rewrite.Parse(frame)
		if err != nil {
			b.Fatal(err)
		}
		out, err := rewrite.ResponseDown(&f, d)
		if err != nil || out.Frame == nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResponseDown is the whole result path: Parse (validation) plus
// restoring the id and stripping resultType and serverInfo. result is never
// decoded: its bytes are scanned by gjson and copied once.
func BenchmarkResponseDown1KB(b *testing.B)  { benchResponseDown(b, 1<<10) }
func BenchmarkResponseDown1MiB(b *testing.B) { benchResponseDown(b, 1<<20) }

// BenchmarkToolsList is a tools/list page of 50 tools with task support on.
func BenchmarkToolsList(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"tools":[`)
	for i := range 50 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"name":"tool` + strconv.Itoa(i) + `","description":"does things","inputSchema":{"type":"object","properties":{"city":{"type":"string","x-mcp-header":"City"},"n":{"type":"integer"}}}}`)
	}
	sb.WriteString(`],"resultType":"complete","ttlMs":0,"cacheScope":"public"}}`)
	frame := []byte(sb.String())
	d := rewrite.Down{ID: []byte("1"), Method: "tools/list", TaskSupport: true}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		f, _ := rewrite.Parse(frame)
		out, err := rewrite.ResponseDown(&f, d)
		if err != nil || !gjson.ValidBytes(out.Frame) {
			b.Fatal(err)
		}
	}
}
