package bridge

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/modern"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/statefile"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// Tests of tasks across eras (docs/protocol.md, Tasks): a legacy client that
// speaks 2025 core tasks, the proxy, and taskServer, a scriptable 2026 server
// with the io.modelcontextprotocol/tasks extension.

const (
	tsCreated = "2026-08-01T10:00:00Z"
	tsUpdated = "2026-08-01T10:00:05Z"

	pathExtDeclared = `params._meta.io\.modelcontextprotocol/clientCapabilities.extensions.io\.modelcontextprotocol/tasks`
	pathRelatedTask = `_meta.io\.modelcontextprotocol/related-task`

	tsDiscoverExt   = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"tasks-up","version":"1"}}}`
	tsDiscoverPlain = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"plain-up","version":"1"}}}`
	tsTools         = `[{"name":"task","inputSchema":{"type":"object"}},{"name":"sync","inputSchema":{"type":"object"}},{"name":"syncerr","inputSchema":{"type":"object"}},{"name":"boom","inputSchema":{"type":"object"}}]`

	// syncResult is what the "sync" tool answers (without resultType).
	syncResult = `{"content":[{"type":"text","text":"done synchronously"}],"structuredContent":{"n":1}}`
	// syncErrResult is what the "syncerr" tool answers: a tool error.
	syncErrResult = `{"content":[{"type":"text","text":"bad input"}],"isError":true}`
	// boomError is the JSON-RPC error of the "boom" tool.
	boomError = `{"code":-32050,"message":"boom: the tool crashed","data":{"reason":"disk full"}}`
	// taskOutput is the CallToolResult a scripted task completes with.
	taskOutput = `{"content":[{"type":"text","text":"task output"}],"structuredContent":{"answer":42}}`
)

// step is one scripted tasks/get answer of a taskServer task.
type taskStep struct {
	status     string // the task status
	extra      string // more task members, each with a leading comma
	poll       string // raw pollIntervalMs; "" means 100
	rpcErr     string // a JSON-RPC error object instead of a result
	httpStatus int    // an HTTP failure with a plain body instead of JSON-RPC
}

func stepWorking(msg string) taskStep {
	if msg == "" {
		return taskStep{status: "working"}
	}
	return taskStep{status: "working", extra: `,"statusMessage":` + jstr(msg)}
}

func stepCompleted(result string) taskStep {
	return taskStep{status: "completed", extra: `,"result":` + result}
}

func stepFailed(errObj string) taskStep {
	return taskStep{status: "failed", extra: `,"error":` + errObj}
}

func stepInputRequired(reqs string) taskStep {
	return taskStep{status: "input_required", extra: `,"inputRequests":` + reqs}
}

func stepRPCError(code int, msg string) taskStep {
	return taskStep{rpcErr: fmt.Sprintf(`{"code":%d,"message":%s}`, code, jstr(msg))}
}

func stepHTTPError(status int) taskStep { return taskStep{httpStatus: status} }

func jstr(s string) string { return string(rewrite.AppendString(nil, s)) }

// tsExchange is one HTTP request the taskServer received.
type tsExchange struct {
	method string
	body   string
	header http.Header
	resp   string // the JSON-RPC response written; "" for an HTTP failure
	// lenient marks a response that breaks the schema on purpose.
	lenient bool
}

// taskServer is a scriptable 2026 server with the tasks extension (or
// without it). Tools: "task" answers a flat CreateTaskResult (arguments.id
// picks the task id, arguments.poll the raw pollIntervalMs, arguments.seed
// the seed status, arguments.meta a result _meta), "sync" answers
// synchronously, "syncerr" synchronously with isError:true, "boom" answers
// a JSON-RPC error. tasks/get answers from the
// task's script: the first step is consumed while more than one is left,
// and the last one repeats; a known task without a script is working, an
// unknown one is -32602. tasks/cancel and tasks/update acknowledge.
type taskServer struct {
	*httptest.Server
	ext     bool
	mu      sync.Mutex
	log     []tsExchange
	scripts map[string][]taskStep
	known   map[string]bool
	seq     int
	// faults are failures to give instead of answers, by method, consumed
	// in order: faultHang, faultHTTP500 or faultReset.
	faults  map[string][]string
	release chan struct{} // closed at cleanup: hung requests end
}

// Faults a taskServer can give instead of an answer.
const (
	faultHang    = "hang"  // no answer until the client gives up
	faultHTTP500 = "500"   // HTTP 500 with a plain text body
	faultReset   = "reset" // the connection closed without an answer
	// faultRedirect: a 307 to another origin, which the proxy refuses.
	faultRedirect = "redirect"
)

// fault makes the next requests for method fail, one fault each.
func (s *taskServer) fault(method string, faults ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], faults...)
}

func newTaskServer(t *testing.T, ext bool) *taskServer {
	t.Helper()
	v := taskSchemas(t)
	s := &taskServer{ext: ext, scripts: map[string][]taskStep{}, known: map[string]bool{}, faults: map[string][]string{}, release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.release) }) // before Close, which waits for handlers
	// Registered before any harness, so it runs after the session stopped.
	t.Cleanup(func() { s.check(t, v) })
	return s
}

// script sets the tasks/get answers for a task (and makes it known).
func (s *taskServer) script(id string, steps ...taskStep) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[id] = true
	s.scripts[id] = steps
}

func (s *taskServer) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	body := string(b)
	ex := tsExchange{method: gjson.Get(body, "method").Str, body: body, header: r.Header.Clone()}
	params := gjson.Get(body, "params")
	var result, rpcErr string
	httpStatus := 0
	s.mu.Lock()
	if fs := s.faults[ex.method]; len(fs) > 0 {
		s.faults[ex.method] = fs[1:]
		s.log = append(s.log, ex)
		s.mu.Unlock()
		s.giveFault(w, r, fs[0])
		return
	}
	switch ex.method {
	case "server/discover":
		result = tsDiscoverPlain
		if s.ext {
			result = tsDiscoverExt
		}
	case "tools/list":
		result = `{"resultType":"complete","tools":` + tsTools + `,"ttlMs":0,"cacheScope":"public"}`
	case "tools/call":
		result, rpcErr, ex.lenient = s.toolCall(params)
	case "tasks/get":
		id := params.Get("taskId").Str
		steps := s.scripts[id]
		var st taskStep
		switch {
		case len(steps) > 0:
			st = steps[0]
			if len(steps) > 1 {
				s.scripts[id] = steps[1:]
			}
		case s.known[id]:
			st = stepWorking("")
		default:
			st = stepRPCError(-32602, "Failed to retrieve task: Task not found")
		}
		switch {
		case st.httpStatus != 0:
			httpStatus = st.httpStatus
		case st.rpcErr != "":
			rpcErr = st.rpcErr
		default:
			poll := st.poll
			if poll == "" {
				poll = "100"
			}
			ex.lenient = gjson.Parse(poll).Type != gjson.Number
			result = fmt.Sprintf(`{"resultType":"complete","taskId":%s,"status":%q,"createdAt":%q,"lastUpdatedAt":%q,"ttlMs":60000,"pollIntervalMs":%s%s}`,
				jstr(id), st.status, tsCreated, tsUpdated, poll, st.extra)
		}
	case "tasks/cancel", "tasks/update":
		if s.known[params.Get("taskId").Str] {
			result = `{"resultType":"complete"}`
		} else {
			rpcErr = `{"code":-32602,"message":"Failed to retrieve task: Task not found"}`
		}
	default:
		rpcErr = fmt.Sprintf(`{"code":-32601,"message":"Method not found: %s"}`, ex.method)
	}
	id := gjson.Get(body, "id").Raw
	switch {
	case httpStatus != 0:
	case rpcErr != "":
		ex.resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":%s}`, id, rpcErr)
	default:
		ex.resp = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}
	// Recorded before answering: once the proxy has the answer, the test
	// sees the tsExchange.
	s.log = append(s.log, ex)
	s.mu.Unlock()
	if httpStatus != 0 {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(httpStatus)
		io.WriteString(w, "scripted failure")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, ex.resp)
}

func (s *taskServer) giveFault(w http.ResponseWriter, r *http.Request, fault string) {
	switch fault {
	case faultHang:
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
	case faultHTTP500:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, "scripted failure")
	case faultRedirect:
		http.Redirect(w, r, "http://elsewhere.invalid/mcp", http.StatusTemporaryRedirect)
	case faultReset:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
}

// toolCall answers tools/call; s.mu is held.
func (s *taskServer) toolCall(params gjson.Result) (result, rpcErr string, lenient bool) {
	args := params.Get("arguments")
	switch params.Get("name").Str {
	case "task":
		id := args.Get("id").Str
		if id == "" {
			s.seq++
			id = fmt.Sprintf("srv-task-%d", s.seq)
		}
		s.known[id] = true
		poll := "100"
		if p := args.Get("poll"); p.Exists() {
			poll = p.Raw
			lenient = p.Type != gjson.Number
		}
		seed := "working"
		if st := args.Get("seed"); st.Exists() {
			seed = st.Str
		}
		meta := ""
		if m := args.Get("meta"); m.Exists() {
			meta = `,"_meta":` + m.Raw
		}
		return fmt.Sprintf(`{"resultType":"task","taskId":%s,"status":%q,"createdAt":%q,"lastUpdatedAt":%q,"ttlMs":60000,"pollIntervalMs":%s%s}`,
			jstr(id), seed, tsCreated, tsCreated, poll, meta), "", lenient
	case "sync":
		return `{"resultType":"complete",` + syncResult[1:], "", false
	case "syncerr":
		return `{"resultType":"complete",` + syncErrResult[1:], "", false
	case "boom":
		return "", boomError, false
	}
	return "", `{"code":-32602,"message":"Unknown tool"}`, false
}

// check asserts what every upstream request must satisfy: Mcp-Name on
// tasks/*, the extension declared on tasks/* and tools/call, no tasks/result
// or tasks/list upstream, and (with the schemas) valid bodies.
func (s *taskServer) check(t *testing.T, v *schematest.Validator) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ex := range s.log {
		switch ex.method {
		case "tasks/get", "tasks/update", "tasks/cancel":
			if got, want := ex.header.Get("Mcp-Name"), gjson.Get(ex.body, "params.taskId").Str; got != want {
				t.Errorf("%s upstream: Mcp-Name %q, want the taskId %q", ex.method, got, want)
			}
			fallthrough
		case "tools/call":
			if e := gjson.Get(ex.body, pathExtDeclared); !e.IsObject() {
				t.Errorf("%s upstream does not declare the tasks extension in _meta clientCapabilities: %s", ex.method, ex.body)
			}
		case "tasks/result", "tasks/list":
			t.Errorf("%s was sent upstream (2026 has no such method): %s", ex.method, ex.body)
		}
		if v == nil {
			continue
		}
		if err := v.ValidateUpstream([]byte(ex.body)); err != nil {
			t.Errorf("upstream body fails the 2026 schemas: %v", err)
		}
		if ex.resp != "" && !ex.lenient {
			if err := v.ValidateUpstreamResult([]byte(ex.resp), ex.method); err != nil {
				t.Errorf("the fake server's own answer is invalid (test bug): %v", err)
			}
		}
	}
}

// requests returns the bodies of the requests for method (and taskId,
// unless "").
func (s *taskServer) requests(method, taskID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ex := range s.log {
		if ex.method == method && (taskID == "" || gjson.Get(ex.body, "params.taskId").Str == taskID) {
			out = append(out, ex.body)
		}
	}
	return out
}

func (s *taskServer) count(method, taskID string) int { return len(s.requests(method, taskID)) }

// methodsFor lists the methods of the requests about taskID, in order.
func (s *taskServer) methodsFor(taskID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ex := range s.log {
		if gjson.Get(ex.body, "params.taskId").Str == taskID {
			out = append(out, ex.method)
		}
	}
	return out
}

// mentions reports whether any upstream body contains s.
func (s *taskServer) mentions(sub string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ex := range s.log {
		if strings.Contains(ex.body, sub) {
			return true
		}
	}
	return false
}

// waitFor waits (bounded) until at least n requests for method and taskId
// arrived, and returns them.
func (s *taskServer) waitFor(t *testing.T, method, taskID string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if got := s.requests(method, taskID); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream did not receive %d %s for %q (got %d)", n, method, taskID, s.count(method, taskID))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Schema validation is used when the spec directory is there; without it
// the tests still run, unvalidated (schematest.Load would skip them).
var (
	schemaOnce  sync.Once
	schemaV     *schematest.Validator
	schemaNote  string
	schemaFatal bool
)

// probeTB catches schematest's Skipf/Fatalf in a goroutine of its own.
type probeTB struct {
	testing.TB
	note  string
	fatal bool
}

func (p *probeTB) Skipf(format string, args ...any) {
	p.note = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (p *probeTB) Fatalf(format string, args ...any) {
	p.note, p.fatal = fmt.Sprintf(format, args...), true
	runtime.Goexit()
}

func taskSchemas(t *testing.T) *schematest.Validator {
	t.Helper()
	schemaOnce.Do(func() {
		p := &probeTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			schemaV = schematest.Load(p)
		}()
		<-done
		schemaNote, schemaFatal = p.note, p.fatal
	})
	if schemaFatal {
		t.Fatalf("schematest: %s", schemaNote)
	}
	if schemaV == nil {
		t.Logf("frames are not validated against the schemas: %s", schemaNote)
	}
	return schemaV
}

// legacyClient drives a session like a 2025 client: every frame from the
// proxy is validated against the 2025 schema (and CheckLegacyClean), and
// frames that arrive before the one awaited are kept in order.
type legacyClient struct {
	t       *testing.T
	h       *harness
	v       *schematest.Validator
	methods map[string]string // the method of each request sent, by raw id
	backlog []string          // frames read but not consumed yet
	all     []string          // every frame, in arrival order
	pings   int
}

func newLegacyClient(t *testing.T, ts *taskServer, cfg Config) *legacyClient {
	t.Helper()
	return &legacyClient{t: t, h: start(t, ts.URL, cfg), v: taskSchemas(t), methods: map[string]string{}}
}

// initialize runs the handshake with the given client capabilities and
// returns the initialize answer.
func (c *legacyClient) initialize(caps string) string {
	c.t.Helper()
	r := c.call(`"init"`, "initialize", `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"legacy","version":"1"}}`)
	if gjson.Get(r, "result.protocolVersion").Str != "2025-11-25" {
		c.t.Fatalf("initialize answer: %s", r)
	}
	c.h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// startWithTask starts the proxy on a new task server with the extension
// and creates the server task id (a task-augmented tools/call, id 1).
func startWithTask(t *testing.T, id string) (*taskServer, *legacyClient) {
	t.Helper()
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":`+jstr(id)+`},"task":{}}`)
	return ts, c
}

// startTasks starts a session against ts and initializes it.
func startTasks(t *testing.T, ts *taskServer, cfg Config, caps string) *legacyClient {
	t.Helper()
	c := newLegacyClient(t, ts, cfg)
	c.initialize(caps)
	return c
}

func (c *legacyClient) send(id, method, params string) {
	c.t.Helper()
	c.methods[id] = method
	c.h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
}

// call sends a request and returns its answer.
func (c *legacyClient) call(id, method, params string) string {
	c.t.Helper()
	c.send(id, method, params)
	return c.await(id)
}

func (c *legacyClient) validate(frame string) {
	c.t.Helper()
	if c.v == nil {
		return
	}
	method := ""
	if !gjson.Get(frame, "method").Exists() {
		method = c.methods[gjson.Get(frame, "id").Raw]
	}
	if err := c.v.ValidateClientBound([]byte(frame), method); err != nil {
		c.t.Errorf("frame to the legacy client fails the 2025 schema: %v", err)
	}
	if err := schematest.CheckLegacyClean([]byte(frame), method); err != nil {
		c.t.Errorf("frame to the legacy client: %v", err)
	}
}

func (c *legacyClient) pull() string {
	c.t.Helper()
	f := c.h.next()
	c.validate(f)
	c.all = append(c.all, f)
	return f
}

// take returns the first frame (kept or new) that match accepts.
func (c *legacyClient) take(what string, match func(string) bool) string {
	c.t.Helper()
	for i, f := range c.backlog {
		if match(f) {
			c.backlog = append(c.backlog[:i:i], c.backlog[i+1:]...)
			return f
		}
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		f := c.pull()
		if match(f) {
			return f
		}
		c.backlog = append(c.backlog, f)
	}
	c.t.Fatalf("no %s from the session; frames so far: %v", what, c.all)
	return ""
}

func isResponse(f, id string) bool {
	return !gjson.Get(f, "method").Exists() && gjson.Get(f, "id").Raw == id
}

// await returns the answer to the request with the raw id.
func (c *legacyClient) await(id string) string {
	c.t.Helper()
	return c.take("answer for "+id, func(f string) bool { return isResponse(f, id) })
}

// awaitMethod returns the next request or notification with method.
func (c *legacyClient) awaitMethod(method string) string {
	c.t.Helper()
	return c.take(method, func(f string) bool { return gjson.Get(f, "method").Str == method })
}

// sync makes a ping round trip: every frame the session wrote before the
// ping's answer has been read.
func (c *legacyClient) sync() {
	c.t.Helper()
	c.pings++
	id := fmt.Sprintf(`"sync-%d"`, c.pings)
	c.call(id, "ping", `{}`)
}

// count counts the frames to the client with method (call sync first).
func (c *legacyClient) count(method string) int {
	n := 0
	for _, f := range c.all {
		if gjson.Get(f, "method").Str == method {
			n++
		}
	}
	return n
}

// index is the arrival position of a frame in all, or -1.
func (c *legacyClient) index(frame string) int {
	for i, f := range c.all {
		if f == frame {
			return i
		}
	}
	return -1
}

// stop ends the session and returns every frame it wrote, validated.
func (c *legacyClient) stop() []string {
	c.t.Helper()
	for _, f := range c.h.stop() {
		c.validate(f)
		c.all = append(c.all, f)
	}
	return c.all
}

// answersFor counts the answers for a raw id among all frames.
func answersFor(frames []string, id string) int {
	n := 0
	for _, f := range frames {
		if isResponse(f, id) {
			n++
		}
	}
	return n
}

// jsonEqual compares two JSON texts semantically.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func taskParams(id string) string { return `{"taskId":` + jstr(id) + `}` }

const elicitCaps = `{"elicitation":{}}`

// listTasks returns the task views of one tasks/list page and its cursor.
func (c *legacyClient) listTasks(id, params string) ([]gjson.Result, gjson.Result) {
	c.t.Helper()
	r := c.call(id, "tasks/list", params)
	if !gjson.Get(r, "result.tasks").IsArray() {
		c.t.Fatalf("tasks/list: %s", r)
	}
	return gjson.Get(r, "result.tasks").Array(), gjson.Get(r, "result.nextCursor")
}

func findTask(tasks []gjson.Result, id string) (gjson.Result, bool) {
	for _, v := range tasks {
		if v.Get("taskId").Str == id {
			return v, true
		}
	}
	return gjson.Result{}, false
}

// noModernTaskFields asserts that a task view carries only 2025 fields.
func noModernTaskFields(t *testing.T, what string, view gjson.Result) {
	t.Helper()
	for _, k := range []string{"result", "error", "inputRequests", "resultType", "ttlMs", "pollIntervalMs"} {
		if view.Get(k).Exists() {
			t.Errorf("%s: the task view carries %q: %s", what, k, view.Raw)
		}
	}
}

// 1. A task-augmented tools/call that the server makes a task.
func TestTaskAugmentedCallCreatesTask(t *testing.T) {
	ts := newTaskServer(t, true)
	c := newLegacyClient(t, ts, Config{})
	init := c.initialize(elicitCaps)
	if got := gjson.Get(init, "result.capabilities.tasks").Raw; !sameJSON(got, `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Errorf("initialize tasks capability = %s", got)
	}
	r := c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-basic"},"task":{"ttl":5000}}`)
	want := `{"task":{"taskId":"t-basic","status":"working","createdAt":"` + tsCreated + `","lastUpdatedAt":"` + tsCreated + `","ttl":60000,"pollInterval":100}}`
	if got := gjson.Get(r, "result").Raw; !sameJSON(got, want) {
		t.Errorf("CreateTaskResult\n got: %s\nwant: %s", got, want)
	}
	up := ts.requests("tools/call", "")
	if len(up) != 1 {
		t.Fatalf("%d tools/call upstream, want 1", len(up))
	}
	if gjson.Get(up[0], "params.task").Exists() {
		t.Errorf("the upstream tools/call still carries task: %s", up[0])
	}
	if gjson.Get(up[0], "params.arguments.id").Str != "t-basic" {
		t.Errorf("the upstream tools/call lost its arguments: %s", up[0])
	}
	tasks, next := c.listTasks(`2`, `{}`)
	v, ok := findTask(tasks, "t-basic")
	if !ok || len(tasks) != 1 || next.Exists() {
		t.Fatalf("tasks/list = %v (nextCursor %s), want just t-basic", tasks, next.Raw)
	}
	if v.Get("status").Str != "working" || v.Get("ttl").Int() != 60000 || v.Get("createdAt").Str != tsCreated {
		t.Errorf("tasks/list entry: %s", v.Raw)
	}
}

// 2 (error case). A task-augmented call that fails passes the error through
// and registers nothing.
func TestTaskAugmentedCallErrorPassesThrough(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	r := c.call(`"b"`, "tools/call", `{"name":"boom","task":{"ttl":1000}}`)
	if got := gjson.Get(r, "error").Raw; !sameJSON(got, boomError) {
		t.Errorf("error = %s, want %s verbatim", got, boomError)
	}
	if tasks, _ := c.listTasks(`"l"`, `{}`); len(tasks) != 0 {
		t.Errorf("a failed call was registered: %v", tasks)
	}
}

// 2. A synchronous answer to a task-augmented call becomes a synthetic task
// served locally.
func TestSyntheticTask(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	r := c.call(`"s1"`, "tools/call", `{"name":"sync","task":{"ttl":5000}}`)
	task := gjson.Get(r, "result.task")
	id := task.Get("taskId").Str
	if !strings.HasPrefix(id, "mcp-tasks-proxy-") || len(id) < len("mcp-tasks-proxy-")+16 {
		t.Errorf("synthetic taskId %q: want the mcp-tasks-proxy- prefix and an unguessable suffix", id)
	}
	if task.Get("status").Str != "working" || task.Get("ttl").Raw != "5000" {
		t.Errorf("synthetic CreateTaskResult: %s", r)
	}
	if _, err := time.Parse(time.RFC3339Nano, task.Get("createdAt").Str); err != nil {
		t.Errorf("createdAt %q: %v", task.Get("createdAt").Str, err)
	}
	if !gjson.Get(r, "result.task.lastUpdatedAt").Exists() {
		t.Errorf("no lastUpdatedAt: %s", r)
	}

	g := c.call(`"s2"`, "tasks/get", taskParams(id))
	if gjson.Get(g, "result.taskId").Str != id || gjson.Get(g, "result.status").Str != "completed" || gjson.Get(g, "result.ttl").Raw != "5000" {
		t.Errorf("tasks/get of the synthetic task: %s", g)
	}
	noModernTaskFields(t, "synthetic tasks/get", gjson.Get(g, "result"))

	res := c.call(`"s3"`, "tasks/result", taskParams(id))
	if got := gjson.Get(res, "result.content").Raw; !sameJSON(got, gjson.Get(syncResult, "content").Raw) {
		t.Errorf("tasks/result content: %s", res)
	}
	if got := gjson.Get(res, "result.structuredContent").Raw; !sameJSON(got, `{"n":1}`) {
		t.Errorf("tasks/result structuredContent: %s", res)
	}
	if got := gjson.Get(res, "result."+pathRelatedTask).Raw; !sameJSON(got, `{"taskId":`+jstr(id)+`}`) {
		t.Errorf("tasks/result related-task _meta = %s: %s", got, res)
	}

	cx := c.call(`"s4"`, "tasks/cancel", taskParams(id))
	if gjson.Get(cx, "error.code").Int() != -32602 || !strings.Contains(gjson.Get(cx, "error.message").Str, "already in terminal status 'completed'") {
		t.Errorf("tasks/cancel of a synthetic task: %s", cx)
	}

	tasks, _ := c.listTasks(`"s5"`, `{}`)
	if v, ok := findTask(tasks, id); !ok || v.Get("status").Str != "completed" {
		t.Errorf("tasks/list does not show the synthetic task completed: %v", tasks)
	}

	// An unknown id of the proxy's own shape (expired, say) is answered
	// locally.
	for i, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		unknown := c.call(fmt.Sprintf(`"s6-%d"`, i), m, taskParams("mcp-tasks-proxy-00000000000000000000000000000000"))
		if gjson.Get(unknown, "error.code").Int() != -32602 {
			t.Errorf("%s of an unknown synthetic id: %s", m, unknown)
		}
	}
	if ts.mentions("mcp-tasks-proxy-") {
		t.Errorf("a synthetic task id went upstream")
	}
	if n := ts.count("tasks/get", ""); n != 0 {
		t.Errorf("%d upstream tasks/get for synthetic tasks, want none", n)
	}
}

// 2. With --legacy-ttl-unit s the requested ttl is read and shown in
// seconds.
func TestSyntheticTaskTTLSeconds(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{Tasks: rewrite.TaskOptions{TTLSeconds: true}}, elicitCaps)
	r := c.call(`1`, "tools/call", `{"name":"sync","task":{"ttl":30}}`)
	id := gjson.Get(r, "result.task.taskId").Str
	if got := gjson.Get(r, "result.task.ttl").Raw; got != "30" {
		t.Errorf("CreateTaskResult ttl = %s, want 30 (seconds): %s", got, r)
	}
	g := c.call(`2`, "tasks/get", taskParams(id))
	if got := gjson.Get(g, "result.ttl").Raw; got != "30" {
		t.Errorf("tasks/get ttl = %s, want 30 (seconds): %s", got, g)
	}
	// A real task's ttlMs is shown in seconds too.
	r = c.call(`3`, "tools/call", `{"name":"task","arguments":{"id":"t-secs"},"task":{"ttl":30}}`)
	if got := gjson.Get(r, "result.task.ttl").Raw; got != "60" {
		t.Errorf("ttlMs 60000 shown as ttl %s, want 60 (seconds): %s", got, r)
	}
}

// 3. tasks/get of a completed task, then tasks/result from the cache.
func TestTaskGetCompletedThenCachedResult(t *testing.T) {
	ts, c := startWithTask(t, "t-done")
	ts.script("t-done", taskStep{status: "completed", extra: `,"statusMessage":"all done","result":{"resultType":"complete","content":[{"type":"text","text":"task output"}],"structuredContent":{"answer":42}}`})
	g := c.call(`2`, "tasks/get", taskParams("t-done"))
	view := gjson.Get(g, "result")
	want := `{"taskId":"t-done","status":"completed","statusMessage":"all done","createdAt":"` + tsCreated + `","lastUpdatedAt":"` + tsUpdated + `","ttl":60000,"pollInterval":100}`
	if !sameJSON(view.Raw, want) {
		t.Errorf("tasks/get view\n got: %s\nwant: %s", view.Raw, want)
	}
	noModernTaskFields(t, "tasks/get", view)
	gets := ts.count("tasks/get", "t-done")
	res := c.call(`3`, "tasks/result", taskParams("t-done"))
	wantRes := `{"content":[{"type":"text","text":"task output"}],"structuredContent":{"answer":42},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-done"}}}`
	if got := gjson.Get(res, "result").Raw; !sameJSON(got, wantRes) {
		t.Errorf("tasks/result\n got: %s\nwant: %s", got, wantRes)
	}
	if n := ts.count("tasks/get", "t-done"); n != gets {
		t.Errorf("tasks/result of a cached outcome polled upstream (%d more tasks/get)", n-gets)
	}
}

// 4. tasks/result polls until the task is terminal, without blocking other
// requests, and a status change of a registered task is announced.
func TestTaskResultPolls(t *testing.T) {
	ts, c := startWithTask(t, "t-poll")
	ts.script("t-poll", stepWorking("still going"))
	c.send(`"res"`, "tasks/result", taskParams("t-poll"))
	ts.waitFor(t, "tasks/get", "t-poll", 2) // blocked: working, working
	// Other requests go on meanwhile.
	if r := c.call(`"other"`, "tools/call", `{"name":"sync"}`); gjson.Get(r, "result.content.0.text").Str != "done synchronously" {
		t.Errorf("a call during a blocked tasks/result: %s", r)
	}
	ts.script("t-poll", stepCompleted(taskOutput))
	res := c.await(`"res"`)
	if got := gjson.Get(res, "result.content").Raw; !sameJSON(got, gjson.Get(taskOutput, "content").Raw) {
		t.Errorf("tasks/result: %s", res)
	}
	if got := gjson.Get(res, "result."+pathRelatedTask+".taskId").Str; got != "t-poll" {
		t.Errorf("tasks/result related-task = %q: %s", got, res)
	}
	note := c.awaitMethod("notifications/tasks/status")
	if c.index(note) > c.index(res) {
		t.Errorf("notifications/tasks/status came after the tasks/result answer")
	}
	p := gjson.Get(note, "params")
	if p.Get("taskId").Str != "t-poll" || p.Get("status").Str != "completed" {
		t.Errorf("notifications/tasks/status params: %s", p.Raw)
	}
	noModernTaskFields(t, "notifications/tasks/status", p)
	if p.Get(pathRelatedTask).Exists() {
		t.Errorf("notifications/tasks/status carries related-task _meta: %s", note)
	}
	// The working polls announced nothing.
	c.sync()
	for _, f := range c.backlog {
		if gjson.Get(f, "method").Str == "notifications/tasks/status" {
			t.Errorf("an extra status notification: %s", f)
		}
	}
}

// 5. A failed task: tasks/result gives the server's error verbatim; the
// view's statusMessage comes from error.message.
func TestTaskFailed(t *testing.T) {
	ts, c := startWithTask(t, "t-fail")
	errObj := `{"code":-32001,"message":"the backend rejected the job","data":{"retry":false}}`
	ts.script("t-fail", stepWorking(""), stepFailed(errObj))
	res := c.call(`2`, "tasks/result", taskParams("t-fail"))
	if got := gjson.Get(res, "error").Raw; !sameJSON(got, errObj) || gjson.Get(res, "result").Exists() {
		t.Errorf("tasks/result of a failed task = %s, want the error %s verbatim", res, errObj)
	}
	g := c.call(`3`, "tasks/get", taskParams("t-fail"))
	if gjson.Get(g, "result.status").Str != "failed" || gjson.Get(g, "result.statusMessage").Str != "the backend rejected the job" {
		t.Errorf("tasks/get of a failed task: %s", g)
	}
	noModernTaskFields(t, "failed tasks/get", gjson.Get(g, "result"))
}

// 6. completed with isError: completed by default, failed with
// --task-iserror failed; tasks/result gives the CallToolResult either way.
func TestTaskIsError(t *testing.T) {
	isErr := `{"content":[{"type":"text","text":"city not found"}],"isError":true}`
	for _, failed := range []bool{false, true} {
		t.Run(fmt.Sprintf("IsErrorFailed=%v", failed), func(t *testing.T) {
			ts := newTaskServer(t, true)
			c := startTasks(t, ts, Config{Tasks: rewrite.TaskOptions{IsErrorFailed: failed}}, elicitCaps)
			c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-iserr"},"task":{}}`)
			ts.script("t-iserr", stepCompleted(isErr))
			g := c.call(`2`, "tasks/get", taskParams("t-iserr"))
			view := gjson.Get(g, "result")
			if failed {
				if view.Get("status").Str != "failed" || view.Get("statusMessage").Str != "Tool execution returned isError: true" {
					t.Errorf("tasks/get with IsErrorFailed: %s", g)
				}
			} else if view.Get("status").Str != "completed" {
				t.Errorf("tasks/get by default: %s", g)
			}
			noModernTaskFields(t, "isError tasks/get", view)
			res := c.call(`3`, "tasks/result", taskParams("t-iserr"))
			if gjson.Get(res, "error").Exists() || gjson.Get(res, "result.isError").Type != gjson.True ||
				gjson.Get(res, "result.content.0.text").Str != "city not found" {
				t.Errorf("tasks/result of an isError task: %s", res)
			}
		})
	}
}

// 7. tasks/cancel: get, cancel upstream, sticky cancelled.
func TestTaskCancel(t *testing.T) {
	ts, c := startWithTask(t, "t-cancel")
	before := len(ts.methodsFor("t-cancel"))
	r := c.call(`2`, "tasks/cancel", taskParams("t-cancel"))
	v := gjson.Get(r, "result")
	if v.Get("taskId").Str != "t-cancel" || v.Get("status").Str != "cancelled" || v.Get("statusMessage").Str != "The task was cancelled by request." {
		t.Errorf("tasks/cancel answer: %s", r)
	}
	if v.Get("createdAt").Str != tsCreated || v.Get("ttl").Raw != "60000" {
		t.Errorf("tasks/cancel view lost the task's fields: %s", r)
	}
	noModernTaskFields(t, "tasks/cancel", v)
	if got := ts.methodsFor("t-cancel")[before:]; !reflect.DeepEqual(got, []string{"tasks/get", "tasks/cancel"}) {
		t.Errorf("upstream for the cancel: %v, want [tasks/get tasks/cancel]", got)
	}
	// The server still says working: the client keeps seeing cancelled.
	g := c.call(`3`, "tasks/get", taskParams("t-cancel"))
	if gjson.Get(g, "result.status").Str != "cancelled" {
		t.Errorf("tasks/get after the cancel: %s", g)
	}
	again := c.call(`4`, "tasks/cancel", taskParams("t-cancel"))
	if gjson.Get(again, "error.code").Int() != -32602 || !strings.Contains(gjson.Get(again, "error.message").Str, "'cancelled'") {
		t.Errorf("second tasks/cancel: %s", again)
	}
	if n := ts.count("tasks/cancel", "t-cancel"); n != 1 {
		t.Errorf("%d tasks/cancel upstream, want 1", n)
	}
	res := c.call(`5`, "tasks/result", taskParams("t-cancel"))
	if gjson.Get(res, "error.code").Int() != -32603 || gjson.Get(res, "error.message").Str != "Task was cancelled" ||
		gjson.Get(res, "error.data.taskId").Str != "t-cancel" {
		t.Errorf("tasks/result of a cancelled task: %s", res)
	}
	tasks, _ := c.listTasks(`6`, `{}`)
	if e, ok := findTask(tasks, "t-cancel"); !ok || e.Get("status").Str != "cancelled" {
		t.Errorf("tasks/list after the cancel: %v", tasks)
	}
}

// 7. tasks/cancel of a task that is already terminal, known from the cache
// or found by the fresh tasks/get (cancel racing completion), is -32602 and
// sends no tasks/cancel upstream.
func TestTaskCancelTerminal(t *testing.T) {
	ts, c := startWithTask(t, "t-cached")
	c.call(`2`, "tools/call", `{"name":"task","arguments":{"id":"t-race"},"task":{}}`)
	ts.script("t-cached", stepFailed(`{"code":-32001,"message":"nope"}`))
	if g := c.call(`3`, "tasks/get", taskParams("t-cached")); gjson.Get(g, "result.status").Str != "failed" {
		t.Fatalf("tasks/get: %s", g)
	}
	gets := ts.count("tasks/get", "t-cached")
	r := c.call(`4`, "tasks/cancel", taskParams("t-cached"))
	if gjson.Get(r, "error.code").Int() != -32602 || !strings.Contains(gjson.Get(r, "error.message").Str, "already in terminal status 'failed'") {
		t.Errorf("tasks/cancel of a cached failed task: %s", r)
	}
	if n := ts.count("tasks/get", "t-cached"); n != gets {
		t.Errorf("tasks/cancel of a cached terminal task polled upstream")
	}
	// The proxy last saw t-race working; the server finished it meanwhile.
	ts.script("t-race", stepCompleted(taskOutput))
	r = c.call(`5`, "tasks/cancel", taskParams("t-race"))
	if gjson.Get(r, "error.code").Int() != -32602 || !strings.Contains(gjson.Get(r, "error.message").Str, "already in terminal status 'completed'") {
		t.Errorf("tasks/cancel racing completion: %s", r)
	}
	if n := ts.count("tasks/cancel", ""); n != 0 {
		t.Errorf("%d tasks/cancel upstream for terminal tasks, want none", n)
	}
	// The completion the cancel found is kept for tasks/result.
	res := c.call(`6`, "tasks/result", taskParams("t-race"))
	if gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("tasks/result after a cancel lost the race: %s", res)
	}
}

// 8. An unsolicited task on a plain tools/call is followed, with progress.
func TestUnsolicitedTaskFollowedWithProgress(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	ts.script("t-follow", stepWorking("step 1"), stepWorking("step 2"),
		stepCompleted(`{"resultType":"complete","content":[{"type":"text","text":"followed"}]}`))
	r := c.call(`"f"`, "tools/call", `{"name":"task","arguments":{"id":"t-follow"},"_meta":{"progressToken":"tok"}}`)
	if got := gjson.Get(r, "result").Raw; !sameJSON(got, `{"content":[{"type":"text","text":"followed"}]}`) {
		t.Errorf("followed call answer: %s", r)
	}
	var progress []string
	for _, f := range c.all {
		if gjson.Get(f, "method").Str == "notifications/progress" {
			progress = append(progress, f)
			if c.index(f) > c.index(r) {
				t.Errorf("progress after the answer: %s", f)
			}
		}
	}
	if len(progress) == 0 {
		t.Fatal("no notifications/progress for a followed task with a progressToken")
	}
	last := 0.0
	var msgs []string
	for _, p := range progress {
		if gjson.Get(p, "params.progressToken").Str != "tok" {
			t.Errorf("progress with the wrong token: %s", p)
		}
		v := gjson.Get(p, "params.progress").Float()
		if v <= last {
			t.Errorf("progress does not increase: %s", p)
		}
		last = v
		msgs = append(msgs, gjson.Get(p, "params.message").Str)
	}
	if !reflect.DeepEqual(msgs, []string{"step 1", "step 2"}) {
		t.Errorf("progress messages %q, want the statusMessage of each non-terminal poll", msgs)
	}
	if tasks, _ := c.listTasks(`"l"`, `{}`); len(tasks) != 0 {
		t.Errorf("a followed task is listed: %v", tasks)
	}
	frames := c.stop()
	if n := answersFor(frames, `"f"`); n != 1 {
		t.Errorf("%d answers for the followed call", n)
	}
}

// 9. A followed task the client cancels: tasks/cancel upstream, no answer.
func TestFollowedTaskCancelledByClient(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	ts.script("t-abandon", stepWorking("busy"))
	c.send(`"ab"`, "tools/call", `{"name":"task","arguments":{"id":"t-abandon"}}`)
	ts.waitFor(t, "tasks/get", "t-abandon", 1) // it is being followed
	c.h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"ab","reason":"user"}}`)
	ts.waitFor(t, "tasks/cancel", "t-abandon", 1)
	c.sync()
	frames := c.stop()
	if n := answersFor(frames, `"ab"`); n != 0 {
		t.Errorf("the cancelled call got %d answers", n)
	}
}

const elicitK1 = `{"method":"elicitation/create","params":{"mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}`
const elicitK2 = `{"method":"elicitation/create","params":{"mode":"form","message":"Your age?","requestedSchema":{"type":"object","properties":{"age":{"type":"integer"}}}}}`

// 10. input_required seen by tasks/get: the answer, then elicitation/create
// with related-task; the answer goes upstream as tasks/update; keys are
// asked once.
func TestTaskInputRequired(t *testing.T) {
	ts, c := startWithTask(t, "t-input")
	ts.script("t-input", stepInputRequired(`{"k1":`+elicitK1+`}`))
	g := c.call(`"g1"`, "tasks/get", taskParams("t-input"))
	if gjson.Get(g, "result.status").Str != "input_required" {
		t.Errorf("tasks/get: %s", g)
	}
	noModernTaskFields(t, "input_required tasks/get", gjson.Get(g, "result"))
	el := c.awaitMethod("elicitation/create")
	if c.index(el) < c.index(g) {
		t.Errorf("elicitation/create came before the tasks/get answer")
	}
	id := gjson.Get(el, "id")
	if id.Type != gjson.String || !strings.HasPrefix(id.Str, "mtp-") {
		t.Errorf("elicitation/create id %s: want a string starting with mtp-", id.Raw)
	}
	if gjson.Get(el, "params.message").Str != "Your name?" || gjson.Get(el, "params."+pathRelatedTask+".taskId").Str != "t-input" {
		t.Errorf("elicitation/create: %s", el)
	}
	c.h.send(`{"jsonrpc":"2.0","id":` + id.Raw + `,"result":{"action":"accept","content":{"name":"Luca"},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-input"}}}}`)
	up := ts.waitFor(t, "tasks/update", "t-input", 1)
	if got := gjson.Get(up[0], "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"accept","content":{"name":"Luca"}}}`) {
		t.Errorf("tasks/update inputResponses = %s", got)
	}

	// The same key again: not asked again. A new key is.
	c.call(`"g2"`, "tasks/get", taskParams("t-input"))
	ts.script("t-input", stepInputRequired(`{"k1":`+elicitK1+`,"k2":`+elicitK2+`}`))
	c.call(`"g3"`, "tasks/get", taskParams("t-input"))
	el2 := c.awaitMethod("elicitation/create")
	if gjson.Get(el2, "params.message").Str != "Your age?" {
		t.Errorf("second elicitation is not for the new key: %s", el2)
	}
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el2, "id").Raw + `,"result":{"action":"decline"}}`)
	up = ts.waitFor(t, "tasks/update", "t-input", 2)
	if got := gjson.Get(up[1], "params.inputResponses").Raw; !sameJSON(got, `{"k2":{"action":"decline"}}`) {
		t.Errorf("second tasks/update inputResponses = %s", got)
	}
	c.sync()
	if n := c.count("elicitation/create"); n != 2 {
		t.Errorf("%d elicitation/create sent, want 2 (k1 once, k2 once)", n)
	}
	if n := ts.count("tasks/update", "t-input"); n != 2 {
		t.Errorf("%d tasks/update upstream, want 2", n)
	}
}

// 11. A server without the extension: no tasks capability; a task-augmented
// call is processed normally; tasks/* is -32601.
func TestTasksWithoutExtension(t *testing.T) {
	ts := newTaskServer(t, false)
	c := newLegacyClient(t, ts, Config{})
	init := c.initialize(elicitCaps)
	if gjson.Get(init, "result.capabilities.tasks").Exists() {
		t.Errorf("tasks capability advertised for a server without the extension: %s", init)
	}
	r := c.call(`1`, "tools/call", `{"name":"sync","task":{"ttl":1000}}`)
	if got := gjson.Get(r, "result").Raw; !sameJSON(got, syncResult) {
		t.Errorf("task-augmented call without the extension = %s, want the plain result", r)
	}
	if up := ts.requests("tools/call", ""); len(up) != 1 || gjson.Get(up[0], "params.task").Exists() {
		t.Errorf("upstream tools/call: %v", up)
	}
	for i, m := range []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"} {
		e := c.call(fmt.Sprint(10+i), m, taskParams("whatever"))
		msg := gjson.Get(e, "error.message").Str
		if gjson.Get(e, "error.code").Int() != -32601 || !strings.Contains(msg, ts.URL) || !strings.Contains(msg, "tasks extension") {
			t.Errorf("%s without the extension: %s", m, e)
		}
	}
}

// 12. The state file keeps tasks across a restart.
func TestTaskStateFileSurvivesRestart(t *testing.T) {
	ts := newTaskServer(t, true)
	path := filepath.Join(t.TempDir(), "state.json")
	a := startTasks(t, ts, Config{StatePath: path}, elicitCaps)
	a.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-persist"},"task":{}}`)
	a.stop()

	ts.script("t-persist", stepCompleted(taskOutput))
	b := startTasks(t, ts, Config{StatePath: path}, elicitCaps)
	tasks, _ := b.listTasks(`1`, `{}`)
	if _, ok := findTask(tasks, "t-persist"); !ok {
		t.Fatalf("after a restart tasks/list = %v, want t-persist", tasks)
	}
	res := b.call(`2`, "tasks/result", taskParams("t-persist"))
	if got := gjson.Get(res, "result.content").Raw; !sameJSON(got, gjson.Get(taskOutput, "content").Raw) ||
		gjson.Get(res, "result."+pathRelatedTask+".taskId").Str != "t-persist" {
		t.Errorf("tasks/result after a restart: %s", res)
	}
}

// 12. Two sessions share one state file.
func TestTaskStateFileShared(t *testing.T) {
	ts := newTaskServer(t, true)
	path := filepath.Join(t.TempDir(), "state.json")
	a := startTasks(t, ts, Config{StatePath: path}, elicitCaps)
	b := startTasks(t, ts, Config{StatePath: path}, elicitCaps)
	a.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-a"},"task":{}}`)
	b.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-b"},"task":{}}`)
	for name, c := range map[string]*legacyClient{"a": a, "b": b} {
		tasks, _ := c.listTasks(`2`, `{}`)
		_, okA := findTask(tasks, "t-a")
		_, okB := findTask(tasks, "t-b")
		if !okA || !okB {
			t.Errorf("session %s lists %v, want t-a and t-b", name, tasks)
		}
	}
}

// 13. tasks/list pages newest first with opaque cursors.
func TestTaskListPagination(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	const n = 55
	var created []string
	for i := range n {
		r := c.call(fmt.Sprint(100+i), "tools/call", `{"name":"sync","task":{}}`)
		created = append(created, gjson.Get(r, "result.task.taskId").Str)
	}
	page1, cur := c.listTasks(`1`, `{}`)
	if len(page1) != 50 || cur.Type != gjson.String || cur.Str == "" {
		t.Fatalf("first page: %d tasks, nextCursor %s", len(page1), cur.Raw)
	}
	page2, cur2 := c.listTasks(`2`, `{"cursor":`+jstr(cur.Str)+`}`)
	if len(page2) != n-50 || cur2.Exists() {
		t.Fatalf("second page: %d tasks, nextCursor %s", len(page2), cur2.Raw)
	}
	var listed []string
	for _, v := range append(page1, page2...) {
		listed = append(listed, v.Get("taskId").Str)
	}
	want := make([]string, n)
	for i, id := range created {
		want[n-1-i] = id
	}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("tasks/list order\n got: %v\nwant (newest first): %v", listed, want)
	}
	bad := c.call(`3`, "tasks/list", `{"cursor":"not-a-cursor"}`)
	if gjson.Get(bad, "error.code").Int() != -32602 {
		t.Errorf("invalid cursor: %s", bad)
	}
}

// 13. Refreshing tasks/list prunes only what the server reports unknown.
func TestTaskListPrunesOnlyUnknown(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	// t-fine's refresh fails with an error other than -32602: kept too.
	for i, id := range []string{"t-gone", "t-flaky", "t-fine"} {
		c.call(fmt.Sprint(i+1), "tools/call", `{"name":"task","arguments":{"id":"`+id+`"},"task":{}}`)
	}
	ts.script("t-gone", stepRPCError(-32602, "Failed to retrieve task: Task has expired"))
	ts.script("t-flaky", stepHTTPError(500))
	ts.script("t-fine", stepRPCError(-32603, "Internal error: the task store is down"))
	for _, id := range []string{`"l1"`, `"l2"`} {
		tasks, _ := c.listTasks(id, `{}`)
		if _, ok := findTask(tasks, "t-gone"); ok {
			t.Errorf("%s: a task the server reports unknown is still listed", id)
		}
		flaky, ok := findTask(tasks, "t-flaky")
		if !ok || flaky.Get("status").Str != "working" || flaky.Get("createdAt").Str != tsCreated {
			t.Errorf("%s: a task whose refresh failed with HTTP 500 is not listed with its last known state: %v", id, tasks)
		}
		if _, ok := findTask(tasks, "t-fine"); !ok {
			t.Errorf("%s: t-fine missing: %v", id, tasks)
		}
	}
	if n := ts.count("tasks/get", "t-gone"); n != 1 {
		t.Errorf("the pruned task was polled %d times, want once", n)
	}
	if n := ts.count("tasks/get", "t-fine"); n != 2 {
		t.Errorf("the task kept after -32603 was polled %d times, want twice", n)
	}
	if n := ts.count("tasks/get", "t-flaky"); n != 2 {
		t.Errorf("the kept task was polled %d times, want twice (once per list)", n)
	}
	// An unknown real task: the server's -32602 passes through.
	g := c.call(`"g"`, "tasks/get", taskParams("t-never"))
	if gjson.Get(g, "error.code").Int() != -32602 {
		t.Errorf("tasks/get of an unknown task: %s", g)
	}
}

// 14. Odd pollIntervalMs values are clamped; every follow completes and is
// answered once.
func TestPollIntervalClamping(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	polls := []string{`0`, `-5`, `null`, `"x"`}
	for i, p := range polls {
		id := fmt.Sprintf("t-clamp-%d", i)
		ts.script(id, taskStep{status: "working", poll: p}, taskStep{status: "completed", poll: p, extra: `,"result":` + taskOutput})
		c.send(fmt.Sprintf(`"p%d"`, i), "tools/call", `{"name":"task","arguments":{"id":"`+id+`","poll":`+p+`}}`)
	}
	// The same through tasks/result.
	c.call(`"create"`, "tools/call", `{"name":"task","arguments":{"id":"t-clamp-res","poll":"x"},"task":{}}`)
	ts.script("t-clamp-res", taskStep{status: "working", poll: `"x"`}, taskStep{status: "completed", poll: `null`, extra: `,"result":` + taskOutput})
	c.send(`"res"`, "tasks/result", taskParams("t-clamp-res"))
	for i, p := range polls {
		r := c.await(fmt.Sprintf(`"p%d"`, i))
		if got := gjson.Get(r, "result.content").Raw; !sameJSON(got, gjson.Get(taskOutput, "content").Raw) {
			t.Errorf("pollIntervalMs %s: %s", p, r)
		}
	}
	if r := c.await(`"res"`); gjson.Get(r, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("tasks/result with pollIntervalMs \"x\": %s", r)
	}
	c.sync()
	frames := c.stop()
	for i := range polls {
		if n := answersFor(frames, fmt.Sprintf(`"p%d"`, i)); n != 1 {
			t.Errorf("p%d answered %d times", i, n)
		}
	}
}

// 1. The CreateTaskResult's _meta reaches the client, without serverInfo.
func TestCreateTaskResultMeta(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	r := c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-meta","meta":{"io.modelcontextprotocol/model-immediate-response":"working on it","io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}}},"task":{}}`)
	if got := gjson.Get(r, "result._meta").Raw; !sameJSON(got, `{"io.modelcontextprotocol/model-immediate-response":"working on it"}`) {
		t.Errorf("CreateTaskResult _meta = %s: %s", got, r)
	}
}

// 2/6. A synthetic task holding an isError result follows --task-iserror
// like a real one: a synchronous result is shown like a task's.
func TestSyntheticTaskIsError(t *testing.T) {
	for _, failed := range []bool{false, true} {
		t.Run(fmt.Sprintf("IsErrorFailed=%v", failed), func(t *testing.T) {
			ts := newTaskServer(t, true)
			c := startTasks(t, ts, Config{Tasks: rewrite.TaskOptions{IsErrorFailed: failed}}, elicitCaps)
			r := c.call(`1`, "tools/call", `{"name":"syncerr","task":{}}`)
			id := gjson.Get(r, "result.task.taskId").Str
			if gjson.Get(r, "result.task.status").Str != "working" {
				t.Fatalf("synthetic CreateTaskResult: %s", r)
			}
			g := c.call(`2`, "tasks/get", taskParams(id))
			want, msg := "completed", ""
			if failed {
				want, msg = "failed", "Tool execution returned isError: true"
			}
			if gjson.Get(g, "result.status").Str != want || gjson.Get(g, "result.statusMessage").Str != msg {
				t.Errorf("tasks/get of a synthetic isError task = %s, want status %q statusMessage %q", gjson.Get(g, "result").Raw, want, msg)
			}
			tasks, _ := c.listTasks(`3`, `{}`)
			if v, ok := findTask(tasks, id); !ok || v.Get("status").Str != want {
				t.Errorf("tasks/list of a synthetic isError task = %v, want status %q", tasks, want)
			}
			res := c.call(`4`, "tasks/result", taskParams(id))
			if gjson.Get(res, "result.isError").Type != gjson.True || gjson.Get(res, "result.content.0.text").Str != "bad input" {
				t.Errorf("tasks/result of a synthetic isError task: %s", res)
			}
		})
	}
}

// A server may seed a task in a terminal status (the 2026 tasks extension,
// task creation: "typically but not necessarily working"); a CreateTaskResult
// never carries the payload, so the proxy must fetch it with tasks/get.
func TestTerminalSeedTask(t *testing.T) {
	t.Run("followed", func(t *testing.T) {
		ts := newTaskServer(t, true)
		c := startTasks(t, ts, Config{}, elicitCaps)
		ts.script("t-seed-f", stepCompleted(taskOutput))
		r := c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-seed-f","seed":"completed"}}`)
		if gjson.Get(r, "result.structuredContent.answer").Int() != 42 {
			t.Errorf("plain call answered by a task seeded completed = %s, want the result fetched with tasks/get", r)
		}
	})
	t.Run("followed failed", func(t *testing.T) {
		ts := newTaskServer(t, true)
		c := startTasks(t, ts, Config{}, elicitCaps)
		errObj := `{"code":-32001,"message":"quota exceeded","data":{"limit":3}}`
		ts.script("t-seed-ff", stepFailed(errObj))
		r := c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-seed-ff","seed":"failed"}}`)
		if got := gjson.Get(r, "error").Raw; !sameJSON(got, errObj) {
			t.Errorf("plain call answered by a task seeded failed = %s, want the error %s fetched with tasks/get", r, errObj)
		}
	})
	t.Run("augmented", func(t *testing.T) {
		ts := newTaskServer(t, true)
		c := startTasks(t, ts, Config{}, elicitCaps)
		ts.script("t-seed-a", stepCompleted(taskOutput))
		r := c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-seed-a","seed":"completed"},"task":{}}`)
		if gjson.Get(r, "result.task.status").Str != "working" {
			t.Errorf("CreateTaskResult must begin working: %s", r)
		}
		res := c.call(`2`, "tasks/result", taskParams("t-seed-a"))
		if gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
			t.Errorf("tasks/result of a task seeded completed = %s, want the result fetched with tasks/get", res)
		}
	})
}

// 6. input_required seen while tasks/result waits: the request carries
// related-task, and the answer goes upstream.
func TestTaskResultInputRequired(t *testing.T) {
	ts, c := startWithTask(t, "t-res-in")
	ts.script("t-res-in", stepInputRequired(`{"k1":`+elicitK1+`}`))
	c.send(`"res"`, "tasks/result", taskParams("t-res-in"))
	el := c.awaitMethod("elicitation/create")
	if gjson.Get(el, "params."+pathRelatedTask+".taskId").Str != "t-res-in" {
		t.Errorf("elicitation/create during tasks/result lacks related-task: %s", el)
	}
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	up := ts.waitFor(t, "tasks/update", "t-res-in", 1)
	if got := gjson.Get(up[0], "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"accept","content":{"name":"Ada"}}}`) {
		t.Errorf("tasks/update inputResponses = %s", got)
	}
	ts.script("t-res-in", stepCompleted(taskOutput))
	if res := c.await(`"res"`); gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("tasks/result after the input: %s", res)
	}
	c.sync()
	if n := c.count("elicitation/create"); n != 1 {
		t.Errorf("%d elicitation/create for one key", n)
	}
}

// 3/6. input_required of a followed task: the request carries no
// related-task (the client does not know the task).
func TestFollowedTaskInputRequired(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	ts.script("t-fol-in", stepInputRequired(`{"k1":`+elicitK1+`}`))
	c.send(`"f"`, "tools/call", `{"name":"task","arguments":{"id":"t-fol-in"}}`)
	el := c.awaitMethod("elicitation/create")
	if gjson.Get(el, "params._meta").Exists() {
		t.Errorf("elicitation/create for a hidden task carries _meta: %s", el)
	}
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	ts.waitFor(t, "tasks/update", "t-fol-in", 1)
	ts.script("t-fol-in", stepCompleted(taskOutput))
	if r := c.await(`"f"`); gjson.Get(r, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("followed call after the input: %s", r)
	}
}

// 3. The outcomes of followed tasks other than completed.
func TestFollowedTaskOutcomes(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	errObj := `{"code":-32001,"message":"the backend rejected the job","data":{"retry":false}}`
	ts.script("t-o-failed", stepWorking(""), stepFailed(errObj))
	ts.script("t-o-cancelled", taskStep{status: "cancelled"})
	ts.script("t-o-gone", stepRPCError(-32602, "Failed to retrieve task: Task has expired"))
	for _, id := range []string{"t-o-failed", "t-o-cancelled", "t-o-gone"} {
		c.send(jstr(id), "tools/call", `{"name":"task","arguments":{"id":"`+id+`"}}`)
	}
	if r := c.await(`"t-o-failed"`); !sameJSON(gjson.Get(r, "error").Raw, errObj) {
		t.Errorf("followed failed task = %s, want the error verbatim", r)
	}
	if r := c.await(`"t-o-cancelled"`); gjson.Get(r, "error.code").Int() != -32603 || gjson.Get(r, "error.message").Str != "Task was cancelled" || gjson.Get(r, "error.data.taskId").Str != "t-o-cancelled" {
		t.Errorf("followed task cancelled by the server: %s", r)
	}
	if r := c.await(`"t-o-gone"`); gjson.Get(r, "error.code").Int() != -32603 || !strings.Contains(gjson.Get(r, "error.message").Str, "Task has expired") {
		t.Errorf("followed task the server lost: %s", r)
	}
}

// 5. A client cancel of tasks/result stops the wait, not the task.
func TestTaskResultCancelledByClient(t *testing.T) {
	ts, c := startWithTask(t, "t-wait")
	c.send(`"res"`, "tasks/result", taskParams("t-wait"))
	ts.waitFor(t, "tasks/get", "t-wait", 1)
	c.h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"res"}}`)
	c.sync()
	if g := c.call(`2`, "tasks/get", taskParams("t-wait")); gjson.Get(g, "result.status").Str != "working" {
		t.Errorf("tasks/get after cancelling tasks/result: %s", g)
	}
	frames := c.stop()
	if n := answersFor(frames, `"res"`); n != 0 {
		t.Errorf("the cancelled tasks/result got %d answers", n)
	}
	if n := ts.count("tasks/cancel", ""); n != 0 {
		t.Errorf("cancelling tasks/result cancelled the task upstream")
	}
}

// 6. Every kind of input request reaches a client that declared it, and
// each answer goes upstream without the echoed related-task _meta.
func TestTaskInputRequestKinds(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, `{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}`)
	c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-kinds"},"task":{}}`)
	ts.script("t-kinds", stepInputRequired(`{`+
		`"s1":{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarize"}}],"maxTokens":50}},`+
		`"r1":{"method":"roots/list"},`+
		`"u1":{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://example.com/login"}}}`))
	c.call(`2`, "tasks/get", taskParams("t-kinds"))
	answers := map[string]string{
		"sampling/createMessage": `{"role":"assistant","content":{"type":"text","text":"short"},"model":"m","stopReason":"endTurn"}`,
		"roots/list":             `{"roots":[{"uri":"file:///work","name":"work"}]}`,
		"elicitation/create":     `{"action":"accept"}`,
	}
	keys := map[string]string{"sampling/createMessage": "s1", "roots/list": "r1", "elicitation/create": "u1"}
	for range 3 {
		f := c.take("an input request", func(f string) bool { _, ok := answers[gjson.Get(f, "method").Str]; return ok })
		m := gjson.Get(f, "method").Str
		if gjson.Get(f, "params."+pathRelatedTask+".taskId").Str != "t-kinds" {
			t.Errorf("%s without related-task: %s", m, f)
		}
		if m == "elicitation/create" && !strings.HasPrefix(gjson.Get(f, "params.elicitationId").Str, "mtp-elicitation-") {
			t.Errorf("URL-mode elicitation without a synthesized elicitationId: %s", f)
		}
		ans := answers[m]
		withMeta := ans[:len(ans)-1] + `,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-kinds"}}}`
		c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(f, "id").Raw + `,"result":` + withMeta + `}`)
	}
	up := ts.waitFor(t, "tasks/update", "t-kinds", 3)
	got := map[string]string{}
	for _, b := range up {
		gjson.Get(b, "params.inputResponses").ForEach(func(k, v gjson.Result) bool {
			got[k.Str] = v.Raw
			return true
		})
	}
	for m, key := range keys {
		if !sameJSON(got[key], answers[m]) {
			t.Errorf("inputResponses[%s] = %s, want %s", key, got[key], answers[m])
		}
	}
}

// 6. An elicitation the client fails becomes a cancel upstream (POLICY).
func TestTaskElicitationErrorBecomesCancel(t *testing.T) {
	ts, c := startWithTask(t, "t-elerr")
	ts.script("t-elerr", stepInputRequired(`{"k1":`+elicitK1+`}`))
	c.call(`2`, "tasks/get", taskParams("t-elerr"))
	el := c.awaitMethod("elicitation/create")
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el, "id").Raw + `,"error":{"code":-32603,"message":"no UI"}}`)
	up := ts.waitFor(t, "tasks/update", "t-elerr", 1)
	if got := gjson.Get(up[0], "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"cancel"}}`) {
		t.Errorf("tasks/update after a failed elicitation = %s", got)
	}
}

// 1. tools/list marks every tool taskSupport optional only with the
// extension.
func TestToolsListTaskSupport(t *testing.T) {
	for _, ext := range []bool{true, false} {
		t.Run(fmt.Sprintf("ext=%v", ext), func(t *testing.T) {
			ts := newTaskServer(t, ext)
			c := startTasks(t, ts, Config{}, elicitCaps)
			r := c.call(`1`, "tools/list", `{}`)
			tools := gjson.Get(r, "result.tools").Array()
			if len(tools) == 0 {
				t.Fatalf("tools/list: %s", r)
			}
			for _, tool := range tools {
				got := tool.Get("execution.taskSupport")
				if ext && got.Str != "optional" {
					t.Errorf("tool %s: execution.taskSupport = %s, want optional", tool.Get("name").Str, got.Raw)
				}
				if !ext && got.Exists() {
					t.Errorf("tool %s: execution.taskSupport %s without the extension", tool.Get("name").Str, got.Raw)
				}
			}
		})
	}
}

// 5. tasks/result merges related-task into the result's own _meta, which
// loses only serverInfo.
func TestTaskResultMergesMeta(t *testing.T) {
	ts, c := startWithTask(t, "t-m")
	ts.script("t-m", stepCompleted(`{"resultType":"complete","content":[],"_meta":{"trace":"abc","io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}}}`))
	res := c.call(`2`, "tasks/result", taskParams("t-m"))
	want := `{"trace":"abc","io.modelcontextprotocol/related-task":{"taskId":"t-m"}}`
	if got := gjson.Get(res, "result._meta").Raw; !sameJSON(got, want) {
		t.Errorf("tasks/result _meta = %s, want %s", got, want)
	}
}

// Malformed task requests are -32602, without reaching the server.
func TestTaskRequestsValidated(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	for i, p := range []string{`{}`, `{"taskId":7}`, `{"taskId":""}`} {
		for j, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			r := c.call(fmt.Sprint(10*i+j+1), m, p)
			if gjson.Get(r, "error.code").Int() != -32602 {
				t.Errorf("%s %s: %s", m, p, r)
			}
		}
	}
	c.methods[`"np"`] = "tasks/list"
	c.h.send(`{"jsonrpc":"2.0","id":"np","method":"tasks/list"}`)
	if r := c.await(`"np"`); !gjson.Get(r, "result.tasks").IsArray() {
		t.Errorf("tasks/list without params: %s", r)
	}
	if n := ts.count("tasks/get", "") + ts.count("tasks/cancel", ""); n != 0 {
		t.Errorf("%d malformed task requests reached the server", n)
	}
}

// Edge cases of tasks across eras: bounded waits, retried task requests, ttl
// arithmetic, registry-decided synthetic tasks, a state file that cannot be
// used, and trace ops on what task requests cause.

// A ttl too large for a time.Duration (over ~292 years) is held to
// rewrite.MaxTTL: the synthetic task stays listed and its result stays
// readable, instead of expiring at once.
func TestTaskHugeTTLClamped(t *testing.T) {
	maxMs := int64(rewrite.MaxTTL.Milliseconds())
	cases := []struct {
		ttl     string
		seconds bool
	}{
		{"31536000000000", false}, // a thousand years in ms
		{"9223372036854775807", false},
		{"1e300", false},
		{"31536000000", true}, // a thousand years in s
		{"9223372036854775807", true},
		{"1e300", true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s seconds=%v", tc.ttl, tc.seconds), func(t *testing.T) {
			ts := newTaskServer(t, true)
			c := startTasks(t, ts, Config{Tasks: rewrite.TaskOptions{TTLSeconds: tc.seconds}}, elicitCaps)
			want := maxMs
			if tc.seconds {
				want /= 1000
			}
			r := c.call(`1`, "tools/call", `{"name":"sync","task":{"ttl":`+tc.ttl+`}}`)
			id := gjson.Get(r, "result.task.taskId").Str
			if got := gjson.Get(r, "result.task.ttl").Int(); got != want {
				t.Errorf("CreateTaskResult ttl = %s, want %d (MaxTTL): %s", gjson.Get(r, "result.task.ttl").Raw, want, r)
			}
			tasks, _ := c.listTasks(`2`, `{}`)
			v, ok := findTask(tasks, id)
			if !ok {
				t.Fatalf("a task with ttl %s is not listed: %v", tc.ttl, tasks)
			}
			if got := v.Get("ttl").Int(); got != want {
				t.Errorf("listed ttl = %s, want %d", v.Get("ttl").Raw, want)
			}
			res := c.call(`3`, "tasks/result", taskParams(id))
			if gjson.Get(res, "result.structuredContent.n").Int() != 1 {
				t.Errorf("tasks/result of a task with ttl %s: %s", tc.ttl, res)
			}
		})
	}
}

// A server task whose id happens to start with the proxy's synthetic prefix
// is still the server's: the registry says it is not proxy-made, so it is
// polled, its result fetched and its cancel sent upstream.
func TestServerTaskWithSyntheticPrefix(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	// done even has the shape of the ids the proxy mints: the registry
	// still knows it for the server's.
	done, running := modern.SyntheticPrefix+strings.Repeat("5e", 16), modern.SyntheticPrefix+"srv-running"
	for i, id := range []string{done, running} {
		r := c.call(fmt.Sprint(i+1), "tools/call", `{"name":"task","arguments":{"id":`+jstr(id)+`},"task":{}}`)
		if gjson.Get(r, "result.task.taskId").Str != id {
			t.Fatalf("CreateTaskResult: %s", r)
		}
	}
	ts.script(done, stepCompleted(taskOutput))
	g := c.call(`"g"`, "tasks/get", taskParams(done))
	if gjson.Get(g, "result.status").Str != "completed" || ts.count("tasks/get", done) != 1 {
		t.Errorf("tasks/get of a server task with the synthetic prefix = %s (%d tasks/get upstream), want it polled: completed", g, ts.count("tasks/get", done))
	}
	res := c.call(`"r"`, "tasks/result", taskParams(done))
	if gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("tasks/result of a server task with the synthetic prefix: %s", res)
	}
	cx := c.call(`"c"`, "tasks/cancel", taskParams(running))
	if gjson.Get(cx, "result.status").Str != "cancelled" || ts.count("tasks/cancel", running) != 1 {
		t.Errorf("tasks/cancel of a server task with the synthetic prefix = %s (%d tasks/cancel upstream)", cx, ts.count("tasks/cancel", running))
	}
	// tasks/result of one never seen before is polled too.
	ts.script(modern.SyntheticPrefix+"srv-other", stepCompleted(taskOutput))
	if res := c.call(`"o"`, "tasks/result", taskParams(modern.SyntheticPrefix+"srv-other")); gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("tasks/result of an unregistered server task with the synthetic prefix: %s", res)
	}
}

// Frames the proxy sends because of a task request carry that request's
// trace op: progress of a followed task, status notifications of a
// tasks/result wait and of a tasks/list refresh, and the tasks/cancel of a
// followed call the client gave up.
func TestTaskNotificationsCarryTheirOp(t *testing.T) {
	ts := newTaskServer(t, true)
	var buf syncBuf
	tw := trace.New(&buf, trace.Options{})
	c := startTasks(t, ts, Config{Observer: tw}, elicitCaps)

	ts.script("t-op-follow", stepWorking("step 1"), stepCompleted(taskOutput))
	c.call(`"follow"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-follow"},"_meta":{"progressToken":"tok"}}`)

	c.call(`"create-res"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-res"},"task":{}}`)
	ts.script("t-op-res", stepWorking(""), stepCompleted(taskOutput))
	c.call(`"res"`, "tasks/result", taskParams("t-op-res"))

	c.call(`"create-list"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-list"},"task":{}}`)
	ts.script("t-op-list", stepCompleted(taskOutput))
	c.listTasks(`"list"`, `{}`)

	ts.script("t-op-abandon", stepWorking("busy"))
	c.send(`"abandon"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-abandon"}}`)
	ts.waitFor(t, "tasks/get", "t-op-abandon", 1)
	c.h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"abandon"}}`)
	ts.waitFor(t, "tasks/cancel", "t-op-abandon", 1)
	c.sync()
	c.stop()
	if dropped, err := tw.Close(); dropped != 0 || err != nil {
		t.Fatalf("trace Close: %d dropped, %v", dropped, err)
	}

	var recs []gjson.Result
	ops := map[string]string{} // the op of each client request, by raw id
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		r := gjson.Parse(line)
		recs = append(recs, r)
		if r.Get("dir").Str == "client->proxy" && r.Get("op").Str != "" {
			ops[r.Get("frame.id").Raw] = r.Get("op").Str
		}
	}
	seen := map[string]int{}
	for _, r := range recs {
		method := r.Get("frame.method").Str
		op := r.Get("op").Str
		switch {
		case r.Get("dir").Str == "proxy->client" && method == "notifications/progress":
			seen[method]++
			if op == "" || op != ops[`"follow"`] {
				t.Errorf("notifications/progress traced with op %q, want the followed call's %q: %s", op, ops[`"follow"`], r.Raw)
			}
		case r.Get("dir").Str == "proxy->client" && method == "notifications/tasks/status":
			seen[method+" "+r.Get("frame.params.taskId").Str]++
			wantOp := ops[`"res"`]
			if r.Get("frame.params.taskId").Str == "t-op-list" {
				wantOp = ops[`"list"`]
			}
			if op == "" || op != wantOp {
				t.Errorf("notifications/tasks/status traced with op %q, want %q: %s", op, wantOp, r.Raw)
			}
		case r.Get("dir").Str == "proxy->server" && method == "tasks/cancel":
			seen[method]++
			if op == "" || op != ops[`"abandon"`] {
				t.Errorf("tasks/cancel of an abandoned followed call traced with op %q, want %q: %s", op, ops[`"abandon"`], r.Raw)
			}
		}
	}
	for _, k := range []string{"notifications/progress", "notifications/tasks/status t-op-res", "notifications/tasks/status t-op-list", "tasks/cancel"} {
		if seen[k] == 0 {
			t.Errorf("no %s record in the trace: the test proves nothing", k)
		}
	}
}

// shortPolls is a session config whose polls are bounded by d.
func shortPolls(d time.Duration) Config { return Config{PollTimeout: d} }

// startWithTaskCfg is startWithTask with a config.
func startWithTaskCfg(t *testing.T, id string, cfg Config) (*taskServer, *legacyClient) {
	t.Helper()
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, cfg, elicitCaps)
	c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":`+jstr(id)+`},"task":{}}`)
	return ts, c
}

// A tasks/get poll that hangs ends within the poll bound, not the idle
// timeout (ten minutes), and the poll is made again: every wait on a task
// ends. The bound is 50 ms here; each answer is awaited for at most `wait`.
func TestTaskPollTimeout(t *testing.T) {
	t.Run("tasks/result", func(t *testing.T) {
		ts, c := startWithTaskCfg(t, "t-hang-res", shortPolls(50*time.Millisecond))
		ts.script("t-hang-res", stepCompleted(taskOutput))
		ts.fault("tasks/get", faultHang)
		if res := c.call(`2`, "tasks/result", taskParams("t-hang-res")); gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
			t.Errorf("tasks/result after a hung poll: %s", res)
		}
		if n := ts.count("tasks/get", "t-hang-res"); n != 2 {
			t.Errorf("%d tasks/get, want 2 (the hung one, then its repeat)", n)
		}
	})
	t.Run("followed", func(t *testing.T) {
		ts := newTaskServer(t, true)
		c := startTasks(t, ts, shortPolls(50*time.Millisecond), elicitCaps)
		ts.script("t-hang-follow", stepCompleted(taskOutput))
		ts.fault("tasks/get", faultHang, faultHang)
		if r := c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-hang-follow"}}`); gjson.Get(r, "result.structuredContent.answer").Int() != 42 {
			t.Errorf("followed call after two hung polls: %s", r)
		}
		if n := ts.count("tasks/get", "t-hang-follow"); n != 3 {
			t.Errorf("%d tasks/get, want 3", n)
		}
	})
	t.Run("tasks/get", func(t *testing.T) {
		ts, c := startWithTaskCfg(t, "t-hang-get", shortPolls(50*time.Millisecond))
		ts.script("t-hang-get", stepCompleted(taskOutput))
		ts.fault("tasks/get", faultHang)
		if g := c.call(`2`, "tasks/get", taskParams("t-hang-get")); gjson.Get(g, "result.status").Str != "completed" {
			t.Errorf("tasks/get after a hung poll: %s", g)
		}
		// Every retry hangs too: an error naming the bound, in bounded time.
		ts.fault("tasks/get", faultHang, faultHang, faultHang)
		c.call(`3`, "tools/call", `{"name":"task","arguments":{"id":"t-hang-all"},"task":{}}`)
		g := c.call(`4`, "tasks/get", taskParams("t-hang-all"))
		if gjson.Get(g, "error.code").Int() != -32603 || !strings.Contains(gjson.Get(g, "error.message").Str, "did not answer within 50ms") {
			t.Errorf("tasks/get whose every attempt hangs: %s", g)
		}
		if n := ts.count("tasks/get", "t-hang-all"); n != 1+link.MaxBrokenRetries {
			t.Errorf("%d tasks/get for a hanging server, want %d", n, 1+link.MaxBrokenRetries)
		}
	})
	t.Run("tasks/list", func(t *testing.T) {
		ts, c := startWithTaskCfg(t, "t-hang-list", shortPolls(50*time.Millisecond))
		ts.fault("tasks/get", faultHang)
		tasks, _ := c.listTasks(`2`, `{}`)
		if v, ok := findTask(tasks, "t-hang-list"); !ok || v.Get("status").Str != "working" {
			t.Errorf("tasks/list with a hung refresh = %v, want the last known state", tasks)
		}
	})
}

// A tasks/get the server redirects to another origin is refused and not
// made again (the same request meets the same redirect): the client gets
// one error naming the target and the fix, not a suggestion to try again.
func TestTaskGetRedirectNotRetried(t *testing.T) {
	ts, c := startWithTask(t, "t-redirect")
	ts.fault("tasks/get", faultRedirect, faultRedirect, faultRedirect)
	g := c.call(`2`, "tasks/get", taskParams("t-redirect"))
	msg := gjson.Get(g, "error.message").Str
	if !strings.Contains(msg, "elsewhere.invalid") || strings.Contains(msg, "try again") || gjson.Get(g, "error.data.cause").Str != "redirect" {
		t.Errorf("tasks/get redirected to another origin: %s", g)
	}
	if n := ts.count("tasks/get", "t-redirect"); n != 1 {
		t.Errorf("%d tasks/get, want 1: a refused redirect is not retried", n)
	}
}

// A tasks/update that meets an HTTP 500 and then a reset is sent again (it
// is idempotent per input key); the client is asked once, and once the
// server has the answer a poll that still shows the key changes nothing.
func TestTaskUpdateRetried(t *testing.T) {
	ts, c := startWithTask(t, "t-upd")
	ts.script("t-upd", stepInputRequired(`{"k1":`+elicitK1+`}`))
	ts.fault("tasks/update", faultHTTP500, faultReset)
	c.call(`2`, "tasks/get", taskParams("t-upd"))
	el := c.awaitMethod("elicitation/create")
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Luca"}}}`)
	up := ts.waitFor(t, "tasks/update", "t-upd", 3)
	for i, b := range up {
		if got := gjson.Get(b, "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"accept","content":{"name":"Luca"}}}`) {
			t.Errorf("tasks/update %d inputResponses = %s", i+1, got)
		}
	}
	if ids := []string{gjson.Get(up[0], "id").Raw, gjson.Get(up[1], "id").Raw, gjson.Get(up[2], "id").Raw}; ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("a retried tasks/update reused its upstream id: %v", ids)
	}
	c.call(`3`, "tasks/get", taskParams("t-upd")) // the key shows again: delivered already
	c.sync()
	if n := c.count("elicitation/create"); n != 1 {
		t.Errorf("the client was asked %d times, want once", n)
	}
	if n := ts.count("tasks/update", "t-upd"); n != 3 {
		t.Errorf("%d tasks/update, want 3 (500, reset, accepted) and none once accepted", n)
	}
}

// A tasks/update that fails every retry keeps the client's answer: the next
// poll that shows the key sends it again, without asking the client again.
func TestTaskUpdateHeldAnswerResent(t *testing.T) {
	ts, c := startWithTask(t, "t-held")
	ts.script("t-held", stepInputRequired(`{"k1":`+elicitK1+`}`))
	ts.fault("tasks/update", faultHTTP500, faultReset, faultHTTP500)
	c.call(`2`, "tasks/get", taskParams("t-held"))
	el := c.awaitMethod("elicitation/create")
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	ts.waitFor(t, "tasks/update", "t-held", 1+link.MaxBrokenRetries)
	// Later polls show the key still open; one of them, once the failed
	// delivery has given up, sends the held answer again.
	deadline := time.Now().Add(wait)
	for i := 0; ts.count("tasks/update", "t-held") <= 1+link.MaxBrokenRetries; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the held answer was not sent again; %d tasks/update", ts.count("tasks/update", "t-held"))
		}
		c.call(fmt.Sprintf(`"poll-%d"`, i), "tasks/get", taskParams("t-held"))
		time.Sleep(20 * time.Millisecond)
	}
	up := ts.requests("tasks/update", "t-held")
	if got := gjson.Get(up[len(up)-1], "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"accept","content":{"name":"Ada"}}}`) {
		t.Errorf("resent tasks/update inputResponses = %s", got)
	}
	c.sync()
	if n := c.count("elicitation/create"); n != 1 {
		t.Errorf("the client was asked %d times for one answer, want once", n)
	}
}

// The wait for the client's answer to a task's input request ends after
// --request-timeout: the client is told the request is no longer needed,
// and a later poll that still shows the key asks again.
func TestTaskInputWaitBounded(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{RequestTimeout: 500 * time.Millisecond}, elicitCaps)
	c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-slow-client"},"task":{}}`)
	ts.script("t-slow-client", stepInputRequired(`{"k1":`+elicitK1+`}`))
	c.call(`2`, "tasks/get", taskParams("t-slow-client"))
	el := c.awaitMethod("elicitation/create")
	cancelled := c.awaitMethod("notifications/cancelled")
	if got := gjson.Get(cancelled, "params.requestId").Raw; got != gjson.Get(el, "id").Raw {
		t.Errorf("notifications/cancelled for %s, want the unanswered %s", got, gjson.Get(el, "id").Raw)
	}
	// Asked again by a later poll, and answered this time.
	deadline := time.Now().Add(wait)
	for i := 0; c.count("elicitation/create") < 2; i++ {
		if time.Now().After(deadline) {
			t.Fatal("the timed-out input request was not asked again")
		}
		c.call(fmt.Sprintf(`"poll-%d"`, i), "tasks/get", taskParams("t-slow-client"))
		time.Sleep(20 * time.Millisecond)
	}
	el2 := c.awaitMethod("elicitation/create")
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el2, "id").Raw + `,"result":{"action":"decline"}}`)
	if up := ts.waitFor(t, "tasks/update", "t-slow-client", 1); !sameJSON(gjson.Get(up[0], "params.inputResponses").Raw, `{"k1":{"action":"decline"}}`) {
		t.Errorf("tasks/update: %s", up[0])
	}
}

// stateWarnings returns the log entries about the state file, and fails on
// any at error level.
func stateWarnings(t *testing.T, logs *observer.ObservedLogs) []observer.LoggedEntry {
	t.Helper()
	var warns []observer.LoggedEntry
	for _, e := range logs.All() {
		if !strings.Contains(e.Message, "state file") && !strings.Contains(e.Message, "recording") {
			continue
		}
		switch e.Level {
		case zapcore.WarnLevel:
			warns = append(warns, e)
		case zapcore.ErrorLevel, zapcore.DPanicLevel:
			t.Errorf("logged at %v: %s %v", e.Level, e.Message, e.Context)
		}
	}
	return warns
}

// useTasks creates a real and a synthetic task, lists them and reads the
// synthetic one's result; it returns the synthetic id.
func useTasks(t *testing.T, ts *taskServer, c *legacyClient, realID string) string {
	t.Helper()
	c.call(`"u1"`, "tools/call", `{"name":"task","arguments":{"id":`+jstr(realID)+`},"task":{}}`)
	r := c.call(`"u2"`, "tools/call", `{"name":"sync","task":{}}`)
	synth := gjson.Get(r, "result.task.taskId").Str
	tasks, _ := c.listTasks(`"u3"`, `{}`)
	for _, id := range []string{realID, synth} {
		if _, ok := findTask(tasks, id); !ok {
			t.Errorf("tasks/list = %v, want %s listed", tasks, id)
		}
	}
	if res := c.call(`"u4"`, "tasks/result", taskParams(synth)); gjson.Get(res, "result.structuredContent.n").Int() != 1 {
		t.Errorf("tasks/result of the synthetic task: %s", res)
	}
	if g := c.call(`"u5"`, "tasks/get", taskParams(realID)); gjson.Get(g, "result.status").Str != "working" {
		t.Errorf("tasks/get of %s: %s", realID, g)
	}
	return synth
}

// A state directory that cannot be created (its parent is a regular file:
// that fails for root too) leaves the session on memory with one warning,
// and tasks are listed as usual.
func TestTaskStateDirUncreatable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTaskServer(t, true)
	core, logs := observer.New(zapcore.DebugLevel)
	c := startTasks(t, ts, Config{StatePath: filepath.Join(dir, "file", "state.json"), Logger: zap.New(core)}, elicitCaps)
	useTasks(t, ts, c, "t-nodir")
	c.stop()
	if w := stateWarnings(t, logs); len(w) != 1 {
		t.Errorf("%d warnings about the state file, want exactly one: %v", len(w), w)
	}
}

// A state file that cannot be written falls back to memory seeded with the
// records the file holds, with one warning: a task created afterwards is
// listed, and an old one keeps its cached result. Writing is made to fail
// for root too: the lock file's path is a directory, or another process
// holds the lock and never lets go. For other users a
// read-only directory is tried as well (the lock file exists, so the write
// itself fails); root skips it.
func TestTaskStateFileUnwritable(t *testing.T) {
	old := `{"version":1,"tasks":[{"id":"t-old","seq":1,"task":{"taskId":"t-old","status":"completed","createdAt":"` + tsCreated + `","lastUpdatedAt":"` + tsUpdated + `","ttlMs":60000},"result":` + taskOutput + `}]}`
	for _, how := range []string{"lock path is a directory", "lock held by a stuck process", "read-only directory"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "lock path is a directory":
				if err := os.Mkdir(path+".lock", 0o700); err != nil {
					t.Fatal(err)
				}
			case "lock held by a stuck process":
				unlock, err := (&statefile.File{LockPath: path + ".lock"}).Lock(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(unlock)
				old := modern.StateLockTimeout
				modern.StateLockTimeout = 50 * time.Millisecond
				t.Cleanup(func() { modern.StateLockTimeout = old })
			case "read-only directory":
				if os.Geteuid() == 0 {
					t.Skip("root writes to a read-only directory")
				}
				// The lock file exists, so locking works and writing fails.
				if err := os.WriteFile(path+".lock", nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o500); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(dir, 0o700) })
			}
			ts := newTaskServer(t, true)
			core, logs := observer.New(zapcore.DebugLevel)
			c := startTasks(t, ts, Config{StatePath: path, Logger: zap.New(core)}, elicitCaps)
			useTasks(t, ts, c, "t-new")
			tasks, _ := c.listTasks(`"l"`, `{}`)
			if _, ok := findTask(tasks, "t-old"); !ok {
				t.Errorf("the task the file held is not listed: %v", tasks)
			}
			if res := c.call(`"r"`, "tasks/result", taskParams("t-old")); gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
				t.Errorf("tasks/result of the task the file held: %s", res)
			}
			c.stop()
			if w := stateWarnings(t, logs); len(w) != 1 {
				t.Errorf("%d warnings about the state file, want exactly one: %v", len(w), w)
			}
			if b, _ := os.ReadFile(path); string(b) != old {
				t.Errorf("the state file changed:\n%s", b)
			}
		})
	}
}

// A state file of a newer format version is left byte for byte as it was,
// unknown fields and all, while the session keeps its tasks in memory and
// warns once.
func TestTaskStateFileNewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	newer := `{"version":2,"upstream":"http://elsewhere/mcp","format":{"compression":"none"},"tasks":[{"id":"t-v2","seq":1,"task":{"taskId":"t-v2","status":"working"},"origin":"session-7","labels":["a","b"]}]}` + "\n"
	if err := os.WriteFile(path, []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTaskServer(t, true)
	core, logs := observer.New(zapcore.DebugLevel)
	c := startTasks(t, ts, Config{StatePath: path, Logger: zap.New(core)}, elicitCaps)
	useTasks(t, ts, c, "t-now")
	c.call(`"x"`, "tasks/cancel", taskParams("t-now"))
	c.stop()
	if b, err := os.ReadFile(path); err != nil || string(b) != newer {
		t.Errorf("the newer state file changed (%v):\n got: %s\nwant: %s", err, b, newer)
	}
	w := stateWarnings(t, logs)
	if len(w) != 1 || !strings.Contains(w[0].Message, "newer") {
		t.Errorf("warnings about the state file = %v, want one about the newer version", w)
	}
}

// A state file that is not valid JSON is left as it is for the user to
// fix, loudly (one error that names the way out), while the session keeps
// its tasks in memory.
func TestTaskStateFileInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	broken := `{"version":1,"tasks":[{"id":"t-cut"`
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTaskServer(t, true)
	core, logs := observer.New(zapcore.DebugLevel)
	c := startTasks(t, ts, Config{StatePath: path, Logger: zap.New(core)}, elicitCaps)
	useTasks(t, ts, c, "t-mem")
	c.stop()
	if b, err := os.ReadFile(path); err != nil || string(b) != broken {
		t.Errorf("the invalid state file changed (%v): %s", err, b)
	}
	errs := logs.FilterLevelExact(zapcore.ErrorLevel).FilterMessageSnippet("state file").All()
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "not valid JSON") || !strings.Contains(errs[0].Message, "move it away") {
		t.Errorf("errors about the state file = %v, want one saying it is not valid JSON and to move it away", errs)
	}
}
