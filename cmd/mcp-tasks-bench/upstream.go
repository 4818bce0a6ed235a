package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// The bench upstream: a deliberately small MCP server on loopback HTTP, so
// that what the bench measures is the bridge and not a server framework.
//
// It speaks 2026-07-28 (stateless, per-request _meta, the standard headers
// checked against the body, the tasks extension) and, for bridges that only
// speak 2025 to the server (--compare, the floor target), the 2025-11-25
// Streamable HTTP handshake: initialize, notifications/initialized (202) and
// no standalone GET stream (405). Every answer is application/json.
//
// Tools:
//   - echo {text}: one TextContent with text;
//   - blob {bytes}: one TextContent of exactly bytes bytes (a fixed pattern,
//     see payload), written from a cache so the server adds no per-call copy;
//   - task {poll_ms, nonce} (2026 only): answered with a CreateTaskResult
//     (status working, pollIntervalMs = poll_ms) whose task is already
//     complete on the first tasks/get, with text "task done NONCE". The
//     time a client needs is then one call, one poll interval and one
//     tasks/get: everything beyond the interval is overhead.

const (
	modernVersion  = "2026-07-28"
	legacyVersion  = "2025-11-25"
	tasksExt       = "io.modelcontextprotocol/tasks"
	upstreamName   = "mcp-tasks-bench-upstream"
	serverInfoMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"` + upstreamName + `","version":"1"}}`
)

type upstream struct {
	mu     sync.Mutex
	blobs  map[int][]byte // size → result tail (after the id)
	tasks  map[string]string
	srv    *http.Server
	ln     net.Listener
	url    string
	served sync.WaitGroup
}

// startUpstream serves the bench upstream on a free loopback port.
func startUpstream() (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	u := &upstream{blobs: map[int][]byte{}, tasks: map[string]string{}, ln: ln}
	mux := http.NewServeMux()
	mux.Handle("/mcp", u)
	u.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	u.url = "http://" + ln.Addr().String() + "/mcp"
	u.served.Add(1)
	go func() {
		defer u.served.Done()
		_ = u.srv.Serve(ln)
	}()
	return u, nil
}

func (u *upstream) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if u.srv.Shutdown(ctx) != nil {
		_ = u.srv.Close()
	}
	u.served.Wait()
}

// payload returns the blob tool's text of n bytes: a repeating pattern of
// JSON-safe characters, so the text needs no escaping.
func payload(n int) []byte {
	const pat = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"
	b := make([]byte, n)
	for i := range b {
		b[i] = pat[i%len(pat)]
	}
	return b
}

func (u *upstream) blobTail(n int, modern bool) []byte {
	key := n
	if !modern {
		key = -n - 1
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if t, ok := u.blobs[key]; ok {
		return t
	}
	var b bytes.Buffer
	b.Grow(n + 256)
	b.WriteString(`,"result":{"content":[{"type":"text","text":"`)
	b.Write(payload(n))
	b.WriteString(`"}]`)
	if modern {
		b.WriteString(`,"resultType":"complete",` + serverInfoMeta)
	}
	b.WriteString("}}")
	u.blobs[key] = b.Bytes()
	return b.Bytes()
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if !gjson.ValidBytes(body) {
		writeErr(w, http.StatusBadRequest, "null", -32700, "parse error")
		return
	}
	res := gjson.GetManyBytes(body, "id", "method", "params")
	id, method, params := res[0], res[1].String(), res[2]
	if !id.Exists() {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	idRaw := id.Raw
	modern := r.Header.Get("MCP-Protocol-Version") == modernVersion
	if modern {
		if msg := checkModern(r.Header, method, params); msg != "" {
			writeErr(w, http.StatusBadRequest, idRaw, -32020, msg)
			return
		}
	} else if method != "initialize" && !isLegacyVersion(r.Header.Get("MCP-Protocol-Version")) {
		writeErr(w, http.StatusBadRequest, idRaw, -32022, "unsupported protocol version; supported: "+modernVersion+", "+legacyVersion)
		return
	}

	var result string
	switch method {
	case "server/discover":
		if !modern {
			writeErr(w, http.StatusBadRequest, idRaw, -32601, "server/discover is 2026-07-28 only")
			return
		}
		result = `{"resultType":"complete","supportedVersions":["` + modernVersion + `"],` +
			`"capabilities":{"tools":{},"extensions":{"` + tasksExt + `":{}}},` + serverInfoMeta + `}`
	case "initialize":
		v := params.Get("protocolVersion").String()
		if !isLegacyVersion(v) {
			v = legacyVersion
		}
		result = `{"protocolVersion":"` + v + `","capabilities":{"tools":{}},"serverInfo":{"name":"` + upstreamName + `","version":"1"}}`
	case "ping":
		result = `{}`
	case "tools/list":
		result = `{"tools":[` +
			`{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},` +
			`{"name":"blob","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}},"required":["bytes"]}},` +
			`{"name":"task","inputSchema":{"type":"object","properties":{"poll_ms":{"type":"integer"},"nonce":{"type":"string"}}}}]`
		if modern {
			result += `,"resultType":"complete"`
		}
		result += `}`
	case "tools/call":
		args := params.Get("arguments")
		switch params.Get("name").String() {
		case "echo":
			result = `{"content":[{"type":"text","text":` + args.Get("text").Raw + `}]`
			if modern {
				result += `,"resultType":"complete",` + serverInfoMeta
			}
			result += `}`
		case "blob":
			n := int(args.Get("bytes").Int())
			if n < 0 || n > 256<<20 {
				writeErr(w, http.StatusOK, idRaw, -32602, "bytes out of range")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			tail := u.blobTail(n, modern)
			w.Header().Set("Content-Length", strconv.Itoa(len(`{"jsonrpc":"2.0","id":`)+len(idRaw)+len(tail)))
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+idRaw)
			_, _ = w.Write(tail)
			return
		case "task":
			if !modern || !params.Get(`_meta.io\.modelcontextprotocol/clientCapabilities.extensions.io\.modelcontextprotocol/tasks`).Exists() {
				writeErr(w, http.StatusBadRequest, idRaw, -32021, "the task tool needs the "+tasksExt+" extension")
				return
			}
			poll := args.Get("poll_ms").Int()
			id := newTaskID()
			done := `{"content":[{"type":"text","text":` + quote("task done "+args.Get("nonce").String()) + `}],"resultType":"complete"}`
			u.mu.Lock()
			u.tasks[id] = done
			u.mu.Unlock()
			now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
			result = `{"resultType":"task","taskId":"` + id + `","status":"working","createdAt":"` + now +
				`","lastUpdatedAt":"` + now + `","ttlMs":60000,"pollIntervalMs":` + strconv.FormatInt(poll, 10) + `,` + serverInfoMeta + `}`
		default:
			writeErr(w, http.StatusOK, idRaw, -32602, "unknown tool")
			return
		}
	case "tasks/get":
		tid := params.Get("taskId").String()
		u.mu.Lock()
		done, ok := u.tasks[tid]
		u.mu.Unlock()
		if !ok {
			writeErr(w, http.StatusOK, idRaw, -32602, "unknown task")
			return
		}
		now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		result = `{"resultType":"complete","taskId":"` + tid + `","status":"completed","createdAt":"` + now +
			`","lastUpdatedAt":"` + now + `","ttlMs":60000,"result":` + done + `,` + serverInfoMeta + `}`
	default:
		writeErr(w, http.StatusOK, idRaw, -32601, "method not found: "+method)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+idRaw+`,"result":`+result+`}`)
}

// checkModern checks what a 2026-07-28 server must reject (eras.md §4.2,
// §15.5): a missing or mismatched protocol version in _meta, a wrong
// Mcp-Method, a missing or wrong Mcp-Name. It returns "" when all is well.
// Names here are always plain ASCII, so no Base64 decoding is needed.
func checkModern(h http.Header, method string, params gjson.Result) string {
	meta := params.Get("_meta")
	if meta.Get(`io\.modelcontextprotocol/protocolVersion`).String() != modernVersion {
		return "_meta io.modelcontextprotocol/protocolVersion is missing or differs from MCP-Protocol-Version"
	}
	if !meta.Get(`io\.modelcontextprotocol/clientCapabilities`).IsObject() {
		return "_meta io.modelcontextprotocol/clientCapabilities is missing"
	}
	if h.Get("Mcp-Method") != method {
		return "Header mismatch: Mcp-Method"
	}
	var want string
	switch method {
	case "tools/call":
		want = params.Get("name").String()
	case "tasks/get", "tasks/update", "tasks/cancel":
		want = params.Get("taskId").String()
	default:
		return ""
	}
	if h.Get("Mcp-Name") != want {
		return "Header mismatch: Mcp-Name"
	}
	return ""
}

func isLegacyVersion(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26":
		return true
	}
	return false
}

func writeErr(w http.ResponseWriter, status int, id string, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, quote(msg))
}

func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
