package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// The official TypeScript SDK 2.x client (@modelcontextprotocol/client, pinned
// in testdata/tsclient2/package-lock.json) drives a server through
// testdata/tsclient2/client.mjs, which prints one JSON report line. npm ci
// runs once per test binary; without node, npm or the registry the tests are
// skipped, except in CI (CI=true), where they fail.

// tsInstallTimeout bounds npm ci; tsRunTimeout bounds one client.mjs run
// (its own deadline, tsDeadline, is shorter so that it prints a partial
// report first).
const (
	tsInstallTimeout = 4 * time.Minute
	tsRunTimeout     = 2 * time.Minute
	tsDeadline       = 90 * time.Second
	tsStepTimeoutMS  = 20000
)

// tsScenario is what client.mjs runs; nil steps are skipped. See the comment
// at the top of client.mjs.
type tsScenario struct {
	StepTimeoutMS int             `json:"stepTimeoutMs,omitempty"`
	ListTools     bool            `json:"listTools,omitempty"`
	Echo          *tsToolCall     `json:"echo,omitempty"`
	Resource      *tsResourceStep `json:"resource,omitempty"`
	Prompt        *tsPromptStep   `json:"prompt,omitempty"`
	InputRequired *tsInputStep    `json:"inputRequired,omitempty"`
	Listen        *tsListenStep   `json:"listen,omitempty"`
	Cancel        *tsCancelStep   `json:"cancel,omitempty"`
	Whoami        *tsToolCall     `json:"whoami,omitempty"`
}

type tsToolCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args,omitempty"`
}

type tsResourceStep struct {
	URI string `json:"uri"`
}

type tsPromptStep struct {
	Name string            `json:"name"`
	Args map[string]string `json:"args,omitempty"`
}

// tsInputStep calls a tool that needs client input; the client's
// elicitation/create handler answers with Reply.
type tsInputStep struct {
	Tool  string         `json:"tool"`
	Args  map[string]any `json:"args,omitempty"`
	Reply map[string]any `json:"reply,omitempty"`
}

// tsListenStep opens subscriptions/listen with Filter, calls Trigger, and
// waits for the notification Expect.
type tsListenStep struct {
	Filter  map[string]any `json:"filter"`
	Trigger *tsToolCall    `json:"trigger,omitempty"`
	Expect  string         `json:"expect,omitempty"`
}

// tsCancelStep calls a slow tool and aborts it (AbortSignal): after its first
// progress notification with AbortAfterProgress, else at once. After is
// called next, to show the connection still works.
type tsCancelStep struct {
	Tool               string         `json:"tool"`
	Args               map[string]any `json:"args,omitempty"`
	AbortAfterProgress bool           `json:"abortAfterProgress,omitempty"`
	After              *tsToolCall    `json:"after,omitempty"`
}

// tsError is an error as client.mjs reports it. Code is a number for a
// JSON-RPC error (ProtocolError), a string for an SdkError.
type tsError struct {
	Name    string          `json:"name"`
	Message string          `json:"message"`
	Code    any             `json:"code"`
	Data    json.RawMessage `json:"data"`
}

func (e *tsError) String() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s(%v): %s", e.Name, e.Code, e.Message)
}

type tsStep struct {
	OK    bool     `json:"ok"`
	Error *tsError `json:"error"`
}

// tsReport is the report line of client.mjs.
type tsReport struct {
	Mode      string   `json:"mode"`
	Transport string   `json:"transport"`
	OK        bool     `json:"ok"`
	Error     *tsError `json:"error"`
	Connect   struct {
		OK                bool     `json:"ok"`
		Error             *tsError `json:"error"`
		Era               string   `json:"era"`
		ProtocolVersion   string   `json:"protocolVersion"`
		Discovered        bool     `json:"discovered"`
		SupportedVersions []string `json:"supportedVersions"`
		ServerInfo        *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	} `json:"connect"`
	Steps struct {
		ListTools *struct {
			tsStep
			Names []string `json:"names"`
		} `json:"listTools"`
		Echo     *tsCallStep `json:"echo"`
		Resource *struct {
			tsStep
			Contents []struct {
				URI      string `json:"uri"`
				MIMEType string `json:"mimeType"`
				Text     string `json:"text"`
			} `json:"contents"`
		} `json:"resource"`
		Prompt *struct {
			tsStep
			Messages []struct {
				Role string `json:"role"`
				Text string `json:"text"`
			} `json:"messages"`
		} `json:"prompt"`
		InputRequired *struct {
			tsCallStep
			HandlerCalls int `json:"handlerCalls"`
			Requests     []struct {
				Mode    string `json:"mode"`
				Message string `json:"message"`
			} `json:"requests"`
		} `json:"inputRequired"`
		Listen *struct {
			tsStep
			Acknowledged  bool           `json:"acknowledged"`
			HonoredFilter map[string]any `json:"honoredFilter"`
			TriggerTexts  []string       `json:"triggerTexts"`
			Arrived       bool           `json:"arrived"`
			Notifications []string       `json:"notifications"`
			Closed        string         `json:"closed"`
		} `json:"listen"`
		Cancel *struct {
			tsStep
			ProgressSeen int         `json:"progressSeen"`
			Aborted      bool        `json:"aborted"`
			Rejected     bool        `json:"rejected"`
			Rejection    *tsError    `json:"rejection"`
			Result       *tsCallStep `json:"result"`
			After        *tsCallStep `json:"after"`
		} `json:"cancel"`
		Whoami *struct {
			tsStep
			StructuredContent json.RawMessage `json:"structuredContent"`
		} `json:"whoami"`
	} `json:"steps"`

	// Raw is the report line as printed.
	Raw string `json:"-"`
}

type tsCallStep struct {
	tsStep
	Texts   []string `json:"texts"`
	IsError bool     `json:"isError"`
}

// tsInstall is the npm ci of testdata/tsclient2, shared by every test of the
// binary run.
var tsInstall struct {
	once      sync.Once
	dir, node string
	err       error // why the client cannot run here
}

// tsClientDir installs the client once (into the directory TestMain removes
// at exit) and returns that directory and the node binary; without node, npm
// or the registry the test is skipped, or fails when CI=true.
func tsClientDir(t *testing.T) (dir, node string) {
	t.Helper()
	tsInstall.once.Do(func() {
		tsInstall.dir, tsInstall.node, tsInstall.err = installTSClient()
	})
	if tsInstall.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("TypeScript SDK client: %v", tsInstall.err)
		}
		t.Skipf("TypeScript SDK client: %v (the test fails instead when CI=true)", tsInstall.err)
	}
	return tsInstall.dir, tsInstall.node
}

func installTSClient() (dir, node string, err error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", "", errors.New("npm is not installed: cannot install @modelcontextprotocol/client")
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", errors.New("node is not installed: cannot run @modelcontextprotocol/client")
	}
	dir = filepath.Join(filepath.Dir(binPath), "tsclient2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	for _, f := range []string{"package.json", "package-lock.json", "client.mjs", "stdio-relay.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "tsclient2", f))
		if err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), tsInstallTimeout)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	install.Dir = dir
	install.WaitDelay = 10 * time.Second
	if out, err := install.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("npm ci of @modelcontextprotocol/client failed (%v):\n%s", err, out)
	}
	return dir, node, nil
}

// runTSClient runs the scenario with the TypeScript SDK client in mode (pin
// or auto) against the stdio server started as command args..., and returns
// its report. The server gets the test's environment (proxyEnv).
func runTSClient(t *testing.T, mode string, scenario tsScenario, command string, args ...string) tsReport {
	t.Helper()
	return runTSClientArgs(t, mode, scenario, append([]string{"--", command}, args...))
}

// runTSClientURL is runTSClient over Streamable HTTP to url.
func runTSClientURL(t *testing.T, mode string, scenario tsScenario, url string) tsReport {
	t.Helper()
	return runTSClientArgs(t, mode, scenario, []string{"--url", url})
}

func runTSClientArgs(t *testing.T, mode string, scenario tsScenario, target []string) tsReport {
	t.Helper()
	dir, node := tsClientDir(t)
	if scenario.StepTimeoutMS == 0 {
		scenario.StepTimeoutMS = tsStepTimeoutMS
	}
	sc, err := json.Marshal(scenario)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), tsRunTimeout)
	defer cancel()
	args := append([]string{filepath.Join(dir, "client.mjs"), "--mode", mode, "--scenario", string(sc),
		"--deadline-ms", fmt.Sprint(tsDeadline.Milliseconds())}, target...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = proxyEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A server process that outlives the client must not hold the pipes.
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client.mjs --mode %s %s stderr:\n%s", mode, strings.Join(target, " "), stderr.String())
		}
	})
	var line string
	sc2 := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc2.Buffer(make([]byte, 1<<20), 16<<20)
	for sc2.Scan() {
		if s := strings.TrimSpace(sc2.Text()); s != "" {
			line = s
		}
	}
	if runErr != nil {
		t.Fatalf("client.mjs --mode %s: %v (report: %s)\nstderr:\n%s", mode, runErr, line, stderr.String())
	}
	var r tsReport
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("client.mjs --mode %s: report %q: %v\nstderr:\n%s", mode, line, err, stderr.String())
	}
	r.Raw = line
	return r
}

// tsDemoScenario exercises the demo server: echo, the readme resource, the
// greeting prompt, ask_name (one elicitation round), a tools list_changed
// triggered by touch, and slow_count aborted after its first progress
// notification.
func tsDemoScenario() tsScenario {
	return tsScenario{
		ListTools: true,
		Echo:      &tsToolCall{Tool: "echo", Args: map[string]any{"text": "hello from the TS SDK"}},
		Resource:  &tsResourceStep{URI: "demo://readme"},
		Prompt:    &tsPromptStep{Name: "greeting", Args: map[string]string{"name": "Ada"}},
		InputRequired: &tsInputStep{Tool: "ask_name",
			Reply: map[string]any{"action": "accept", "content": map[string]any{"name": "Grace"}}},
		Listen: &tsListenStep{
			Filter:  map[string]any{"toolsListChanged": true},
			Trigger: &tsToolCall{Tool: "touch", Args: map[string]any{"what": "tools"}},
			Expect:  "notifications/tools/list_changed",
		},
		Cancel: &tsCancelStep{Tool: "slow_count", Args: map[string]any{"n": 50, "delay_ms": 10000},
			AbortAfterProgress: true,
			After:              &tsToolCall{Tool: "echo", Args: map[string]any{"text": "after the cancel"}}},
		Whoami: &tsToolCall{Tool: "whoami"},
	}
}

// checkTSDemoReport checks a report of tsDemoScenario against the demo.
// stateAltered says the ask_name retry is expected to be refused with -32602
// "requestState was altered" (the client re-encodes the requestState literal,
// see tsStateKeeper) instead of completing.
func checkTSDemoReport(t *testing.T, r tsReport, stateAltered bool) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("scenario error %v\nreport: %s", r.Error, r.Raw)
	}
	c := r.Connect
	if !c.OK || c.Era != "modern" || c.ProtocolVersion != demo.ProtocolVersion || !c.Discovered {
		t.Fatalf("connect = ok %v era %q version %q discovered %v error %v, want modern %s via server/discover\nreport: %s",
			c.OK, c.Era, c.ProtocolVersion, c.Discovered, c.Error, demo.ProtocolVersion, r.Raw)
	}
	if c.ServerInfo == nil || c.ServerInfo.Name != demo.ServerName {
		t.Errorf("serverInfo = %+v, want %s", c.ServerInfo, demo.ServerName)
	}
	s := r.Steps
	if st := s.ListTools; st == nil || !st.OK {
		t.Errorf("listTools: %+v", st)
	} else {
		for _, want := range []string{"echo", "ask_name", "slow_count", "touch"} {
			if !containsString(st.Names, want) {
				t.Errorf("tools/list = %v, want %s in it", st.Names, want)
			}
		}
	}
	if st := s.Echo; st == nil || !st.OK || st.IsError || len(st.Texts) != 1 || st.Texts[0] != "hello from the TS SDK" {
		t.Errorf("echo: %+v", st)
	}
	if st := s.Resource; st == nil || !st.OK || len(st.Contents) != 1 || st.Contents[0].URI != "demo://readme" ||
		!strings.HasPrefix(st.Contents[0].Text, "# mcp-tasks-proxy demo server") {
		t.Errorf("resources/read: %+v", st)
	}
	if st := s.Prompt; st == nil || !st.OK || len(st.Messages) != 1 || st.Messages[0].Text != "Hello, Ada!" {
		t.Errorf("prompts/get: %+v", st)
	}
	if st := s.InputRequired; st == nil {
		t.Error("inputRequired: no report")
	} else {
		if st.HandlerCalls != 1 || len(st.Requests) != 1 || st.Requests[0].Message != "What is your name?" || st.Requests[0].Mode != "form" {
			t.Errorf("inputRequired: elicitation handler calls %d %+v, want one form request \"What is your name?\"", st.HandlerCalls, st.Requests)
		}
		switch {
		case stateAltered:
			if st.OK || st.Error == nil || fmt.Sprint(st.Error.Code) != "-32602" || st.Error.Message != "requestState was altered" {
				t.Errorf("inputRequired = ok %v texts %v error %v, want -32602 requestState was altered", st.OK, st.Texts, st.Error)
			}
		case !st.OK || len(st.Texts) != 1 || st.Texts[0] != "hello, Grace":
			t.Errorf("inputRequired = ok %v texts %v error %v, want \"hello, Grace\"", st.OK, st.Texts, st.Error)
		}
	}
	checkTSListenCancel(t, r)
	if st := s.Whoami; st == nil || !st.OK {
		t.Errorf("whoami: %+v", st)
	} else {
		w := gjson.ParseBytes(st.StructuredContent)
		if w.Get("protocolVersion").Str != demo.ProtocolVersion || w.Get("clientInfo.name").Str != "mcp-tasks-proxy-e2e-tsclient2" ||
			!w.Get("clientCapabilities.elicitation").Exists() {
			t.Errorf("whoami = %s, want the client's _meta envelope", st.StructuredContent)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// tsWire records what reaches the demo over HTTP, and keeps the requestState
// literals the demo issues (tsStateKeeper).
type tsWire struct {
	next http.Handler

	mu       sync.Mutex
	posts    []tsPost
	done     map[string]chan struct{} // tool name → closed when a call's handler returned
	issued   map[string]string        // requestState value → the raw literal the demo wrote
	restored int                      // retries whose literal had to be restored
}

// tsPost is one POST the demo got.
type tsPost struct {
	Method, Name   string // body method and params.name
	HeaderMethod   string // Mcp-Method
	HeaderVersion  string // MCP-Protocol-Version
	ID             string // raw id; "" for a notification
	MetaKeys       []string
	HasStateRetry  bool // params.requestState present
	HasInputAnswer bool // params.inputResponses present
	Status         int
}

func newTSWire(next http.Handler) *tsWire {
	return &tsWire{next: next, done: map[string]chan struct{}{}, issued: map[string]string{}}
}

// toolDone is closed once a call to the tool has been handled.
func (w *tsWire) toolDone(name string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := w.done[name]
	if ch == nil {
		ch = make(chan struct{})
		w.done[name] = ch
	}
	return ch
}

func (w *tsWire) snapshot() ([]tsPost, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]tsPost(nil), w.posts...), w.restored
}

// ServeHTTP records the POST, restores a re-encoded requestState literal
// (tsStateKeeper), serves it with the demo, and keeps the requestState
// literals of JSON answers. JSON answers are held until complete, so a
// literal is kept before the client can retry; event streams pass through.
func (w *tsWire) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.next.ServeHTTP(rw, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	p := tsPost{
		Method:         gjson.GetBytes(body, "method").Str,
		Name:           gjson.GetBytes(body, "params.name").Str,
		HeaderMethod:   r.Header.Get("Mcp-Method"),
		HeaderVersion:  r.Header.Get("MCP-Protocol-Version"),
		ID:             gjson.GetBytes(body, "id").Raw,
		HasStateRetry:  gjson.GetBytes(body, "params.requestState").Exists(),
		HasInputAnswer: gjson.GetBytes(body, "params.inputResponses").Exists(),
	}
	gjson.GetBytes(body, "params._meta").ForEach(func(k, _ gjson.Result) bool {
		p.MetaKeys = append(p.MetaKeys, k.Str)
		return true
	})
	if st := gjson.GetBytes(body, "params.requestState"); st.Type == gjson.String {
		w.mu.Lock()
		raw, ok := w.issued[st.Str]
		w.mu.Unlock()
		if ok && raw != st.Raw {
			if b, err := sjson.SetRawBytes(body, "params.requestState", []byte(raw)); err == nil {
				body = b
				w.mu.Lock()
				w.restored++
				w.mu.Unlock()
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	hw := &tsHoldJSON{ResponseWriter: rw}
	w.next.ServeHTTP(hw, r)
	if hw.held {
		if st := gjson.GetBytes(hw.buf.Bytes(), "result.requestState"); st.Type == gjson.String {
			w.mu.Lock()
			w.issued[st.Str] = st.Raw
			w.mu.Unlock()
		}
		rw.Header().Set("Content-Length", fmt.Sprint(hw.buf.Len()))
		rw.WriteHeader(hw.status)
		_, _ = rw.Write(hw.buf.Bytes())
	}
	p.Status = hw.status
	w.mu.Lock()
	w.posts = append(w.posts, p)
	if p.Method == "tools/call" {
		ch := w.done[p.Name]
		if ch == nil {
			ch = make(chan struct{})
			w.done[p.Name] = ch
		}
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
	w.mu.Unlock()
}

// tsHoldJSON holds an application/json answer until the handler returns and
// passes any other through.
type tsHoldJSON struct {
	http.ResponseWriter
	status      int
	held, wrote bool
	buf         bytes.Buffer
}

func (h *tsHoldJSON) WriteHeader(code int) {
	if h.wrote {
		return
	}
	h.wrote, h.status = true, code
	if strings.HasPrefix(h.Header().Get("Content-Type"), "application/json") {
		h.held = true
		return
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *tsHoldJSON) Write(b []byte) (int, error) {
	if !h.wrote {
		h.WriteHeader(http.StatusOK)
	}
	if h.held {
		return h.buf.Write(b)
	}
	return h.ResponseWriter.Write(b)
}

func (h *tsHoldJSON) Flush() {
	if h.held {
		return
	}
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// startTSDemo serves demo.Handler behind a tsWire on loopback and returns
// its URL.
func startTSDemo(t *testing.T) (*tsWire, string) {
	t.Helper()
	w := newTSWire(demo.Handler())
	mux := http.NewServeMux()
	mux.Handle(demo.Path, w)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return w, srv.URL + demo.Path
}

// checkTSWire checks what the demo got from a client (directly or through
// the proxy): the era was settled with server/discover, never initialize;
// every request carried the 2026 _meta envelope and Mcp-Method; the aborted
// slow_count call ended on the server.
func checkTSWire(t *testing.T, w *tsWire) {
	t.Helper()
	select {
	case <-w.toolDone("slow_count"):
	case <-time.After(30 * time.Second):
		t.Error("the aborted slow_count call did not end on the server within 30 s")
	}
	posts, restored := w.snapshot()
	if len(posts) == 0 || posts[0].Method != "server/discover" || posts[0].HeaderMethod != "server/discover" {
		t.Errorf("first POST = %+v, want server/discover", posts)
	}
	retried := false
	for _, p := range posts {
		t.Logf("POST %s %q id=%s Mcp-Method=%q MCP-Protocol-Version=%q _meta=%v state=%v answers=%v -> %d",
			p.Method, p.Name, p.ID, p.HeaderMethod, p.HeaderVersion, p.MetaKeys, p.HasStateRetry, p.HasInputAnswer, p.Status)
		if p.Method == "initialize" {
			t.Errorf("the demo got initialize: %+v", p)
		}
		if p.ID == "" {
			continue
		}
		if p.HeaderMethod != p.Method || p.HeaderVersion != demo.ProtocolVersion {
			t.Errorf("request %s: Mcp-Method %q, MCP-Protocol-Version %q", p.Method, p.HeaderMethod, p.HeaderVersion)
		}
		for _, k := range []string{"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities"} {
			if !containsString(p.MetaKeys, k) {
				t.Errorf("request %s: _meta keys %v lack %s", p.Method, p.MetaKeys, k)
			}
		}
		retried = retried || (p.Name == "ask_name" && p.HasStateRetry && p.HasInputAnswer)
	}
	if !retried {
		t.Error("no ask_name retry with inputResponses and requestState reached the demo")
	}
	t.Logf("requestState literals restored: %d", restored)
}

// The TypeScript SDK client talks to the demo directly over Streamable HTTP,
// pinned to 2026-07-28 and in auto mode: the harness itself works against a
// real 2026 server.
func TestTSClientDirectToDemo(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pin", "auto"} {
		t.Run(mode, func(t *testing.T) {
			w, url := startTSDemo(t)
			r := runTSClientURL(t, mode, tsDemoScenario(), url)
			if r.Mode != mode || r.Transport != "http" {
				t.Errorf("report mode %q transport %q", r.Mode, r.Transport)
			}
			checkTSDemoReport(t, r, false)
			checkTSWire(t, w)
			_, restored := w.snapshot()
			// The SDK decodes the requestState and encodes it again: the
			// value is echoed, the literal (\/ and \u00e9 escapes) is not.
			if restored != 1 {
				t.Errorf("re-encoded requestState literals = %d, want 1 (the ask_name retry)", restored)
			}
		})
	}
}

// The TypeScript SDK client drives a stdio server, pinned and in auto mode:
// testdata/tsclient2/stdio-relay.mjs, which relays to the demo over HTTP.
// This is the stdio path of client.mjs (the disposable probe sibling
// included) that TestTSClientThroughProxy takes, without the proxy.
func TestTSClientStdioRelayToDemo(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pin", "auto"} {
		t.Run(mode, func(t *testing.T) {
			dir, node := tsClientDir(t)
			w, url := startTSDemo(t)
			r := runTSClient(t, mode, tsDemoScenario(), node, filepath.Join(dir, "stdio-relay.mjs"), url)
			if r.Mode != mode || r.Transport != "stdio" {
				t.Errorf("report mode %q transport %q", r.Mode, r.Transport)
			}
			checkTSDemoReport(t, r, false)
			checkTSWire(t, w)
			posts, _ := w.snapshot()
			// server/discover went to the probe sibling only: the session
			// process never sends it.
			discovers := 0
			for _, p := range posts {
				if p.Method == "server/discover" {
					discovers++
				}
			}
			if discovers != 1 {
				t.Errorf("server/discover POSTs = %d, want 1 (the probe sibling's)", discovers)
			}
		})
	}
}

// The TypeScript SDK client drives the built proxy over stdio, pinned to
// 2026-07-28 and in auto mode: in front of the embedded demo (--demo) and of
// the demo at an upstream URL, where the wire is checked too.
func TestTSClientThroughProxy(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pin", "auto"} {
		t.Run(mode+"/upstream", func(t *testing.T) {
			w, url := startTSDemo(t)
			r := runTSClient(t, mode, tsDemoScenario(), binPath, url)
			if r.Mode != mode || r.Transport != "stdio" {
				t.Errorf("report mode %q transport %q", r.Mode, r.Transport)
			}
			// The test's tsWire restores the literal if the proxy does not.
			checkTSDemoReport(t, r, false)
			checkTSWire(t, w)
		})
		t.Run(mode+"/demo", func(t *testing.T) {
			r := runTSClient(t, mode, tsDemoScenario(), binPath, "--demo")
			// The proxy gives the server back the requestState literal it
			// wrote when the client re-encoded it (the TS SDK does).
			checkTSDemoReport(t, r, false)
		})
	}
}

// tsLegacyScenario exercises the 2025 demo (demo.NewLegacy) through the
// reverse bridge: echo, the legacy://note resource, the greeting prompt,
// confirm (the server's elicitation as one input_required round), a tools
// list_changed triggered by add_tool, and slow aborted after its first
// progress notification.
func tsLegacyScenario() tsScenario {
	return tsScenario{
		ListTools: true,
		Echo:      &tsToolCall{Tool: "echo", Args: map[string]any{"text": "hello from the TS SDK"}},
		Resource:  &tsResourceStep{URI: "legacy://note"},
		Prompt:    &tsPromptStep{Name: "greeting", Args: map[string]string{"name": "Ada"}},
		InputRequired: &tsInputStep{Tool: "confirm",
			Reply: map[string]any{"action": "accept", "content": map[string]any{"ok": true}}},
		Listen: &tsListenStep{
			Filter:  map[string]any{"toolsListChanged": true},
			Trigger: &tsToolCall{Tool: "add_tool", Args: map[string]any{"name": "added_by_ts"}},
			Expect:  "notifications/tools/list_changed",
		},
		Cancel: &tsCancelStep{Tool: "slow", Args: map[string]any{"ms": 600000},
			AbortAfterProgress: true,
			After:              &tsToolCall{Tool: "echo", Args: map[string]any{"text": "after the cancel"}}},
	}
}

// checkTSLegacyReport checks a report of tsLegacyScenario: the client is
// in the 2026 era, served from the 2025 demo.
func checkTSLegacyReport(t *testing.T, r tsReport) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("scenario error %v\nreport: %s", r.Error, r.Raw)
	}
	c := r.Connect
	if !c.OK || c.Era != "modern" || c.ProtocolVersion != mcVersion || !c.Discovered {
		t.Fatalf("connect = ok %v era %q version %q discovered %v error %v, want modern %s via server/discover\nreport: %s",
			c.OK, c.Era, c.ProtocolVersion, c.Discovered, c.Error, mcVersion, r.Raw)
	}
	if len(c.SupportedVersions) != 1 || c.SupportedVersions[0] != mcVersion {
		t.Errorf("supportedVersions = %v, want [%s]", c.SupportedVersions, mcVersion)
	}
	if c.ServerInfo == nil || c.ServerInfo.Name != "mcp-tasks-proxy-legacy-demo" {
		t.Errorf("serverInfo = %+v, want the 2025 demo's", c.ServerInfo)
	}
	s := r.Steps
	if st := s.ListTools; st == nil || !st.OK {
		t.Errorf("listTools: %+v", st)
	} else {
		for _, want := range []string{"echo", "confirm", "add_tool", "slow"} {
			if !containsString(st.Names, want) {
				t.Errorf("tools/list = %v, want %s in it", st.Names, want)
			}
		}
	}
	if st := s.Echo; st == nil || !st.OK || st.IsError || len(st.Texts) != 1 || st.Texts[0] != "hello from the TS SDK" {
		t.Errorf("echo: %+v", st)
	}
	if st := s.Resource; st == nil || !st.OK || len(st.Contents) != 1 || st.Contents[0].URI != "legacy://note" || st.Contents[0].Text != "a legacy note" {
		t.Errorf("resources/read: %+v", st)
	}
	if st := s.Prompt; st == nil || !st.OK || len(st.Messages) != 1 || st.Messages[0].Text != "Hello, Ada!" {
		t.Errorf("prompts/get: %+v", st)
	}
	if st := s.InputRequired; st == nil {
		t.Error("inputRequired: no report")
	} else {
		if st.HandlerCalls != 1 || len(st.Requests) != 1 || st.Requests[0].Message != "Proceed?" {
			t.Errorf("inputRequired: elicitation handler calls %d %+v, want one request \"Proceed?\"", st.HandlerCalls, st.Requests)
		}
		if !st.OK || len(st.Texts) != 1 || st.Texts[0] != "confirmed: accept true" {
			t.Errorf("inputRequired = ok %v texts %v error %v, want \"confirmed: accept true\"", st.OK, st.Texts, st.Error)
		}
	}
	checkTSListenCancel(t, r)
}

// checkTSListenCancel checks the report's listen (acknowledged, a tools
// list change arrived, closed by the client) and cancel steps (the call
// rejected after its first progress with the abort reason, and a call
// after it answered).
func checkTSListenCancel(t *testing.T, r tsReport) {
	t.Helper()
	s := r.Steps
	if st := s.Listen; st == nil || !st.OK || !st.Acknowledged || st.HonoredFilter["toolsListChanged"] != true ||
		!st.Arrived || !containsString(st.Notifications, "notifications/tools/list_changed") || st.Closed != "local" {
		t.Errorf("listen: %+v", st)
	}
	if st := s.Cancel; st == nil || !st.OK {
		t.Errorf("cancel: %+v", st)
	} else {
		if st.ProgressSeen < 1 || !st.Aborted || !st.Rejected || st.Rejection == nil || st.Result != nil {
			t.Errorf("cancel: progress %d aborted %v rejected %v rejection %v result %+v, want the call rejected after its first progress",
				st.ProgressSeen, st.Aborted, st.Rejected, st.Rejection, st.Result)
		} else if !strings.Contains(st.Rejection.Message, "cancelled by the e2e scenario") {
			t.Errorf("cancel rejection = %v, want the abort reason", st.Rejection)
		}
		if st.After == nil || !st.After.OK || len(st.After.Texts) != 1 || st.After.Texts[0] != "after the cancel" {
			t.Errorf("call after the cancel: %+v", st.After)
		}
	}
}

// checkTSLegacyWire checks what the 2025 demo got from the proxies (the
// client's probe sibling's and its session's; the recorder validated each
// body against 2025-11-25): no 2026 envelope in any _meta, the confirm
// call made once and its elicitation answered with the client's reply, and
// the aborted slow call cancelled with the 2025 notification.
func checkTSLegacyWire(t *testing.T, up *legacyUpstream) {
	t.Helper()
	slow := up.wait(t, "tools/call slow", isToolCall("slow"))
	rvCancelledUpstream(t, up, slow.ID, "the aborted slow call")
	confirms := up.seen(isToolCall("confirm"))
	if len(confirms) != 1 {
		t.Fatalf("the 2025 demo saw %d confirm calls, want 1 (the client's retry answers the held call)", len(confirms))
	}
	asks := rvServerRequests(confirms[0])
	if len(asks) != 1 || asks[0].Get("method").Str != "elicitation/create" {
		t.Fatalf("the server's requests on the confirm call's stream: %v", asks)
	}
	if got := rvPostedAnswer(t, up, asks[0].Get("id").Raw, "the elicitation").Get("result").Raw; !erJSONEqual(got, `{"action":"accept","content":{"ok":true}}`) {
		t.Errorf("the elicitation was answered %s, want the client's reply", got)
	}
	inits := up.seen(isPost("initialize"))
	for _, s := range up.seen(func(s legacySeen) bool { return s.HTTPMethod == http.MethodPost && s.RPCMethod != "server/discover" }) {
		rvCheckNoEnvelope(t, s)
	}
	for _, in := range inits {
		if got := gjson.GetBytes(in.Body, "params.clientInfo.name").Str; got != "mcp-tasks-proxy-e2e-tsclient2" {
			t.Errorf("an initialize carries clientInfo.name %q, want the client's", got)
		}
		if !gjson.GetBytes(in.Body, "params.capabilities.elicitation").Exists() {
			t.Errorf("an initialize lacks the client's elicitation capability: %s", shortBytes(in.Body))
		}
	}
	// Each process (the probe sibling too) ends the session it opened.
	if len(inits) != 2 {
		t.Errorf("the 2025 demo saw %d initialize, want 2 (the probe sibling's and the session's)", len(inits))
	}
	up.waitN(t, "a DELETE of each session", len(inits), func(s legacySeen) bool { return s.HTTPMethod == http.MethodDelete })
}

// The TypeScript SDK client drives the built proxy over stdio against a
// 2025 server, pinned to 2026-07-28 and in auto mode: the reverse bridge
// serves it in the 2026 era in both, in front of the embedded 2025 demo
// (--demo-legacy) and of the 2025 demo at an upstream URL, whose wire is
// checked too.
func TestTSClientThroughProxyLegacyServer(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"pin", "auto"} {
		t.Run(mode+"/upstream", func(t *testing.T) {
			up := newLegacyUpstream(t, demo.NewLegacy())
			r := runTSClient(t, mode, tsLegacyScenario(), binPath, up.URL)
			if r.Mode != mode || r.Transport != "stdio" {
				t.Errorf("report mode %q transport %q", r.Mode, r.Transport)
			}
			checkTSLegacyReport(t, r)
			checkTSLegacyWire(t, up)
		})
		t.Run(mode+"/demo-legacy", func(t *testing.T) {
			r := runTSClient(t, mode, tsLegacyScenario(), binPath, "--demo-legacy")
			checkTSLegacyReport(t, r)
		})
	}
}
