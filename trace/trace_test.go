package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lines decodes JSONL output, failing on any invalid line.
func lines(t *testing.T, out []byte) []Record {
	t.Helper()
	var recs []Record
	for i, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		if !json.Valid([]byte(l)) {
			t.Fatalf("line %d is not valid JSON: %s", i+1, l)
		}
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// write emits recs on a fresh Writer and returns its output.
func write(t *testing.T, o Options, recs ...Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := New(&buf, o)
	for _, r := range recs {
		w.Emit(r)
	}
	dropped, err := w.Close()
	if dropped != 0 || err != nil {
		t.Fatalf("Close = %d, %v", dropped, err)
	}
	return buf.Bytes()
}

func TestEmitCloseWritesJSONL(t *testing.T) {
	ts := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	out := write(t, Options{},
		Record{Time: ts, Dir: ClientToProxy, Op: "1", Method: "tools/call", ID: json.RawMessage(`7`),
			Frame: json.RawMessage("{\"jsonrpc\":\"2.0\",\"id\":7,\n \"method\":\"tools/call\",\"params\":{\"q\":\"<b>&\"}}\r\n")},
		Record{Dir: ProxyToServer, Op: "1", Rewrites: []string{"meta.inject"}, HTTP: &HTTP{Method: "POST", URL: "http://h/mcp"}},
		Record{Dir: ProxyToClient, Op: "1", Frame: json.RawMessage(`not json`), LatencyMs: 1.5},
	)
	if !bytes.Contains(out, []byte(`<b>&`)) {
		t.Errorf("HTML was escaped: %s", out)
	}
	recs := lines(t, out)
	if len(recs) != 3 {
		t.Fatalf("got %d records:\n%s", len(recs), out)
	}
	if !recs[0].Time.Equal(ts) || recs[0].Dir != ClientToProxy || string(recs[0].ID) != "7" || recs[0].Method != "tools/call" {
		t.Errorf("record 0 = %+v", recs[0])
	}
	if recs[1].Time.IsZero() {
		t.Error("Emit did not fill in a zero Time")
	}
	if recs[1].Frame != nil || recs[1].HTTP.URL != "http://h/mcp" || recs[1].Rewrites[0] != "meta.inject" {
		t.Errorf("record 1 = %+v", recs[1])
	}
	if got := string(recs[2].Frame); got != `"[unparsable frame withheld]"` {
		t.Errorf("invalid frame stored as %s", got)
	}
}

// secretRecord carries one secret in every place the writer redacts.
func secretRecord() Record {
	return Record{
		Dir: ProxyToServer,
		HTTP: &HTTP{
			Method: "POST",
			URL:    "https://alice:pw-userinfo@example.com/mcp?key=q-secret&v=1",
			Header: map[string]string{
				"Authorization": "Bearer auth-secret",
				"cookie":        "sid=cookie-secret",
				"X-Tenant-Key":  "custom-secret",
				"X-Auth-Token":  "token-header-secret",
				"Mcp-Method":    "tools/call",
			},
		},
		Frame: json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"db":{"Password":"pw-nested"},` +
			`"list":[{"api_key":"apikey-secret"}],"sessionRef":"extra-secret","query":"visible"}}}`),
		Error: `Post "https://bob:pw-error@example.com/mcp?sig=err-secret": connection refused`,
	}
}

var secrets = []string{"pw-userinfo", "q-secret", "auth-secret", "cookie-secret", "custom-secret",
	"token-header-secret", "pw-nested", "apikey-secret", "extra-secret", "pw-error", "err-secret"}

func TestRedaction(t *testing.T) {
	t.Run("Header", func(t *testing.T) {
		testRedaction(t, func(w *Writer) { w.Emit(secretRecord()) })
	})
	// A request as the session's Observer sees it leave, with the headers
	// as an HTTP client holds them: the first value of each name is
	// written, redacted alike.
	t.Run("ToServer", func(t *testing.T) {
		r := secretRecord()
		req := http.Header{}
		for k, v := range r.HTTP.Header {
			req[k] = []string{v, "second-" + v}
		}
		req["X-Empty"] = nil
		out := testRedaction(t, func(w *Writer) {
			w.ToServer("", "op-1", nil, r.HTTP.Method, r.HTTP.URL, req, r.Frame)
			w.FromServer("", "op-1", 0, nil, time.Millisecond, errors.New(r.Error))
		})
		if bytes.Contains(out, []byte("second-")) || bytes.Contains(out, []byte("X-Empty")) {
			t.Errorf("more than the first value of each name:\n%s", out)
		}
		if recs := lines(t, out); recs[0].Method != "tools/call" || string(recs[0].ID) != "1" || recs[1].LatencyMs != 1 {
			t.Errorf("records lost what was not secret: %+v", recs)
		}
	})
}

// testRedaction runs emit on a writer with a secret header and key of the
// user's, and checks what it wrote: the first record's frame, URL and
// headers, and the last record's error.
func testRedaction(t *testing.T, emit func(w *Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := New(&buf, Options{SecretHeaders: []string{"x-tenant-key"}, RedactKeys: []string{"SESSIONREF"}})
	emit(w)
	if dropped, err := w.Close(); dropped != 0 || err != nil {
		t.Fatalf("Close = %d, %v", dropped, err)
	}
	out := buf.Bytes()
	for _, s := range secrets {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("secret %q leaked:\n%s", s, out)
		}
	}
	recs := lines(t, out)
	r := recs[0]
	for _, h := range []string{"Authorization", "cookie", "X-Tenant-Key", "X-Auth-Token"} {
		if r.HTTP.Header[h] != "[REDACTED]" {
			t.Errorf("header %s = %q", h, r.HTTP.Header[h])
		}
	}
	if r.HTTP.Header["Mcp-Method"] != "tools/call" {
		t.Errorf("plain header changed: %q", r.HTTP.Header["Mcp-Method"])
	}
	for _, want := range []string{`"Password":"[REDACTED]"`, `"api_key":"[REDACTED]"`, `"sessionRef":"[REDACTED]"`, `"query":"visible"`} {
		if !bytes.Contains(r.Frame, []byte(want)) {
			t.Errorf("frame lacks %s: %s", want, r.Frame)
		}
	}
	if last := recs[len(recs)-1]; !strings.Contains(r.HTTP.URL, "example.com/mcp") || !strings.Contains(last.Error, "connection refused") {
		t.Errorf("URL %q / error %q lost more than secrets", r.HTTP.URL, last.Error)
	}
	return out
}

// TestRedactionKeepsProtocolFields: progressToken and maxTokens are the
// protocol's own fields, not secrets; a trace shows them, in a whole frame
// and in the head of a frame over the cap, while the credentials next to
// them (and a RedactKeys key) are still hidden.
func TestRedactionKeepsProtocolFields(t *testing.T) {
	frame := `{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"_meta":{"progressToken":"tok-visible"},"maxTokens":512,` +
		`"access_token":"at-secret","code_verifier":"cv-secret","client_secret":"cs-secret","tenant":"tn-secret","messages":[]}}`
	big := strings.TrimSuffix(frame, "}}") + `,"pad":"` + strings.Repeat("x", 300) + `"}}`
	out := write(t, Options{RedactKeys: []string{"tenant"}, FrameCap: 280},
		Record{Dir: ProxyToClient, Frame: json.RawMessage(frame)},
		Record{Dir: ServerToProxy, Frame: json.RawMessage(big)},
	)
	for _, s := range []string{"at-secret", "cv-secret", "cs-secret", "tn-secret"} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("secret %q leaked:\n%s", s, out)
		}
	}
	recs := lines(t, out)
	if len(recs) != 2 || recs[0].Truncated || !recs[1].Truncated {
		t.Fatalf("records:\n%s", out)
	}
	var head struct {
		Head string `json:"head"`
	}
	if err := json.Unmarshal(recs[1].Frame, &head); err != nil {
		t.Fatal(err)
	}
	for i, f := range []string{string(recs[0].Frame), head.Head} {
		for _, want := range []string{`"progressToken":"tok-visible"`, `"maxTokens":512`, `"access_token":"[REDACTED]"`, `"code_verifier":"[REDACTED]"`} {
			if !strings.Contains(f, want) {
				t.Errorf("record %d lacks %s: %s", i, want, f)
			}
		}
	}
}

func TestNoRedactKeepsSecrets(t *testing.T) {
	out := write(t, Options{NoRedact: true, SecretHeaders: []string{"x-tenant-key"}}, secretRecord())
	for _, s := range secrets {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("NoRedact lost %q:\n%s", s, out)
		}
	}
	// An invalid frame is kept, as a JSON string.
	out = write(t, Options{NoRedact: true}, Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"a":`)})
	if got := string(lines(t, out)[0].Frame); got != `"{\"a\":"` {
		t.Errorf("invalid frame stored as %s", got)
	}
}

func TestEmitDoesNotAliasCaller(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, Options{NoRedact: true})
	frame := []byte(`{"id":1}`)
	hdr := map[string]string{"A": "1"}
	w.Emit(Record{Dir: ClientToProxy, Frame: frame, HTTP: &HTTP{Header: hdr}})
	copy(frame, `{"id":2}`)
	hdr["A"] = "2"
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := lines(t, buf.Bytes())[0]
	if string(r.Frame) != `{"id":1}` || r.HTTP.Header["A"] != "1" {
		t.Errorf("record changed after Emit: %s %v", r.Frame, r.HTTP.Header)
	}
}

// TestEmitLeavesCallerAlone: redaction happens in the record's line, never
// in what the record points to; the caller's frame, URL and headers are as
// they were, and the line is redacted.
func TestEmitLeavesCallerAlone(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, Options{})
	frame := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"token":"frame-secret"}}`)
	orig := string(frame)
	url := "https://user:url-secret@example.test/mcp"
	hdr := map[string]string{"Authorization": "Bearer header-secret", "Accept": "application/json"}
	h := &HTTP{Method: "POST", URL: url, Header: hdr}
	w.Emit(Record{Dir: ProxyToServer, Frame: frame, HTTP: h})
	if string(frame) != orig || h.URL != url || hdr["Authorization"] != "Bearer header-secret" || len(hdr) != 2 {
		t.Errorf("Emit changed the caller's record: frame %s, url %s, headers %v", frame, h.URL, hdr)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"frame-secret", "url-secret", "header-secret"} {
		if bytes.Contains(buf.Bytes(), []byte(secret)) {
			t.Errorf("the line holds %q:\n%s", secret, buf.Bytes())
		}
	}
	if r := lines(t, buf.Bytes())[0]; !bytes.Contains(r.Frame, []byte(`"method":"tools/call"`)) || r.HTTP.Header["Accept"] != "application/json" {
		t.Errorf("line lost what was not secret: %+v", r)
	}
}

func TestFrameCap(t *testing.T) {
	frame := `{"jsonrpc":"2.0","id":1,"result":{"token":"cap-secret","text":"` + strings.Repeat("é", 200) + `"}}`
	out := write(t, Options{FrameCap: 64},
		Record{Dir: ServerToProxy, Frame: json.RawMessage(frame)},
		Record{Dir: ServerToProxy, Frame: json.RawMessage(`{"id":2}`)},
	)
	if bytes.Contains(out, []byte("cap-secret")) {
		t.Errorf("secret leaked through the head: %s", out)
	}
	recs := lines(t, out)
	r := recs[0]
	if !r.Truncated {
		t.Error("Truncated not set")
	}
	var f struct {
		Truncated bool   `json:"truncated"`
		Bytes     int    `json:"bytes"`
		Head      string `json:"head"`
	}
	if err := json.Unmarshal(r.Frame, &f); err != nil {
		t.Fatalf("truncated frame: %v: %s", err, r.Frame)
	}
	if !f.Truncated || f.Bytes <= 64 || len(f.Head) > 64 || len(f.Head) < 60 || !strings.HasPrefix(f.Head, `{"jsonrpc":"2.0"`) {
		t.Errorf("truncated frame = %+v", f)
	}
	if want := len(rewrite.Redact([]byte(frame), rewrite.SensitiveKey)); f.Bytes != want {
		t.Errorf("bytes = %d, want the redacted frame's %d", f.Bytes, want)
	}
	if strings.ContainsRune(f.Head, '\uFFFD') {
		t.Errorf("head cut inside a rune: %q", f.Head)
	}
	if recs[1].Truncated || string(recs[1].Frame) != `{"id":2}` {
		t.Errorf("short frame = %s truncated=%v", recs[1].Frame, recs[1].Truncated)
	}

	// Over the cap before redaction, under it after: kept whole, redacted.
	long := `{"id":3,"token":"` + strings.Repeat("s", 100) + `"}`
	recs = lines(t, write(t, Options{FrameCap: 64}, Record{Dir: ServerToProxy, Frame: json.RawMessage(long)}))
	if recs[0].Truncated || string(recs[0].Frame) != `{"id":3,"token":"[REDACTED]"}` {
		t.Errorf("frame shrunk by redaction = %s truncated=%v", recs[0].Frame, recs[0].Truncated)
	}
}

// TestObserverReadsMethodAndID: the Observer's methods read each record's
// method and id from its frame, from the whole frame even when the record
// keeps only its head; Emit writes a record's as they are given.
func TestObserverReadsMethodAndID(t *testing.T) {
	long := `{"jsonrpc":"2.0","params":{"text":"` + strings.Repeat("x", 200) + `"},"method":"tools/call","id":"late-id"}`
	var buf bytes.Buffer
	w := New(&buf, Options{FrameCap: 64})
	w.FromClient("s", "op-1", []byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`))
	w.FromServer("s", "op-1", 200, []byte(`{"jsonrpc":"2.0","id":"a","result":{}}`), time.Millisecond, nil)
	w.ToClient("s", "op-2", []byte(long), []string{"id.remap"})
	w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"jsonrpc":"2.0","id":9,"method":"x"}`)})
	if dropped, err := w.Close(); dropped != 0 || err != nil {
		t.Fatalf("Close = %d, %v", dropped, err)
	}
	recs := lines(t, buf.Bytes())
	for i, want := range []struct{ method, id string }{{"ping", "7"}, {"", `"a"`}, {"tools/call", `"late-id"`}, {"", ""}} {
		if recs[i].Method != want.method || string(recs[i].ID) != want.id {
			t.Errorf("record %d: method %q id %s, want %q %s", i, recs[i].Method, recs[i].ID, want.method, want.id)
		}
	}
	if recs[0].Session != "s" || recs[0].Op != "op-1" || recs[2].Rewrites[0] != "id.remap" || recs[1].HTTP.Status != 200 {
		t.Errorf("the hops' records lost their session, op, rewrites or status: %+v", recs)
	}
	if !recs[2].Truncated {
		t.Error("the long frame was not cut, so the test does not reach the caller's side")
	}
}

// emitAll emits n records and fails if that takes more than a second in all,
// i.e. if Emit blocked.
func emitAll(t *testing.T, w *Writer, n int) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(fmt.Sprintf(`{"id":%d}`, i))})
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Emit blocked")
	}
}

// fullWhileStalled is a Writer of Buffer 4 whose reader stalled after a
// byte of its first record (first), with 4 more records queued behind it
// and 6 dropped.
func fullWhileStalled(t *testing.T) (w *Writer, pr *io.PipeReader, pw *io.PipeWriter, first []byte) {
	pr, pw = io.Pipe()
	// A quarter of Buffer is one record: each Emit wakes the goroutine.
	w = New(pw, Options{Buffer: 4, FlushInterval: time.Hour})

	// The first record reaches the pipe; once a byte of it is read, the
	// writer goroutine is blocked in Write with an empty queue.
	w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id":"first"}`)})
	first = readFirst(t, pr)
	emitAll(t, w, 4+6) // 4 fill the queue, 6 are dropped
	return w, pr, pw, first
}

func TestFullBufferDropsAndCounts(t *testing.T) {
	w, pr, pw, first := fullWhileStalled(t)
	if d := w.Dropped(); d != 6+5 {
		t.Errorf("Dropped = %d with the reader stalled, want 6 dropped + 5 unwritten", d)
	}

	rest, dropped, err := closeReading(w, pr, pw)
	out := append(first, rest...)
	if err != nil || dropped != 6 {
		t.Fatalf("Close = %d, %v; want 6, nil", dropped, err)
	}
	if n := len(lines(t, out)); n != 5 {
		t.Errorf("wrote %d records, want 5:\n%s", n, out)
	}
	if d := w.Dropped(); d != 6 {
		t.Errorf("Dropped after Close = %d, want 6", d)
	}
}

// TestFullBufferAcceptsAgainOnceDrained: a buffer that filled while its
// reader stalled takes records again once the reader has caught up, with
// nothing dropped but what came while it was full.
func TestFullBufferAcceptsAgainOnceDrained(t *testing.T) {
	w, pr, pw, first := fullWhileStalled(t)
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- b
	}()
	// The reader caught up: every record accepted is written out.
	deadline := time.Now().Add(10 * time.Second)
	for w.Dropped() != 6 {
		if time.Now().After(deadline) {
			t.Fatalf("Dropped = %d after 10s of reading, want 6", w.Dropped())
		}
		time.Sleep(time.Millisecond)
	}
	w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id":"after"}`)})
	dropped, err := w.Close()
	pw.Close()
	out := append(first, <-got...)
	if err != nil || dropped != 6 {
		t.Fatalf("Close = %d, %v; want 6, nil", dropped, err)
	}
	if n := len(lines(t, out)); n != 6 || !bytes.Contains(out, []byte(`{"id":"after"}`)) {
		t.Errorf("wrote %d records, want 6 with the one emitted after the drain:\n%s", n, out)
	}
}

// TestChunkLeavesHeldAsItsWriteBegins: a batch past writeSize goes out in
// chunks of whole lines, and a chunk's records stop counting against the
// buffer's bound as its write begins, while those of the chunks after it
// still count.
func TestChunkLeavesHeldAsItsWriteBegins(t *testing.T) {
	r := Record{Time: time.Unix(1785240000, 123456789), Dir: ClientToProxy, Frame: json.RawMessage(`{"id":"` + strings.Repeat("x", 1000) + `"}`)}
	size := lineSize(t, r)
	perChunk := writeSize / size
	n := 2*perChunk + 1 // three chunks
	pr, pw := io.Pipe()
	w := New(pw, Options{Buffer: 1 << 20, BufferBytes: 1 << 30, FlushInterval: time.Millisecond})
	w.Emit(r)
	first := readFirst(t, pr) // the goroutine is in its first write: the batch gathers
	for range n {
		w.Emit(r)
	}
	// The rest of the first write, and a byte of the batch's first chunk.
	b := readN(t, pr, size)
	w.mu.Lock()
	held := w.held
	w.mu.Unlock()
	if want := int64(n - perChunk); held != want {
		t.Errorf("held %d records during the first chunk's write, want %d (%d a chunk)", held, want, perChunk)
	}
	rest, dropped, err := closeReading(w, pr, pw)
	if err != nil || dropped != 0 {
		t.Fatalf("Close = %d, %v", dropped, err)
	}
	if got := len(lines(t, append(append(first, b...), rest...))); got != n+1 {
		t.Errorf("wrote %d records, want %d", got, n+1)
	}
	if d := w.Dropped(); d != 0 {
		t.Errorf("Dropped = %d after everything was written", d)
	}
}

// closeReading closes w while it reads the rest of what w writes to pw,
// and returns it.
func closeReading(w *Writer, pr *io.PipeReader, pw *io.PipeWriter) (rest []byte, dropped int64, err error) {
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- b
	}()
	dropped, err = w.Close()
	pw.Close()
	return <-got, dropped, err
}

func TestFullBufferBytesDropsAndCounts(t *testing.T) {
	// A set time: every line is as long as the one measured.
	r := Record{Time: time.Unix(1785240000, 123456789), Dir: ClientToProxy, Frame: json.RawMessage(`{"id":"` + strings.Repeat("x", 500) + `"}`)}
	size := lineSize(t, r)
	pr, pw := io.Pipe()
	// Room for 4 records; a quarter of that, one record, wakes the goroutine.
	w := New(pw, Options{BufferBytes: 4 * size, FlushInterval: time.Hour})
	w.Emit(r)
	first := readFirst(t, pr)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10 {
			w.Emit(r)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Emit blocked")
	}
	rest, dropped, err := closeReading(w, pr, pw)
	out := append(first, rest...)
	if err != nil || dropped != 6 {
		t.Fatalf("Close = %d, %v; want 6, nil", dropped, err)
	}
	if n := len(lines(t, out)); n != 5 {
		t.Errorf("wrote %d records, want 5", n)
	}
}

// syncBuf is a bytes.Buffer safe for the writer goroutine and the test. It
// fails the test on a write that does not end a line.
type syncBuf struct {
	t      *testing.T
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(p) == 0 || p[len(p)-1] != '\n' {
		s.t.Errorf("a write of %d bytes does not end a line", len(p))
	}
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuf) snapshot() ([]byte, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes()), s.writes
}

// waitLines polls buf until it holds n lines, for at most 10 seconds.
func waitLines(t *testing.T, buf *syncBuf, n int) []byte {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := buf.snapshot()
		if bytes.Count(out, []byte("\n")) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %d lines; have:\n%s", n, out)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestNoWritePerRecord(t *testing.T) {
	buf := &syncBuf{t: t}
	w := New(buf, Options{FlushInterval: time.Hour})
	for i := range 10 {
		w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(fmt.Sprintf(`{"id":%d}`, i))})
	}
	// Nothing wakes the goroutine: not the records (few and small), not
	// the timer (an hour away).
	if out, n := buf.snapshot(); n != 0 {
		t.Fatalf("%d writes before the flush interval:\n%s", n, out)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, n := buf.snapshot()
	if n != 1 || len(lines(t, out)) != 10 {
		t.Errorf("Close wrote %d lines in %d writes, want 10 in 1", len(lines(t, out)), n)
	}
}

func TestPeriodicFlush(t *testing.T) {
	buf := &syncBuf{t: t}
	w := New(buf, Options{FlushInterval: time.Millisecond})
	defer w.Close()
	w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id":1}`)})
	waitLines(t, buf, 1)
	// The timer is armed again by the next record into the empty queue.
	w.Emit(Record{Dir: ProxyToClient, Frame: json.RawMessage(`{"id":2}`)})
	w.Emit(Record{Dir: ProxyToClient, Frame: json.RawMessage(`{"id":3}`)})
	recs := lines(t, waitLines(t, buf, 3))
	for i, r := range recs {
		if want := fmt.Sprint(i + 1); string(r.Frame) != `{"id":`+want+`}` {
			t.Errorf("record %d = %s", i, r.Frame)
		}
	}
	// Dropped counts a written chunk's records as unwritten until its
	// write returns, which may be just after the lines are seen: Close
	// waits for it.
	if dropped, err := w.Close(); dropped != 0 || err != nil {
		t.Errorf("Close: %d dropped, %v, after everything was written", dropped, err)
	}
}

func TestWriteWhenBufferFills(t *testing.T) {
	buf := &syncBuf{t: t}
	w := New(buf, Options{FlushInterval: time.Hour})
	defer w.Close()
	frame := json.RawMessage(`{"x":"` + strings.Repeat("y", 4000) + `"}`)
	n := wakeSize/4000 + 1 // past wakeSize: Emit wakes the goroutine
	for range n {
		w.Emit(Record{Dir: ServerToProxy, Frame: frame})
	}
	waitLines(t, buf, 1)
}

func TestOrderAndNothingLostOnClose(t *testing.T) {
	buf := &syncBuf{t: t}
	w := New(buf, Options{Buffer: 1 << 20, BufferBytes: 1 << 30, FlushInterval: time.Hour})
	const n = 20000
	for i := range n {
		w.Emit(Record{Dir: ClientToProxy, ID: json.RawMessage(fmt.Sprint(i))})
	}
	if dropped, err := w.Close(); dropped != 0 || err != nil {
		t.Fatalf("Close = %d, %v", dropped, err)
	}
	out, _ := buf.snapshot()
	recs := lines(t, out)
	if len(recs) != n {
		t.Fatalf("wrote %d records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if string(r.ID) != fmt.Sprint(i) {
			t.Fatalf("record %d has id %s", i, r.ID)
		}
	}
}

func TestConcurrentEmit(t *testing.T) {
	buf := &syncBuf{t: t}
	w := New(buf, Options{Buffer: 1 << 20, BufferBytes: 1 << 30, FlushInterval: time.Millisecond, FrameCap: 2 * writeSize})
	const goroutines, each = 16, 500
	big := strings.Repeat("z", writeSize+1) // a line past writeSize, alone in its write
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				text := "short"
				if i%97 == 0 {
					text = big
				}
				w.Emit(Record{Dir: ProxyToServer, Op: fmt.Sprint("g", g), ID: json.RawMessage(fmt.Sprint(i)),
					HTTP:  &HTTP{Method: "POST", URL: "http://h/mcp", Header: map[string]string{"Authorization": "x"}},
					Frame: json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + text + `"}}`)})
			}
		})
	}
	wg.Wait()
	if dropped, err := w.Close(); dropped != 0 || err != nil {
		t.Fatalf("Close = %d, %v", dropped, err)
	}
	out, _ := buf.snapshot()
	recs := lines(t, out)
	if len(recs) != goroutines*each {
		t.Fatalf("wrote %d records, want %d", len(recs), goroutines*each)
	}
	next := map[string]int{}
	for _, r := range recs {
		if string(r.ID) != fmt.Sprint(next[r.Op]) {
			t.Fatalf("op %s: record %s after %d", r.Op, r.ID, next[r.Op]-1)
		}
		next[r.Op]++
		if r.HTTP.Header["Authorization"] != "[REDACTED]" {
			t.Errorf("header not redacted: %v", r.HTTP.Header)
		}
	}
}

// readFirst reads a byte of the writer goroutine's first write, which then
// blocks in that write until the rest is read.
func readFirst(t *testing.T, pr *io.PipeReader) []byte { return readN(t, pr, 1) }

// readN reads n bytes of what the writer goroutine writes, waiting at most
// 10 seconds for them.
func readN(t *testing.T, pr *io.PipeReader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	got := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(pr, b)
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		pr.Close()
		t.Fatalf("the writer goroutine wrote %d bytes in 10s, no more", len(b))
	}
	return b
}

// lineSize is the length of r's line, as the default rule leaves it.
func lineSize(t *testing.T, r Record) int {
	t.Helper()
	(&Writer{frameCap: DefaultFrameCap, sensitive: func(string) bool { return false }}).redact(&r)
	line, err := encodeLine(&r)
	if err != nil {
		t.Fatal(err)
	}
	return len(line)
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteErrorCountsDrops(t *testing.T) {
	w := New(failWriter{}, Options{Buffer: 8})
	emitAll(t, w, 3)
	dropped, err := w.Close()
	if err == nil || dropped != 3 {
		t.Errorf("Close = %d, %v; want 3, an error", dropped, err)
	}
}

// TestNilWriter: a nil Writer discards what it is given, as Emit and as an
// Observer.
func TestNilWriter(t *testing.T) {
	var w *Writer
	w.Emit(Record{Dir: ClientToProxy})
	w.FromClient("", "op-1", []byte(`{"id":1}`))
	w.ToClient("", "op-1", []byte(`{"id":1}`), nil)
	w.ToServer("", "op-1", nil, "POST", "http://h/mcp", nil, []byte(`{"id":1}`))
	w.FromServer("", "op-1", 200, nil, 0, nil)
	w.Note("", "", "note")
	if d, err := w.Close(); d != 0 || err != nil || w.Dropped() != 0 {
		t.Errorf("Close = %d, %v; Dropped %d", d, err, w.Dropped())
	}
}

func TestCloseIdempotentAndEmitAfterClose(t *testing.T) {
	w := New(io.Discard, Options{Buffer: 1})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id":1}`)})
			}
		})
	}
	d1, err1 := w.Close()
	wg.Wait()
	w.Emit(Record{Dir: ClientToProxy})
	d2, err2 := w.Close()
	if d1 != d2 || err1 != nil || err2 != nil {
		t.Errorf("Close twice = (%d, %v), (%d, %v)", d1, err1, d2, err2)
	}
}

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte("old content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id":1}`)})
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
	}
	out, _ := os.ReadFile(path)
	if recs := lines(t, out); len(recs) != 1 || bytes.Contains(out, []byte("old")) {
		t.Errorf("file = %s", out)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing", "t.jsonl"), Options{}); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

// TestOpenDevice: --trace /dev/null is written as it is. Its mode is the
// system's: chmod-ing it to 0600 would fail for a user (and so refuse to
// trace), and as root would lock every other user out of /dev/null.
func TestOpenDevice(t *testing.T) {
	const dev = "/dev/null"
	before, err := os.Stat(dev)
	if err != nil {
		t.Skipf("SKIP: no %s on this system", dev)
	}
	stdoutElsewhere(t) // Open refuses stdout, which a test may have on /dev/null
	w, err := Open(dev, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dev, err)
	}
	w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id":1}`)})
	if dropped, err := w.Close(); dropped != 0 || err != nil {
		t.Fatalf("Close = %d, %v", dropped, err)
	}
	after, err := os.Stat(dev)
	if err != nil {
		t.Fatal(err)
	}
	if after.Mode() != before.Mode() {
		t.Errorf("%s went from mode %v to %v", dev, before.Mode(), after.Mode())
	}
}

// stdoutElsewhere points os.Stdout at a file of its own for the test.
func stdoutElsewhere(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = f
	t.Cleanup(func() {
		os.Stdout = saved
		f.Close()
	})
	return f
}

// TestOpenRefusesStdout: the trace never goes to the process's standard
// output, which carries the frames, under any name: Open refuses the file
// stdout was redirected to (leaving what it holds as it was) and
// /dev/stdout, with an error that names the way out.
func TestOpenRefusesStdout(t *testing.T) {
	refused := func(path string) {
		t.Helper()
		w, err := Open(path, Options{})
		if err == nil {
			w.Close()
			t.Errorf("Open(%s), stdout, succeeded", path)
			return
		}
		if !strings.Contains(err.Error(), "standard output") || !strings.Contains(err.Error(), "stderr with -") {
			t.Errorf("Open(%s): %v; want an error naming stdout and the way out", path, err)
		}
	}
	// The test's own stdout, by the name every Unix gives it.
	if _, err := os.Stat("/dev/stdout"); err == nil {
		refused("/dev/stdout")
	} else {
		t.Logf("no /dev/stdout on this system: only a redirected stdout's file is checked")
	}
	// A stdout redirected to a file, by the file's name.
	out := stdoutElsewhere(t)
	const frame = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"
	if _, err := out.WriteString(frame); err != nil {
		t.Fatal(err)
	}
	refused(out.Name())
	if b := readAll(t, out.Name()); string(b) != frame {
		t.Errorf("stdout's file now holds %q, want the frame it held", b)
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// handmade builds a small trace: op "b" (tools/call, id 7) first, then op
// "a" (initialize), records without op, and one malformed line.
func handmade(t *testing.T) string {
	t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	recs := []Record{
		{Time: at(0), Dir: ClientToProxy, Op: "b", Method: "tools/call", ID: json.RawMessage(`7`),
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + strings.Repeat("x", 200) + `"}}`)},
		{Time: at(1), Dir: ClientToProxy, Op: "a", Method: "initialize", ID: json.RawMessage(`1`),
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)},
		{Time: at(2), Dir: ProxyToServer, Op: "b", Method: "tools/call", Rewrites: []string{"meta.inject", "task.nest"},
			HTTP: &HTTP{Method: "POST", URL: "http://h/mcp"}, Frame: json.RawMessage(`{"jsonrpc":"2.0","id":0,"method":"tools/call"}`)},
		{Time: at(12), Dir: ServerToProxy, Op: "b", HTTP: &HTTP{Status: 200}, LatencyMs: 10,
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":0,"result":{"content":[]}}`)},
		{Time: at(13), Dir: ProxyToClient, Op: "b", Rewrites: []string{"resultType.strip"},
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)},
		{Time: at(20), Dir: ProxyToServer, Op: "a", Error: "connection refused"},
		{Time: at(21), Dir: ProxyToClient, Op: "a",
			Frame: json.RawMessage(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"server down"}}`)},
		{Time: at(30), Dir: ClientToProxy, Method: "notifications/initialized",
			Frame: json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)},
	}
	var b strings.Builder
	for i, r := range recs {
		l, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(l)
		b.WriteString("\n")
		if i == 3 {
			b.WriteString("{not a record\n\n")
		}
	}
	return b.String()
}

func TestView(t *testing.T) {
	var out bytes.Buffer
	if err := View(&out, strings.NewReader(handmade(t)), false); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log("\n" + s)
	if strings.Contains(s, "\x1b[") {
		t.Error("colour without color")
	}
	hb := strings.Index(s, "op b  tools/call  id 7  (4 records, 13.0ms)")
	ha := strings.Index(s, "op a  initialize  id 1  (3 records, 20.0ms)")
	hn := strings.Index(s, "op -  notifications/initialized  (1 record, 0.0ms)")
	if hb < 0 || ha < 0 || hn < 0 || !(hb < ha && ha < hn) {
		t.Errorf("op headers missing or out of order: b=%d a=%d -=%d", hb, ha, hn)
	}
	for _, want := range []string{
		"  +0.0ms      ← client  tools/call  {\"jsonrpc\":\"2.0\",\"id\":7,",
		"  +2.0ms      → server  tools/call  [meta.inject task.nest]  {",
		"  +12.0ms     ← server  response  HTTP 200  10.0ms  {\"jsonrpc\"",
		"  +13.0ms     → client  response  [resultType.strip]  {",
		"  +19.0ms     → server  error  error: connection refused",
		"  +20.0ms     → client  error  {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":",
		"1 malformed line(s) skipped",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("view lacks %q", want)
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "xxxx") && (!strings.HasSuffix(l, "…") || strings.Count(l, "x") > 120) {
			t.Errorf("long frame not cut: %s", l)
		}
	}

	out.Reset()
	if err := View(&out, strings.NewReader(handmade(t)), true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{ansiDim + "+0.0ms", ansiCyan + "← client", ansiMagenta + "→ server", ansiGreen + "HTTP 200", ansiRed + "error"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("coloured view lacks %q", want)
		}
	}
}

func TestStats(t *testing.T) {
	// tools/call: ten ops with latencies 1..10 ms, the last one taken from
	// LatencyMs; op 3 answers with an error and its server hop got HTTP 500.
	var b strings.Builder
	t0 := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	emit := func(r Record) {
		l, _ := json.Marshal(r)
		b.Write(l)
		b.WriteString("\n")
	}
	for i := 1; i <= 10; i++ {
		op, id := fmt.Sprint("op", i), json.RawMessage(fmt.Sprint(i))
		start := t0.Add(time.Duration(i) * time.Second)
		emit(Record{Time: start, Dir: ClientToProxy, Op: op, Method: "tools/call", ID: id,
			Frame: json.RawMessage(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call"}`, i))})
		answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i)
		if i == 3 {
			emit(Record{Time: start, Dir: ServerToProxy, Op: op, HTTP: &HTTP{Status: 500}})
			answer = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32603,"message":"x"}}`, i)
		}
		r := Record{Time: start.Add(time.Duration(i) * time.Millisecond), Dir: ProxyToClient, Op: op, Frame: json.RawMessage(answer)}
		if i == 10 {
			r.Time, r.LatencyMs = start.Add(time.Hour), 10
		}
		emit(r)
	}
	emit(Record{Time: t0, Dir: ClientToProxy, Op: "init", ID: json.RawMessage(`"i"`),
		Frame: json.RawMessage(`{"jsonrpc":"2.0","id":"i","method":"initialize"}`)})
	emit(Record{Time: t0.Add(3 * time.Millisecond), Dir: ProxyToClient, Op: "init",
		Frame: json.RawMessage(`{"jsonrpc":"2.0","id":"i","result":{}}`)})
	b.WriteString("garbage\n")

	var out bytes.Buffer
	if err := Stats(&out, strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log("\n" + s)
	rows := map[string][]string{}
	var order []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) == 6 {
			rows[f[0]] = f[1:]
			order = append(order, f[0])
		}
	}
	want := map[string][]string{
		"METHOD":     {"COUNT", "ERRORS", "HTTP>=400", "P50", "P99"},
		"tools/call": {"10", "1", "1", "5.0ms", "10.0ms"},
		"initialize": {"1", "0", "0", "3.0ms", "3.0ms"},
		"TOTAL":      {"11", "1", "1", "5.0ms", "10.0ms"},
	}
	for k, v := range want {
		if fmt.Sprint(rows[k]) != fmt.Sprint(v) {
			t.Errorf("row %s = %v, want %v", k, rows[k], v)
		}
	}
	if fmt.Sprint(order) != "[METHOD tools/call initialize TOTAL]" {
		t.Errorf("row order = %v", order)
	}
	if !strings.Contains(s, "23 records, 11 ops, 1 malformed line(s) skipped") {
		t.Errorf("summary line missing")
	}
	// Columns line up.
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls[0]) != len(ls[1]) || len(ls[1]) != len(ls[3]) {
		t.Errorf("table is not fixed-width:\n%s", s)
	}
}

func TestPercentile(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(i + 1)
	}
	if p50, p99 := percentile(v, 50), percentile(v, 99); p50 != 50 || p99 != 99 {
		t.Errorf("p50, p99 = %v, %v", p50, p99)
	}
	if p := percentile([]float64{4}, 99); p != 4 {
		t.Errorf("single value p99 = %v", p)
	}
}

// TestRedactionPerRecord: records in turn with different URLs and headers
// are redacted each as on its own.
func TestRedactionPerRecord(t *testing.T) {
	urls := []string{"https://a:pw1@h/mcp?k=s1", "https://h/mcp", "https://a:pw1@h/mcp?k=s1", "https://b:pw2@h2/x?t=s2&u=s3"}
	var recs []Record
	for i, u := range urls {
		recs = append(recs, Record{Dir: ProxyToServer, HTTP: &HTTP{URL: u, Header: map[string]string{
			"Authorization": fmt.Sprint("Bearer tok", i), "X-Plain": "v", fmt.Sprint("X-Api-Key-", i%2): "key"}}})
	}
	out := write(t, Options{}, recs...)
	for _, s := range []string{"pw1", "pw2", "s1", "s2", "s3", "tok", "key"} {
		if bytes.Contains(out, []byte(s)) {
			t.Errorf("secret %q leaked:\n%s", s, out)
		}
	}
	got := lines(t, out)
	for i, r := range got {
		alone := lines(t, write(t, Options{}, recs[i]))[0]
		if r.HTTP.URL != alone.HTTP.URL || fmt.Sprint(r.HTTP.Header) != fmt.Sprint(alone.HTTP.Header) {
			t.Errorf("record %d: %s %v, alone %s %v", i, r.HTTP.URL, r.HTTP.Header, alone.HTTP.URL, alone.HTTP.Header)
		}
		if r.HTTP.Header["X-Plain"] != "v" {
			t.Errorf("record %d: plain header redacted", i)
		}
	}
}

// TestUnencodableDropped: a record encoding/json could not encode either
// (a latency that is not a number, a year past 9999) is dropped and
// counted, and the records around it are written.
func TestUnencodableDropped(t *testing.T) {
	var buf bytes.Buffer
	w := New(&buf, Options{})
	w.Emit(Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id":1}`)})
	w.Emit(Record{Dir: ServerToProxy, Frame: json.RawMessage(`{"id":1,"result":{}}`), LatencyMs: math.NaN()})
	w.Emit(Record{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Dir: Proxy, Note: "n"})
	w.Emit(Record{Dir: ProxyToClient, Frame: json.RawMessage(`{"id":1,"result":{}}`)})
	dropped, err := w.Close()
	if err != nil || dropped != 2 {
		t.Fatalf("Close = %d, %v; want 2 dropped", dropped, err)
	}
	if recs := lines(t, buf.Bytes()); len(recs) != 2 || recs[0].Dir != ClientToProxy || recs[1].Dir != ProxyToClient {
		t.Errorf("wrote %+v, want the two encodable records", recs)
	}
}

// TestFrameSplice: a one-line frame is spliced as it was sent, spaces
// and all; one that spans lines is compacted; one nested deeper than
// encoding/json reads is withheld, and one with many brackets but shallow
// is kept. Every line stays one record a reader can decode.
func TestFrameSplice(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	wide := "[" + strings.Repeat("[],", maxDepth) + "[]]"
	out := write(t, Options{FrameCap: 1 << 20},
		Record{Dir: ClientToProxy, Frame: json.RawMessage(`{"id": 1, "method": "ping"}`)},
		Record{Dir: ClientToProxy, Frame: json.RawMessage("{\"id\":\r\n1,\"q\":\"a b\"}")},
		Record{Dir: ClientToProxy, Frame: json.RawMessage(deep)},
		Record{Dir: ClientToProxy, Frame: json.RawMessage(wide)},
	)
	recs := lines(t, out)
	want := []string{`{"id": 1, "method": "ping"}`, `{"id":1,"q":"a b"}`, withheld, wide}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if string(r.Frame) != want[i] {
			t.Errorf("record %d: frame %.80s, want %.80s", i, r.Frame, want[i])
		}
	}
}

// FuzzEmitLine: whatever the frame, a record is one line that a reader
// decodes, and a valid frame that is not cut reads as Redact makes it.
func FuzzEmitLine(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"token":"s","a":[1, 2]}}`), false)
	f.Add([]byte("{\"a\":\n[1,\t2]}\r\n"), true)
	f.Add([]byte(`not json`), false)
	f.Add([]byte(`"<b>&\u2028"`), false)
	f.Fuzz(func(t *testing.T, frame []byte, noRedact bool) {
		out := write(t, Options{NoRedact: noRedact, FrameCap: 256}, Record{Dir: ClientToProxy, Frame: frame})
		if n := bytes.Count(out, []byte{'\n'}); n != 1 {
			t.Fatalf("%d lines: %q", n, out)
		}
		recs := lines(t, out)
		if len(bytes.TrimSpace(frame)) > 0 && len(recs[0].Frame) == 0 {
			t.Fatalf("frame lost: %q", out)
		}
		if noRedact || recs[0].Truncated || !json.Valid(frame) {
			return
		}
		var got, want bytes.Buffer
		if json.Compact(&got, recs[0].Frame) != nil || json.Compact(&want, rewrite.Redact(frame, rewrite.SensitiveKeys(nil))) != nil {
			t.Fatalf("not compactable: %q", out)
		}
		if got.String() != want.String() {
			t.Fatalf("frame %s, want %s", got.String(), want.String())
		}
	})
}
