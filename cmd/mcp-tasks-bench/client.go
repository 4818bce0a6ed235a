package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

// session is one client connection to a target: a spawned stdio bridge, or
// a direct HTTP client of the upstream. call returns the raw JSON of the
// final result object of a tools/call (for a task the client followed, the
// task's result), after checking that the answer carries the request's id
// and is not an error.
type session interface {
	call(ctx context.Context, tool, args string) ([]byte, error)
	// pid is the bridge's process id, 0 for a direct session.
	pid() int
	close() error
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ---- stdio: a legacy 2025-11-25 client speaking NDJSON to a bridge ----

type stdioSession struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex
	next  atomic.Int64

	mu      sync.Mutex
	pending map[string]chan []byte
	failed  error // set by the reader on a protocol violation or EOF
	done    chan struct{}
	stderr  *tailBuffer
	procPID int
	// modern: the client speaks 2026-07-28 (server/discover, _meta on
	// every request), as a 2.x SDK client does.
	modern bool
}

// startStdio spawns argv, with env added to this process's environment,
// sends initialize and waits for its answer, then sends
// notifications/initialized (a modern client: server/discover, and
// nothing after it). It returns the time from just before the spawn to the
// answer.
func startStdio(ctx context.Context, argv, env []string, modern bool) (*stdioSession, time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	s := &stdioSession{cmd: cmd, stdin: stdin, pending: map[string]chan []byte{}, done: make(chan struct{}), stderr: &tailBuffer{max: 8 << 10}, modern: modern}
	cmd.Stderr = s.stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	s.procPID = cmd.Process.Pid
	go s.read(stdout)
	if modern {
		raw, err := s.request(ctx, "server/discover", `{"_meta":`+directMeta+`}`)
		startup := time.Since(t0)
		if err == nil && gjson.GetBytes(raw, "supportedVersions.0").String() != modernVersion {
			err = fmt.Errorf("discover answer lists no %s: %.300s", modernVersion, raw)
		}
		if err != nil {
			_ = s.close()
			return nil, 0, fmt.Errorf("server/discover: %w", err)
		}
		return s, startup, nil
	}

	init := `{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"mcp-tasks-bench","version":"1"}}`
	raw, err := s.request(ctx, "initialize", init)
	startup := time.Since(t0)
	if err != nil {
		_ = s.close()
		return nil, 0, fmt.Errorf("initialize: %w", err)
	}
	if gjson.GetBytes(raw, "protocolVersion").String() == "" {
		_ = s.close()
		return nil, 0, fmt.Errorf("initialize answer has no protocolVersion: %.300s", raw)
	}
	if err := s.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		_ = s.close()
		return nil, 0, err
	}
	return s, startup, nil
}

func (s *stdioSession) pid() int { return s.procPID }

func (s *stdioSession) writeLine(b []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.stdin.Write(b)
	return err
}

func (s *stdioSession) fail(err error) {
	s.mu.Lock()
	if s.failed == nil {
		s.failed = err
	}
	s.mu.Unlock()
}

// read delivers each answer to the request waiting for its id. An answer to
// an id nobody waits for, a request from the bridge (this client declares
// no capabilities) or a line that is not JSON fails the session.
func (s *stdioSession) read(r io.Reader) {
	defer close(s.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			s.deliver(bytes.TrimRight(line, "\r\n"))
		}
		if err != nil {
			if err == io.EOF {
				err = errors.New("the bridge closed stdout")
			}
			s.fail(err)
			return
		}
	}
}

func (s *stdioSession) deliver(line []byte) {
	if !gjson.ValidBytes(line) {
		s.fail(fmt.Errorf("stdout line is not JSON: %.200q", line))
		return
	}
	r := gjson.GetManyBytes(line, "id", "method")
	id, method := r[0], r[1]
	if !id.Exists() {
		return // a notification (progress, logs, list changes): not an answer
	}
	if method.Exists() {
		s.fail(fmt.Errorf("unexpected request from the bridge: %.200s", line))
		return
	}
	s.mu.Lock()
	ch, ok := s.pending[id.Raw]
	delete(s.pending, id.Raw)
	s.mu.Unlock()
	if !ok {
		s.fail(fmt.Errorf("answer for id %s, which no request is waiting for: %.200s", id.Raw, line))
		return
	}
	ch <- line
}

// request sends one request and returns its result's raw JSON.
func (s *stdioSession) request(ctx context.Context, method, params string) ([]byte, error) {
	id := strconv.FormatInt(s.next.Add(1), 10)
	ch := make(chan []byte, 1)
	s.mu.Lock()
	if s.failed != nil {
		err := s.failed
		s.mu.Unlock()
		return nil, err
	}
	s.pending[id] = ch
	s.mu.Unlock()
	line := append(requestFrame(id, method, params, 1), '\n')
	if err := s.writeLine(line); err != nil {
		return nil, fmt.Errorf("write to the bridge: %w", err)
	}
	select {
	case frame := <-ch:
		return resultOf(frame, id)
	case <-s.done:
		select {
		case frame := <-ch:
			return resultOf(frame, id)
		default:
		}
		s.mu.Lock()
		err := s.failed
		s.mu.Unlock()
		return nil, fmt.Errorf("no answer for id %s: %w (stderr: %s)", id, err, s.stderr.String())
	case <-ctx.Done():
		return nil, fmt.Errorf("no answer for id %s: %w", id, ctx.Err())
	}
}

func (s *stdioSession) call(ctx context.Context, tool, args string) ([]byte, error) {
	if s.modern {
		return s.request(ctx, "tools/call", `{"_meta":`+directMeta+`,"name":"`+tool+`","arguments":`+args+`}`)
	}
	return s.request(ctx, "tools/call", `{"name":"`+tool+`","arguments":`+args+`}`)
}

// close ends stdin (the bridge should exit), waits up to 5 s, then kills
// the process group.
func (s *stdioSession) close() error {
	_ = s.stdin.Close()
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.procPID, syscall.SIGKILL)
		<-exited
	}
	// Children a bridge may have left behind (npx → node).
	_ = syscall.Kill(-s.procPID, syscall.SIGKILL)
	s.mu.Lock()
	defer s.mu.Unlock()
	return nil
}

// failure is the protocol violation the reader saw, if any.
func (s *stdioSession) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// resultOf checks that frame answers id with a result and returns it.
func resultOf(frame []byte, id string) ([]byte, error) {
	r := gjson.GetManyBytes(frame, "id", "result", "error")
	if r[0].Raw != id {
		return nil, fmt.Errorf("answer carries id %s, want %s", r[0].Raw, id)
	}
	if r[2].Exists() {
		return nil, fmt.Errorf("error answer: %s", r[2].Raw)
	}
	if !r[1].IsObject() {
		return nil, fmt.Errorf("answer has no result object: %.300s", frame)
	}
	return []byte(r[1].Raw), nil
}

// tailBuffer keeps the last max bytes written (a bridge's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}

// ---- direct: a 2026-07-28 client POSTing to the upstream ----

// directMeta is the request _meta a 2026 client sends on every request
// (protocol version and client capabilities): the same block the proxy injects
// for this bench's client.
const directMeta = `{"io.modelcontextprotocol/protocolVersion":"` + modernVersion + `",` +
	`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + tasksExt + `":{}}},` +
	`"io.modelcontextprotocol/clientInfo":{"name":"mcp-tasks-bench","version":"1"}}`

type directSession struct {
	url    string
	client *http.Client
	tr     *http.Transport
	next   atomic.Int64
}

// startDirect makes a fresh HTTP client (no pooled connection) and sends
// server/discover, as a 2026 client does once; it returns that round trip.
func startDirect(ctx context.Context, url string) (*directSession, time.Duration, error) {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
	}
	d := &directSession{url: url, client: &http.Client{Transport: tr}, tr: tr}
	t0 := time.Now()
	res, err := d.post(ctx, "server/discover", "", `{"_meta":`+directMeta+`}`)
	startup := time.Since(t0)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, 0, fmt.Errorf("server/discover: %w", err)
	}
	if !bytes.Contains(res, []byte(`"`+modernVersion+`"`)) {
		tr.CloseIdleConnections()
		return nil, 0, fmt.Errorf("server/discover does not list %s: %.300s", modernVersion, res)
	}
	return d, startup, nil
}

func (d *directSession) pid() int { return 0 }

func (d *directSession) close() error {
	d.tr.CloseIdleConnections()
	return nil
}

// post sends one request with the standard 2026 headers and returns its
// result's raw JSON.
func (d *directSession) post(ctx context.Context, method, name, params string) ([]byte, error) {
	id := strconv.FormatInt(d.next.Add(1), 10)
	body := requestFrame(id, method, params, 0)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	h["Mcp-Protocol-Version"] = []string{modernVersion}
	h["Mcp-Method"] = []string{method}
	if name != "" {
		h["Mcp-Name"] = []string{name}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := readBody(resp)
	if err != nil {
		return nil, err
	}
	return answerResult(resp, b, id)
}

// requestFrame is a JSON-RPC request with raw params, with room for extra
// bytes after it.
func requestFrame(id, method, params string, extra int) []byte {
	f := make([]byte, 0, len(params)+64+len(method)+extra)
	f = append(f, `{"jsonrpc":"2.0","id":`...)
	f = append(f, id...)
	f = append(f, `,"method":"`...)
	f = append(f, method...)
	f = append(f, `","params":`...)
	f = append(f, params...)
	return append(f, '}')
}

// answerResult is the result of the answer to id in an HTTP answer's body
// b, sent as JSON or as an SSE stream.
func answerResult(resp *http.Response, b []byte, id string) ([]byte, error) {
	switch ct, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";"); ct {
	case "application/json":
		return resultOf(b, id)
	case "text/event-stream":
		frame, err := sseAnswer(b, func([]byte) {})
		if err != nil {
			return nil, err
		}
		return resultOf(frame, id)
	default:
		return nil, fmt.Errorf("HTTP %d, Content-Type %q: %.300s", resp.StatusCode, ct, b)
	}
}

// call sends tools/call; a CreateTaskResult is followed as a 2026 client
// would: wait pollIntervalMs, then tasks/get until the task is terminal.
func (d *directSession) call(ctx context.Context, tool, args string) ([]byte, error) {
	res, err := d.post(ctx, "tools/call", tool, `{"_meta":`+directMeta+`,"name":"`+tool+`","arguments":`+args+`}`)
	if err != nil || gjson.GetBytes(res, "resultType").Str != "task" {
		return res, err
	}
	task := gjson.ParseBytes(res)
	tid := task.Get("taskId").String()
	poll := time.Duration(task.Get("pollIntervalMs").Int()) * time.Millisecond
	for {
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		got, err := d.post(ctx, "tasks/get", tid, `{"_meta":`+directMeta+`,"taskId":`+quote(tid)+`}`)
		if err != nil {
			return nil, fmt.Errorf("tasks/get: %w", err)
		}
		g := gjson.ParseBytes(got)
		switch g.Get("status").String() {
		case "completed":
			return []byte(g.Get("result").Raw), nil
		case "failed", "cancelled":
			return nil, fmt.Errorf("task ended %s: %.300s", g.Get("status").String(), got)
		}
		if p := g.Get("pollIntervalMs"); p.Exists() {
			poll = time.Duration(p.Int()) * time.Millisecond
		}
	}
}

// readBody reads an answer's whole body. When its length is known, that is
// one allocation of exactly that size, with one byte of room for the line's
// newline, and no more: bytes.Buffer.ReadFrom would grow it (a second
// copy) as it nears the end.
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n > 0 {
		buf := make([]byte, n, n+1)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		var extra [1]byte
		if k, _ := resp.Body.Read(extra[:]); k > 0 {
			return nil, errors.New("reading the answer: longer than its Content-Length")
		}
		return buf, nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	return b, nil
}
