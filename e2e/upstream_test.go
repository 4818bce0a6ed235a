package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// upstreamPath is where the test upstreams are mounted; the proxy must POST
// to exactly the URL it was given.
const upstreamPath = "/mcp"

// exchange is one HTTP request the proxy made upstream, and its answer.
type exchange struct {
	HTTPMethod string
	Path       string
	Header     http.Header
	Body       []byte
	RPCMethod  string // the JSON-RPC method of Body
	ID         string // the raw JSON-RPC id of Body
	Remote     string // the client's address: one per TCP connection

	// The answer: read them with upstream.response, which waits for the
	// handler to return.
	status     int
	respHeader http.Header
	respBody   []byte
	done       chan struct{} // closed when the handler has returned
}

// upstream is an httptest server with a recording middleware in front of a
// handler. Every POSTed body is validated against the 2026-07-28 schema and
// its MCP headers are checked against the body; violations fail the test at
// its end.
type upstream struct {
	t    testing.TB
	v    *schematest.Validator
	next http.Handler
	srv  *httptest.Server
	URL  string

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every new request
	exchanges []*exchange
	ids       map[string]bool
	problems  []string
}

// newDemoUpstream serves the embedded demo server behind the recorder.
func newDemoUpstream(t testing.TB) *upstream { return newUpstream(t, demo.Handler()) }

func newUpstream(t testing.TB, h http.Handler) *upstream {
	t.Helper()
	u := &upstream{
		t:       t,
		v:       schematest.Load(t),
		next:    h,
		changed: make(chan struct{}),
		ids:     map[string]bool{},
	}
	u.srv = httptest.NewServer(u)
	u.URL = u.srv.URL + upstreamPath
	t.Cleanup(func() {
		// Force-close live connections first, so that a handler the proxy
		// failed to cancel cannot make Close wait for it.
		u.srv.CloseClientConnections()
		u.srv.Close()
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, p := range u.problems {
			t.Errorf("upstream: %s", p)
		}
	})
	return u
}

func (u *upstream) problem(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.problems = append(u.problems, fmt.Sprintf(format, args...))
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/.well-known/") {
		// The proxy's OAuth discovery after a 401: these servers publish
		// no metadata, so the 401 reaches the client as it is.
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		u.problem("%s %s: reading the request body: %v", r.Method, r.URL.Path, err)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	ex := &exchange{
		HTTPMethod: r.Method,
		Path:       r.URL.Path,
		Header:     r.Header.Clone(),
		Body:       body,
		RPCMethod:  gjson.GetBytes(body, "method").String(),
		ID:         gjson.GetBytes(body, "id").Raw,
		Remote:     r.RemoteAddr,
		done:       make(chan struct{}),
	}
	var probs []string
	if r.Method != http.MethodPost {
		probs = append(probs, fmt.Sprintf("%s %s: a 2026-07-28 client only POSTs", r.Method, r.URL.Path))
	} else {
		if r.URL.Path != upstreamPath {
			probs = append(probs, fmt.Sprintf("POST to %s, want %s", r.URL.Path, upstreamPath))
		}
		if err := u.v.ValidateUpstream(body); err != nil {
			probs = append(probs, fmt.Sprintf("body does not validate against 2026-07-28: %v", err))
		}
		probs = append(probs, checkUpstreamHeaders(r.Header, body, u.rawRetry(ex))...)
	}
	u.mu.Lock()
	if ex.ID != "" {
		if u.ids[ex.ID] {
			probs = append(probs, fmt.Sprintf("upstream id %s used twice: the proxy must mint a fresh id per request", ex.ID))
		}
		u.ids[ex.ID] = true
	}
	for _, p := range probs {
		u.problems = append(u.problems, fmt.Sprintf("%s %s: %s", ex.RPCMethod, shortBytes(body), p))
	}
	u.exchanges = append(u.exchanges, ex)
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()

	rw := &recordingWriter{ResponseWriter: w}
	u.next.ServeHTTP(rw, r)

	u.mu.Lock()
	ex.status = rw.status // 0 when the handler wrote nothing (or hijacked)
	ex.respHeader = w.Header().Clone()
	ex.respBody = rw.body.Bytes()
	u.mu.Unlock()
	close(ex.done)
}

// rawRetry reports whether ex may carry a raw UTF-8 Mcp-Name: only as the
// one retry of the same request whose Base64 form the server refused with
// -32020 (a server that compares the header undecoded, like go-sdk v1.8.0).
func (u *upstream) rawRetry(ex *exchange) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	params := gjson.GetBytes(ex.Body, "params").Raw
	for i := len(u.exchanges) - 1; i >= 0; i-- {
		prev := u.exchanges[i]
		if prev.RPCMethod != ex.RPCMethod || gjson.GetBytes(prev.Body, "params").Raw != params {
			continue
		}
		select {
		case <-prev.done:
		default:
			return false // still unanswered: not a retry
		}
		return strings.HasPrefix(prev.Header.Get("Mcp-Name"), "=?base64?") &&
			gjson.GetBytes(prev.respBody, "error.code").Int() == -32020
	}
	return false
}

// response waits (bounded) for the handler of ex to return and gives its
// answer: status (0 when nothing was written), header and body.
func (u *upstream) response(t testing.TB, ex *exchange) (int, http.Header, []byte) {
	t.Helper()
	select {
	case <-ex.done:
	case <-time.After(waitTimeout):
		t.Fatalf("the upstream handler for %s did not return within %v", ex.RPCMethod, waitTimeout)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return ex.status, ex.respHeader, ex.respBody
}

// requests returns the recorded exchanges whose JSON-RPC method is method
// ("" for all).
func (u *upstream) requests(method string) []*exchange {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []*exchange
	for _, ex := range u.exchanges {
		if method == "" || ex.RPCMethod == method {
			out = append(out, ex)
		}
	}
	return out
}

// waitRequest waits until a recorded request satisfies pred.
func (u *upstream) waitRequest(t testing.TB, desc string, pred func(*exchange) bool) *exchange {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		u.mu.Lock()
		for _, ex := range u.exchanges {
			if pred(ex) {
				u.mu.Unlock()
				return ex
			}
		}
		ch := u.changed
		u.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("upstream never received %s within %v", desc, waitTimeout)
			return nil
		}
	}
}

// recordingWriter keeps a copy of the response. It passes Flush and, via
// Unwrap, Hijack through to the real writer.
type recordingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checkUpstreamHeaders compares the MCP headers of a POST with its body
// (the 2026-07-28 Streamable HTTP transport: POST, standard headers, value
// encoding).
func checkUpstreamHeaders(h http.Header, body []byte, rawRetry bool) []string {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	method := gjson.GetBytes(body, "method").String()

	if got := h.Values("MCP-Protocol-Version"); len(got) != 1 || got[0] != "2026-07-28" {
		bad("MCP-Protocol-Version = %q, want exactly [2026-07-28]", got)
	}
	if pv := gjson.GetBytes(body, `params._meta.io\.modelcontextprotocol/protocolVersion`).String(); pv != h.Get("MCP-Protocol-Version") {
		bad("MCP-Protocol-Version %q differs from _meta protocolVersion %q", h.Get("MCP-Protocol-Version"), pv)
	}
	if got := h.Values("Mcp-Method"); len(got) != 1 || got[0] != method {
		bad("Mcp-Method = %q, want exactly [%s] (the body's method)", got, method)
	}
	var json, sse bool
	for _, v := range h.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				bad("Accept %q: %v", v, err)
				continue
			}
			json = json || mt == "application/json"
			sse = sse || mt == "text/event-stream"
		}
	}
	if !json || !sse {
		bad("Accept = %q must list both application/json and text/event-stream", h.Values("Accept"))
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		bad("Content-Type = %q, want application/json", h.Get("Content-Type"))
	}
	for _, never := range []string{"Mcp-Session-Id", "Last-Event-Id"} {
		if v := h.Values(never); len(v) > 0 {
			bad("%s = %q must never be sent to a 2026-07-28 server", never, v)
		}
	}

	nameParam := ""
	switch method {
	case "tools/call", "prompts/get":
		nameParam = "name"
	case "resources/read":
		nameParam = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		nameParam = "taskId"
	}
	names := h.Values("Mcp-Name")
	if nameParam == "" {
		if len(names) > 0 {
			bad("Mcp-Name = %q on %s, which carries no Mcp-Name", names, method)
		}
		return probs
	}
	want := gjson.GetBytes(body, "params."+nameParam)
	if len(names) != 1 {
		bad("Mcp-Name = %q, want exactly one value (params.%s = %s)", names, nameParam, want.Raw)
		return probs
	}
	raw := names[0]
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c < 0x20 || c == 0x7f || c > 0x7e && !(rawRetry && utf8.ValidString(raw)) {
			bad("Mcp-Name %q has byte %#x, which must be Base64-encoded", raw, c)
			break
		}
	}
	if strings.TrimSpace(raw) != raw {
		bad("Mcp-Name %q has surrounding whitespace, which must be Base64-encoded", raw)
	}
	got, err := decodeHeaderValue(raw)
	if err != nil {
		bad("Mcp-Name %q: %v", raw, err)
	} else if want.Type != gjson.String || got != want.Str {
		bad("Mcp-Name %q decodes to %q, want params.%s = %s", raw, got, nameParam, want.Raw)
	}
	return probs
}

// decodeHeaderValue reverses the =?base64?…?= sentinel of 2026-07-28
// Streamable HTTP header values
// (standard, padded Base64 of UTF-8); other values are returned as they are.
func decodeHeaderValue(v string) (string, error) {
	const pre, suf = "=?base64?", "?="
	if len(v) < len(pre)+len(suf) || !strings.HasPrefix(v, pre) || !strings.HasSuffix(v, suf) {
		return v, nil
	}
	b, err := base64.StdEncoding.Strict().DecodeString(v[len(pre) : len(v)-len(suf)])
	if err != nil {
		return "", fmt.Errorf("bad Base64 in sentinel: %v", err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("sentinel does not hold UTF-8")
	}
	return string(b), nil
}

// shortBytes quotes the start of b for messages.
func shortBytes(b []byte) string {
	const n = 300
	if len(b) > n {
		return fmt.Sprintf("%s…(%d bytes)", b[:n], len(b))
	}
	return string(b)
}

// waitTimeout bounds every single wait in these tests. It is a safety net
// against hangs, not a speed requirement: nothing here should take more than
// a fraction of it.
const waitTimeout = 60 * time.Second
