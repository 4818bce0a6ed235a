package e2e

// Protocol debugging (issue 6), on the built binary: the redaction corpus
// (stderr, the log file and the trace never show a secret), the trace is
// valid JSONL and its op ids tie a request to everything it caused, a
// blocked trace writer never delays an answer, and golden output for
// `trace view`, `trace stats` and `rewrite`.
//
// Regenerate the golden files under testdata/golden/debug with
//
//	go test ./e2e -run 'TestDebugGolden' -update

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"golang.org/x/tools/txtar"
)

var dbgUpdate = flag.Bool("update", false, "rewrite the golden files under testdata/golden/debug")

// dbgGoldenDir holds the hand-written trace fixture and the golden outputs.
const dbgGoldenDir = "../testdata/golden/debug"

// dbgSecret is one secret of the redaction corpus and where it comes from.
type dbgSecret struct{ source, value string }

// dbgSecrets are the bytes that must never reach stderr, the log file or the
// trace while redaction is on.
var dbgSecrets = []dbgSecret{
	{"--header value from ${VAR}", "envsecret2"},
	{"--header-file value", "filesecret3"},
	{"URL userinfo", "urlsecret4"},
	{"URL userinfo, as Basic credentials", base64.StdEncoding.EncodeToString([]byte("user:urlsecret4"))},
	{"URL query value", "querysecret5"},
	{"nested JSON key password", "jsonsecret6"},
	{"nested JSON key apiKey", "jsonsecret7"},
	{"JSON key named by --redact-key", "keysecret8"},
}

// dbgCorpusArgs are the tool arguments of the corpus: nested secret keys,
// and a key that only --redact-key makes secret. whoami accepts any
// arguments and does not echo them.
const dbgCorpusArgs = `{"text":"x","auth":{"password":"jsonsecret6","apiKey":"jsonsecret7"},"custom_field":"keysecret8"}`

// dbgCorpus is one run of the proxy over the redaction corpus.
type dbgCorpus struct {
	up     *upstream
	p      *rawProc
	trace  string // the trace file; "" with --trace -
	log    string // the log file; "" when logs go to stderr
	stderr string // after exit
}

// dbgRunCorpus starts the proxy with every kind of secret on its command
// line and in its frames, makes one tools/call, and waits for it to exit.
// traceTo is a file name in a temp dir, or "-"; logFile adds --log-file.
func dbgRunCorpus(t *testing.T, traceTo string, logFile bool, extra ...string) *dbgCorpus {
	t.Helper()
	dir := t.TempDir()
	c := &dbgCorpus{up: newDemoUpstream(t)}
	hf := filepath.Join(dir, "headers")
	if err := os.WriteFile(hf, []byte("# secrets stay out of ps\nX-File-Key: filesecret3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The recorder and the demo ignore the userinfo and the query.
	url := "http://user:urlsecret4@" + strings.TrimPrefix(c.up.URL, "http://") + "?token=querysecret5"
	args := []string{"--log-level", "debug", "--state-file", filepath.Join(dir, "tasks.json"),
		"--header", "X-Plain: plainsecret1",
		"--header", "Authorization: Bearer ${DBG_TOKEN}",
		"--header-file", hf,
		"--redact-key", "custom_field",
	}
	if traceTo == "-" {
		args = append(args, "--trace", "-")
	} else {
		c.trace = filepath.Join(dir, traceTo)
		args = append(args, "--trace", c.trace)
	}
	if logFile {
		c.log = filepath.Join(dir, "proxy.log")
		args = append(args, "--log-file", c.log)
	}
	args = append(append(args, extra...), url)
	c.p = startProxy(t, args, "DBG_TOKEN=envsecret2")
	erInit(c.p, `{"elicitation":{}}`)
	resultOf(t, c.p.call(`"corpus"`, "tools/call", `{"name":"whoami","arguments":`+dbgCorpusArgs+`}`))
	// A frame that is not JSON, holding a secret: logged (warn) and traced.
	c.p.writeRaw([]byte(`{"jsonrpc":"2.0","id":"bad","method":"tools/call","params":{"password":"jsonsecret6"` + "\n"))
	c.p.expect(`null`)
	c.p.closeStdin()
	if code := c.p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0; stderr:\n%s", code, c.p.stderr.String())
	}
	c.stderr = c.p.stderr.String()

	// The data path is unchanged: the server got every secret.
	calls := erToolCalls(c.up, "whoami")
	if len(calls) != 1 {
		t.Fatalf("upstream saw %d whoami calls, want 1", len(calls))
	}
	h := calls[0].Header
	for name, want := range map[string]string{"Authorization": "Bearer envsecret2", "X-File-Key": "filesecret3", "X-Plain": "plainsecret1"} {
		if got := h.Get(name); got != want {
			t.Errorf("upstream got %s: %q, want %q (redaction must not touch the data path)", name, got, want)
		}
	}
	if got := gjson.GetBytes(calls[0].Body, "params.arguments").Raw; !erJSONEqual(got, dbgCorpusArgs) {
		t.Errorf("upstream got arguments %s, want %s", got, dbgCorpusArgs)
	}
	return c
}

// dbgRead reads a file the proxy wrote, failing the test when it is missing.
func dbgRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return string(b)
}

// dbgNoSecrets fails the test for every secret found in text.
func dbgNoSecrets(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range dbgSecrets {
		if i := strings.Index(text, s.value); i >= 0 {
			t.Errorf("%s shows the %s %q: …%s…", where, s.source, s.value, text[max(0, i-120):min(len(text), i+len(s.value)+40)])
		}
	}
}

// TestDebugRedaction is the redaction corpus: a plain header, a header
// expanded from ${VAR}, a header from --header-file, a URL with userinfo and
// a query secret, nested JSON secret keys and a --redact-key key. None of
// the secrets appears in stderr, the log file or the trace. The plain
// header's value is not a secret (its name does not look like one), so the
// trace shows it.
func TestDebugRedaction(t *testing.T) {
	t.Parallel()

	t.Run("log file and trace file", func(t *testing.T) {
		t.Parallel()
		c := dbgRunCorpus(t, "corpus.trace", true)
		log, tr := dbgRead(t, c.log), dbgRead(t, c.trace)
		dbgNoSecrets(t, "stderr", c.stderr)
		dbgNoSecrets(t, "the log file", log)
		dbgNoSecrets(t, "the trace", tr)

		// What was hidden is still visible as hidden: the debug log and the
		// trace carry the frames, the trace the headers and the URL.
		if !strings.Contains(log, "frame from client") || !strings.Contains(log, "[REDACTED]") {
			t.Errorf("the debug log has no redacted frame copy:\n%s", log)
		}
		recs := dbgReadTrace(t, c.trace)
		var post gjson.Result
		for _, r := range recs {
			if r.Get("dir").Str == "proxy->server" && r.Get("frame.params.name").Str == "whoami" {
				post = r
			}
		}
		if !post.Exists() {
			t.Fatalf("no proxy->server record of the whoami call in the trace:\n%s", tr)
		}
		hdr := post.Get("http.header")
		for name, want := range map[string]string{
			"Authorization": "[REDACTED]", // a credential header, and from ${VAR}
			"X-File-Key":    "[REDACTED]", // from --header-file
			"X-Plain":       "plainsecret1",
		} {
			if got := hdr.Get(gjson.Escape(name)); got.Str != want {
				t.Errorf("trace header %s = %s, want %q (headers: %s)", name, got.Raw, want, hdr.Raw)
			}
		}
		if u := post.Get("http.url").Str; !strings.Contains(u, "REDACTED") || !strings.Contains(u, "/mcp") {
			t.Errorf("trace url = %q, want userinfo and query values hidden", u)
		}
		args := post.Get("frame.params.arguments")
		for path, want := range map[string]string{"text": "x", "auth.password": "[REDACTED]", "auth.apiKey": "[REDACTED]", "custom_field": "[REDACTED]"} {
			if got := args.Get(path).Str; got != want {
				t.Errorf("trace arguments.%s = %q, want %q (arguments: %s)", path, got, want, args.Raw)
			}
		}
	})

	t.Run("trace and logs on stderr", func(t *testing.T) {
		t.Parallel()
		c := dbgRunCorpus(t, "-", false)
		dbgNoSecrets(t, "stderr (logs and --trace -)", c.stderr)
		for _, want := range []string{`"dir":"proxy->server"`, "frame from client", "[REDACTED]"} {
			if !strings.Contains(c.stderr, want) {
				t.Errorf("stderr lacks %q: the trace and the debug log should both be there:\n%s", want, c.stderr)
			}
		}
	})

	// --no-redact proves the corpus can fail: the secrets are shown, with a
	// loud warning.
	t.Run("no-redact shows secrets and warns", func(t *testing.T) {
		t.Parallel()
		c := dbgRunCorpus(t, "corpus.trace", false, "--no-redact")
		if !regexp.MustCompile(`WARN\s.*--no-redact.*secrets`).MatchString(c.stderr) {
			t.Errorf("no loud --no-redact warning on stderr:\n%s", c.stderr)
		}
		tr := dbgRead(t, c.trace)
		for _, s := range []string{"envsecret2", "filesecret3", "jsonsecret6", "jsonsecret7", "keysecret8"} {
			if !strings.Contains(tr, s) {
				t.Errorf("with --no-redact the trace should show %q:\n%s", s, tr)
			}
		}
		for _, s := range []string{"jsonsecret6", "jsonsecret7", "keysecret8"} {
			if !strings.Contains(c.stderr, s) {
				t.Errorf("with --no-redact the debug log on stderr should show %q", s)
			}
		}
	})
}

// dbgDirs are the four hops a trace record can be on, and "proxy" for an
// event of the proxy itself (the era verdict), which carries a note.
var dbgDirs = map[string]bool{"client->proxy": true, "proxy->server": true, "server->proxy": true, "proxy->client": true, "proxy": true}

var dbgOpPattern = regexp.MustCompile(`^(op-[1-9][0-9]*|get-stream|sse-stream|reinit-[1-9][0-9]*|session-end)$`)

// dbgReadTrace reads a trace and checks that it is valid JSONL: every line
// one JSON object with an RFC 3339 ts, a known dir, a well-formed op when
// it has one, and a JSON frame.
func dbgReadTrace(t *testing.T, path string) []gjson.Result {
	t.Helper()
	text := dbgRead(t, path)
	if text == "" {
		t.Fatalf("the trace %s is empty", path)
	}
	if !strings.HasSuffix(text, "\n") {
		t.Errorf("the trace does not end with a newline: its last line is incomplete")
	}
	var recs []gjson.Result
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !gjson.Valid(line) || !gjson.Parse(line).IsObject() {
			t.Errorf("trace line %d is not a JSON object: %s", i+1, shortBytes([]byte(line)))
			continue
		}
		r := gjson.Parse(line)
		if _, err := time.Parse(time.RFC3339Nano, r.Get("ts").Str); err != nil {
			t.Errorf("trace line %d: ts %s: %v", i+1, r.Get("ts").Raw, err)
		}
		if !dbgDirs[r.Get("dir").Str] {
			t.Errorf("trace line %d: dir %s is not one of the four hops, nor proxy", i+1, r.Get("dir").Raw)
		}
		if r.Get("dir").Str == "proxy" && r.Get("note").Str == "" {
			t.Errorf("trace line %d: a proxy event without a note", i+1)
		}
		if op := r.Get("op"); op.Exists() && !dbgOpPattern.MatchString(op.Str) {
			t.Errorf("trace line %d: op %s is not op-N, get-stream, sse-stream, reinit-N or session-end", i+1, op.Raw)
		}
		if !r.Get("op").Exists() && dbgCausedByARequest(r) {
			t.Errorf("trace line %d: a record a request caused carries no op: %s", i+1, shortBytes([]byte(line)))
		}
		if f := r.Get("frame"); f.Exists() && !gjson.Valid(f.Raw) {
			t.Errorf("trace line %d: frame is not JSON", i+1)
		}
		recs = append(recs, r)
	}
	return recs
}

// dbgCausedByARequest reports a record that can only exist because of a
// request, and so must carry its op: every upstream hop (the proxy has no
// traffic of its own without a cause), and what the proxy sends the client
// while a request runs (progress, log messages, its own requests and
// cancels).
func dbgCausedByARequest(r gjson.Result) bool {
	switch r.Get("dir").Str {
	case "proxy->server", "server->proxy":
		return true
	case "proxy->client":
		switch m := r.Get("frame.method"); {
		case r.Get("frame.id").Exists() && m.Exists(): // the proxy's own request
			return true
		case m.Str == "notifications/progress", m.Str == "notifications/message", m.Str == "notifications/cancelled":
			return true
		}
	}
	return false
}

// dbgFind returns the records on hop dir whose frame id is id (raw JSON).
func dbgFind(recs []gjson.Result, dir, id string) []gjson.Result {
	var out []gjson.Result
	for _, r := range recs {
		if r.Get("dir").Str == dir && r.Get("frame.id").Raw == id {
			out = append(out, r)
		}
	}
	return out
}

// dbgOpOf returns the op of the client's request id, failing the test when
// the trace does not hold exactly one such record with an op.
func dbgOpOf(t *testing.T, recs []gjson.Result, id string) string {
	t.Helper()
	var ops []string
	for _, r := range dbgFind(recs, "client->proxy", id) {
		if r.Get("frame.method").Exists() {
			ops = append(ops, r.Get("op").Str)
		}
	}
	if len(ops) != 1 || ops[0] == "" {
		t.Fatalf("want one client->proxy request with id %s and an op, got ops %q", id, ops)
	}
	return ops[0]
}

// dbgCheckOp fails the test unless every record is present and has op.
func dbgCheckOp(t *testing.T, what string, recs []gjson.Result, op string) {
	t.Helper()
	if len(recs) == 0 {
		t.Errorf("%s: no record in the trace", what)
	}
	for _, r := range recs {
		if got := r.Get("op").Str; got != op {
			t.Errorf("%s: op %q, want %q (the op of the client request that caused it): %s", what, got, op, shortBytes([]byte(r.Raw)))
		}
	}
}

// dbgUpstreamHops returns the proxy->server and server->proxy records of
// the upstream exchanges, matched on the proxy-minted upstream ids, which
// are unique in a session.
func dbgUpstreamHops(recs []gjson.Result, exs []*exchange) (sent, got []gjson.Result) {
	for _, ex := range exs {
		sent = append(sent, dbgFind(recs, "proxy->server", ex.ID)...)
		got = append(got, dbgFind(recs, "server->proxy", ex.ID)...)
	}
	return sent, got
}

// TestDebugTraceOps: the trace is valid JSONL, and one op ties each client
// request to its hops: a plain tools/call (four hops), an MRTR round (the
// first POST, the proxy's elicitation/create, the client's answer, the
// retry and the final answer) and a followed task (the tasks/get polls).
func TestDebugTraceOps(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	tracePath := filepath.Join(t.TempDir(), "ops.trace")
	p := startProxy(t, []string{"--no-state", "--trace", tracePath, up.URL})
	erInit(p, `{"elicitation":{}}`)

	if got := resultOf(t, p.call(`"plain"`, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)).Get("content.0.text").Str; got != "hi" {
		t.Errorf("echo = %q, want hi", got)
	}

	mark := p.mark()
	p.request(`"mrtr"`, "tools/call", `{"name":"ask_name","arguments":{}}`)
	_, el := p.waitLine(mark, "an elicitation/create request", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
	elID := gjson.GetBytes(el, "id").Raw
	p.send(`{"jsonrpc":"2.0","id":` + elID + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	if got := resultOf(t, p.expect(`"mrtr"`)).Get("content.0.text").Str; got != "hello, Ada" {
		t.Errorf("ask_name = %q, want hello, Ada", got)
	}

	if got := resultOf(t, p.call(`"task"`, "tools/call", `{"name":"slow","arguments":{"ms":300}}`)).Get("content.0.text").Str; got == "" {
		t.Errorf("slow answered without text")
	}

	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	recs := dbgReadTrace(t, tracePath)

	t.Run("plain call", func(t *testing.T) {
		op := dbgOpOf(t, recs, `"plain"`)
		sent, got := dbgUpstreamHops(recs, erToolCalls(up, "echo"))
		dbgCheckOp(t, "proxy->server tools/call echo", sent, op)
		dbgCheckOp(t, "server->proxy answer to tools/call echo", got, op)
		dbgCheckOp(t, "proxy->client answer", dbgFind(recs, "proxy->client", `"plain"`), op)
	})

	t.Run("MRTR round", func(t *testing.T) {
		op := dbgOpOf(t, recs, `"mrtr"`)
		calls := erToolCalls(up, "ask_name")
		if len(calls) != 2 {
			t.Fatalf("upstream saw %d ask_name attempts, want 2", len(calls))
		}
		sent, got := dbgUpstreamHops(recs, calls)
		if len(sent) != 2 || len(got) != 2 {
			t.Errorf("the trace has %d POSTs and %d answers of ask_name, want 2 and 2", len(sent), len(got))
		}
		dbgCheckOp(t, "proxy->server ask_name (first POST and retry)", sent, op)
		dbgCheckOp(t, "server->proxy ask_name answers", got, op)
		retried := false
		for _, r := range sent {
			for _, rw := range r.Get("rewrites").Array() {
				retried = retried || rw.Str == "mrtr.retry"
			}
		}
		if !retried {
			t.Errorf("no ask_name POST is marked mrtr.retry")
		}
		var ask []gjson.Result
		for _, r := range dbgFind(recs, "proxy->client", elID) {
			if r.Get("frame.method").Str == "elicitation/create" {
				ask = append(ask, r)
			}
		}
		dbgCheckOp(t, "proxy->client elicitation/create", ask, op)
		dbgCheckOp(t, "client->proxy answer to elicitation/create", dbgFind(recs, "client->proxy", elID), op)
		dbgCheckOp(t, "proxy->client final answer", dbgFind(recs, "proxy->client", `"mrtr"`), op)
	})

	t.Run("followed task", func(t *testing.T) {
		op := dbgOpOf(t, recs, `"task"`)
		sent, got := dbgUpstreamHops(recs, erToolCalls(up, "slow"))
		dbgCheckOp(t, "proxy->server tools/call slow", sent, op)
		dbgCheckOp(t, "server->proxy answer to tools/call slow", got, op)
		polls := up.requests("tasks/get")
		if len(polls) == 0 {
			t.Fatalf("the proxy never polled the task (no tasks/get upstream)")
		}
		sent, got = dbgUpstreamHops(recs, polls)
		if len(sent) != len(polls) {
			t.Errorf("the trace has %d tasks/get POSTs, the server saw %d", len(sent), len(polls))
		}
		dbgCheckOp(t, "proxy->server tasks/get polls", sent, op)
		dbgCheckOp(t, "server->proxy answers to tasks/get", got, op)
		dbgCheckOp(t, "proxy->client final answer", dbgFind(recs, "proxy->client", `"task"`), op)
	})

	// The viewer reads what the proxy wrote; with stdout not a terminal
	// there is no colour.
	t.Run("trace view and stats of a live trace", func(t *testing.T) {
		code, out, errOut := runCLI(t, nil, "trace", "view", tracePath)
		if code != 0 || errOut != "" {
			t.Fatalf("trace view: exit %d, stderr %q", code, errOut)
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("trace view coloured its output although stdout is not a terminal")
		}
		op := dbgOpOf(t, recs, `"plain"`)
		if want := "op " + op + "  tools/call  id \"plain\""; !strings.Contains(out, want) {
			t.Errorf("trace view lacks the header %q:\n%s", want, out)
		}
		if strings.Contains(out, "malformed") {
			t.Errorf("trace view found malformed lines in the proxy's own trace:\n%s", out)
		}
		code, out, errOut = runCLI(t, nil, "trace", "stats", tracePath)
		if code != 0 || errOut != "" {
			t.Fatalf("trace stats: exit %d, stderr %q", code, errOut)
		}
		if !regexp.MustCompile(`(?m)^tools/call\s+3\s+0\s+0\s`).MatchString(out) {
			t.Errorf("trace stats should count 3 tools/call, no errors:\n%s", out)
		}
	})
}

// dbgMkfifo makes a named pipe in a temp dir.
func dbgMkfifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path
}

// dbgOpenReader opens the read end of a FIFO without blocking and without
// ever reading from it.
func dbgOpenReader(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatalf("opening the FIFO for reading: %v", err)
	}
	return f
}

// dbgAnswered waits up to d for a response with raw id.
func dbgAnswered(p *rawProc, id string, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if l.resp && l.id == id {
				p.mu.Unlock()
				return true
			}
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.readEOF:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// dbgExitGrace is what the product promises for an exit once stdin ends.
const dbgExitGrace = 5 * time.Second

var dbgDropped = regexp.MustCompile(`trace incomplete.*"dropped": ([0-9]+)`)

// TestDebugBlockedTrace: a trace nobody reads never delays a response, the
// proxy still exits promptly, and the number of dropped records is
// reported at exit.
func TestDebugBlockedTrace(t *testing.T) {
	t.Parallel()

	// A reader holds the FIFO open and never reads: the pipe fills, the
	// writer blocks in write(2), the queue fills, and records are dropped.
	t.Run("reader never reads", func(t *testing.T) {
		t.Parallel()
		fifo := dbgMkfifo(t)
		reader := dbgOpenReader(t, fifo)
		defer reader.Close()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{"--no-state", "--trace", fifo, up.URL})
		p.initialize()
		// Far more records than the pipe and the writer's queue (4096) hold.
		const n = 5000
		var frames bytes.Buffer
		for i := range n {
			id := strconv.Itoa(i + 1)
			p.mu.Lock()
			p.methods[id] = "ping"
			p.sent[id]++
			p.mu.Unlock()
			fmt.Fprintf(&frames, `{"jsonrpc":"2.0","id":%s,"method":"ping"}`+"\n", id)
		}
		start := time.Now()
		mark := p.mark()
		p.writeRaw(frames.Bytes())
		p.line(mark + n - 1)
		seen := map[string]bool{}
		for _, l := range p.all()[mark:] {
			seen[gjson.GetBytes(l, "id").Raw] = true
		}
		if len(seen) != n {
			t.Errorf("%d distinct pings answered, want %d", len(seen), n)
		}
		// The upstream path too, with the trace still blocked.
		if got := resultOf(t, p.call(`"echo"`, "tools/call", `{"name":"echo","arguments":{"text":"still here"}}`)).Get("content.0.text").Str; got != "still here" {
			t.Errorf("echo = %q", got)
		}
		t.Logf("%d pings and a tools/call answered in %v with the trace blocked", n, time.Since(start))

		p.closeStdin()
		exitStart := time.Now()
		select {
		case <-p.exited:
		case <-time.After(dbgExitGrace):
			t.Errorf("BUG: the proxy did not exit within %v of stdin closing while its trace FIFO is blocked (it waits for the trace writer)", dbgExitGrace)
			reader.Close() // unblock the writer: write(2) fails with EPIPE
			select {
			case <-p.exited:
				t.Logf("it exited %v after stdin closed, once the FIFO's reader went away", time.Since(exitStart))
			case <-time.After(dbgExitGrace):
				_ = p.cmd.Process.Kill()
				<-p.exited
				t.Fatalf("the proxy did not exit even after the FIFO's reader closed; killed")
			}
		}
		<-p.readEOF
		stderr := p.stderr.String()
		m := dbgDropped.FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no \"trace incomplete\" warning with a dropped count on stderr:\n%s", stderr)
		}
		if d, _ := strconv.Atoi(m[1]); d == 0 {
			t.Errorf("dropped = 0, but the trace could not have held %d records", 2*n)
		}
	})

	// Nobody has the FIFO open: opening it for writing blocks until a reader
	// comes. The proxy must answer anyway.
	t.Run("no reader", func(t *testing.T) {
		t.Parallel()
		fifo := dbgMkfifo(t)
		up := newDemoUpstream(t)
		p := startProxy(t, []string{"--no-state", "--trace", fifo, up.URL})
		p.request(`"init"`, "initialize", initParams)
		if !dbgAnswered(p, `"init"`, dbgExitGrace) {
			t.Errorf("BUG: initialize was not answered within %v while the trace FIFO has no reader (opening the trace blocks the start-up)", dbgExitGrace)
		}
		// Let the proxy go: a reader that never reads, then stdin EOF.
		reader := dbgOpenReader(t, fifo)
		defer reader.Close()
		if !dbgAnswered(p, `"init"`, waitTimeout) {
			t.Fatalf("initialize still unanswered after a reader opened the FIFO")
		}
		p.closeStdin()
		if code := p.waitExit(cleanupExitTimeout); code != 0 {
			t.Errorf("exit status %d, want 0", code)
		}
	})
}

// dbgCompare compares got with the golden file path, or rewrites it with
// -update.
func dbgCompare(t *testing.T, path string, got []byte) {
	t.Helper()
	if *dbgUpdate {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", path, dbgDiff(string(want), string(got)))
	}
}

// dbgDiff shows the first differing line and the whole output.
func dbgDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q\nfull output:\n%s", i+1, w, g, got)
		}
	}
	return "(only line endings differ)"
}

// TestDebugGoldenTraceView: `trace view` and `trace stats` of a hand-written
// trace (fixed timestamps; a plain call, an MRTR round, a followed task, an
// HTTP 500, a transport error, a listen stream, a local answer, a truncated
// frame and malformed lines), with stdout not a terminal, so no colour.
func TestDebugGoldenTraceView(t *testing.T) {
	t.Parallel()
	fixture := filepath.Join(dbgGoldenDir, "trace.jsonl")
	for _, cmd := range []string{"view", "stats"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, nil, "trace", cmd, fixture)
			if code != 0 || errOut != "" {
				t.Fatalf("trace %s: exit %d, stderr %q", cmd, code, errOut)
			}
			if strings.Contains(out, "\x1b") {
				t.Errorf("trace %s wrote ANSI escapes to a non-terminal", cmd)
			}
			dbgCompare(t, filepath.Join(dbgGoldenDir, "trace-"+cmd+".golden"), []byte(out))
		})
	}
}

// TestDebugGoldenRewrite: `rewrite --up|--down` on the frames of each
// testdata/golden/debug/rewrite/*.txtar. A file holds the arguments ("args",
// one a line), the frames ("stdin") and the expected output ("stdout").
func TestDebugGoldenRewrite(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(dbgGoldenDir, "rewrite", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no rewrite golden files (%v)", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string]int{}
			for i, f := range a.Files {
				sections[f.Name] = i
			}
			for _, name := range []string{"args", "stdin", "stdout"} {
				if _, ok := sections[name]; !ok {
					t.Fatalf("%s has no %q section", file, name)
				}
			}
			args := []string{"rewrite"}
			for _, l := range strings.Split(string(a.Files[sections["args"]].Data), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					args = append(args, l)
				}
			}
			code, out, errOut := runCLIStdin(t, nil, a.Files[sections["stdin"]].Data, args...)
			if code != 0 || errOut != "" {
				t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
			}
			got := &a.Files[sections["stdout"]]
			if *dbgUpdate {
				got.Data = []byte(out)
				if err := os.WriteFile(file, txtar.Format(a), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if out != string(got.Data) {
				t.Errorf("%s: stdout differs (run with -update to accept):\n%s", file, dbgDiff(string(got.Data), out))
			}
		})
	}
}
