package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// The harness of the serve-mode tests (issue 19): `mcp-tasks-proxy serve`
// is a 2025-11-25 Streamable HTTP server in front of the bridge. The tests
// launch the built binary, find its port in the one "listening on" line on
// stderr, and drive it with the go-sdk v1.8.0 Streamable HTTP client pinned
// to 2025-11-25 and with a raw HTTP client (serveSession) for what go-sdk
// cannot express: params.task and tasks/*, headers, Origin, Last-Event-ID,
// bad session ids.
//
// Every HTTP response either client gets passes through serveRT, which
// validates each JSON-RPC frame it carries (a JSON body or each SSE event)
// against the 2025-11-25 schema (schematest.ValidateClientBound, as
// rawProc does for stdio), and, unless the upstream is a 2025 server whose
// frames pass verbatim, checks it for leaked 2026 fields.

// serveListenRE matches the line serve prints once it listens.
var serveListenRE = regexp.MustCompile(`^listening on (http://([^/\s]+)/mcp)$`)

// serveProc is one running `mcp-tasks-proxy serve`.
type serveProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer

	URL  string // the endpoint as printed: http://HOST:PORT/mcp
	Base string // http://HOST:PORT
	Host string // HOST:PORT

	exited  chan struct{}
	waitErr error
	// stopped is set once the test ended the process itself (and checked
	// its exit status).
	stopped bool
}

// startServeCmd launches `mcp-tasks-proxy serve args...` without waiting
// for it to listen. --listen 127.0.0.1:0 is added unless args has --listen.
func startServeCmd(t *testing.T, args ...string) *serveProc {
	t.Helper()
	full := []string{"serve"}
	hasListen := false
	for _, a := range args {
		if a == "--listen" || strings.HasPrefix(a, "--listen=") {
			hasListen = true
		}
	}
	if !hasListen {
		full = append(full, "--listen", "127.0.0.1:0")
	}
	full = append(full, args...)
	s := &serveProc{t: t, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(binPath, full...)
	s.cmd.Env = proxyEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting %s %s: %v", binPath, strings.Join(full, " "), err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.cleanup)
	return s
}

// startServe launches serve and waits (bounded) for its "listening on"
// line, from which it takes the real address.
func startServe(t *testing.T, args ...string) *serveProc {
	t.Helper()
	s := startServeCmd(t, args...)
	deadline := time.Now().Add(waitTimeout)
	for {
		if u, ok := s.listening(); ok {
			s.URL = u
			s.Base = strings.TrimSuffix(u, "/mcp")
			s.Host = strings.TrimPrefix(s.Base, "http://")
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("serve exited (%v) before printing \"listening on http://HOST:PORT/mcp\"; stderr:\n%s", s.waitErr, s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not print \"listening on http://HOST:PORT/mcp\" on stderr within %v; stderr:\n%s", waitTimeout, s.stderr.String())
		}
	}
}

// listening returns the URL of the first "listening on" line on stderr.
func (s *serveProc) listening() (string, bool) {
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if m := serveListenRE.FindStringSubmatch(strings.TrimSuffix(line, "\r")); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// listenLines counts the "listening on" lines on stderr.
func (s *serveProc) listenLines() int {
	n := 0
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if serveListenRE.MatchString(strings.TrimSuffix(line, "\r")) {
			n++
		}
	}
	return n
}

// signal sends sig to the process.
func (s *serveProc) signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signalling serve: %v", err)
	}
}

// wait waits up to d for the process to exit and returns its exit status,
// killing it (and failing t) when it does not.
func (s *serveProc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(d):
		_ = s.cmd.Process.Kill()
		<-s.exited
		t.Fatalf("serve did not exit within %v; stderr:\n%s", d, s.stderr.String())
	}
	s.stopped = true
	return exitCode(s.waitErr)
}

// stop sends SIGTERM and requires exit status 0 within cleanupExitTimeout.
func (s *serveProc) stop(t *testing.T) {
	t.Helper()
	s.signal(syscall.SIGTERM)
	if code := s.wait(t, cleanupExitTimeout); code != 0 {
		t.Errorf("serve exited with status %d after SIGTERM, want 0; stderr:\n%s", code, s.stderr.String())
	}
}

// cleanup stops the process if the test did not, then checks that stdout
// stayed empty and that it exited 0 on SIGTERM.
func (s *serveProc) cleanup() {
	t := s.t
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
			if code := exitCode(s.waitErr); code != 0 && !s.stopped {
				t.Errorf("serve exited with status %d after SIGTERM at the end of the test, want 0", code)
			}
		case <-time.After(cleanupExitTimeout):
			t.Errorf("serve did not exit within %v of SIGTERM; killing it", cleanupExitTimeout)
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	if out := s.stdout.String(); out != "" {
		t.Errorf("serve wrote to stdout, which must stay empty: %q", shortBytes([]byte(out)))
	}
	if strings.Contains(s.stderr.String(), "WARNING: DATA RACE") {
		t.Errorf("serve reported a data race")
	}
	if t.Failed() {
		t.Logf("serve stderr:\n%s", s.stderr.String())
	}
}

// --- frame validation ---

// serveFrames validates and keeps every JSON-RPC frame one client receives.
// Problems fail the test that made it, at its end.
type serveFrames struct {
	v *schematest.Validator
	// verbatim: the upstream is a 2025 server whose frames pass unchanged;
	// they are schema-checked, but fields it chose to add are its own.
	verbatim bool

	mu       sync.Mutex
	methods  map[string]string // raw id → method, of requests the client sent
	frames   [][]byte
	problems []string
}

func newServeFrames(t *testing.T, verbatim bool) *serveFrames {
	t.Helper()
	f := &serveFrames{v: schematest.Load(t), verbatim: verbatim, methods: map[string]string{}}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, p := range f.problems {
			t.Errorf("client side: %s", p)
		}
	})
	return f
}

// sent records the requests of a POSTed body.
func (f *serveFrames) sent(body []byte) {
	r := gjson.ParseBytes(body)
	if !r.IsObject() || !r.Get("method").Exists() || !r.Get("id").Exists() {
		return
	}
	f.mu.Lock()
	f.methods[r.Get("id").Raw] = r.Get("method").String()
	f.mu.Unlock()
}

// got validates one received frame; where says which response carried it.
func (f *serveFrames) got(frame []byte, where string) {
	frame = bytes.Clone(frame)
	bad := func(format string, args ...any) {
		f.mu.Lock()
		f.problems = append(f.problems, fmt.Sprintf("%s: %s: %s", where, shortBytes(frame), fmt.Sprintf(format, args...)))
		f.mu.Unlock()
	}
	if len(frame) == 0 || frame[0] != '{' || !gjson.ValidBytes(frame) {
		bad("not one JSON object")
		return
	}
	method := ""
	if isResponse(frame) {
		f.mu.Lock()
		method = f.methods[gjson.GetBytes(frame, "id").Raw]
		f.mu.Unlock()
	}
	if err := f.v.ValidateClientBound(schemaID(frame), method); err != nil {
		bad("does not validate against 2025-11-25 (request method %q): %v", method, err)
	}
	if !f.verbatim {
		if err := schematest.CheckLegacyClean(frame, method); err != nil {
			bad("leaks modern fields: %v", err)
		}
	}
	f.mu.Lock()
	f.frames = append(f.frames, frame)
	f.mu.Unlock()
}

// all returns every frame received so far.
func (f *serveFrames) all() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.frames...)
}

// serveRT is the RoundTripper of every test client: it records the
// requests each POST carries and validates every frame of every answer.
type serveRT struct {
	f    *serveFrames
	next http.RoundTripper
}

// newServeHTTPClient returns an HTTP client whose answers f validates.
func newServeHTTPClient(t *testing.T, f *serveFrames) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: &serveRT{f: f, next: tr}}
}

func (rt *serveRT) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		rt.f.sent(body)
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	where := fmt.Sprintf("%s %s → %d", req.Method, req.URL.Path, resp.StatusCode)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "text/event-stream":
		resp.Body = &sseTee{ReadCloser: resp.Body, f: rt.f, where: where}
	case "application/json":
		resp.Body = &jsonTee{ReadCloser: resp.Body, f: rt.f, where: where}
	}
	return resp, nil
}

// jsonTee validates a JSON body once it has been read to its end.
type jsonTee struct {
	io.ReadCloser
	f     *serveFrames
	where string
	buf   bytes.Buffer
	done  bool
}

func (j *jsonTee) Read(p []byte) (int, error) {
	n, err := j.ReadCloser.Read(p)
	j.buf.Write(p[:n])
	if errors.Is(err, io.EOF) && !j.done {
		j.done = true
		if b := bytes.TrimSpace(j.buf.Bytes()); len(b) > 0 {
			j.f.got(b, j.where)
		}
	}
	return n, err
}

// sseTee validates the data of each SSE event as it is read.
type sseTee struct {
	io.ReadCloser
	f       *serveFrames
	where   string
	pending []byte
}

func (s *sseTee) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.pending = append(s.pending, p[:n]...)
	for {
		block, rest, ok := cutEvent(s.pending)
		if !ok {
			break
		}
		s.pending = rest
		if ev := parseEvent(block); len(bytes.TrimSpace(ev.data)) > 0 {
			s.f.got(ev.data, s.where)
		}
	}
	return n, err
}

// cutEvent splits off the first SSE event block, ended by a blank line
// (LF, CRLF or CR line ends).
func cutEvent(b []byte) (block, rest []byte, ok bool) {
	at, n := -1, 0
	for _, sep := range []string{"\n\n", "\r\n\r\n", "\r\r"} {
		if i := bytes.Index(b, []byte(sep)); i >= 0 && (at < 0 || i < at) {
			at, n = i, len(sep)
		}
	}
	if at < 0 {
		return nil, nil, false
	}
	return b[:at], b[at+n:], true
}

// sseEvent is one parsed SSE event.
type sseEvent struct {
	id      string
	hasID   bool
	event   string
	data    []byte
	retryMS string
}

func parseEvent(block []byte) sseEvent {
	var ev sseEvent
	var data [][]byte
	for _, line := range bytes.FieldsFunc(block, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			ev.id, ev.hasID = string(value), true
		case "event":
			ev.event = string(value)
		case "data":
			data = append(data, value)
		case "retry":
			ev.retryMS = string(value)
		}
	}
	ev.data = bytes.Join(data, []byte("\n"))
	return ev
}

// sseReader reads events from a stream.
type sseReader struct {
	br      *bufio.Reader
	pending []byte
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{br: bufio.NewReader(r)} }

// next returns the next event (comments and empty keep-alives included as
// events with no data).
func (r *sseReader) next() (sseEvent, error) {
	buf := make([]byte, 4096)
	for {
		if block, rest, ok := cutEvent(r.pending); ok {
			r.pending = rest
			return parseEvent(block), nil
		}
		n, err := r.br.Read(buf)
		r.pending = append(r.pending, buf[:n]...)
		if err != nil && n == 0 {
			return sseEvent{}, err
		}
	}
}

// --- upstreams ---

// serveUp is an in-process upstream in front of h that keeps every request
// body it gets, so a test can say what reached it; for a 2026 upstream it
// also validates each POSTed body and its MCP headers.
type serveUp struct {
	URL    string
	modern bool
	v      *schematest.Validator
	next   http.Handler

	changes
	bodies   [][]byte
	problems []string
}

func newServeUp(t *testing.T, h http.Handler, modern bool) *serveUp {
	t.Helper()
	u := &serveUp{modern: modern, v: schematest.Load(t), next: h}
	srv := httptest.NewServer(u)
	u.URL = srv.URL + upstreamPath
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, p := range u.problems {
			t.Errorf("upstream: %s", p)
		}
	})
	return u
}

func (u *serveUp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var probs []string
	if u.modern && r.Method == http.MethodPost {
		if err := u.v.ValidateUpstream(body); err != nil {
			probs = append(probs, fmt.Sprintf("body does not validate against 2026-07-28: %v", err))
		}
		probs = append(probs, checkUpstreamHeaders(r.Header, body, false)...)
	}
	method := gjson.GetBytes(body, "method").String()
	u.mu.Lock()
	u.bodies = append(u.bodies, body)
	for _, p := range probs {
		u.problems = append(u.problems, fmt.Sprintf("%s %s: %s", method, shortBytes(body), p))
	}
	u.notifyLocked()
	u.mu.Unlock()
	u.next.ServeHTTP(w, r)
}

// count is the number of requests whose body contains s ("" for all).
func (u *serveUp) count(s string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	n := 0
	for _, b := range u.bodies {
		if bytes.Contains(b, []byte(s)) {
			n++
		}
	}
	return n
}

// serveHold sits in front of an upstream handler and never answers a
// tools/call whose body contains serveHoldMark: it waits for the request
// to end (the proxy closes it, or exits).
type serveHold struct {
	next http.Handler
	changes
	held  int
	ended int // held requests that have ended
}

const serveHoldMark = "hold-me"

func (h *serveHold) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if r.Method == http.MethodPost && gjson.GetBytes(body, "method").String() == "tools/call" && bytes.Contains(body, []byte(serveHoldMark)) {
		h.mu.Lock()
		h.held++
		h.notifyLocked()
		h.mu.Unlock()
		<-r.Context().Done()
		h.mu.Lock()
		h.ended++
		h.notifyLocked()
		h.mu.Unlock()
		return
	}
	h.next.ServeHTTP(w, r)
}

// startHeld starts an upstream of kind "demo" (2026) or "2025" behind a
// serveHold; legacy is the 2025 recorder (nil for the demo).
func startHeld(t *testing.T, kind string) (hold *serveHold, url string, legacy *legacyUpstream) {
	t.Helper()
	if kind == "demo" {
		hold = &serveHold{next: demo.Handler()}
		return hold, newServeUp(t, hold, true).URL, nil
	}
	hold = &serveHold{next: demo.NewLegacy()}
	legacy = newLegacyUpstream(t, hold)
	return hold, legacy.URL, legacy
}

// waitEnded waits until n held calls have ended.
func (h *serveHold) waitEnded(t *testing.T, n int) {
	t.Helper()
	h.until(t, func() bool { return h.ended >= n }, func() string {
		return fmt.Sprintf("%d held upstream calls did not end within %v", n, waitTimeout)
	})
}

// wait waits until n calls are being held.
func (h *serveHold) wait(t *testing.T, n int) {
	t.Helper()
	h.until(t, func() bool { return h.held >= n }, func() string {
		return fmt.Sprintf("the upstream did not get %d calls to hold within %v", n, waitTimeout)
	})
}

// --- the raw client ---

// serveSession is one session of a raw HTTP client. Answers to the
// proxy's own requests come from answer; notifications that arrive on a
// POST's stream are kept in notes.
type serveSession struct {
	t   *testing.T
	s   *serveProc
	f   *serveFrames
	hc  *http.Client
	sid string
	// header is added to every request (Origin, Authorization, ...); a
	// nil value removes a header the client sets by default.
	header http.Header
	// answer returns the result (raw JSON) of a request the proxy sends on
	// a POST's stream; nil answers every request with an error.
	answer func(req gjson.Result) string

	mu    sync.Mutex
	notes [][]byte
	asked []string // methods of the requests the proxy sent
	// noID counts the events with data on POST streams that carried no
	// id (SSE events carry ids).
	noID int
}

func (s *serveProc) rawSession(t *testing.T, f *serveFrames) *serveSession {
	return &serveSession{t: t, s: s, f: f, hc: newServeHTTPClient(t, f), header: http.Header{}}
}

// serveAnswer is one HTTP answer, read to its end.
type serveAnswer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one HTTP request to the endpoint with the session's headers
// (Mcp-Session-Id once known, MCP-Protocol-Version, header) plus extra, and
// returns the response unread. A bounded context covers the whole exchange;
// cancel releases it.
func (c *serveSession) do(method string, body []byte, extra http.Header) (*http.Response, context.CancelFunc) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.s.URL, rd)
	if err != nil {
		cancel()
		c.t.Fatal(err)
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", legacyVersion)
	}
	for _, h := range []http.Header{c.header, extra} {
		for k, vs := range h {
			if vs == nil {
				req.Header.Del(k) // a nil value removes a default header
				continue
			}
			req.Header[http.CanonicalHeaderKey(k)] = vs
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		cancel()
		c.t.Fatalf("%s %s: %v", method, c.s.URL, err)
	}
	return resp, cancel
}

// send sends one HTTP request and reads the whole answer.
func (c *serveSession) send(method string, body []byte, extra http.Header) serveAnswer {
	c.t.Helper()
	resp, cancel := c.do(method, body, extra)
	defer cancel()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s: reading the answer: %v", method, err)
	}
	return serveAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// initialize runs the 2025 handshake: initialize (which must issue an
// Mcp-Session-Id), then notifications/initialized (202).
func (c *serveSession) initialize(params string) gjson.Result {
	c.t.Helper()
	resp := c.call(`"init"`, "initialize", params)
	res := resultOf(c.t, resp)
	if c.sid == "" {
		c.t.Fatalf("the initialize answer carried no Mcp-Session-Id")
	}
	c.notify("notifications/initialized", "")
	return res
}

// notify POSTs a notification and requires 202 Accepted.
func (c *serveSession) notify(method, params string) {
	c.t.Helper()
	f := `{"jsonrpc":"2.0","method":"` + method + `"`
	if params != "" {
		f += `,"params":` + params
	}
	a := c.send(http.MethodPost, []byte(f+"}"), nil)
	if a.status != http.StatusAccepted {
		c.t.Fatalf("POST %s: status %d, want 202 Accepted; body %s", method, a.status, shortBytes(a.body))
	}
}

// serveRequest builds a request frame; params is raw JSON or "".
func serveRequest(id, method, params string) []byte {
	f := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"`
	if params != "" {
		f += `,"params":` + params
	}
	return []byte(f + "}")
}

// call POSTs a request and returns its JSON-RPC response, from a JSON
// body or from the SSE stream the POST opened. On a stream, requests the
// proxy makes are answered (answer) and notifications kept. An HTTP status
// other than 200 fails the test.
func (c *serveSession) call(id, method, params string) []byte {
	c.t.Helper()
	resp, cancel := c.do(http.MethodPost, serveRequest(id, method, params), nil)
	defer cancel()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("POST %s (id %s): status %d, want 200; body %s", method, id, resp.StatusCode, shortBytes(b))
	}
	if method == "initialize" {
		c.sid = resp.Header.Get("Mcp-Session-Id")
	}
	return c.answerOf(resp, id, method)
}

// answerOf reads the response to id from resp (200).
func (c *serveSession) answerOf(resp *http.Response, id, method string) []byte {
	c.t.Helper()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			c.t.Fatalf("%s (id %s): reading the JSON answer: %v", method, id, err)
		}
		if got := gjson.GetBytes(b, "id").Raw; !isResponse(b) || got != id {
			c.t.Fatalf("%s (id %s): the JSON answer is not its response: %s", method, id, shortBytes(b))
		}
		return b
	case "text/event-stream":
		r := newSSEReader(resp.Body)
		for {
			ev, err := r.next()
			if err != nil {
				c.t.Fatalf("%s (id %s): the stream ended (%v) before the response", method, id, err)
			}
			if len(bytes.TrimSpace(ev.data)) == 0 {
				continue
			}
			if !ev.hasID || ev.id == "" {
				c.mu.Lock()
				c.noID++
				c.mu.Unlock()
			}
			fr := gjson.ParseBytes(ev.data)
			switch {
			case isResponse(ev.data):
				if fr.Get("id").Raw != id {
					c.t.Fatalf("%s (id %s): its stream carried the response to another id: %s", method, id, shortBytes(ev.data))
				}
				// The stream ends with its response: nothing follows it.
				for {
					after, err := r.next()
					if err != nil {
						if !errors.Is(err, io.EOF) {
							c.t.Errorf("%s (id %s): the stream did not end cleanly after the response: %v", method, id, err)
						}
						break
					}
					if len(bytes.TrimSpace(after.data)) > 0 {
						c.t.Errorf("%s (id %s): a frame after the response on its stream: %s", method, id, shortBytes(after.data))
					}
				}
				return ev.data
			case fr.Get("id").Exists():
				c.reply(fr)
			default:
				c.mu.Lock()
				c.notes = append(c.notes, ev.data)
				c.mu.Unlock()
			}
		}
	default:
		c.t.Fatalf("%s (id %s): answer Content-Type %q, want application/json or text/event-stream", method, id, resp.Header.Get("Content-Type"))
	}
	return nil
}

// reply POSTs the answer to a request the proxy sent, which must be
// accepted with 202.
func (c *serveSession) reply(req gjson.Result) {
	c.t.Helper()
	c.mu.Lock()
	c.asked = append(c.asked, req.Get("method").String())
	c.mu.Unlock()
	var f string
	if c.answer != nil {
		if res := c.answer(req); res != "" {
			f = `{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"result":` + res + `}`
		}
	}
	if f == "" {
		f = `{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"error":{"code":-32601,"message":"the test client does not answer ` + req.Get("method").String() + `"}}`
	}
	a := c.send(http.MethodPost, []byte(f), nil)
	if a.status != http.StatusAccepted {
		c.t.Errorf("POST of the answer to the proxy's %s: status %d, want 202; body %s", req.Get("method").String(), a.status, shortBytes(a.body))
	}
}

// del ends the session with DELETE and returns the status.
func (c *serveSession) del() int {
	c.t.Helper()
	return c.send(http.MethodDelete, nil, nil).status
}

// serveStream is an open GET stream of a session, read in the background.
type serveStream struct {
	changes
	resp   *http.Response
	cancel context.CancelFunc
	events []sseEvent
	err    error // why reading stopped
	ended  bool
}

// openStream opens the session's GET stream (with Last-Event-ID when
// lastID is not empty) and requires 200 text/event-stream.
func (c *serveSession) openStream(lastID string) *serveStream {
	c.t.Helper()
	extra := http.Header{}
	if lastID != "" {
		extra.Set("Last-Event-ID", lastID)
	}
	// The server may not have seen a dropped stream end yet: a second GET
	// stream of a session may get 409 until it has. Retry that, bounded.
	deadline := time.Now().Add(waitTimeout)
	resp, cancel := c.do(http.MethodGet, nil, extra)
	for resp.StatusCode == http.StatusConflict && time.Now().Before(deadline) {
		resp.Body.Close()
		cancel()
		time.Sleep(50 * time.Millisecond)
		resp, cancel = c.do(http.MethodGet, nil, extra)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		c.t.Fatalf("GET stream (Last-Event-ID %q): status %d %q, want 200 text/event-stream; body %s", lastID, resp.StatusCode, resp.Header.Get("Content-Type"), shortBytes(b))
	}
	st := &serveStream{resp: resp, cancel: cancel}
	go func() {
		r := newSSEReader(resp.Body)
		for {
			ev, err := r.next()
			st.mu.Lock()
			if err != nil {
				st.err, st.ended = err, true
				st.notifyLocked()
				st.mu.Unlock()
				return
			}
			if len(bytes.TrimSpace(ev.data)) > 0 {
				st.events = append(st.events, ev)
				st.notifyLocked()
			}
			st.mu.Unlock()
		}
	}()
	c.t.Cleanup(st.close)
	return st
}

// close drops the stream from the client side.
func (st *serveStream) close() {
	st.cancel()
	st.resp.Body.Close()
}

// wait waits (bounded) for an event that satisfies pred and returns it.
func (st *serveStream) wait(t *testing.T, desc string, pred func(sseEvent) bool) sseEvent {
	t.Helper()
	var found sseEvent
	st.until(t, func() bool {
		for _, ev := range st.events {
			if pred(ev) {
				found = ev
				return true
			}
		}
		return st.ended
	}, func() string { return fmt.Sprintf("no %s on the GET stream within %v", desc, waitTimeout) })
	if found.data == nil {
		st.mu.Lock()
		err := st.err
		st.mu.Unlock()
		t.Fatalf("the GET stream ended (%v) before %s", err, desc)
	}
	return found
}

// all returns the events so far.
func (st *serveStream) all() []sseEvent {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]sseEvent(nil), st.events...)
}

// --- the go-sdk client ---

// sdkServeConnect connects client to serve over go-sdk's Streamable HTTP
// client transport, pinned to 2025-11-25 like the stdio tests, through the
// validating client of f.
func sdkServeConnect(t *testing.T, ctx context.Context, s *serveProc, client *mcp.Client, f *serveFrames) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: newServeHTTPClient(t, f)}
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatalf("go-sdk connect to %s: %v", s.URL, err)
	}
	return cs
}

// serveTag is a session's own marker, unique across the sessions of a
// test and never a substring of another's.
func serveTag(i int) string { return fmt.Sprintf("tag-%02d-x", i) }
