package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// rawProc is the binary driven by a raw NDJSON client: the test writes exact
// bytes to stdin and sees exact bytes from stdout. It checks every line the
// proxy writes: a complete line holding one JSON object, valid against the
// 2025-11-25 schema for the request it answers, free of modern fields (a
// modern client's, see modernClient: valid against 2026-07-28, and every
// line the test writes too). At the end of the test it checks that no id was
// answered more often than it was sent.
//
// Its methods fail the test they are bound to; a subtest uses p.bind(t).
type rawProc struct {
	t *testing.T
	*procState
}

// procState is the process and its output, shared by every binding.
type procState struct {
	owner  *testing.T // the test that started the process; gets the final report
	v      *schematest.Validator
	cmd    *exec.Cmd
	stdin  *os.File
	stderr *syncBuffer

	exited  chan struct{} // closed when the process has been reaped
	waitErr error         // cmd.Wait's error, valid after exited
	readEOF chan struct{} // closed when stdout hit EOF

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every new line and at EOF
	lines    []outLine     // every stdout line, without "\n"
	claimed  map[int]bool  // lines returned by expect
	methods  map[string]string
	sent     map[string]int // requests written, by raw id
	problems []string
	// verbatim: the upstream is a 2025 server in passthrough, whose frames
	// reach the client unchanged; they are schema-checked, but fields a
	// 2025 server chose to add are its own, not a leak of the bridge.
	verbatim bool
	// modern: the client speaks 2026-07-28 (see modernClient).
	modern bool
}

// passthrough marks the process as bridging to a 2025 server (see
// procState.verbatim); call it before the first line arrives.
func (p *rawProc) passthrough() *rawProc {
	p.mu.Lock()
	p.verbatim = true
	p.mu.Unlock()
	return p
}

// modernClient makes p a 2026-07-28 client: every line the proxy writes is
// validated as what a 2026-07-28 server sends (ValidateUpstreamResult), with
// no legacy check, and every line the test writes must be a valid
// 2026-07-28 request (ValidateUpstream) or client notification. on false
// makes it a legacy client again (a client of both eras falling back);
// call it before the lines it concerns.
func (p *rawProc) modernClient(on bool) *rawProc {
	p.mu.Lock()
	p.modern = on
	p.mu.Unlock()
	return p
}

// startProxy launches the binary with args and the test environment plus env.
func startProxy(t *testing.T, args []string, env ...string) *rawProc {
	t.Helper()
	p := &rawProc{t: t, procState: &procState{
		owner:   t,
		v:       schematest.Load(t),
		stderr:  &syncBuffer{},
		exited:  make(chan struct{}),
		readEOF: make(chan struct{}),
		changed: make(chan struct{}),
		claimed: map[int]bool{},
		methods: map[string]string{},
		sent:    map[string]int{},
	}}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binPath, args...)
	p.cmd.Env = proxyEnv(env...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binPath, err)
	}
	inR.Close()
	outW.Close()
	p.stdin = inW
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	go p.read(outR)
	t.Cleanup(p.cleanup)
	return p
}

// bind returns p reporting to t (a subtest).
func (p *rawProc) bind(t *testing.T) *rawProc { return &rawProc{t: t, procState: p.procState} }

// read collects stdout lines and checks each one.
func (p *procState) read(r *os.File) {
	defer close(p.readEOF)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = line[:len(line)-1]
			ol := p.check(line)
			p.mu.Lock()
			p.lines = append(p.lines, ol)
			p.notify()
			p.mu.Unlock()
		} else if len(line) > 0 {
			p.addProblem("stdout ended with an incomplete line (no newline): %s", shortBytes(line))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.addProblem("reading stdout: %v", err)
			}
			p.mu.Lock()
			p.notify()
			p.mu.Unlock()
			return
		}
	}
}

func (p *procState) notify() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// outLine is one stdout line and what the tests look up in it, parsed once.
type outLine struct {
	raw    []byte
	resp   bool   // a response (result or error, no method)
	id     string // raw id, "" when absent
	method string // for requests and notifications
	token  string // params.progressToken, raw
}

func parseOutLine(line []byte) outLine {
	r := gjson.ParseBytes(line)
	ol := outLine{raw: line, id: r.Get("id").Raw, method: r.Get("method").String()}
	ol.resp = !r.Get("method").Exists() && (r.Get("result").Exists() || r.Get("error").Exists())
	if ol.method != "" {
		ol.token = r.Get("params.progressToken").Raw
	}
	return ol
}

// check validates one stdout line.
func (p *procState) check(line []byte) outLine {
	if len(line) == 0 || line[0] != '{' || line[len(line)-1] != '}' || !gjson.ValidBytes(line) {
		p.addProblem("stdout line is not one complete JSON object: %s", shortBytes(line))
		return outLine{raw: line}
	}
	ol := parseOutLine(line)
	method := ""
	p.mu.Lock()
	if ol.resp {
		method = p.methods[ol.id]
	}
	verbatim, modern := p.verbatim, p.modern
	p.mu.Unlock()
	if modern {
		if err := p.v.ValidateUpstreamResult(schemaID(line), method); err != nil {
			p.addProblem("stdout line does not validate against 2026-07-28 (request method %q): %v", method, err)
		}
		return ol
	}
	if err := p.v.ValidateClientBound(schemaID(line), method); err != nil {
		p.addProblem("stdout line does not validate against 2025-11-25 (request method %q): %v", method, err)
	}
	if err := schematest.CheckLegacyClean(line, method); err != nil && !verbatim {
		p.addProblem("stdout line leaks modern fields: %v", err)
	}
	return ol
}

func (p *procState) addProblem(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

// cleanupExitTimeout bounds the wait for the process to exit once stdin is
// closed at the end of a test: twice the 5 s the product promises.
const cleanupExitTimeout = 10 * time.Second

// cleanup stops the process if the test did not, then reports every problem
// seen on stdout and every id answered more often than it was sent.
func (p *procState) cleanup() {
	p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(cleanupExitTimeout):
		p.owner.Errorf("the proxy did not exit within %v of stdin closing; killing it", cleanupExitTimeout)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	select {
	case <-p.readEOF:
	case <-time.After(waitTimeout):
		p.owner.Errorf("stdout did not reach EOF within %v of the proxy exiting", waitTimeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, prob := range p.problems {
		p.owner.Errorf("stdout: %s", prob)
	}
	got := map[string]int{}
	for _, l := range p.lines {
		if l.resp {
			got[l.id]++
		}
	}
	ids := make([]string, 0, len(got))
	for id := range got {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if id != "null" && got[id] > p.sent[id] {
			p.owner.Errorf("id %s was answered %d times for %d requests (every id gets exactly one answer)", id, got[id], p.sent[id])
		}
	}
	if p.owner.Failed() {
		p.owner.Logf("proxy stderr:\n%s", p.stderr.String())
	}
}

// schemaID returns line with a non-integer numeric id (1.5, 1e3) replaced by
// 0, for schema validation only: MCP ids are strings or integers, but the
// proxy must echo whatever id the client chose, byte for byte, so such an id
// in a response is the client's doing, not the proxy's.
func schemaID(line []byte) []byte {
	id := gjson.GetBytes(line, "id")
	if id.Type != gjson.Number || isPlainInteger(id.Raw) {
		return line
	}
	out, err := sjson.SetRawBytes(append([]byte(nil), line...), "id", []byte("0"))
	if err != nil {
		return line
	}
	return out
}

func isPlainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isResponse reports whether a line is a JSON-RPC response.
func isResponse(line []byte) bool {
	r := gjson.ParseBytes(line)
	return !r.Get("method").Exists() && (r.Get("result").Exists() || r.Get("error").Exists())
}

// writeRaw writes b to stdin as it is.
func (p *rawProc) writeRaw(b []byte) {
	p.t.Helper()
	if _, err := p.stdin.Write(b); err != nil {
		p.t.Fatalf("writing to the proxy's stdin: %v", err)
	}
}

// send writes one frame and a "\n", and records requests by id.
func (p *rawProc) send(frame string) {
	p.t.Helper()
	r := gjson.Parse(frame)
	p.mu.Lock()
	modern := p.modern
	if r.IsObject() && r.Get("method").Exists() && r.Get("id").Exists() {
		id := r.Get("id").Raw
		p.methods[id] = r.Get("method").String()
		p.sent[id]++
	}
	p.mu.Unlock()
	if modern {
		var err error
		if r.Get("id").Exists() {
			err = p.v.ValidateUpstream([]byte(frame))
		} else {
			err = p.v.Validate(schematest.Schema2026, "ClientNotification", []byte(frame))
		}
		if err != nil {
			p.t.Errorf("the test's own frame is not a valid 2026-07-28 client message: %v", err)
		}
	}
	p.writeRaw([]byte(frame + "\n"))
}

// request sends a request; params is raw JSON or "".
func (p *rawProc) request(id, method, params string) {
	p.t.Helper()
	f := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"`
	if params != "" {
		f += `,"params":` + params
	}
	p.send(f + "}")
}

// call sends a request and waits for its answer.
func (p *rawProc) call(id, method, params string) []byte {
	p.t.Helper()
	p.request(id, method, params)
	return p.expect(id)
}

// expect waits for the next unclaimed response whose raw id is id.
func (p *rawProc) expect(id string) []byte {
	p.t.Helper()
	i, line := p.waitLine(0, "a response with id "+id, func(i int, l outLine) bool {
		return !p.claimed[i] && l.resp && l.id == id
	})
	p.mu.Lock()
	p.claimed[i] = true
	p.mu.Unlock()
	return line
}

// waitLine waits for the first line at index from or later that matches
// pred (called with p.mu held), and returns its index and bytes.
func (p *rawProc) waitLine(from int, desc string, pred func(int, outLine) bool) (int, []byte) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		p.mu.Lock()
		for i := from; i < len(p.lines); i++ {
			if pred(i, p.lines[i]) {
				l := p.lines[i].raw
				p.mu.Unlock()
				return i, l
			}
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.readEOF:
			// Check the lines once more: EOF may have raced the last one.
			p.mu.Lock()
			for i := from; i < len(p.lines); i++ {
				if pred(i, p.lines[i]) {
					l := p.lines[i].raw
					p.mu.Unlock()
					return i, l
				}
			}
			p.mu.Unlock()
			p.t.Fatalf("stdout closed before %s; stderr:\n%s", desc, p.stderr.String())
		case <-ctx.Done():
			p.t.Fatalf("no %s on stdout within %v; stdout so far:\n%s\nstderr:\n%s", desc, waitTimeout, p.dump(), p.stderr.String())
		}
	}
}

// line waits for the line at index i.
func (p *rawProc) line(i int) []byte {
	p.t.Helper()
	_, l := p.waitLine(i, fmt.Sprintf("line #%d", i), func(j int, _ outLine) bool { return j == i })
	return l
}

// mark is the index the next stdout line will have.
func (p *rawProc) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// all returns every stdout line so far.
func (p *rawProc) all() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([][]byte, len(p.lines))
	for i, l := range p.lines {
		out[i] = l.raw
	}
	return out
}

func (p *rawProc) dump() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b bytes.Buffer
	for _, l := range p.lines {
		fmt.Fprintf(&b, "  %s\n", shortBytes(l.raw))
	}
	return b.String()
}

// initialize runs the legacy handshake and requires it to succeed.
func (p *rawProc) initialize() []byte {
	p.t.Helper()
	resp := p.call(`"init"`, "initialize", initParams)
	if !gjson.GetBytes(resp, "result").Exists() {
		p.t.Fatalf("initialize failed: %s", resp)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return resp
}

const initParams = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e-raw","version":"1"}}`

// closeStdin signals EOF to the proxy.
func (p *rawProc) closeStdin() {
	p.t.Helper()
	if err := p.stdin.Close(); err != nil {
		p.t.Fatalf("closing stdin: %v", err)
	}
}

// waitExit waits up to d for the process to end, failing the test (and
// killing the process) otherwise, and returns its exit status after stdout
// has been read to the end.
func (p *rawProc) waitExit(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.t.Fatalf("the proxy did not exit within %v; stderr:\n%s", d, p.stderr.String())
	}
	select {
	case <-p.readEOF:
	case <-time.After(waitTimeout):
		p.t.Fatalf("stdout did not reach EOF within %v after exit", waitTimeout)
	}
	return exitCode(p.waitErr)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// errorOf returns the error object of a response, failing the test when the
// response is not an error.
func errorOf(t *testing.T, resp []byte) gjson.Result {
	t.Helper()
	e := gjson.GetBytes(resp, "error")
	if !e.IsObject() {
		t.Fatalf("want a JSON-RPC error, got %s", shortBytes(resp))
	}
	return e
}

// resultOf returns the result object of a response, failing the test when
// the response is not a result.
func resultOf(t *testing.T, resp []byte) gjson.Result {
	t.Helper()
	r := gjson.GetBytes(resp, "result")
	if !r.IsObject() {
		t.Fatalf("want a JSON-RPC result, got %s", shortBytes(resp))
	}
	return r
}

// changes is the lock of a recorder that tests wait on: every change,
// made under mu, calls notifyLocked, and until waits for the next one.
type changes struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

// notifyLocked wakes the waiters; mu is held.
func (c *changes) notifyLocked() {
	if c.changed != nil {
		close(c.changed)
	}
	c.changed = make(chan struct{})
}

// until waits (bounded) until found, called with mu held, is true. Past
// waitTimeout it fails t with what fail, called without mu, says.
func (c *changes) until(t testing.TB, found func() bool, fail func() string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		c.mu.Lock()
		if found() {
			c.mu.Unlock()
			return
		}
		if c.changed == nil {
			c.changed = make(chan struct{})
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatal(fail())
		}
	}
}
