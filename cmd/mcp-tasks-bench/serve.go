package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
)

// ---- serve: a legacy 2025-11-25 Streamable HTTP client of `mcp-tasks-proxy serve` ----

// serveSession is one MCP session of a legacy HTTP client with the proxy
// in serve mode: the proxy runs as its own process (one per session, so
// that its CPU and memory are this session's alone), listening on a
// loopback port it picks; the client POSTs 2025 frames to /mcp with the
// session's Mcp-Session-Id, as the v1 SDKs' Streamable HTTP clients do.
type serveSession struct {
	cmd     *exec.Cmd
	procPID int
	stderr  *tailBuffer
	url     string // http://127.0.0.1:PORT/mcp
	session string // Mcp-Session-Id
	client  *http.Client
	tr      *http.Transport
	next    atomic.Int64
}

// listeningPrefix starts the one stderr line serve prints once it listens.
const listeningPrefix = "listening on "

// startServe spawns argv (`mcp-tasks-proxy serve ...`), waits for its
// listening line, then initializes a session over HTTP. It returns the time
// from just before the spawn to the initialize answer, as startStdio does.
func startServe(ctx context.Context, argv []string) (*serveSession, time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, 0, err
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     90 * time.Second,
	}
	s := &serveSession{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}, client: &http.Client{Transport: tr}, tr: tr}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	s.procPID = cmd.Process.Pid
	if s.url, err = s.awaitListening(ctx, errPipe); err != nil {
		_ = s.close()
		return nil, 0, err
	}
	init := `{"protocolVersion":"` + legacyVersion + `","capabilities":{},"clientInfo":{"name":"mcp-tasks-bench","version":"1"}}`
	raw, err := s.post(ctx, "initialize", init)
	startup := time.Since(t0)
	if err != nil {
		_ = s.close()
		return nil, 0, fmt.Errorf("initialize: %w (stderr: %s)", err, s.stderr.String())
	}
	if gjson.GetBytes(raw, "protocolVersion").String() == "" || s.session == "" {
		_ = s.close()
		return nil, 0, fmt.Errorf("initialize answer has no protocolVersion or no Mcp-Session-Id: %.300s", raw)
	}
	if err := s.notify(ctx, "notifications/initialized"); err != nil {
		_ = s.close()
		return nil, 0, err
	}
	return s, startup, nil
}

// awaitListening reads stderr up to the listening line and returns the
// endpoint it names; the rest of stderr goes to the tail buffer.
func (s *serveSession) awaitListening(ctx context.Context, stderr io.Reader) (string, error) {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && strings.HasPrefix(line, listeningPrefix) {
				found <- strings.TrimSpace(strings.TrimPrefix(line, listeningPrefix))
				sent = true
				continue
			}
			_, _ = s.stderr.Write([]byte(line + "\n"))
		}
		if !sent {
			close(found)
		}
	}()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	select {
	case u, ok := <-found:
		if !ok {
			return "", fmt.Errorf("serve ended before listening (stderr: %s)", s.stderr.String())
		}
		return u, nil
	case <-wait.Done():
		return "", fmt.Errorf("serve printed no %q line within 10 s (stderr: %s)", listeningPrefix, s.stderr.String())
	}
}

func (s *serveSession) pid() int { return s.procPID }

// exchange POSTs one message and returns the HTTP answer's body and type.
func (s *serveSession) exchange(ctx context.Context, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	if s.session != "" {
		h["Mcp-Session-Id"] = []string{s.session}
		h["Mcp-Protocol-Version"] = []string{legacyVersion}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := readBody(resp)
	return resp, b, err
}

// post sends one request and returns its result's raw JSON; the first
// answer's Mcp-Session-Id becomes the session's.
func (s *serveSession) post(ctx context.Context, method, params string) ([]byte, error) {
	id := strconv.FormatInt(s.next.Add(1), 10)
	body := requestFrame(id, method, params, 0)
	resp, b, err := s.exchange(ctx, body)
	if err != nil {
		return nil, err
	}
	if s.session == "" {
		s.session = resp.Header.Get("Mcp-Session-Id")
	}
	return answerResult(resp, b, id)
}

// notify sends a notification, which serve accepts with 202.
func (s *serveSession) notify(ctx context.Context, method string) error {
	resp, b, err := s.exchange(ctx, []byte(`{"jsonrpc":"2.0","method":"`+method+`"}`))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("%s: HTTP %d, want 202: %.300s", method, resp.StatusCode, b)
	}
	return nil
}

// call sends tools/call; the proxy follows a task itself for a legacy
// client, so the answer is the final result.
func (s *serveSession) call(ctx context.Context, tool, args string) ([]byte, error) {
	return s.post(ctx, "tools/call", `{"name":"`+tool+`","arguments":`+args+`}`)
}

// close ends the session with DELETE, then stops the process with SIGTERM
// (it exits 0 once its sessions are done), killing it after 5 s.
func (s *serveSession) close() error {
	var errs []error
	if s.session != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
		if err == nil {
			req.Header.Set("Mcp-Session-Id", s.session)
			var resp *http.Response
			if resp, err = s.client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode >= 300 {
					err = fmt.Errorf("DELETE: HTTP %d", resp.StatusCode)
				}
			}
		}
		cancel()
		errs = append(errs, err)
	}
	s.tr.CloseIdleConnections()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			errs = append(errs, fmt.Errorf("serve did not exit cleanly on SIGTERM: %w (stderr: %s)", err, s.stderr.String()))
		}
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.procPID, syscall.SIGKILL)
		<-exited
		errs = append(errs, errors.New("serve did not exit within 5 s of SIGTERM"))
	}
	return errors.Join(errs...)
}
