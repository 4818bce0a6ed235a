package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
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
//   - blob {bytes, sse, chunked}: one TextContent of exactly bytes bytes (a
//     fixed pattern, see payload), written from a cache so the server adds
//     no per-call copy; with sse true, as one event of a text/event-stream;
//     with chunked true, as JSON without a Content-Length;
//   - task {poll_ms, nonce, polls} (2026 only): answered with a
//     CreateTaskResult (status working, pollIntervalMs = poll_ms) whose task
//     is complete on the polls-th tasks/get (default 1), with text "task
//     done NONCE". The time a client needs is then one call, polls poll
//     intervals and polls tasks/get: everything beyond the intervals is
//     overhead.
//
// The bench runs it in a process of its own (serverMain: this binary
// re-executed), as users' servers run; --server inprocess keeps it in the
// bench's process, which is how the bench measured before.

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
	tasks  map[string]*benchTask
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
	u := &upstream{blobs: map[int][]byte{}, tasks: map[string]*benchTask{}, ln: ln}
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

// benchTask is a task of the task tool: done is its result, and left the
// tasks/get still to answer "working".
type benchTask struct {
	done string
	left int
	poll int64
}

// blobTail is the answer to a blob call after its id: for sse, the rest of
// the event, blank line included.
func (u *upstream) blobTail(n int, modern, sse bool) []byte {
	key := 4 * n
	if !modern {
		key++
	}
	if sse {
		key += 2
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
	if sse {
		b.WriteString("\n\n")
	}
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
		if result = u.toolCall(w, idRaw, params, modern); result == "" {
			return
		}
	case "tasks/get":
		if result = u.taskGet(w, idRaw, params); result == "" {
			return
		}
	default:
		writeErr(w, http.StatusOK, idRaw, -32601, "method not found: "+method)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+idRaw+`,"result":`+result+`}`)
}

// toolCall answers tools/call of the bench's tools: echo, blob (written
// here, as JSON or as one SSE event) and task. It returns the result, or ""
// once it wrote the whole answer itself.
func (u *upstream) toolCall(w http.ResponseWriter, idRaw string, params gjson.Result, modern bool) string {
	args := params.Get("arguments")
	switch params.Get("name").String() {
	case "echo":
		result := `{"content":[{"type":"text","text":` + args.Get("text").Raw + `}]`
		if modern {
			result += `,"resultType":"complete",` + serverInfoMeta
		}
		return result + `}`
	case "blob":
		n := int(args.Get("bytes").Int())
		if n < 0 || n > 256<<20 {
			writeErr(w, http.StatusOK, idRaw, -32602, "bytes out of range")
			return ""
		}
		sse := args.Get("sse").Bool()
		head := `{"jsonrpc":"2.0","id":` + idRaw
		if sse {
			// One event, as a server that streams its answer sends it.
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			head = "id: 1\ndata: " + head
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		tail := u.blobTail(n, modern, sse)
		if !sse && !args.Get("chunked").Bool() { // a stream has no length: it is sent chunked
			w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(tail)))
		}
		_, _ = io.WriteString(w, head)
		_, _ = w.Write(tail)
		return ""
	case "task":
		if !modern || !params.Get(`_meta.io\.modelcontextprotocol/clientCapabilities.extensions.io\.modelcontextprotocol/tasks`).Exists() {
			writeErr(w, http.StatusBadRequest, idRaw, -32021, "the task tool needs the "+tasksExt+" extension")
			return ""
		}
		poll := args.Get("poll_ms").Int()
		polls := max(1, int(args.Get("polls").Int()))
		id := newTaskID()
		done := `{"content":[{"type":"text","text":` + quote("task done "+args.Get("nonce").String()) + `}],"resultType":"complete"}`
		u.mu.Lock()
		u.tasks[id] = &benchTask{done: done, left: polls - 1, poll: poll}
		u.mu.Unlock()
		now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
		return `{"resultType":"task","taskId":"` + id + `","status":"working","createdAt":"` + now +
			`","lastUpdatedAt":"` + now + `","ttlMs":60000,"pollIntervalMs":` + strconv.FormatInt(poll, 10) + `,` + serverInfoMeta + `}`
	default:
		writeErr(w, http.StatusOK, idRaw, -32602, "unknown tool")
		return ""
	}
}

// taskGet answers tasks/get: working until the task's polls are used up,
// then completed with its result. It returns "" once it wrote an error.
func (u *upstream) taskGet(w http.ResponseWriter, idRaw string, params gjson.Result) string {
	tid := params.Get("taskId").String()
	u.mu.Lock()
	tk, ok := u.tasks[tid]
	working := ok && tk.left > 0
	if working {
		tk.left--
	}
	u.mu.Unlock()
	if !ok {
		writeErr(w, http.StatusOK, idRaw, -32602, "unknown task")
		return ""
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	if working {
		return `{"resultType":"complete","taskId":"` + tid + `","status":"working","createdAt":"` + now +
			`","lastUpdatedAt":"` + now + `","ttlMs":60000,"pollIntervalMs":` + strconv.FormatInt(tk.poll, 10) + `,` + serverInfoMeta + `}`
	}
	return `{"resultType":"complete","taskId":"` + tid + `","status":"completed","createdAt":"` + now +
		`","lastUpdatedAt":"` + now + `","ttlMs":60000,"result":` + tk.done + `,` + serverInfoMeta + `}`
}

// checkModern checks what a 2026-07-28 server must reject (the request _meta
// and the Streamable HTTP header checks): a missing or mismatched protocol
// version in _meta, a wrong Mcp-Method, a missing or wrong Mcp-Name. It returns
// "" when all is well. Names here are always plain ASCII, so no Base64 decoding
// is needed.
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

// serverEnv, when set, turns this binary into the bench server: it serves
// on a free loopback port, prints the URL as its first line on stdout, and
// exits when its stdin ends.
const serverEnv = "MCP_TASKS_BENCH_SERVER"

func serverMain() int {
	u, err := startUpstream()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcp-tasks-bench server:", err)
		return 1
	}
	fmt.Println(u.url)
	_, _ = io.Copy(io.Discard, os.Stdin)
	u.close()
	return 0
}

// server is the bench server as the bench sees it: in a process of its own
// (proc set) or in the bench's.
type server struct {
	url   string
	pid   int
	in    *upstream
	cmd   *exec.Cmd
	stdin io.Closer
}

// startServer starts the bench server: re-executing this binary, unless
// inProcess. It waits at most timeout for the server's URL.
func startServer(inProcess bool, timeout time.Duration) (*server, error) {
	if inProcess {
		u, err := startUpstream()
		if err != nil {
			return nil, err
		}
		return &server{url: u.url, pid: os.Getpid(), in: u}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the server re-executes this binary: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the server: %w", err)
	}
	s := &server{pid: cmd.Process.Pid, cmd: cmd, stdin: stdin}
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		got <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case s.url = <-got:
	case <-time.After(timeout):
	}
	if !strings.HasPrefix(s.url, "http://") {
		s.close()
		return nil, fmt.Errorf("the server process printed no URL (got %q)", s.url)
	}
	return s, nil
}

// close stops the server; a server process gets 5 s to exit, then a kill.
func (s *server) close() {
	if s.in != nil {
		s.in.close()
		return
	}
	_ = s.stdin.Close()
	exited := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}
