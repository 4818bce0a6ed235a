package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The fault-injection suite of issue 5: a switchable fault server (fsServer)
// answers each request under test with one fault, and every case checks the
// same four things:
//
//   - the request id gets exactly one well-formed JSON-RPC answer (fsFinish
//     counts the answers of every id when the process has exited);
//   - an error's message names the cause and what to do (key words);
//   - the process keeps serving (fsAlive: a ping and an echo afterwards);
//   - stdout carries only JSON-RPC lines (rawProc validates every line).
//
// Cases that can share a proxy do (TestFaultSuite); cases that need other
// flags, another discover behaviour or a dead port have their own proxy.
// faults_test.go already pins the plain tools/call variants (HTML 500, bare
// 502, HTML 200, truncated JSON, wrong id, reset before the headers, cut
// SSE); this file covers the other methods, the retry paths, timeouts, size
// limits, the protocol errors -32020/-32021/-32022, auth, discover and the
// task flows. TestFaultLoad is the load test of issue 5 item 6.

// fsReq is one request the fault server received.
type fsReq struct {
	Key    string // fsKey of the request
	ID     string // the raw upstream id
	N      int    // 1 for the first request with this key, then 2, …
	Body   []byte
	Params gjson.Result
}

// fsHandler answers one request, normally or with a fault.
type fsHandler func(w http.ResponseWriter, r *http.Request, q fsReq)

// fsServer is a hand-written 2026-07-28 server whose answer to each kind of
// request can be switched per case: fsKey names the kind ("tools/call
// NAME", "resources/read URI", "tasks/get TASKID", or the bare method), and
// a route set with on replaces the normal answer. It counts the requests of
// every key and keeps their upstream ids.
type fsServer struct {
	mu     sync.Mutex
	routes map[string]fsHandler
	hits   map[string]int
	ids    map[string][]string
}

func newFSServer() *fsServer {
	return &fsServer{routes: map[string]fsHandler{}, hits: map[string]int{}, ids: map[string][]string{}}
}

func fsKey(method string, params gjson.Result) string {
	switch method {
	case "tools/call", "prompts/get":
		return method + " " + params.Get("name").String()
	case "resources/read":
		return method + " " + params.Get("uri").String()
	case "tasks/get", "tasks/cancel", "tasks/update":
		return method + " " + params.Get("taskId").String()
	}
	return method
}

// on routes key to h; a nil h restores the normal answer.
func (s *fsServer) on(key string, h fsHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.routes, key)
		return
	}
	s.routes[key] = h
}

// count is how many requests with key the server has received.
func (s *fsServer) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[key]
}

// upIDs are the upstream ids of the requests with key, in order.
func (s *fsServer) upIDs(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids[key])
}

func (s *fsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := gjson.ParseBytes(body)
	params := req.Get("params")
	q := fsReq{Key: fsKey(req.Get("method").String(), params), ID: req.Get("id").Raw, Body: body, Params: params}
	s.mu.Lock()
	s.hits[q.Key]++
	q.N = s.hits[q.Key]
	s.ids[q.Key] = append(s.ids[q.Key], q.ID)
	h := s.routes[q.Key]
	s.mu.Unlock()
	if h == nil {
		h = fsNormal
	}
	h(w, r, q)
}

// fsDiscover is the server's DiscoverResult: tools, prompts, resources and
// the tasks extension, and no listChanged (so no listen stream is opened).
const fsDiscover = `{"resultType":"complete","supportedVersions":["2026-07-28"],` +
	`"capabilities":{"tools":{},"prompts":{},"resources":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},` +
	`"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fault-suite","version":"1"}}}`

// fsNormal is the healthy answer to every method.
func fsNormal(w http.ResponseWriter, _ *http.Request, q fsReq) {
	switch gjson.GetBytes(q.Body, "method").String() {
	case "server/discover":
		fsWrite(w, http.StatusOK, fsResult(q.ID, fsDiscover))
	case "tools/call":
		text := q.Params.Get("arguments.text").Raw
		if text == "" {
			text = `""`
		}
		fsWrite(w, http.StatusOK, fsResult(q.ID, `{"resultType":"complete","content":[{"type":"text","text":`+text+`}]}`))
	case "tools/list":
		fsWrite(w, http.StatusOK, fsResult(q.ID, `{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`))
	case "prompts/get":
		fsWrite(w, http.StatusOK, fsResult(q.ID, `{"resultType":"complete","messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}`))
	case "resources/read":
		fsWrite(w, http.StatusOK, fsResult(q.ID, `{"resultType":"complete","contents":[{"uri":`+q.Params.Get("uri").Raw+`,"text":"ok"}]}`))
	case "tasks/get":
		fsWrite(w, http.StatusOK, fsResult(q.ID, fsTask(q.Params.Get("taskId").Raw, "working", "", "")))
	case "tasks/cancel":
		fsWrite(w, http.StatusOK, fsResult(q.ID, `{"resultType":"complete"}`))
	default:
		fsWrite(w, http.StatusNotFound, fsError(q.ID, -32601, "Method not found", ""))
	}
}

func fsWrite(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func fsResult(id, result string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"result":` + result + `}`
}

// fsError is a JSON-RPC error response; data is raw JSON or "".
func fsError(id string, code int, msg, data string) string {
	e := `{"code":` + strconv.Itoa(code) + `,"message":` + fsQuote(msg)
	if data != "" {
		e += `,"data":` + data
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"error":` + e + `}}`
}

// fsQuote is s as a JSON string.
func fsQuote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// fsTask is a 2026 task object as a tasks/get result; poll is the raw
// pollIntervalMs ("" for none), extra raw members to append (",…").
func fsTask(rawID, status, poll, extra string) string {
	return fsTaskAs("complete", rawID, status, poll, extra)
}

// fsTaskAs is fsTask with another resultType ("task" for a CreateTaskResult).
func fsTaskAs(resultType, rawID, status, poll, extra string) string {
	t := `{"resultType":"` + resultType + `","taskId":` + rawID + `,"status":"` + status + `",` +
		`"createdAt":"2026-08-01T00:00:00Z","lastUpdatedAt":"2026-08-01T00:00:01Z","ttlMs":60000`
	if poll != "" {
		t += `,"pollIntervalMs":` + poll
	}
	return t + extra + `}`
}

// fsSSE starts an event stream.
func fsSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
}

// fsEvent writes one SSE message event and flushes it.
func fsEvent(w http.ResponseWriter, data string) {
	_, _ = io.WriteString(w, "event: message\ndata: "+data+"\n\n")
	_ = http.NewResponseController(w).Flush()
}

// fsResetMidBody hijacks the connection, writes a 200 whose Content-Length
// promises more than the partial JSON body that follows, and resets the
// connection (RST).
func fsResetMidBody(w http.ResponseWriter, id string) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err) // the test server always supports hijacking
	}
	partial := `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"complete","content":[{"type":"text","text":"part`
	fmt.Fprintf(brw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(partial)+4096, partial)
	_ = brw.Flush()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// fsCheckError requires resp to be an error with code (0: any code) whose
// message contains every word, case-insensitively, and returns the error.
func fsCheckError(t *testing.T, resp []byte, code int64, words ...string) gjson.Result {
	t.Helper()
	e := errorOf(t, resp)
	if code != 0 && e.Get("code").Int() != code {
		t.Errorf("error code %d, want %d: %s", e.Get("code").Int(), code, e.Raw)
	}
	msg := e.Get("message").String()
	for _, w := range words {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			t.Errorf("error message %q does not say %q", msg, w)
		}
	}
	t.Logf("answer: %s", shortBytes([]byte(e.Raw)))
	return e
}

// fsHits requires the server to have seen want requests with key.
func fsHits(t *testing.T, s *fsServer, key string, want int) {
	t.Helper()
	if got := s.count(key); got != want {
		t.Errorf("the server saw %d requests %q, want %d", got, key, want)
	}
}

// fsDistinct requires the upstream ids of key to be pairwise different (a
// retry carries a new id).
func fsDistinct(t *testing.T, s *fsServer, key string) {
	t.Helper()
	ids := s.upIDs(key)
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("requests %q reused upstream id %s (ids %v): a retry needs a new id", key, id, ids)
		}
		seen[id] = true
	}
}

// fsAlive shows the process still serves: a ping and an echo are answered.
func fsAlive(p *rawProc, tag string) {
	p.t.Helper()
	resultOf(p.t, p.call(`"ping-after-`+tag+`"`, "ping", ""))
	text := "alive after " + tag
	res := resultOf(p.t, p.call(`"echo-after-`+tag+`"`, "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"}}`))
	if got := res.Get("content.0.text").String(); got != text {
		p.t.Errorf("echo after %s answered %q, want %q", tag, got, text)
	}
}

// fsFinish closes stdin, requires exit status 0, and then requires every
// request id sent to have exactly one answer over the whole run, except the
// ids in noAnswer (cancelled by the client), which must have none.
func fsFinish(t *testing.T, p *rawProc, noAnswer ...string) {
	t.Helper()
	p.closeStdin()
	if code := p.waitExit(waitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	p.mu.Lock()
	sent := maps.Clone(p.sent)
	p.mu.Unlock()
	got := map[string]int{}
	for _, l := range p.all() {
		if isResponse(l) {
			got[gjson.GetBytes(l, "id").Raw]++
		}
	}
	for _, id := range slices.Sorted(maps.Keys(sent)) {
		want := sent[id]
		if slices.Contains(noAnswer, id) {
			want = 0
		}
		if got[id] != want {
			t.Errorf("id %s was answered %d times over the run, want %d", id, got[id], want)
		}
	}
}

// fsCancel sends notifications/cancelled for the raw id.
func fsCancel(p *rawProc, id string) {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"test"}}`)
}

// fsCase is one fault case run on a shared proxy.
type fsCase struct {
	name string
	run  func(t *testing.T, p *rawProc)
}

// TestFaultSuite runs the HTTP-level faults against one proxy with default
// flags, one case after the other.
func TestFaultSuite(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	up := newUpstream(t, fs)
	p := startProxy(t, []string{"--no-state", up.URL})
	p.initialize()
	fsAlive(p, "start") // also makes the proxy list the tools once

	call := func(name string) string { return `{"name":"` + name + `","arguments":{}}` }
	dataURL := func(t *testing.T, e gjson.Result) {
		t.Helper()
		if got := e.Get("data.url").String(); got != up.URL {
			t.Errorf("error.data.url = %q, want %s", got, up.URL)
		}
	}
	dataStatus := func(t *testing.T, e gjson.Result, want int64) {
		t.Helper()
		if got := e.Get("data.httpStatus").Int(); got != want {
			t.Errorf("error.data.httpStatus = %d, want %d (error %s)", got, want, e.Raw)
		}
	}
	version22 := func(w http.ResponseWriter, q fsReq) {
		fsWrite(w, http.StatusBadRequest, fsError(q.ID, -32022, "Unsupported protocol version: 2026-07-28",
			`{"supported":["2026-07-28"],"requested":"2026-07-28"}`))
	}

	cases := []fsCase{
		{"500 with a JSON-RPC body", func(t *testing.T, p *rawProc) {
			fs.on("tools/call e500rpc", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsWrite(w, http.StatusInternalServerError, fsError(q.ID, -32603, "Internal error: the database is unavailable", `{"retryable":true}`))
			})
			e := fsCheckError(t, p.call(`"e500rpc"`, "tools/call", call("e500rpc")), -32603, "database is unavailable")
			dataStatus(t, e, 500)
			if !e.Get("data.retryable").Bool() {
				t.Errorf("the server's error.data was not passed through: %s", e.Raw)
			}
			fsHits(t, fs, "tools/call e500rpc", 1)
		}},
		{"500 without a body", func(t *testing.T, p *rawProc) {
			fs.on("prompts/get p500", func(w http.ResponseWriter, _ *http.Request, _ fsReq) {
				w.WriteHeader(http.StatusInternalServerError)
			})
			e := fsCheckError(t, p.call(`"p500"`, "prompts/get", `{"name":"p500"}`), -32603, "HTTP 500", "try again later")
			dataStatus(t, e, 500)
			dataURL(t, e)
			fsHits(t, fs, "prompts/get p500", 1) // a status is an answer: not retried
		}},
		{"400 -32020 once, fixed by a tools/list refresh", func(t *testing.T, p *rawProc) {
			lists := fs.count("tools/list")
			fs.on("tools/call h20once", func(w http.ResponseWriter, r *http.Request, q fsReq) {
				if q.N == 1 {
					fsWrite(w, http.StatusBadRequest, fsError(q.ID, -32020, "Header mismatch: Mcp-Param-Region is required", ""))
					return
				}
				fsNormal(w, r, q)
			})
			res := resultOf(t, p.call(`"h20once"`, "tools/call", `{"name":"h20once","arguments":{"text":"after refresh"}}`))
			if got := res.Get("content.0.text").String(); got != "after refresh" {
				t.Errorf("answer %q after the -32020 retry", got)
			}
			fsHits(t, fs, "tools/call h20once", 2)
			fsDistinct(t, fs, "tools/call h20once")
			if got := fs.count("tools/list"); got != lists+1 {
				t.Errorf("the server saw %d tools/list during the -32020 recovery, want 1", got-lists)
			}
		}},
		{"400 -32020 every time", func(t *testing.T, p *rawProc) {
			fs.on("tools/call h20", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsWrite(w, http.StatusBadRequest, fsError(q.ID, -32020, "Header mismatch: Mcp-Param-Region is required", ""))
			})
			e := fsCheckError(t, p.call(`"h20"`, "tools/call", call("h20")), -32020, "Header mismatch", "Mcp-Param-Region")
			dataStatus(t, e, 400)
			fsHits(t, fs, "tools/call h20", 2) // one refresh-and-retry, no more
		}},
		{"400 -32021 with requiredCapabilities", func(t *testing.T, p *rawProc) {
			fs.on("resources/read fs://needs-sampling", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsWrite(w, http.StatusBadRequest, fsError(q.ID, -32021, "Missing required client capability: sampling",
					`{"requiredCapabilities":{"sampling":{}}}`))
			})
			e := fsCheckError(t, p.call(`"r21"`, "resources/read", `{"uri":"fs://needs-sampling"}`), -32021, "sampling")
			if !e.Get("data.requiredCapabilities.sampling").IsObject() {
				t.Errorf("error.data.requiredCapabilities was not passed through: %s", e.Raw)
			}
			dataStatus(t, e, 400)
			fsHits(t, fs, "resources/read fs://needs-sampling", 1)
		}},
		{"400 -32022, re-probe, the retry succeeds", func(t *testing.T, p *rawProc) {
			probes := fs.count("server/discover")
			fs.on("tools/call v22ok", func(w http.ResponseWriter, r *http.Request, q fsReq) {
				if q.N == 1 {
					version22(w, q)
					return
				}
				fsNormal(w, r, q)
			})
			res := resultOf(t, p.call(`"v22ok"`, "tools/call", `{"name":"v22ok","arguments":{"text":"retried"}}`))
			if got := res.Get("content.0.text").String(); got != "retried" {
				t.Errorf("answer %q after the -32022 retry", got)
			}
			fsHits(t, fs, "tools/call v22ok", 2)
			fsDistinct(t, fs, "tools/call v22ok")
			if got := fs.count("server/discover") - probes; got != 1 {
				t.Errorf("the server saw %d server/discover re-probes, want 1", got)
			}
		}},
		{"400 -32022, re-probe, the retry is rejected again", func(t *testing.T, p *rawProc) {
			probes := fs.count("server/discover")
			fs.on("tools/call v22again", func(w http.ResponseWriter, _ *http.Request, q fsReq) { version22(w, q) })
			e := fsCheckError(t, p.call(`"v22again"`, "tools/call", call("v22again")), -32603, "2026-07-28", "restart the client session")
			if e.Get("data.supported.0").String() != "2026-07-28" {
				t.Errorf("the server's error.data was lost: %s", e.Raw)
			}
			fsHits(t, fs, "tools/call v22again", 2) // retried once, not more
			if got := fs.count("server/discover") - probes; got != 1 {
				t.Errorf("the server saw %d server/discover re-probes, want 1", got)
			}
		}},
		{"400 -32022, the re-probe fails", func(t *testing.T, p *rawProc) {
			probes := fs.count("server/discover")
			fs.on("server/discover", func(w http.ResponseWriter, _ *http.Request, _ fsReq) {
				http.Error(w, "maintenance", http.StatusServiceUnavailable)
			})
			defer fs.on("server/discover", nil)
			fs.on("tools/call v22probe", func(w http.ResponseWriter, _ *http.Request, q fsReq) { version22(w, q) })
			fsCheckError(t, p.call(`"v22probe"`, "tools/call", call("v22probe")), -32603, "2026-07-28", "restart the client session")
			fsHits(t, fs, "tools/call v22probe", 1) // no retry without a modern verdict
			if got := fs.count("server/discover") - probes; got != 1 {
				t.Errorf("the server saw %d server/discover re-probes, want 1", got)
			}
		}},
		{"reset mid-body, tools/call is not replayed", func(t *testing.T, p *rawProc) {
			fs.on("tools/call reset", func(w http.ResponseWriter, _ *http.Request, q fsReq) { fsResetMidBody(w, q.ID) })
			e := fsCheckError(t, p.call(`"reset"`, "tools/call", call("reset")), -32603, "broke", "may or may not have run")
			dataURL(t, e)
			fsHits(t, fs, "tools/call reset", 1)
		}},
		{"reset mid-body, tools/list is retried with a new id", func(t *testing.T, p *rawProc) {
			before := fs.count("tools/list")
			var first string
			fs.on("tools/list", func(w http.ResponseWriter, r *http.Request, q fsReq) {
				if q.N == before+1 {
					first = q.ID
					fsResetMidBody(w, q.ID)
					return
				}
				fsNormal(w, r, q)
			})
			defer fs.on("tools/list", nil)
			res := resultOf(t, p.call(`"list-reset"`, "tools/list", `{}`))
			if res.Get("tools.0.name").String() != "echo" {
				t.Errorf("tools/list after the retry: %s", res.Raw)
			}
			fsHits(t, fs, "tools/list", before+2)
			if ids := fs.upIDs("tools/list"); ids[len(ids)-1] == first {
				t.Errorf("the retry reused upstream id %s", first)
			}
		}},
		{"reset mid-body on every attempt, resources/read gives up", func(t *testing.T, p *rawProc) {
			fs.on("resources/read fs://reset", func(w http.ResponseWriter, _ *http.Request, q fsReq) { fsResetMidBody(w, q.ID) })
			fsCheckError(t, p.call(`"read-reset"`, "resources/read", `{"uri":"fs://reset"}`), -32603, "broke")
			if n := fs.count("resources/read fs://reset"); n < 2 || n > 3 {
				t.Errorf("the server saw %d resources/read, want a bounded retry (2 or 3 attempts)", n)
			}
			fsDistinct(t, fs, "resources/read fs://reset")
		}},
		{"SSE ends before the response, tools/call is not replayed", func(t *testing.T, p *rawProc) {
			fs.on("tools/call ssecut", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsSSE(w)
				fsEvent(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"cut","progress":1}}`)
			})
			mark := p.mark()
			fsCheckError(t, p.call(`"ssecut"`, "tools/call", `{"name":"ssecut","arguments":{},"_meta":{"progressToken":"cut"}}`),
				-32603, "ended before the response", "may or may not have run")
			progress, answer := -1, -1
			for i, l := range p.all()[mark:] {
				switch r := gjson.ParseBytes(l); {
				case r.Get("method").String() == "notifications/progress" && r.Get("params.progressToken").String() == "cut":
					progress = i
				case r.Get("id").Raw == `"ssecut"`:
					answer = i
				}
			}
			if progress < 0 || progress > answer {
				t.Errorf("the progress sent before the cut did not reach the client before the error (lines %d, %d)", progress, answer)
			}
			fsHits(t, fs, "tools/call ssecut", 1)
		}},
		{"SSE ends before the response, tools/list is retried with a new id", func(t *testing.T, p *rawProc) {
			before := fs.count("tools/list")
			fs.on("tools/list", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsSSE(w)
				if q.N == before+1 {
					_, _ = io.WriteString(w, ": about to drop\n\n")
					return
				}
				fsEvent(w, fsResult(q.ID, `{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`))
			})
			defer fs.on("tools/list", nil)
			res := resultOf(t, p.call(`"list-ssecut"`, "tools/list", `{}`))
			if res.Get("tools.0.name").String() != "echo" {
				t.Errorf("tools/list after the retry: %s", res.Raw)
			}
			fsHits(t, fs, "tools/list", before+2)
			fsDistinct(t, fs, "tools/list")
		}},
		{"invalid JSON body", func(t *testing.T, p *rawProc) {
			fs.on("resources/read fs://garbage", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsWrite(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+q.ID+`,"result":{"contents":[{"uri":`)
			})
			e := fsCheckError(t, p.call(`"garbage"`, "resources/read", `{"uri":"fs://garbage"}`), -32603, "invalid JSON")
			dataStatus(t, e, 200)
			fsHits(t, fs, "resources/read fs://garbage", 1)
		}},
		{"invalid JSON in an event stream", func(t *testing.T, p *rawProc) {
			fs.on("tools/call ssegarbage", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsSSE(w)
				fsEvent(w, `{"jsonrpc":"2.0","id":`+q.ID+`,"result":{oops}`)
			})
			fsCheckError(t, p.call(`"ssegarbage"`, "tools/call", call("ssegarbage")), -32603, "ended before the response", "not a JSON-RPC message")
			fsHits(t, fs, "tools/call ssegarbage", 1)
		}},
		{"wrong response id, JSON", func(t *testing.T, p *rawProc) {
			fs.on("prompts/get wrongid", func(w http.ResponseWriter, _ *http.Request, _ fsReq) {
				fsWrite(w, http.StatusOK, fsResult("987654321", `{"resultType":"complete","messages":[]}`))
			})
			fsCheckError(t, p.call(`"wrongid"`, "prompts/get", `{"name":"wrongid"}`), -32603, "987654321", "instead of", "misbehaving")
			fsHits(t, fs, "prompts/get wrongid", 1)
		}},
		{"wrong response id, event stream", func(t *testing.T, p *rawProc) {
			fs.on("tools/call ssewrongid", func(w http.ResponseWriter, _ *http.Request, _ fsReq) {
				fsSSE(w)
				fsEvent(w, fsResult("987654321", `{"resultType":"complete","content":[{"type":"text","text":"not yours"}]}`))
			})
			fsCheckError(t, p.call(`"ssewrongid"`, "tools/call", call("ssewrongid")), -32603, "ended before the response", "another id")
			fsHits(t, fs, "tools/call ssewrongid", 1)
		}},
		{"200 with text/html", func(t *testing.T, p *rawProc) {
			fs.on("resources/read fs://html", func(w http.ResponseWriter, _ *http.Request, _ fsReq) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = io.WriteString(w, "<!doctype html><title>Sign in</title><p>Welcome</p>")
			})
			e := fsCheckError(t, p.call(`"html"`, "resources/read", `{"uri":"fs://html"}`), -32603, "HTTP 200", "text/html", "web page")
			dataStatus(t, e, 200)
			if !strings.Contains(e.Get("data.body").String(), "Sign in") {
				t.Errorf("error.data.body does not show the start of the page: %s", e.Raw)
			}
			fsHits(t, fs, "resources/read fs://html", 1)
		}},
		{"32 MiB answer passes intact", func(t *testing.T, p *rawProc) {
			big := fsBigText(32 << 20)
			fs.on("tools/call big", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
				fsWrite(w, http.StatusOK, fsResult(q.ID, `{"resultType":"complete","content":[{"type":"text","text":"`+big+`"}]}`))
			})
			res := resultOf(t, p.call(`"big"`, "tools/call", call("big")))
			if got := res.Get("content.0.text").String(); got != big {
				t.Errorf("the 32 MiB text came back changed (%d bytes, want %d)", len(got), len(big))
			}
		}},
		{"large answers of unknown length and changing sizes pass intact", func(t *testing.T, p *rawProc) {
			// An SSE event and a JSON body without a Content-Length start in a
			// 1 MiB part, go on in a buffer the size of the last one (plus an
			// eighth, in whole MiB), and in parts beyond it: one part alone,
			// parts after a small one, a buffer that holds the rest, one that
			// is outgrown, and shrinking.
			big := fsBigText(9 << 20)
			sizes := []int{40 << 10, 1 << 20, 1<<20 + 1, 3 << 20, 2 << 20, 9 << 20, 9<<20 - 5}
			for i, n := range sizes {
				for _, sse := range []bool{true, false} {
					text := big[:n]
					fs.on("tools/call sized", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
						body := fsResult(q.ID, `{"resultType":"complete","content":[{"type":"text","text":"`+text+`"}]}`)
						if sse {
							fsSSE(w)
							fsEvent(w, body)
							return
						}
						fsWrite(w, http.StatusOK, body) // no Content-Length: sent chunked
					})
					res := resultOf(t, p.call(fmt.Sprintf(`"sized-%d-%v"`, i, sse), "tools/call", call("sized")))
					if got := res.Get("content.0.text").String(); got != text || res.Get("resultType").Exists() {
						t.Errorf("%d bytes (sse %v) came back changed: %d bytes, resultType %v", n, sse, len(got), res.Get("resultType").Exists())
					}
				}
			}
			fsHits(t, fs, "tools/call sized", 2*len(sizes))
		}},
		{"401 with WWW-Authenticate", func(t *testing.T, p *rawProc) {
			fs.on("tools/call auth", func(w http.ResponseWriter, _ *http.Request, _ fsReq) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcp", error="invalid_token"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
			})
			e := fsCheckError(t, p.call(`"auth"`, "tools/call", call("auth")), -32603, "401", "--header", "Authorization")
			dataStatus(t, e, 401)
			fsHits(t, fs, "tools/call auth", 1)
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := p.bind(t)
			c.run(t, p)
			fsAlive(p, "case"+strconv.Itoa(i))
		})
	}
	fsFinish(t, p)
}

// fsBigText is n bytes of JSON-safe text that is not one repeated byte: a
// 4 KiB pseudo-random block, repeated.
func fsBigText(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_"
	rng := rand.New(rand.NewPCG(32, 20))
	block := make([]byte, 4096)
	for i := range block {
		block[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return strings.Repeat(string(block), n/len(block)+1)[:n]
}

// TestFaultSuiteTimeouts: with --idle-timeout 1s, an event stream that never
// ends is one timeout error naming the flag (and the stream is closed); slow
// headers within the timeout are fine.
func TestFaultSuiteTimeouts(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	up := newUpstream(t, fs)
	p := startProxy(t, []string{"--no-state", "--idle-timeout", "1s", up.URL})
	p.initialize()
	fsAlive(p, "start")

	never := func(done chan struct{}) fsHandler {
		return func(w http.ResponseWriter, r *http.Request, q fsReq) {
			fsSSE(w)
			if tok := q.Params.Get("_meta.progressToken"); tok.Exists() {
				fsEvent(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`+tok.Raw+`,"progress":1}}`)
			}
			<-r.Context().Done()
			close(done)
		}
	}
	cases := []struct{ name, key, id, method, params string }{
		{"an event stream that never ends, tools/call", "tools/call never", `"never"`, "tools/call", `{"name":"never","arguments":{},"_meta":{"progressToken":"nv"}}`},
		{"an event stream that never ends, tools/list", "tools/list", `"never-list"`, "tools/list", `{}`},
	}
	// All requests go out at once and time out side by side.
	before := map[string]int{}
	dones := map[string]chan struct{}{}
	for _, tc := range cases {
		before[tc.key] = fs.count(tc.key) // the proxy's own first tools/list
		dones[tc.key] = make(chan struct{})
		fs.on(tc.key, never(dones[tc.key]))
	}
	fs.on("tools/call slowhead", func(w http.ResponseWriter, r *http.Request, q fsReq) {
		time.Sleep(400 * time.Millisecond) // the fault itself, not a synchronization
		fsNormal(w, r, q)
	})
	for _, tc := range cases {
		p.request(tc.id, tc.method, tc.params)
	}
	p.request(`"slowhead"`, "tools/call", `{"name":"slowhead","arguments":{"text":"late but fine"}}`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsCheckError(t, p.bind(t).expect(tc.id), -32603, "sent nothing", "--idle-timeout")
			waitClosed(t, dones[tc.key], "the server seeing the timed-out stream closed")
			fsHits(t, fs, tc.key, before[tc.key]+1) // a timeout is not replayed
		})
	}
	t.Run("slow headers within the idle timeout", func(t *testing.T) {
		res := resultOf(t, p.bind(t).expect(`"slowhead"`))
		if got := res.Get("content.0.text").String(); got != "late but fine" {
			t.Errorf("answer %q", got)
		}
	})
	fsAlive(p, "timeouts")
	fsFinish(t, p)
}

// TestFaultSuiteHeaderTimeout: with --response-header-timeout 1s, headers
// that never come are one error naming that flag, and the call is not
// replayed; a body that is slow after prompt headers is not cut by it.
func TestFaultSuiteHeaderTimeout(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	up := newUpstream(t, fs)
	p := startProxy(t, []string{"--no-state", "--response-header-timeout", "1s", "--idle-timeout", "1m", up.URL})
	p.initialize()
	fsAlive(p, "start")
	// All requests go out at once and run side by side.
	done := make(chan struct{})
	fs.on("tools/call nohead", func(_ http.ResponseWriter, r *http.Request, _ fsReq) {
		<-r.Context().Done()
		close(done)
	})
	lists := fs.count("tools/list") // the proxy's own first tools/list
	fs.on("tools/list", func(_ http.ResponseWriter, r *http.Request, _ fsReq) { <-r.Context().Done() })
	fs.on("tools/call slowbody", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
		fsSSE(w)
		time.Sleep(1500 * time.Millisecond) // the fault itself: longer than the header timeout
		fsEvent(w, fsResult(q.ID, `{"resultType":"complete","content":[{"type":"text","text":"slow body"}]}`))
	})
	p.request(`"nohead"`, "tools/call", `{"name":"nohead","arguments":{}}`)
	p.request(`"nohead-list"`, "tools/list", `{}`)
	p.request(`"slowbody"`, "tools/call", `{"name":"slowbody","arguments":{}}`)

	t.Run("headers never come", func(t *testing.T) {
		fsCheckError(t, p.bind(t).expect(`"nohead"`), -32603, "--response-header-timeout")
		waitClosed(t, done, "the server seeing the request closed")
		fsHits(t, fs, "tools/call nohead", 1)
	})
	t.Run("headers never come, tools/list", func(t *testing.T) {
		fsCheckError(t, p.bind(t).expect(`"nohead-list"`), -32603, "--response-header-timeout")
		// A safe method may be retried, within the bound of the policy.
		n := fs.count("tools/list") - lists
		t.Logf("tools/list whose headers never come was sent %d times", n)
		if n < 1 || n > 3 {
			t.Errorf("the server saw %d tools/list, want 1 to 3", n)
		}
		fsDistinct(t, fs, "tools/list")
	})
	t.Run("a slow body after prompt headers", func(t *testing.T) {
		res := resultOf(t, p.bind(t).expect(`"slowbody"`))
		if got := res.Get("content.0.text").String(); got != "slow body" {
			t.Errorf("answer %q", got)
		}
	})
	fs.on("tools/list", nil)
	fsAlive(p, "header-timeout")
	fsFinish(t, p)
}

// TestFaultSuiteMessageSize: with --max-message-size 16MiB a 32 MiB answer,
// as one JSON body or as one event of a stream, is one error naming the
// flag.
func TestFaultSuiteMessageSize(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	up := newUpstream(t, fs)
	p := startProxy(t, []string{"--no-state", "--max-message-size", "16MiB", up.URL})
	p.initialize()
	fsAlive(p, "start")
	big := fsBigText(32 << 20)
	fs.on("tools/call bigjson", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
		w.Header().Set("Content-Length", strconv.Itoa(len(fsResult(q.ID, `{"content":[{"type":"text","text":"`+big+`"}]}`))))
		fsWrite(w, http.StatusOK, fsResult(q.ID, `{"content":[{"type":"text","text":"`+big+`"}]}`))
	})
	fs.on("tools/call bigsse", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
		fsSSE(w)
		fsEvent(w, fsResult(q.ID, `{"content":[{"type":"text","text":"`+big+`"}]}`))
	})
	for _, name := range []string{"bigjson", "bigsse"} {
		t.Run(name, func(t *testing.T) {
			p := p.bind(t)
			fsCheckError(t, p.call(`"`+name+`"`, "tools/call", `{"name":"`+name+`","arguments":{}}`), -32603, "--max-message-size")
			fsHits(t, fs, "tools/call "+name, 1)
			fsAlive(p, name)
		})
	}
	fsFinish(t, p)
}

// TestFaultSuiteConnRefused: the server's port closes after initialize; a
// tools/call and a tools/list each get one error that says the server cannot
// be reached; once something listens on the port again, calls work.
func TestFaultSuiteConnRefused(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	rec := newUpstream(t, fs) // validates what the proxy sends; reached through front
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	front := httptest.NewUnstartedServer(rec)
	front.Listener = ln
	// No keep-alive: a POST written onto a pooled connection the server has
	// just closed fails as a broken exchange (bytes may have left), not as
	// a refused connection, which is what this test is about.
	front.Config.SetKeepAlivesEnabled(false)
	front.Start()
	url := "http://" + addr + upstreamPath
	p := startProxy(t, []string{"--no-state", url})
	p.initialize()
	fsAlive(p, "start")
	front.CloseClientConnections()
	front.Close()

	for _, tc := range []struct{ id, method, params string }{
		{`"refused-call"`, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`},
		{`"refused-list"`, "tools/list", `{}`},
	} {
		p.request(tc.id, tc.method, tc.params)
	}
	for _, id := range []string{`"refused-call"`, `"refused-list"`} {
		e := fsCheckError(t, p.expect(id), -32603, "cannot reach", "is the server running")
		if got := e.Get("data.url").String(); got != url {
			t.Errorf("error.data.url = %q, want %s", got, url)
		}
	}
	resultOf(t, p.call(`"ping-refused"`, "ping", ""))

	// The server comes back on the same port.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Logf("cannot listen on %s again (%v); recovery not checked", addr, err)
	} else {
		back := httptest.NewUnstartedServer(rec)
		back.Listener = ln2
		back.Config.SetKeepAlivesEnabled(false)
		back.Start()
		t.Cleanup(func() {
			back.CloseClientConnections()
			back.Close()
		})
		fsAlive(p, "recovery")
	}
	fsFinish(t, p)
}

// TestFaultSuiteDiscover: server/discover fails at initialize (401 with
// WWW-Authenticate, then 503, then a reset mid-body) and recovers; each
// failing initialize gets one error that names the cause and the fix, and
// the process stays up until an initialize succeeds.
func TestFaultSuiteDiscover(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	up := newUpstream(t, fs)
	var resetFirst atomic.Bool
	fs.on("server/discover", func(w http.ResponseWriter, r *http.Request, q fsReq) {
		switch q.N {
		case 1:
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://auth.example/.well-known/oauth-protected-resource"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
		case 2:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "upstream overloaded", http.StatusServiceUnavailable)
		case 3:
			resetFirst.Store(true)
			fsResetMidBody(w, q.ID)
		default:
			fsNormal(w, r, q)
		}
	})
	p := startProxy(t, []string{"--no-state", up.URL})

	// The 401 names resource metadata on plain http at another host: no
	// sign-in can start, and the error says why and the other way in.
	e := fsCheckError(t, p.call(`"init-401"`, "initialize", initParams), -32603, "cannot start", "plain http", "--header", "Authorization", "next initialize")
	if got := e.Get("data.cause").Str; got != "auth" {
		t.Errorf("error.data.cause = %q, want auth", got)
	}
	resultOf(t, p.call(`"ping-401"`, "ping", ""))

	e = fsCheckError(t, p.call(`"init-503"`, "initialize", initParams), -32603, "503", "try again")
	if got := e.Get("data.httpStatus").Int(); got != 503 {
		t.Errorf("error.data.httpStatus = %d, want 503", got)
	}
	resultOf(t, p.call(`"ping-503"`, "ping", ""))

	// server/discover is safe to repeat: a stream broken mid-body is
	// re-issued with a new id (issue 5, retry policy), so this initialize
	// succeeds.
	resp := p.call(`"init-reset"`, "initialize", initParams)
	if !resetFirst.Load() {
		t.Fatalf("the third probe was not the reset one")
	}
	if res := gjson.GetBytes(resp, "result"); res.Exists() {
		if got := res.Get("serverInfo.name").String(); got != "fault-suite" {
			t.Errorf("serverInfo.name = %q, want fault-suite", got)
		}
	} else {
		t.Errorf("initialize after a discover reset mid-body: %s; want the probe retried with a new id (server/discover is safe to repeat)", shortBytes(resp))
		fsCheckError(t, resp, -32603, "next initialize")
		resultOf(t, p.call(`"init-ok"`, "initialize", initParams))
	}
	fsDistinct(t, fs, "server/discover")
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fsAlive(p, "discover")
	fsFinish(t, p)
}

// TestFaultSuiteTasks: tasks/get answered with garbage, -32602, or a
// pollIntervalMs of 2^40, 0, -5 or "x", on the three task paths: a tasks/get
// the client sends for a task it created, a tasks/result the proxy serves by
// polling, and a plain tools/call the server turned into a task that the
// proxy follows. Each flow completes or fails cleanly, with one answer. The
// slow flows (a 2 s default poll interval, five failed polls) are all sent
// first and run side by side; the subtests then check them one by one.
func TestFaultSuiteTasks(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	up := newUpstream(t, fs)
	// tools/call mk makes a task with the arguments' taskId and raw poll.
	fs.on("tools/call mk", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
		args := q.Params.Get("arguments")
		fsWrite(w, http.StatusOK, fsResult(q.ID, fsTaskAs("task", args.Get("taskId").Raw, "working", args.Get("poll").Raw, "")))
	})
	p := startProxy(t, []string{"--no-state", up.URL})
	tkInit(p)
	fsAlive(p, "start")

	const huge = "1099511627776" // 2^40 ms
	polls := []struct{ label, raw string }{{"zero", "0"}, {"negative", "-5"}, {"string", `"x"`}}
	mkArgs := func(taskID, poll string) string {
		a := `{"taskId":` + fsQuote(taskID)
		if poll != "" {
			a += `,"poll":` + poll
		}
		return a + "}"
	}
	create := func(taskID string) {
		t.Helper()
		task := resultOf(t, p.call(fsQuote("create-"+taskID), "tools/call", `{"name":"mk","arguments":`+mkArgs(taskID, "")+`,"task":{"ttl":60000}}`)).Get("task")
		if task.Get("taskId").String() != taskID || task.Get("status").String() != "working" {
			t.Fatalf("task-augmented call: want a working task %q, got %s", taskID, task.Raw)
		}
	}
	done := func(taskID string) string {
		return fsTask(fsQuote(taskID), "completed", "", `,"result":{"content":[{"type":"text","text":`+fsQuote("done "+taskID)+`}]}`)
	}
	completed := func(taskID string) fsHandler {
		return func(w http.ResponseWriter, _ *http.Request, q fsReq) {
			fsWrite(w, http.StatusOK, fsResult(q.ID, done(taskID)))
		}
	}
	// completesSecond answers tasks/get with a working task and the raw
	// pollIntervalMs first, then with the completed task.
	completesSecond := func(taskID, poll string) fsHandler {
		return func(w http.ResponseWriter, _ *http.Request, q fsReq) {
			if q.N == 1 {
				fsWrite(w, http.StatusOK, fsResult(q.ID, fsTask(fsQuote(taskID), "working", poll, "")))
				return
			}
			fsWrite(w, http.StatusOK, fsResult(q.ID, done(taskID)))
		}
	}
	garbage := func(w http.ResponseWriter, _ *http.Request, q fsReq) {
		if q.N%2 == 1 {
			fsWrite(w, http.StatusOK, "<<this is not JSON>>")
			return
		}
		fsWrite(w, http.StatusOK, fsResult(q.ID, `"not an object"`))
	}
	lost := func(w http.ResponseWriter, _ *http.Request, q fsReq) {
		fsWrite(w, http.StatusOK, fsError(q.ID, -32602, "Failed to retrieve task: Task not found", ""))
	}
	lostIDs := []string{"follow-lost", "follow-lost-\"\u00e9\u007f"} // the second is unusual but legal

	// Routes, then the tasks the client creates with task-augmented calls.
	fs.on("tasks/get get-garbage", func(w http.ResponseWriter, r *http.Request, q fsReq) {
		if q.N <= 2 {
			garbage(w, r, q)
			return
		}
		fsNormal(w, r, q)
	})
	for _, tc := range append(polls, struct{ label, raw string }{"huge", huge}) {
		id := "get-poll-" + tc.label
		fs.on("tasks/get "+id, func(w http.ResponseWriter, _ *http.Request, q fsReq) {
			fsWrite(w, http.StatusOK, fsResult(q.ID, fsTask(fsQuote(id), "working", tc.raw, "")))
		})
		create(id)
	}
	for _, tc := range polls {
		fs.on("tasks/get result-poll-"+tc.label, completesSecond("result-poll-"+tc.label, tc.raw))
		fs.on("tasks/get follow-poll-"+tc.label, completed("follow-poll-"+tc.label))
		create("result-poll-" + tc.label)
	}
	fs.on("tasks/get result-poll-huge", completesSecond("result-poll-huge", huge))
	fs.on("tasks/get result-garbage", garbage)
	fs.on("tasks/get result-lost", lost)
	fs.on("tasks/get follow-garbage", garbage)
	for _, id := range lostIDs {
		fs.on("tasks/get "+id, lost)
	}
	for _, id := range []string{"get-garbage", "result-poll-huge", "result-garbage", "result-lost"} {
		create(id)
	}

	// The slow flows start together.
	for _, tc := range polls {
		p.request(fsQuote("result-poll-"+tc.label), "tasks/result", tkTaskParams("result-poll-"+tc.label))
		p.request(fsQuote("follow-poll-"+tc.label), "tools/call", `{"name":"mk","arguments":`+mkArgs("follow-poll-"+tc.label, tc.raw)+`}`)
	}
	p.request(`"result-huge-1"`, "tasks/result", tkTaskParams("result-poll-huge"))
	p.request(`"result-garbage"`, "tasks/result", tkTaskParams("result-garbage"))
	p.request(`"result-lost"`, "tasks/result", tkTaskParams("result-lost"))
	p.request(`"follow-huge"`, "tools/call", `{"name":"mk","arguments":`+mkArgs("follow-huge", huge)+`}`)
	p.request(`"follow-garbage"`, "tools/call", `{"name":"mk","arguments":`+mkArgs("follow-garbage", "0")+`}`)
	for _, id := range lostIDs {
		p.request(fsQuote(id), "tools/call", `{"name":"mk","arguments":`+mkArgs(id, "0")+`}`)
	}
	cancelled := []string{`"result-huge-1"`, `"follow-huge"`}

	// The client's own tasks/get.
	t.Run("tasks/get answered with garbage", func(t *testing.T) {
		p := p.bind(t)
		for i := range 2 {
			fsCheckError(t, p.call(fsQuote(fmt.Sprintf("get-garbage-%d", i)), "tasks/get", tkTaskParams("get-garbage")), -32603, "tasks/get", "try again")
		}
		if st := resultOf(t, p.call(`"get-garbage-ok"`, "tasks/get", tkTaskParams("get-garbage"))).Get("status").String(); st != "working" {
			t.Errorf("tasks/get after the garbage: status %q", st)
		}
	})
	t.Run("tasks/get pollIntervalMs", func(t *testing.T) {
		p := p.bind(t)
		// The proxy's task normalization: copied in ms, omitted when negative
		// or not a number, and held to the proxy's own bounds (rewrite.MinPollInterval … MaxPollInterval).
		for label, want := range map[string]string{"zero": "100", "negative": "", "string": "", "huge": "300000"} {
			id := "get-poll-" + label
			res := resultOf(t, p.call(fsQuote(id), "tasks/get", tkTaskParams(id)))
			if got := res.Get("pollInterval"); got.Raw != want {
				t.Errorf("%s: the client sees pollInterval %q, want %q (%s)", id, got.Raw, want, res.Raw)
			}
		}
	})

	t.Run("pollIntervalMs 2^40 neither spins nor blocks", func(t *testing.T) {
		p := p.bind(t)
		up.waitRequest(t, "the first poll of result-poll-huge", func(ex *exchange) bool {
			return ex.RPCMethod == "tasks/get" && gjson.GetBytes(ex.Body, "params.taskId").String() == "result-poll-huge"
		})
		up.response(t, up.waitRequest(t, "the tools/call that makes follow-huge", func(ex *exchange) bool {
			return ex.RPCMethod == "tools/call" && gjson.GetBytes(ex.Body, "params.arguments.taskId").String() == "follow-huge"
		}))
		// Proving an absence takes time: the one wait on the clock here.
		time.Sleep(500 * time.Millisecond)
		if n := fs.count("tasks/get result-poll-huge"); n != 1 {
			t.Errorf("tasks/result polled %d times within 0.5 s of pollIntervalMs 2^40, want 1", n)
		}
		if n := fs.count("tasks/get follow-huge"); n != 0 {
			t.Errorf("the followed call polled %d times within 0.5 s of pollIntervalMs 2^40, want 0", n)
		}
		// The client gives up on both waits: the followed task is
		// cancelled upstream; a new tasks/result polls at once and finds
		// the outcome.
		fsCancel(p, `"result-huge-1"`)
		fsCancel(p, `"follow-huge"`)
		up.waitRequest(t, "tasks/cancel for the followed task", func(ex *exchange) bool {
			return ex.RPCMethod == "tasks/cancel" && gjson.GetBytes(ex.Body, "params.taskId").String() == "follow-huge"
		})
		res := resultOf(t, p.call(`"result-huge-2"`, "tasks/result", tkTaskParams("result-poll-huge")))
		if got := tkText(res); got != "done result-poll-huge" {
			t.Errorf("tasks/result answered %q", got)
		}
	})

	// tasks/result, served by polling tasks/get.
	for _, tc := range polls {
		t.Run("tasks/result, pollIntervalMs "+tc.raw, func(t *testing.T) {
			id := "result-poll-" + tc.label
			res := resultOf(t, p.bind(t).expect(fsQuote(id)))
			if got := tkText(res); got != "done "+id {
				t.Errorf("tasks/result answered %q", got)
			}
			fsHits(t, fs, "tasks/get "+id, 2)
		})
	}
	t.Run("tasks/result, garbage polls", func(t *testing.T) {
		fsCheckError(t, p.bind(t).expect(`"result-garbage"`), -32603, "tasks/get", "try again")
		if n := fs.count("tasks/get result-garbage"); n < 2 || n > 10 {
			t.Errorf("the server saw %d polls, want a small bounded number", n)
		}
	})
	t.Run("tasks/result, -32602", func(t *testing.T) {
		fsCheckError(t, p.bind(t).expect(`"result-lost"`), -32602, "Task not found")
		fsHits(t, fs, "tasks/get result-lost", 1)
	})

	// A plain tools/call the server turns into a task: followed.
	for _, tc := range polls {
		t.Run("followed, pollIntervalMs "+tc.raw, func(t *testing.T) {
			id := "follow-poll-" + tc.label
			res := resultOf(t, p.bind(t).expect(fsQuote(id)))
			if got := tkText(res); got != "done "+id {
				t.Errorf("followed call answered %q", got)
			}
			fsHits(t, fs, "tasks/get "+id, 1)
		})
	}
	t.Run("followed, garbage polls", func(t *testing.T) {
		fsCheckError(t, p.bind(t).expect(`"follow-garbage"`), -32603, "tasks/get", "follow-garbage")
		if n := fs.count("tasks/get follow-garbage"); n < 2 || n > 10 {
			t.Errorf("the server saw %d polls, want a small bounded number", n)
		}
	})
	for _, id := range lostIDs {
		t.Run("followed, -32602, task id "+strconv.QuoteToASCII(id), func(t *testing.T) {
			e := fsCheckError(t, fsExpectLine(p.bind(t), fsQuote(id)), -32603, "lost the task", "Task not found")
			if got := e.Get("data.taskId").String(); got != id {
				t.Errorf("error.data.taskId = %q, want %q", got, id)
			}
			fsHits(t, fs, "tasks/get "+id, 1)
		})
	}

	t.Run("-32602 to tasks/get prunes the task", func(t *testing.T) {
		p := p.bind(t)
		const id = "get-lost"
		create(id)
		if _, ok := tkList(p)[id]; !ok {
			t.Fatalf("tasks/list does not show the new task %s", id)
		}
		fs.on("tasks/get "+id, lost)
		fsCheckError(t, p.call(`"get-lost"`, "tasks/get", tkTaskParams(id)), -32602, "Task not found")
		if _, ok := tkList(p)[id]; ok {
			t.Errorf("tasks/list still shows %s after the server said it does not exist", id)
		}
	})
	fsAlive(p, "tasks")
	fsFinish(t, p, cancelled...)
}

// fsExpectLine waits for the answer to the raw id like expect, but also
// takes a line that is not valid JSON, so that a malformed answer fails at
// once instead of after a timeout.
func fsExpectLine(p *rawProc, id string) []byte {
	p.t.Helper()
	needle := []byte(`"id":` + id + `,`)
	i, line := p.waitLine(0, "the answer line for id "+id, func(i int, l outLine) bool {
		return !p.claimed[i] && bytes.Contains(l.raw, needle) && (l.resp || !gjson.ValidBytes(l.raw))
	})
	p.mu.Lock()
	p.claimed[i] = true
	p.mu.Unlock()
	if !gjson.ValidBytes(line) {
		p.t.Fatalf("the answer for id %s is not valid JSON: %s", id, shortBytes(line))
	}
	return line
}

// fsLoadServer answers tools/call with the arguments' token and pad after
// the arguments' delay in ms, and counts how many requests it serves at
// once.
type fsLoadServer struct {
	cur, peak, calls atomic.Int64
}

func (l *fsLoadServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := l.cur.Add(1)
	defer l.cur.Add(-1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := gjson.ParseBytes(body)
	id := req.Get("id").Raw
	switch req.Get("method").String() {
	case "server/discover":
		fsWrite(w, http.StatusOK, fsResult(id, fsDiscover))
	case "tools/list":
		fsWrite(w, http.StatusOK, fsResult(id, `{"resultType":"complete","tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`))
	case "tools/call":
		l.calls.Add(1)
		args := req.Get("params.arguments")
		if ms := args.Get("ms").Int(); ms > 0 {
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond): // the slow half of the load
			case <-r.Context().Done():
				return
			}
		}
		fsWrite(w, http.StatusOK, fsResult(id, `{"resultType":"complete","content":[{"type":"text","text":"`+
			args.Get("token").Str+":"+args.Get("pad").Str+`"}]}`))
	default:
		fsWrite(w, http.StatusNotFound, fsError(id, -32601, "Method not found", ""))
	}
}

// fsPeakRSS reads VmHWM (the peak resident set) of a process, in KiB.
func fsPeakRSS(pid int) (int64, error) { return fsProcKiB(pid, "VmHWM") }

// fsProcKiB reads one of the kB lines of /proc/PID/status (VmHWM, VmPeak).
func fsProcKiB(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no %s line in /proc/%d/status", key, pid)
}

// TestFaultLoad (issue 5 item 6): one proxy with --max-in-flight 16 gets 200
// tools/call written to stdin at once, half answered at once and half after
// 100–300 ms (seeded). Each id is answered exactly once with its own token,
// the server never serves more than 16 at once, and the peak RSS of the
// proxy is logged. It runs with small arguments and with ~64 KiB each.
func TestFaultLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pad  int
	}{{"small payloads", 0}, {"64 KiB payloads", 64 << 10}} {
		t.Run(tc.name, func(t *testing.T) { fsLoad(t, tc.pad) })
	}
}

func fsLoad(t *testing.T, pad int) {
	const n, maxInFlight = 200, 16
	srv := &fsLoadServer{}
	up := newUpstream(t, srv)
	p := startProxy(t, []string{"--no-state", "--max-in-flight", strconv.Itoa(maxInFlight), up.URL})
	p.initialize()

	rng := rand.New(rand.NewPCG(2026, 728))
	slow := rng.Perm(n) // the first n/2 of a permutation are slow
	var in bytes.Buffer
	ids := make([]string, n)
	want := make([]string, n)
	slowCount := 0
	for i := range n {
		ids[i] = fmt.Sprintf(`"load-%d"`, i)
		token := fmt.Sprintf("tok%03d-%08x", i, rng.Uint32())
		ms := 0
		if slow[i] < n/2 {
			ms = 100 + rng.IntN(201)
			slowCount++
		}
		padding := ""
		if pad > 0 {
			padding = strings.Repeat(token, pad/len(token)+1)[:pad]
		}
		want[i] = token + ":" + padding
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"echo","arguments":{"token":"%s","ms":%d,"pad":"%s"}}}`+"\n",
			ids[i], token, ms, padding)
	}
	p.mu.Lock()
	for _, id := range ids {
		p.methods[id] = "tools/call"
		p.sent[id]++
	}
	p.mu.Unlock()

	start := time.Now()
	wrote := make(chan error, 1)
	go func() { // stdin backpressure blocks this writer, not the test
		_, err := p.stdin.Write(in.Bytes())
		wrote <- err
	}()
	for i, id := range ids {
		res := resultOf(t, p.expect(id))
		if got := res.Get("content.0.text").String(); got != want[i] {
			t.Errorf("id %s answered %s, want its own token %s (cross-talk)", id, shortBytes([]byte(got)), shortBytes([]byte(want[i])))
		}
	}
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("writing the load to stdin: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("stdin was not fully read within %v", waitTimeout)
	}
	elapsed := time.Since(start)
	if got := srv.calls.Load(); got != n {
		t.Errorf("the server saw %d tools/call, want %d", got, n)
	}
	peak := srv.peak.Load()
	if peak > maxInFlight {
		t.Errorf("the server served %d requests at once, more than --max-in-flight %d", peak, maxInFlight)
	}
	if peak < 2 {
		t.Errorf("the server never served two requests at once: the load did not run concurrently")
	}
	build := ""
	if raceEnabled {
		build = " (race build)"
	}
	if kib, err := fsPeakRSS(p.cmd.Process.Pid); err != nil {
		t.Logf("peak RSS not measured: %v", err)
	} else {
		mib := float64(kib) / 1024
		payload := "small payloads"
		if pad > 0 {
			payload = fmt.Sprintf("%d KiB payloads", pad>>10)
		}
		t.Logf("load: %d requests, max-in-flight %d, %s, peak RSS %.1f MiB%s", n, maxInFlight, payload, mib, build)
		if mib > 512 {
			t.Errorf("peak RSS %.1f MiB is past the sanity bound of 512 MiB", mib)
		}
	}
	t.Logf("load: %d slow, %d fast, server peak concurrency %d, all answered in %v", slowCount, n-slowCount, peak, elapsed.Round(time.Millisecond))
	fsFinish(t, p)
}
