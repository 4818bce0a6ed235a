package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// Passthrough mode (docs/protocol.md, Two modes): a 2025 upstream server, the
// legacy demo (go-sdk in stateful 2025 mode), behind a recorder that checks
// both directions against the 2025-11-25 schema.

// legacyVersion is the version every client in these tests asks for, and so
// the version each passthrough session negotiates.
const legacyVersion = "2025-11-25"

// legacyExchange is one HTTP request the proxy made to the legacy server,
// and what the server sent back.
type legacyExchange struct {
	HTTPMethod string
	Header     http.Header
	Body       []byte
	RPCMethod  string // the JSON-RPC method of Body, "" for answers and GET/DELETE
	ID         string // the raw JSON-RPC id of Body, "" when none

	// Guarded by legacyUpstream.mu.
	status     int         // 0 until the handler wrote a header
	respHeader http.Header // set with status
	streaming  bool        // an event stream has started (its first bytes were written)
	frames     [][]byte    // JSON-RPC messages the server sent (JSON body or SSE events)
	done       bool        // the handler returned
}

// legacyUpstream serves a 2025 handler behind a recording middleware. It
// validates every POSTed body with ValidateLegacyUpstream (the discover
// probe, a 2026 message by design, with ValidateUpstream), every message the
// server sends back with ValidateClientBound, and the 2025 session headers
// of every request; violations fail the test at its end.
type legacyUpstream struct {
	t    testing.TB
	v    *schematest.Validator
	next http.Handler
	srv  *httptest.Server
	URL  string

	changes
	exchanges     []*legacyExchange
	sessions      map[string]bool   // Mcp-Session-Id values the server issued
	clientMethods map[string]string // raw id → method, of requests POSTed
	serverMethods map[string]string // raw id → method, of server requests sent
	problems      []string
	// quirks are the server's own notifications the test knows it gets
	// wrong (by method): not validated, since they are the server's fault,
	// not the proxy's. Set before the first request.
	quirks map[string]string
}

func newLegacyUpstream(t testing.TB, h http.Handler) *legacyUpstream {
	t.Helper()
	u := &legacyUpstream{
		t:             t,
		v:             schematest.Load(t),
		next:          h,
		sessions:      map[string]bool{},
		clientMethods: map[string]string{},
		serverMethods: map[string]string{},
	}
	u.srv = httptest.NewServer(u)
	u.URL = u.srv.URL + upstreamPath
	t.Cleanup(func() {
		u.srv.CloseClientConnections()
		u.srv.Close()
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, p := range u.problems {
			t.Errorf("legacy upstream: %s", p)
		}
	})
	return u
}

func (u *legacyUpstream) problem(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
}

func (u *legacyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		u.problem("%s %s: reading the request body: %v", r.Method, r.URL.Path, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ex := &legacyExchange{HTTPMethod: r.Method, Header: r.Header.Clone(), Body: body}
	if len(body) > 0 {
		ex.RPCMethod = gjson.GetBytes(body, "method").String()
		ex.ID = gjson.GetBytes(body, "id").Raw
	}

	u.mu.Lock()
	probs := u.checkLocked(r, ex)
	if r.Method == http.MethodPost && ex.RPCMethod != "" && ex.ID != "" {
		u.clientMethods[ex.ID] = ex.RPCMethod
	}
	what := r.Method
	if ex.RPCMethod != "" {
		what += " " + ex.RPCMethod
	}
	for _, p := range probs {
		u.problems = append(u.problems, fmt.Sprintf("%s %s: %s", what, shortBytes(body), p))
	}
	u.exchanges = append(u.exchanges, ex)
	u.notifyLocked()
	u.mu.Unlock()

	tw := &legacyTee{ResponseWriter: w, u: u, ex: ex}
	u.next.ServeHTTP(tw, r)

	u.mu.Lock()
	defer u.mu.Unlock()
	if !tw.wrote {
		tw.headerLocked(http.StatusOK) // the handler wrote nothing: net/http answers 200
	}
	if !tw.sse && tw.body.Len() > 0 {
		if mt, _, _ := mime.ParseMediaType(ex.respHeader.Get("Content-Type")); mt == "application/json" {
			u.serverFrameLocked(ex, bytes.Clone(tw.body.Bytes()))
		}
	}
	ex.done = true
	u.notifyLocked()
}

// checkLocked checks the HTTP side of one request (2025-11-25 Streamable
// HTTP) and
// validates a POSTed body; u.mu is held.
func (u *legacyUpstream) checkLocked(r *http.Request, ex *legacyExchange) []string {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	if r.URL.Path != upstreamPath {
		bad("request to %s, want %s", r.URL.Path, upstreamPath)
	}
	accept := map[string]bool{}
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil {
				accept[mt] = true
			}
		}
	}
	session := func() {
		sid := r.Header.Values("Mcp-Session-Id")
		if len(sid) != 1 || !u.sessions[sid[0]] {
			bad("Mcp-Session-Id = %q, want exactly one session id the server issued", sid)
		}
		if got := r.Header.Values("MCP-Protocol-Version"); len(got) != 1 || got[0] != legacyVersion {
			bad("MCP-Protocol-Version = %q, want exactly [%s] (the negotiated version)", got, legacyVersion)
		}
	}
	switch r.Method {
	case http.MethodPost:
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			bad("Content-Type = %q, want application/json", r.Header.Get("Content-Type"))
		}
		if !accept["application/json"] || !accept["text/event-stream"] {
			bad("Accept = %q must list both application/json and text/event-stream", r.Header.Values("Accept"))
		}
		switch {
		case ex.RPCMethod == "server/discover":
			// The era probe is a 2026 request by design.
			if err := u.v.ValidateUpstream(ex.Body); err != nil {
				bad("the discover probe does not validate against 2026-07-28: %v", err)
			}
			return probs
		case ex.RPCMethod == "initialize":
			if v := r.Header.Values("Mcp-Session-Id"); len(v) > 0 {
				bad("initialize carries Mcp-Session-Id %q; a new session starts without one", v)
			}
		default:
			session()
		}
		serverMethod := ""
		if ex.RPCMethod == "" {
			serverMethod = u.serverMethods[ex.ID]
		}
		if err := u.v.ValidateLegacyUpstream(ex.Body, serverMethod); err != nil {
			bad("body does not validate against 2025-11-25 (server request %q): %v", serverMethod, err)
		}
	case http.MethodGet:
		if !accept["text/event-stream"] {
			bad("Accept = %q must list text/event-stream", r.Header.Values("Accept"))
		}
		session()
	case http.MethodDelete:
		session()
	default:
		bad("unexpected HTTP method")
	}
	return probs
}

// serverFrameLocked records and validates one message the server sent; u.mu
// is held.
func (u *legacyUpstream) serverFrameLocked(ex *legacyExchange, frame []byte) {
	ex.frames = append(ex.frames, frame)
	r := gjson.ParseBytes(frame)
	method, id := r.Get("method").String(), r.Get("id")
	requestMethod := ""
	switch {
	case method != "" && id.Exists():
		u.serverMethods[id.Raw] = method
	case method == "":
		requestMethod = u.clientMethods[id.Raw]
	}
	if why, ok := u.quirks[method]; ok && !id.Exists() {
		u.t.Logf("the server's %s is not validated: %s", method, why)
	} else if err := u.v.ValidateClientBound(frame, requestMethod); err != nil {
		u.problems = append(u.problems, fmt.Sprintf("the server's message %s (on %s %s) does not validate against 2025-11-25 (request method %q): %v",
			shortBytes(frame), ex.HTTPMethod, ex.RPCMethod, requestMethod, err))
	}
	u.notifyLocked()
}

// legacyTee passes the response through and feeds what the server writes to
// the recorder: SSE events as they are written (before the bytes leave, so
// the recorder knows a server request before the proxy can answer it), JSON
// bodies once the handler returns.
type legacyTee struct {
	http.ResponseWriter
	u      *legacyUpstream
	ex     *legacyExchange
	wrote  bool
	sse    bool
	events []byte       // SSE bytes not yet split into events
	body   bytes.Buffer // a non-SSE body
}

// headerLocked records the status and header; u.mu is held.
func (w *legacyTee) headerLocked(code int) {
	w.wrote = true
	w.ex.status = code
	w.ex.respHeader = w.Header().Clone()
	mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
	w.sse = mt == "text/event-stream"
	if sid := w.Header().Get("Mcp-Session-Id"); sid != "" && code < 300 {
		w.u.sessions[sid] = true
	}
	w.u.notifyLocked()
}

func (w *legacyTee) WriteHeader(code int) {
	w.u.mu.Lock()
	if !w.wrote {
		w.headerLocked(code)
	}
	w.u.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *legacyTee) Write(b []byte) (int, error) {
	w.u.mu.Lock()
	if !w.wrote {
		w.headerLocked(http.StatusOK)
	}
	if w.sse {
		w.ex.streaming = true
		w.events = append(w.events, b...)
		for {
			i := bytes.Index(w.events, []byte("\n\n"))
			if i < 0 {
				break
			}
			block := w.events[:i]
			w.events = w.events[i+2:]
			if data := sseData(block); len(bytes.TrimSpace(data)) > 0 { // empty data: a priming event
				w.u.serverFrameLocked(w.ex, data)
			}
		}
		w.u.notifyLocked()
	} else {
		w.body.Write(b)
	}
	w.u.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

// sseData joins the data lines of one SSE event.
func sseData(block []byte) []byte {
	var data [][]byte
	for _, line := range bytes.Split(block, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	return bytes.Clone(bytes.Join(data, []byte("\n")))
}

func (w *legacyTee) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *legacyTee) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// legacySeen is a snapshot of one exchange.
type legacySeen struct {
	*legacyExchange
	Status     int
	RespHeader http.Header
	Streaming  bool
	Frames     [][]byte
	Done       bool
}

func (u *legacyUpstream) snapLocked(ex *legacyExchange) legacySeen {
	return legacySeen{legacyExchange: ex, Status: ex.status, RespHeader: ex.respHeader, Streaming: ex.streaming,
		Frames: slices.Clone(ex.frames), Done: ex.done}
}

// seen returns a snapshot of every exchange that satisfies pred (nil: all).
func (u *legacyUpstream) seen(pred func(legacySeen) bool) []legacySeen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seenLocked(pred)
}

// seenLocked is seen with u.mu held.
func (u *legacyUpstream) seenLocked(pred func(legacySeen) bool) []legacySeen {
	var out []legacySeen
	for _, ex := range u.exchanges {
		if s := u.snapLocked(ex); pred == nil || pred(s) {
			out = append(out, s)
		}
	}
	return out
}

// wait waits (bounded) until an exchange satisfies pred, and returns it.
func (u *legacyUpstream) wait(t testing.TB, desc string, pred func(legacySeen) bool) legacySeen {
	t.Helper()
	var s legacySeen
	u.until(t, func() bool {
		for _, ex := range u.exchanges {
			if s = u.snapLocked(ex); pred(s) {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("the legacy upstream never saw %s within %v; it saw:\n%s", desc, waitTimeout, u.dump())
	})
	return s
}

func (u *legacyUpstream) dump() string {
	var b strings.Builder
	for _, s := range u.seen(nil) {
		fmt.Fprintf(&b, "  %s %d sid=%q lei=%q %s\n", s.HTTPMethod, s.Status, s.Header.Get("Mcp-Session-Id"), s.Header.Get("Last-Event-ID"), shortBytes(s.Body))
	}
	return b.String()
}

// isPost matches a POST of the JSON-RPC method.
func isPost(method string) func(legacySeen) bool {
	return func(s legacySeen) bool { return s.HTTPMethod == http.MethodPost && s.RPCMethod == method }
}

// isToolCall matches a POSTed tools/call of the tool.
func isToolCall(name string) func(legacySeen) bool {
	return func(s legacySeen) bool {
		return s.HTTPMethod == http.MethodPost && s.RPCMethod == "tools/call" && gjson.GetBytes(s.Body, "params.name").String() == name
	}
}

// isGetStream matches an open GET stream (not a resumption) of the session.
func isGetStream(sid string) func(legacySeen) bool {
	return func(s legacySeen) bool {
		return s.HTTPMethod == http.MethodGet && s.Header.Get("Last-Event-ID") == "" &&
			s.Header.Get("Mcp-Session-Id") == sid && s.Status == http.StatusOK && s.Streaming && !s.Done
	}
}

// waitN waits (bounded) until at least n exchanges satisfy pred, and
// returns them all.
func (u *legacyUpstream) waitN(t testing.TB, desc string, n int, pred func(legacySeen) bool) []legacySeen {
	t.Helper()
	var got []legacySeen
	u.until(t, func() bool {
		got = u.seenLocked(pred)
		return len(got) >= n
	}, func() string {
		return fmt.Sprintf("the legacy upstream never saw %d× %s within %v; it saw:\n%s", n, desc, waitTimeout, u.dump())
	})
	return got
}

// sessionOf waits for the n-th (from 1) successful initialize and returns
// the session id the server gave with it.
func (u *legacyUpstream) sessionOf(t testing.TB, n int) string {
	t.Helper()
	inits := u.waitN(t, "answered initialize", n, func(s legacySeen) bool {
		return isPost("initialize")(s) && s.Status == http.StatusOK
	})
	sid := inits[n-1].RespHeader.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize #%d was answered without an Mcp-Session-Id", n)
	}
	return sid
}

// logLines parses JSON log lines (--log-format json) from stderr; other
// lines are returned as {"msg": line, "level": "?"}.
func logLines(stderr string) []gjson.Result {
	var out []gjson.Result
	for _, line := range strings.Split(stderr, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if gjson.Valid(line) && gjson.Parse(line).IsObject() {
			out = append(out, gjson.Parse(line))
			continue
		}
		out = append(out, gjson.Parse(`{"level":"?","msg":`+string(gjson.AppendJSONString(nil, line))+`}`))
	}
	return out
}

// waitLog waits (bounded) for a log line on stderr that satisfies pred.
func waitLog(t *testing.T, stderr *syncBuffer, desc string, pred func(gjson.Result) bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if slices.ContainsFunc(logLines(stderr.String()), pred) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stderr has no %s within %v:\n%s", desc, waitTimeout, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPassthroughSDKClient drives the binary with the go-sdk client, as a
// 2025 host would, against a 2025 server: auto-detection picks passthrough,
// the client's own handshake reaches the server, and every feature works.
func TestPassthroughSDKClient(t *testing.T) {
	t.Parallel()
	l := demo.NewLegacy()
	up := newLegacyUpstream(t, l)

	var (
		mu          sync.Mutex
		elicits     []string
		samples     []string
		listChanged int
		updated     []string
		progress    []*mcp.ProgressNotificationParams
		changed     = make(chan struct{}, 1)
	)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	waitFor := func(t *testing.T, desc string, cond func() bool) {
		t.Helper()
		deadline := time.After(waitTimeout)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("timed out waiting for %s", desc)
			}
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-passthrough", Version: "1.2.3"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			elicits = append(elicits, req.Params.Message)
			mu.Unlock()
			poke()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
		//lint:ignore SA1019 sampling is a 2025 feature the passthrough carries.
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			mu.Lock()
			samples = append(samples, text)
			mu.Unlock()
			poke()
			//lint:ignore SA1019 sampling is a 2025 feature the passthrough carries.
			return &mcp.CreateMessageResult{Role: "assistant", Model: "e2e-model", Content: &mcp.TextContent{Text: "short(" + text + ")"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			mu.Lock()
			listChanged++
			mu.Unlock()
			poke()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updated = append(updated, req.Params.URI)
			mu.Unlock()
			poke()
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
			poke()
		},
	})

	ctx, cancel := context.WithTimeout(context.Background(), 4*waitTimeout)
	defer cancel()
	stderr := &syncBuffer{}
	cmd := exec.Command(binPath, "--log-level", "info", "--log-format", "json", up.URL)
	cmd.Env = proxyEnv()
	cmd.Stderr = stderr
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatalf("connect (initialize): %v; stderr:\n%s", err, stderr.String())
	}
	closed := false
	closeSession := func(t *testing.T) {
		if closed {
			return
		}
		closed = true
		if err := session.Close(); err != nil {
			t.Errorf("closing the session (stdin EOF, then wait for exit): %v", err)
		}
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("proxy exit state %v, want exit status 0", cmd.ProcessState)
		}
	}
	defer func() {
		closeSession(t)
		if t.Failed() {
			t.Logf("proxy stderr:\n%s\nupstream requests:\n%s", stderr.String(), up.dump())
		}
	}()
	sid := up.sessionOf(t, 1)

	t.Run("auto-detection and handshake", func(t *testing.T) {
		// stderr is copied from a pipe: the line may lag the handshake.
		waitLog(t, stderr, "an info line \"upstream era detected\" with era legacy", func(l gjson.Result) bool {
			return l.Get("level").Str == "info" && l.Get("msg").Str == "upstream era detected" && l.Get("era").Str == "legacy"
		})
		if n := len(up.seen(isPost("server/discover"))); n != 1 {
			t.Errorf("the upstream saw %d discover probes, want 1 (auto-detection)", n)
		}
		inits := up.seen(isPost("initialize"))
		if len(inits) != 1 {
			t.Fatalf("the upstream saw %d initialize POSTs, want 1 (the client's own)", len(inits))
		}
		body := inits[0].Body
		if got := gjson.GetBytes(body, "params.clientInfo.name").Str; got != "e2e-passthrough" {
			t.Errorf("forwarded initialize clientInfo.name = %q, want the client's e2e-passthrough (body %s)", got, shortBytes(body))
		}
		if got := gjson.GetBytes(body, "params.clientInfo.version").Str; got != "1.2.3" {
			t.Errorf("forwarded initialize clientInfo.version = %q, want 1.2.3", got)
		}
		if got := gjson.GetBytes(body, "params.protocolVersion").Str; got != legacyVersion {
			t.Errorf("forwarded initialize protocolVersion = %q, want %s", got, legacyVersion)
		}
		if !gjson.GetBytes(body, "params.capabilities.elicitation").Exists() || !gjson.GetBytes(body, "params.capabilities.sampling").Exists() {
			t.Errorf("forwarded initialize lacks the client's elicitation and sampling capabilities: %s", shortBytes(body))
		}
		ir := session.InitializeResult()
		if ir == nil || ir.ServerInfo == nil || ir.ServerInfo.Name != "mcp-tasks-proxy-legacy-demo" {
			t.Errorf("InitializeResult %+v, want the legacy server's own serverInfo", ir)
		} else if ir.ProtocolVersion != legacyVersion {
			t.Errorf("protocolVersion = %q, want %s", ir.ProtocolVersion, legacyVersion)
		}
		up.wait(t, "notifications/initialized POSTed with the session id", func(s legacySeen) bool {
			return isPost("notifications/initialized")(s) && s.Header.Get("Mcp-Session-Id") == sid
		})
	})

	t.Run("tools/list", func(t *testing.T) {
		names := sdkToolNames(t, ctx, session)
		for _, want := range []string{"echo", "confirm", "summarize", "add_tool", "touch", "drop_stream", "slow"} {
			if !slices.Contains(names, want) {
				t.Errorf("tools/list = %v, missing %s", names, want)
			}
		}
	})

	t.Run("echo", func(t *testing.T) {
		for _, s := range []string{"hello", "héllo 世界", `quotes " and \ and <tags>`} {
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": s}})
			if err != nil {
				t.Fatalf("echo %q: %v", s, err)
			}
			if got := sdkText(t, res); got != s {
				t.Errorf("echo %q came back as %q", s, got)
			}
		}
	})

	t.Run("confirm (elicitation)", func(t *testing.T) {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sdkText(t, res); got != "confirmed: accept true" {
			t.Errorf("confirm = %q, want \"confirmed: accept true\" (the handler's answer)", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(elicits) != 1 || elicits[0] != "Proceed?" {
			t.Errorf("elicitation handler saw %q, want one \"Proceed?\"", elicits)
		}
	})

	t.Run("summarize (sampling)", func(t *testing.T) {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "summarize", Arguments: map[string]any{"text": "a long text"}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sdkText(t, res), "summary: short(Summarize: a long text)"; got != want {
			t.Errorf("summarize = %q, want %q", got, want)
		}
		mu.Lock()
		if len(samples) != 1 || samples[0] != "Summarize: a long text" {
			t.Errorf("sampling handler saw %q, want one \"Summarize: a long text\"", samples)
		}
		mu.Unlock()
		// The client's answer was POSTed to the server as it was.
		up.wait(t, "the sampling answer POSTed", func(s legacySeen) bool {
			return s.HTTPMethod == http.MethodPost && s.RPCMethod == "" &&
				gjson.GetBytes(s.Body, "result.model").Str == "e2e-model" && s.Header.Get("Mcp-Session-Id") == sid
		})
	})

	t.Run("add_tool (list_changed on the GET stream)", func(t *testing.T) {
		// The server sends list_changed on the GET stream: wait until it is open.
		up.wait(t, "the GET stream", isGetStream(sid))
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "add_tool", Arguments: map[string]any{"name": "e2e_added"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sdkText(t, res); got != "added e2e_added" {
			t.Errorf("add_tool = %q", got)
		}
		waitFor(t, "notifications/tools/list_changed", func() bool { return listChanged > 0 })
		up.wait(t, "list_changed sent on the GET stream", func(s legacySeen) bool {
			if s.HTTPMethod != http.MethodGet {
				return false
			}
			for _, f := range s.Frames {
				if gjson.GetBytes(f, "method").Str == "notifications/tools/list_changed" {
					return true
				}
			}
			return false
		})
		tools, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "e2e_added" }) {
			t.Errorf("tools/list after add_tool lacks e2e_added")
		}
	})

	t.Run("subscribe and touch", func(t *testing.T) {
		if err := session.Subscribe(ctx, &mcp.SubscribeParams{URI: "legacy://note"}); err != nil {
			t.Fatal(err)
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"uri": "legacy://note"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sdkText(t, res); got != "touched legacy://note" {
			t.Errorf("touch = %q", got)
		}
		waitFor(t, "notifications/resources/updated", func() bool { return len(updated) > 0 })
		mu.Lock()
		defer mu.Unlock()
		if updated[0] != "legacy://note" {
			t.Errorf("resources/updated for %q, want legacy://note", updated)
		}
	})

	t.Run("drop_stream (resumption)", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "drop_stream", Arguments: map[string]any{}}
		params.SetProgressToken("drop-1")
		res, err := session.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := sdkText(t, res); got != "resumed" {
			t.Errorf("drop_stream = %q, want resumed", got)
		}
		if n := l.Resumed.Load(); n < 1 {
			t.Errorf("Legacy.Resumed = %d, want ≥ 1", n)
		}
		resumes := up.seen(func(s legacySeen) bool {
			return s.HTTPMethod == http.MethodGet && s.Header.Get("Last-Event-ID") != "" && s.Header.Get("Mcp-Session-Id") == sid
		})
		if len(resumes) == 0 {
			t.Errorf("no GET with Last-Event-ID recorded")
		}
		waitFor(t, "the progress notification of drop_stream", func() bool {
			return slices.ContainsFunc(progress, func(p *mcp.ProgressNotificationParams) bool { return p.ProgressToken == "drop-1" })
		})
	})

	t.Run("cancellation", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		defer ccancel()
		errc := make(chan error, 1)
		go func() {
			_, err := session.CallTool(cctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 10000}})
			errc <- err
		}()
		call := up.wait(t, "tools/call slow", isToolCall("slow"))
		ccancel()
		select {
		case err := <-errc:
			if err == nil {
				t.Errorf("the cancelled slow call succeeded")
			}
		case <-time.After(waitTimeout):
			t.Fatalf("CallTool did not return within %v of its context being cancelled", waitTimeout)
		}
		up.wait(t, "notifications/cancelled naming the slow call "+call.ID, func(s legacySeen) bool {
			return isPost("notifications/cancelled")(s) && gjson.GetBytes(s.Body, "params.requestId").Raw == call.ID &&
				s.Header.Get("Mcp-Session-Id") == sid
		})
		// The session still works.
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after cancel"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := sdkText(t, res); got != "after cancel" {
			t.Errorf("echo after cancel = %q", got)
		}
	})

	t.Run("session headers", func(t *testing.T) {
		init := up.seen(isPost("initialize"))[0]
		for _, s := range up.seen(nil) {
			if s.legacyExchange == init.legacyExchange || s.RPCMethod == "server/discover" {
				continue
			}
			if got := s.Header.Values("Mcp-Session-Id"); len(got) != 1 || got[0] != sid {
				t.Errorf("%s %s carries Mcp-Session-Id %q, want [%s]", s.HTTPMethod, s.RPCMethod, got, sid)
			}
			if got := s.Header.Values("MCP-Protocol-Version"); len(got) != 1 || got[0] != legacyVersion {
				t.Errorf("%s %s carries MCP-Protocol-Version %q, want [%s]", s.HTTPMethod, s.RPCMethod, got, legacyVersion)
			}
		}
	})

	t.Run("exit and DELETE", func(t *testing.T) {
		closeSession(t)
		dels := up.seen(func(s legacySeen) bool { return s.HTTPMethod == http.MethodDelete })
		if len(dels) != 1 {
			t.Fatalf("the upstream saw %d DELETEs, want 1 on exit", len(dels))
		}
		if got := dels[0].Header.Get("Mcp-Session-Id"); got != sid {
			t.Errorf("DELETE Mcp-Session-Id = %q, want %s", got, sid)
		}
		if n := l.Deleted.Load(); n != 1 {
			t.Errorf("Legacy.Deleted = %d, want 1", n)
		}
	})
}

// startPassthrough starts the proxy on u with args before the URL, with a
// JSON log on stderr, and runs the 2025 handshake.
func startPassthrough(t *testing.T, u *legacyUpstream, args ...string) *rawProc {
	t.Helper()
	p := startProxy(t, append(append([]string{"--log-level", "info", "--log-format", "json"}, args...), u.URL)).passthrough()
	resultOf(t, p.call(`"init"`, "initialize", passInitParams))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

// passInitParams is the raw client's initialize: it can answer elicitation
// and sampling requests.
const passInitParams = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{}},"clientInfo":{"name":"e2e-raw","version":"1"}}`

// TestPassthroughSessionExpiry: the server ends the session mid-run; the
// proxy starts a new one by replaying the client's handshake and state, and
// every request is answered exactly once.
func TestPassthroughSessionExpiry(t *testing.T) {
	t.Parallel()
	l := demo.NewLegacy()
	up := newLegacyUpstream(t, l)
	p := startPassthrough(t, up)
	sid := up.sessionOf(t, 1)
	up.wait(t, "the GET stream", isGetStream(sid))
	resultOf(t, p.call(`"sub"`, "resources/subscribe", `{"uri":"legacy://note"}`))

	if n := l.Expire(); n != 1 {
		t.Fatalf("Expire ended %d sessions, want 1", n)
	}
	var lists, echoes []string
	for i := 1; i <= 5; i++ {
		id := fmt.Sprintf(`"list-%d"`, i)
		lists = append(lists, id)
		p.request(id, "tools/list", "")
	}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf(`"echo-%d"`, i)
		echoes = append(echoes, id)
		p.request(id, "tools/call", fmt.Sprintf(`{"name":"echo","arguments":{"text":"burst %d"}}`, i))
	}
	p.request(`"ping"`, "ping", "")

	for _, id := range lists {
		res := resultOf(t, p.expect(id))
		if !res.Get(`tools.#(name=="echo")`).Exists() {
			t.Errorf("tools/list %s after the expiry: no echo tool in %s", id, shortBytes([]byte(res.Raw)))
		}
	}
	resultOf(t, p.expect(`"ping"`))
	retried := 0
	for i, id := range echoes {
		resp := p.expect(id)
		if r := gjson.GetBytes(resp, "result"); r.Exists() {
			if got := r.Get("content.0.text").Str; got != fmt.Sprintf("burst %d", i+1) {
				t.Errorf("echo %s = %q, want \"burst %d\"", id, got, i+1)
			}
			continue
		}
		retried++
		e := errorOf(t, resp)
		msg := e.Get("message").Str
		if !strings.Contains(msg, "session") || !strings.Contains(msg, "send it again") {
			t.Errorf("echo %s error %q should say the session ended and to send it again", id, msg)
		}
		if got := e.Get("data.cause").Str; got != "session expired" {
			t.Errorf("echo %s error.data.cause = %q, want \"session expired\" (error %s)", id, got, e.Raw)
		}
		if e.Get("code").Int() != -32603 {
			t.Errorf("echo %s error code %d, want -32603", id, e.Get("code").Int())
		}
	}
	t.Logf("%d of %d echo calls were refused (not safe to repeat), the rest ran in the new session", retried, len(echoes))

	// Exactly one answer per id, every id answered.
	counts := map[string]int{}
	for _, line := range p.all() {
		if isResponse(line) {
			counts[gjson.GetBytes(line, "id").Raw]++
		}
	}
	for _, id := range append(append(slices.Clone(lists), echoes...), `"ping"`) {
		if counts[id] != 1 {
			t.Errorf("id %s was answered %d times, want exactly 1", id, counts[id])
		}
	}

	// The upstream saw one new session, started from the client's handshake
	// under a proxy-made id, and the subscription replayed in it.
	newSID := up.sessionOf(t, 2)
	if newSID == sid {
		t.Fatalf("the new session has the old id %s", sid)
	}
	inits := up.seen(isPost("initialize"))
	if len(inits) != 2 {
		t.Fatalf("the upstream saw %d initialize POSTs, want 2 (the client's and one replay)", len(inits))
	}
	replay := inits[1]
	if id := gjson.GetBytes(replay.Body, "id"); id.Type != gjson.String || !strings.HasPrefix(id.Str, "mcp-tasks-proxy-") {
		t.Errorf("the replayed initialize has id %s, want a proxy-made string id starting mcp-tasks-proxy-", id.Raw)
	}
	if got := gjson.GetBytes(replay.Body, "params.clientInfo.name").Str; got != "e2e-raw" {
		t.Errorf("the replayed initialize has clientInfo.name %q, want the client's e2e-raw", got)
	}
	up.wait(t, "notifications/initialized in the new session", func(s legacySeen) bool {
		return isPost("notifications/initialized")(s) && s.Header.Get("Mcp-Session-Id") == newSID
	})
	sub := up.wait(t, "resources/subscribe replayed in the new session", func(s legacySeen) bool {
		return isPost("resources/subscribe")(s) && s.Header.Get("Mcp-Session-Id") == newSID
	})
	if got := gjson.GetBytes(sub.Body, "params.uri").Str; got != "legacy://note" {
		t.Errorf("the replayed subscribe names %q, want legacy://note", got)
	}
	if id := gjson.GetBytes(sub.Body, "id").Str; !strings.HasPrefix(id, "mcp-tasks-proxy-") {
		t.Errorf("the replayed subscribe has id %q, want a proxy-made id", id)
	}
	if n := len(up.seen(isPost("notifications/initialized"))); n != 2 {
		t.Errorf("the upstream saw %d notifications/initialized, want 2", n)
	}
	if n := len(up.seen(isPost("resources/subscribe"))); n != 2 {
		t.Errorf("the upstream saw %d resources/subscribe, want 2 (the client's and one replay)", n)
	}

	// After recovery: the subscription still delivers, and new calls work.
	from := p.mark()
	res := resultOf(t, p.call(`"touch"`, "tools/call", `{"name":"touch","arguments":{"uri":"legacy://note"}}`))
	if got := res.Get("content.0.text").Str; got != "touched legacy://note" {
		t.Errorf("touch = %q", got)
	}
	p.waitLine(from, "notifications/resources/updated for legacy://note", func(_ int, l outLine) bool {
		return l.method == "notifications/resources/updated" && gjson.GetBytes(l.raw, "params.uri").Str == "legacy://note"
	})
	for i := 1; i <= 2; i++ {
		res := resultOf(t, p.call(fmt.Sprintf(`"after-%d"`, i), "tools/call", fmt.Sprintf(`{"name":"echo","arguments":{"text":"after %d"}}`, i)))
		if got := res.Get("content.0.text").Str; got != fmt.Sprintf("after %d", i) {
			t.Errorf("echo after recovery = %q", got)
		}
	}
	if n := len(up.seen(isPost("initialize"))); n != 2 {
		t.Errorf("the upstream saw %d initialize POSTs at the end, want 2", n)
	}
}

// TestPassthroughProtocolModern: --protocol modern refuses a 2025 server
// with an error that says why and how to fix it, and keeps serving.
func TestPassthroughProtocolModern(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startProxy(t, []string{"--protocol", "modern", up.URL})
	e := errorOf(t, p.call("1", "initialize", initParams))
	msg := e.Get("message").Str
	if !strings.Contains(msg, "2025") || !strings.Contains(msg, "--protocol modern") {
		t.Errorf("message %q should mention 2025 and --protocol modern", msg)
	}
	if got := e.Get("data.upstreamEra").Str; got != "legacy" {
		t.Errorf("error.data.upstreamEra = %q, want legacy (error %s)", got, e.Raw)
	}
	resultOf(t, p.call(`"still-up"`, "ping", ""))
	if n := len(up.seen(isPost("initialize"))); n != 0 {
		t.Errorf("the upstream saw %d initialize POSTs; --protocol modern never passes through", n)
	}
	if n := len(up.seen(isPost("server/discover"))); n != 1 {
		t.Errorf("the upstream saw %d discover probes, want 1", n)
	}
}

// TestPassthroughProtocolLegacy: --protocol legacy sends no probe; the
// client's initialize goes to the server as it is.
func TestPassthroughProtocolLegacy(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	p := startProxy(t, []string{"--protocol", "legacy", "--log-level", "info", "--log-format", "json", up.URL}).passthrough()
	res := resultOf(t, p.call(`"init"`, "initialize", initParams))
	if got := res.Get("serverInfo.name").Str; got != "mcp-tasks-proxy-legacy-demo" {
		t.Errorf("serverInfo.name = %q, want the legacy server's own", got)
	}
	if got := res.Get("protocolVersion").Str; got != legacyVersion {
		t.Errorf("protocolVersion = %q, want %s", got, legacyVersion)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if n := len(up.seen(isPost("server/discover"))); n != 0 {
		t.Errorf("the upstream saw %d discover probes; --protocol legacy sends none", n)
	}
	inits := up.seen(isPost("initialize"))
	if len(inits) != 1 {
		t.Fatalf("the upstream saw %d initialize POSTs, want 1", len(inits))
	}
	if got := gjson.GetBytes(inits[0].Body, "id").Raw; got != `"init"` {
		t.Errorf("forwarded initialize id = %s, want the client's \"init\"", got)
	}
	if got, want := gjson.GetBytes(inits[0].Body, "params").Raw, initParams; got != want {
		t.Errorf("forwarded initialize params = %s, want the client's %s", got, want)
	}
	r := resultOf(t, p.call("2", "tools/call", `{"name":"echo","arguments":{"text":"forced"}}`))
	if got := r.Get("content.0.text").Str; got != "forced" {
		t.Errorf("echo = %q", got)
	}
	if n := len(up.seen(isPost("server/discover"))); n != 0 {
		t.Errorf("the upstream saw %d discover probes at the end; want none", n)
	}
}

// no405 answers GET and DELETE with 405, as a 2025 server without a GET
// stream and without client-ended sessions does.
type no405 struct{ next http.Handler }

func (h no405) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodDelete {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.next.ServeHTTP(w, r)
}

// TestPassthroughNoGetStream: a server that answers GET (and DELETE) with
// 405 still serves the session: server requests come on the request's own
// stream, and exit is clean.
func TestPassthroughNoGetStream(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, no405{demo.NewLegacy()})
	p := startPassthrough(t, up)
	up.wait(t, "the GET attempt", func(s legacySeen) bool { return s.HTTPMethod == http.MethodGet && s.Done })

	res := resultOf(t, p.call("1", "tools/call", `{"name":"echo","arguments":{"text":"no get"}}`))
	if got := res.Get("content.0.text").Str; got != "no get" {
		t.Errorf("echo = %q", got)
	}
	from := p.mark()
	p.request("2", "tools/call", `{"name":"confirm","arguments":{}}`)
	_, req := p.waitLine(from, "elicitation/create", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
	id := gjson.GetBytes(req, "id").Raw
	p.send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"action":"accept","content":{"ok":false}}}`)
	res = resultOf(t, p.expect("2"))
	if got := res.Get("content.0.text").Str; got != "confirmed: accept false" {
		t.Errorf("confirm = %q, want \"confirmed: accept false\"", got)
	}

	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0 (a 405 to DELETE is fine)", code)
	}
	dels := up.seen(func(s legacySeen) bool { return s.HTTPMethod == http.MethodDelete })
	if len(dels) != 1 || dels[0].Status != http.StatusMethodNotAllowed {
		t.Errorf("the upstream saw %d DELETEs, want 1 answered 405", len(dels))
	}
	if n := len(up.seen(func(s legacySeen) bool { return s.HTTPMethod == http.MethodGet })); n != 1 {
		t.Errorf("the upstream saw %d GETs, want 1: a 405 means there is no GET stream, not to retry", n)
	}
	logs := logLines(p.stderr.String())
	saw405 := false
	for _, l := range logs {
		if lv := l.Get("level").Str; lv == "error" || lv == "?" {
			t.Errorf("stderr has an error-level (or unparsable) line: %s", l.Raw)
		}
		if strings.Contains(l.Get("msg").Str, "405") {
			saw405 = true
		}
	}
	if !saw405 {
		t.Errorf("stderr does not say the server offers no GET stream (405):\n%s", p.stderr.String())
	}
}

// TestPassthroughTrace: the trace records the era verdict and the
// passthrough HTTP requests.
func TestPassthroughTrace(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, demo.NewLegacy())
	file := filepath.Join(t.TempDir(), "passthrough.trace")
	p := startPassthrough(t, up, "--trace", file)
	sid := up.sessionOf(t, 1)
	up.wait(t, "the GET stream", isGetStream(sid))
	resultOf(t, p.call("1", "tools/call", `{"name":"echo","arguments":{"text":"traced"}}`))
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Fatalf("exit status %d, want 0", code)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var era bool
	methods := map[string]int{}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if !gjson.Valid(line) {
			t.Errorf("trace line %d is not JSON: %s", i+1, shortBytes([]byte(line)))
			continue
		}
		r := gjson.Parse(line)
		if r.Get("dir").Str == "proxy" && strings.HasPrefix(r.Get("note").Str, "era: legacy") {
			era = true
		}
		if r.Get("dir").Str == "proxy->server" {
			if m := r.Get("http.method").Str; m != "" {
				methods[m]++
			}
		}
		if r.Get("dir").Str == "proxy->server" && r.Get("http.method").Str == "POST" && r.Get("frame.method").Str == "tools/call" {
			if got := r.Get("http.header.Mcp-Session-Id").Str; got != "" && got != sid {
				t.Errorf("traced tools/call Mcp-Session-Id = %q, want %s", got, sid)
			}
		}
	}
	if !era {
		t.Errorf("the trace has no dir \"proxy\" record whose note starts \"era: legacy\":\n%s", data)
	}
	for _, m := range []string{"POST", "GET", "DELETE"} {
		if methods[m] == 0 {
			t.Errorf("the trace has no proxy->server record with http.method %s (methods %v)", m, methods)
		}
	}
}

// fail500 answers a tools/call of echo with text "boom" with a plain 500.
type fail500 struct{ next http.Handler }

func (h fail500) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if gjson.GetBytes(body, "method").Str == "tools/call" && gjson.GetBytes(body, "params.arguments.text").Str == "boom" {
			http.Error(w, "internal server error", http.StatusInternalServerError)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// TestPassthroughServerError: a plain 500 to one request is one JSON-RPC
// error for that request, and the session goes on.
func TestPassthroughServerError(t *testing.T) {
	t.Parallel()
	up := newLegacyUpstream(t, fail500{demo.NewLegacy()})
	p := startPassthrough(t, up)
	e := errorOf(t, p.call(`"boom"`, "tools/call", `{"name":"echo","arguments":{"text":"boom"}}`))
	if got := e.Get("code").Int(); got != -32603 {
		t.Errorf("error code %d, want -32603 (error %s)", got, e.Raw)
	}
	if !strings.Contains(e.Get("message").Str, "500") && e.Get("data.httpStatus").Int() != 500 {
		t.Errorf("error %s names neither the status 500 in its message nor data.httpStatus", e.Raw)
	}
	resultOf(t, p.call(`"ping"`, "ping", ""))
	res := resultOf(t, p.call(`"ok"`, "tools/call", `{"name":"echo","arguments":{"text":"fine"}}`))
	if got := res.Get("content.0.text").Str; got != "fine" {
		t.Errorf("echo after the 500 = %q", got)
	}
	n := 0
	for _, line := range p.all() {
		if isResponse(line) && gjson.GetBytes(line, "id").Raw == `"boom"` {
			n++
		}
	}
	if n != 1 {
		t.Errorf("id \"boom\" was answered %d times, want 1", n)
	}
}

// strictInit is a 2025 server that, like the Python SDK's ServerSession
// (python-sdk issue #423, "Received request before initialization was
// complete"), refuses a request other than initialize and ping in a session
// whose notifications/initialized it has not processed yet. It takes a
// while over that notification, as a busy server may; a client that keeps
// its own message order (the go-sdk client POSTs the notification and waits
// for the 202 before its next request) never notices.
type strictInit struct {
	next http.Handler

	mu    sync.Mutex
	ready map[string]bool // session ids whose notifications/initialized was processed
	early []string        // requests refused as too early
}

func (h *strictInit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	msg := gjson.ParseBytes(body)
	method, id, sid := msg.Get("method").Str, msg.Get("id"), r.Header.Get("Mcp-Session-Id")
	switch {
	case method == "notifications/initialized":
		time.Sleep(300 * time.Millisecond) // processing; widens the window, decides nothing
		h.mu.Lock()
		if h.ready == nil {
			h.ready = map[string]bool{}
		}
		h.ready[sid] = true
		h.mu.Unlock()
	case method != "" && id.Exists() && sid != "" && method != "initialize" && method != "ping":
		h.mu.Lock()
		ok := h.ready[sid]
		if !ok {
			h.early = append(h.early, method+" "+id.Raw)
		}
		h.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+id.Raw+`,"error":{"code":-32600,"message":"Received request before initialization was complete"}}`)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// TestLegacyServerSeesInitializedFirst: in passthrough the server must see
// the client's messages in the client's order. A client that sends
// notifications/initialized and then a request expects the server to have
// the notification first; a 2025 server may refuse requests before it
// (in passthrough the proxy behaves as a 2025-11-25 client; the 2025
// lifecycle has the client send initialized before normal operations).
// Notifications are POSTed by the poster goroutine and requests by their
// own, so each request waits on a barrier for the client messages read
// before it (passthrough.barrier).
func TestPassthroughServerSeesInitializedFirst(t *testing.T) {
	t.Parallel()
	strict := &strictInit{next: demo.NewLegacy()}
	up := newLegacyUpstream(t, strict)
	p := startProxy(t, []string{up.URL}).passthrough()
	resultOf(t, p.call(`"init"`, "initialize", passInitParams))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.request(`"first"`, "tools/list", "")
	resp := p.expect(`"first"`)
	strict.mu.Lock()
	early := slices.Clone(strict.early)
	strict.mu.Unlock()
	if len(early) > 0 {
		t.Errorf("the server got %q before the client's earlier notifications/initialized had been POSTed and answered: the proxy reorders the client's messages", early)
	}
	if !gjson.GetBytes(resp, "result").Exists() {
		t.Errorf("tools/list sent right after notifications/initialized failed: %s", shortBytes(resp))
	}
}
