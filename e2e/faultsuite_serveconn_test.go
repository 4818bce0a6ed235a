package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The fault suite's cases for what a connection may hold of `serve`
// (nothing unbounded on a connection): every stalled connection is answered or
// closed within a bound, before and after authentication; a refused request
// does not wait for its body; memory grows with the bytes that arrive, not with
// a declared Content-Length; and the bodies in progress, across every
// connection, are bounded (--max-body-memory).
//
// The bounds are set small with --read-timeout; each wait is a generous
// multiple of them (scWait), and no case asserts how fast anything is.

// scBound is the --read-timeout of these proxies; scWait bounds every wait
// for an outcome the bound decides (far below the minutes a connection
// was held before, and far above the bound).
const (
	scBound = 300 * time.Millisecond
	scWait  = 10 * time.Second
)

// scAnswer is what came back on a raw connection.
type scAnswer struct {
	resp   *http.Response // nil: no answer
	body   []byte
	closed bool // the server closed the connection
}

// scSend dials host, writes raw, and reads the one answer (if any) and then
// the connection's end, all within wait.
func scSend(t *testing.T, host, raw string, wait time.Duration) scAnswer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", host, wait)
	if err != nil {
		t.Fatalf("dialing %s: %v", host, err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatalf("writing the request: %v", err)
	}
	return scRead(conn, bufio.NewReader(conn), wait)
}

// scRead reads an answer from br (conn's) and, when the answer says
// Connection: close, waits for the server to close conn, within wait.
func scRead(conn net.Conn, br *bufio.Reader, wait time.Duration) scAnswer {
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	var a scAnswer
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		a.closed = scClosed(err)
		return a
	}
	a.resp = resp
	a.body, err = io.ReadAll(resp.Body)
	if err != nil {
		a.closed = scClosed(err)
		return a
	}
	if !resp.Close {
		return a // kept: nothing tells when a close would come
	}
	_, err = br.ReadByte()
	a.closed = err != nil && scClosed(err)
	return a
}

// scClosed reports whether a read error is the server's end of the
// connection (EOF or a reset), not the test's deadline.
func scClosed(err error) bool {
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// scPost is a raw POST /mcp that declares declared bytes and carries sent
// of them; extra are more header lines ("Name: value\r\n").
func scPost(host string, declared int, sent, extra string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: %d\r\n\r\n%s",
		host, extra, declared, sent)
}

// scStatus requires an answer with status want, and returns its JSON-RPC
// error message ("" when the body is not one).
func scStatus(t *testing.T, what string, a scAnswer, want int) string {
	t.Helper()
	if a.resp == nil {
		t.Fatalf("%s: no answer within %v (closed: %v), want %d", what, scWait, a.closed, want)
	}
	if a.resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d; body %s", what, a.resp.StatusCode, want, shortBytes(a.body))
	}
	return gjson.GetBytes(a.body, "error.message").String()
}

// scMustClose requires the server to have closed the connection after
// its answer, and the answer to have said so.
func scMustClose(t *testing.T, what string, a scAnswer) {
	t.Helper()
	if !a.closed {
		t.Errorf("%s: the connection was still open %v after the answer, want it closed", what, scWait)
	}
	if a.resp != nil && !a.resp.Close {
		t.Errorf("%s: the answer did not carry Connection: close", what)
	}
}

// TestFaultSuiteServeConnBounds: before and after the token's check, a
// stalled request is answered or closed within --read-timeout, and a
// refused request that declares a body it does not send is answered at
// once, without waiting for the body (on a proxy whose --read-timeout is
// far past the test's wait), and its connection closed; a well-formed
// request keeps its connection, and SSE answers (a POST's, a GET stream)
// outlive the bound.
func TestFaultSuiteServeConnBounds(t *testing.T) {
	t.Parallel()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("conn-bounds-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := startServeCmd(t, "--auth-token-file", tok, "--read-timeout", scBound.String(), "--demo")
	long := startServeCmd(t, "--auth-token-file", tok, "--read-timeout", "10m", "--demo")
	scListening(t, short)
	scListening(t, long)
	auth := "Authorization: Bearer conn-bounds-token\r\n"

	t.Run("cases", func(t *testing.T) { scBoundsCases(t, short, long, auth) })

	// Both keep serving.
	for _, s := range []*serveProc{short, long} {
		a := scSend(t, s.Host, "GET /healthz HTTP/1.1\r\nHost: "+s.Host+"\r\n\r\n", scWait)
		if a.resp == nil {
			t.Errorf("/healthz after the cases: no answer within %v", scWait)
		}
	}
}

// scBoundsCases are TestFaultSuiteServeConnBounds's cases, in parallel:
// the bounds on s (--read-timeout scBound), the refusals on long.
func scBoundsCases(t *testing.T, s, long *serveProc, auth string) {
	t.Run("stalled headers are closed", func(t *testing.T) {
		t.Parallel()
		a := scSend(t, s.Host, "GET /healthz HTTP/1.1\r\nHost: "+s.Host+"\r\n", scWait)
		if !a.closed {
			t.Errorf("headers that never end: the connection was still open after %v, want it closed", scWait)
		}
	})

	t.Run("stalled body gets 408", func(t *testing.T) {
		t.Parallel()
		a := scSend(t, s.Host, scPost(s.Host, 1000, "{", auth), scWait)
		msg := scStatus(t, "a POST that sends 1 of its 1000 bytes", a, http.StatusRequestTimeout)
		if !strings.Contains(msg, "--read-timeout") {
			t.Errorf("the 408's message %q does not name --read-timeout", msg)
		}
		scMustClose(t, "the 408", a)
	})

	// Refusals of requests that declare a body and send none: each is
	// answered without waiting for it, and its connection closed.
	h := long.Host
	for _, c := range []struct {
		name string
		raw  string
		want int
	}{
		{"/healthz with a declared body", "GET /healthz HTTP/1.1\r\nHost: " + h + "\r\nContent-Length: 262143\r\n\r\n", http.StatusOK},
		{"401 with a declared body", scPost(h, 1000, "", ""), http.StatusUnauthorized},
		{"403 with a declared body", scPost(h, 1000, "", auth+"Origin: http://evil.example\r\n"), http.StatusForbidden},
		{"404 with a declared body", "POST /nowhere HTTP/1.1\r\nHost: " + h + "\r\nContent-Length: 1000\r\n\r\n", http.StatusNotFound},
		{"413 declared", scPost(h, 200<<20, `{"jsonrpc":"2.0"`, auth), http.StatusRequestEntityTooLarge},
		{"chunked 401", "POST /mcp HTTP/1.1\r\nHost: " + h + "\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := scSend(t, h, c.raw, scWait)
			if a.resp != nil && a.resp.StatusCode == http.StatusServiceUnavailable && c.want == http.StatusOK {
				c.want = http.StatusServiceUnavailable // /healthz says how the upstream is
			}
			scStatus(t, c.name, a, c.want)
			scMustClose(t, c.name, a)
		})
	}

	t.Run("a well-formed request keeps its connection", func(t *testing.T) {
		t.Parallel()
		conn, err := net.DialTimeout("tcp", s.Host, scWait)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		for i := range 2 {
			body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			if _, err := io.WriteString(conn, scPost(s.Host, len(body), body, auth)); err != nil {
				t.Fatalf("request %d: %v", i+1, err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(scWait))
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("request %d on one connection: %v", i+1, err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || resp.Close { // no session: 400, on a connection kept
				t.Fatalf("request %d: status %d, close %v, want 400 on a kept connection; body %s", i+1, resp.StatusCode, resp.Close, shortBytes(b))
			}
		}
	})

	t.Run("SSE answers outlive the bound", func(t *testing.T) {
		t.Parallel()
		c := s.rawSession(t, newServeFrames(t, false))
		c.header.Set("Authorization", "Bearer conn-bounds-token")
		c.initialize(serveInit)
		get := c.openStream("")
		// slow_count sends a progress notification per step, so that its
		// answer is a stream, and takes 2 × 2 bounds.
		delay := 2 * scBound
		start := time.Now()
		resp, cancel := c.do(http.MethodPost, serveRequest(`"long"`, "tools/call",
			fmt.Sprintf(`{"name":"slow_count","arguments":{"n":3,"delay_ms":%d},"_meta":{"progressToken":"p"}}`, delay.Milliseconds())), nil)
		defer cancel()
		defer resp.Body.Close()
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
			t.Fatalf("slow_count with progress: status %d %q, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		res := resultOf(t, c.answerOf(resp, `"long"`, "tools/call"))
		if got := tkText(res); got != "counted to 3" {
			t.Errorf("slow_count = %q, want %q", got, "counted to 3")
		}
		if took := time.Since(start); took < 2*delay {
			t.Fatalf("the stream took %v, less than the %v its delays add up to: it cannot have outlived the bound", took, 2*delay)
		}
		get.mu.Lock()
		ended, err := get.ended, get.err
		get.mu.Unlock()
		if ended {
			t.Errorf("the GET stream ended (%v) within the POST's %v, past --read-timeout %v; want it open", err, 2*delay, scBound)
		}
	})

}

// TestFaultSuiteServeBodyMemory: a body's memory grows with the bytes that
// arrive, whatever its Content-Length declares, so that many requests that
// declare the maximum and send 200 bytes take nothing from
// --max-body-memory (each is answered 408 when the bound runs out, none 503);
// the bodies that do arrive are bounded by it: past it a request gets 503
// with Retry-After and the process keeps serving.
func TestFaultSuiteServeBodyMemory(t *testing.T) {
	t.Parallel()

	t.Run("declared, not sent", func(t *testing.T) {
		t.Parallel()
		// Twenty declared maximums are 20 MiB; the memory is 1 MiB.
		s := startServe(t, "--max-message-size", "1MiB", "--max-body-memory", "1MiB", "--read-timeout", scBound.String(), "--demo")
		scStalled(t, s, 20, 1<<20)
		c := s.rawSession(t, newServeFrames(t, false))
		c.initialize(serveInit)
		serveEcho(t, c, `"after"`, "still serving")
	})

	t.Run("bodies past the memory get 503", func(t *testing.T) {
		t.Parallel()
		s := startServe(t, "--max-message-size", "64KiB", "--max-body-memory", "64KiB", "--demo")
		// A holds 60 KiB of the 64: its buffer grows to its declared
		// size once 40 KiB have come, and it waits for the rest.
		conn, err := net.DialTimeout("tcp", s.Host, scWait)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, scPost(s.Host, 60<<10, strings.Repeat(" ", 40<<10), "")); err != nil {
			t.Fatal(err)
		}
		// B, a whole 20 KiB body, needs 16 KiB: it gets 503 once the
		// proxy has read A's bytes (before, it is read and answered 400,
		// as it carries no session).
		bBody := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + strings.Repeat(" ", 20<<10)
		var b scAnswer
		deadline := time.Now().Add(scWait)
		for {
			b = scSend(t, s.Host, scPost(s.Host, len(bBody), bBody, ""), scWait)
			if b.resp == nil || b.resp.StatusCode != http.StatusBadRequest || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		msg := scStatus(t, "a body past --max-body-memory", b, http.StatusServiceUnavailable)
		if !strings.Contains(msg, "--max-body-memory") {
			t.Errorf("the 503's message %q does not name --max-body-memory", msg)
		}
		if b.resp.Header.Get("Retry-After") == "" {
			t.Errorf("the 503 carries no Retry-After")
		}
		scMustClose(t, "the 503", b)
		// A goes away: its memory comes back, and B's kind is served.
		conn.Close()
		deadline = time.Now().Add(scWait)
		for {
			b = scSend(t, s.Host, scPost(s.Host, len(bBody), bBody, ""), scWait)
			if b.resp == nil || b.resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		scStatus(t, "the same body once A has gone", b, http.StatusBadRequest)
		c := s.rawSession(t, newServeFrames(t, false))
		c.initialize(serveInit)
		serveEcho(t, c, `"after"`, "still serving")
	})
}

// scStalled sends n requests at once that each declare declared bytes and
// send 200, and requires each to be answered 408 (none 503: what did not
// arrive holds no memory) and closed.
func scStalled(t *testing.T, s *serveProc, n, declared int) {
	t.Helper()
	sent := (`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 200))[:200]
	answers := make([]scAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = scSend(t, s.Host, scPost(s.Host, declared, sent, ""), scWait) })
	}
	wg.Wait()
	for i, a := range answers {
		what := fmt.Sprintf("request %d of %d declaring %d bytes and sending 200", i+1, n, declared)
		scStatus(t, what, a, http.StatusRequestTimeout)
		scMustClose(t, what, a)
	}
}

// TestFaultSuiteServeAddressSpace: thirty requests that declare the
// default maximum (128 MiB) and send 200 bytes reserve no memory for what
// they declared: the process's peak address space grows by less than eight
// of them would take (1 GiB; the old reader took 30 × 128 MiB), it does not crash under a 3 GiB address-space limit,
// and it keeps serving. The race detector reserves more address space than
// that limit for its shadow memory, so under -race the process runs without
// it, and the peak is what shows the fault.
func TestFaultSuiteServeAddressSpace(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc to read the process's address space from")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set the limit with ulimit -v")
	}
	t.Parallel()
	args := []string{"--read-timeout", scBound.String(), "--demo"}
	var s *serveProc
	if raceEnabled {
		s = startServe(t, args...)
	} else {
		s = startServeLimited(t, 3<<20, args...)
	}
	pid := s.cmd.Process.Pid
	before, err := fsProcKiB(pid, "VmPeak")
	if err != nil {
		t.Fatal(err)
	}
	scStalled(t, s, 30, 128<<20)
	after, err := fsProcKiB(pid, "VmPeak")
	if err != nil {
		t.Fatal(err)
	}
	if grew := (after - before) << 10; grew >= 1<<30 {
		t.Errorf("the proxy's peak address space grew by %d MiB for 30 requests that sent 200 bytes each: memory was reserved for the declared Content-Length", grew>>20)
	}
	c := s.rawSession(t, newServeFrames(t, false))
	c.initialize(serveInit)
	serveEcho(t, c, `"after"`, "still serving")
}

// startServeLimited is startServe under `ulimit -v kib`.
func startServeLimited(t *testing.T, kib int, args ...string) *serveProc {
	t.Helper()
	full := append([]string{"-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, kib), binPath, "serve", "--listen", "127.0.0.1:0"}, args...)
	s := &serveProc{t: t, stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command("sh", full...)
	s.cmd.Env = proxyEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("starting serve under ulimit -v: %v", err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.cleanup)
	scListening(t, s)
	return s
}

// scListening waits (bounded) for s's "listening on" line, as startServe
// does, and takes its address.
func scListening(t *testing.T, s *serveProc) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if u, ok := s.listening(); ok {
			s.URL = u
			s.Base = strings.TrimSuffix(u, "/mcp")
			s.Host = strings.TrimPrefix(s.Base, "http://")
			return
		}
		select {
		case <-s.exited:
			t.Fatalf("serve %s exited (%v) before listening; stderr:\n%s", strings.Join(s.cmd.Args[1:], " "), s.waitErr, s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen within %v; stderr:\n%s", waitTimeout, s.stderr.String())
		}
	}
}
