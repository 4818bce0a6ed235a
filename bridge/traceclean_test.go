package bridge

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// TestTraceTakesEditedCleanFramesAsClean: a client's clean line (checked
// once for the parse and the trace), the request the proxy makes of it, and
// the answer it makes of a clean server answer go into the trace as clean
// frames (trace.Record.FrameClean), copied without a scan, and only then: a
// client frame with a key to redact or with whitespace, a server answer
// with one, a _meta block with one and a --redact-key that names a key the
// rewrites insert each withhold the claims that depend on them. Every claim
// is checked by the writer (trace.VerifyEnv, set by TestMain), which panics
// on a wrong one; Verified counts the claims, and the records show exactly
// the bytes that crossed.
func TestTraceTakesEditedCleanFramesAsClean(t *testing.T) {
	const secret = "hunter2"
	cases := []struct {
		name      string
		clientKey string   // a clientInfo member of the initialize, when set
		redact    []string // trace.Options.RedactKeys
		request   string
		answer    string // the server's result, when not the echo
		claims    int64  // frames emitted as clean: the client's line, the request up, the answer down
	}{
		{name: "clean", request: `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p","arguments":{"q":"x y"}}}`, claims: 3},
		{name: "client secret", request: `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p","arguments":{"password":"` + secret + `"}}}`},
		{name: "client whitespace", request: `{"jsonrpc":"2.0","id":5,"method":"prompts/get", "params":{"name":"p","arguments":{"q":"x"}}}`},
		{name: "server secret", request: `{"jsonrpc":"2.0","id":"s","method":"prompts/get","params":{"name":"p"}}`,
			answer: `{"resultType":"complete","messages":[],"apiKey":"` + secret + `"}`, claims: 2},
		{name: "server whitespace", request: `{"jsonrpc":"2.0","id":"s","method":"prompts/get","params":{"name":"p"}}`,
			answer: `{"resultType":"complete", "messages":[]}`, claims: 2},
		{name: "block secret", clientKey: `"password":"` + secret + `"`, request: `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p"}}`, claims: 2},
		{name: "rewrite key redacted", redact: []string{"taskId"}, request: `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p"}}`, claims: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t)
			if tc.answer != "" {
				u.setHandler(func(w http.ResponseWriter, r *http.Request, body string) {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, gjson.Get(body, "id").Raw, tc.answer)
				})
			}
			var buf syncBuf
			tw := trace.New(&buf, trace.Options{RedactKeys: tc.redact})
			h := start(t, u.URL, Config{Trace: tw})
			info := `{"name":"c","version":"1"}`
			if tc.clientKey != "" {
				info = `{"name":"c","version":"1",` + tc.clientKey + `}`
			}
			h.send(strings.Replace(initReq, `{"name":"c","version":"1"}`, info, 1))
			h.next()
			h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			// Lines are read in turn: once ping is answered, the lines
			// before it have been traced.
			h.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
			if a := h.next(); gjson.Get(a, "id").Str != "ping" {
				t.Fatalf("the answer to ping: %s", a)
			}
			before := tw.Verified()
			h.send(tc.request)
			answer := h.next()
			claims := tw.Verified() - before
			h.stop()
			if dropped, err := tw.Close(); dropped != 0 || err != nil {
				t.Fatalf("trace Close: %d dropped, %v", dropped, err)
			}
			if claims != tc.claims {
				t.Errorf("%d frames emitted as clean, want %d", claims, tc.claims)
			}
			op := ""
			frames := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if strings.Contains(line, secret) {
					t.Errorf("a secret reached the trace: %s", line)
				}
				r := gjson.Parse(line)
				if r.Get("dir").Str == "client->proxy" && r.Get("method").Str == "prompts/get" {
					op = r.Get("op").Str
				}
				if op != "" && r.Get("op").Str == op {
					frames[r.Get("dir").Str] = r.Get("frame").Raw
				}
			}
			if tc.claims != 3 {
				return
			}
			// Taken as clean, the frames went in as they crossed.
			if got := frames["client->proxy"]; got != tc.request {
				t.Errorf("client->proxy frame\n got %s\nwant %s", got, tc.request)
			}
			if got, want := frames["proxy->server"], u.lastBody("prompts/get"); got != want {
				t.Errorf("proxy->server frame\n got %s\nwant %s", got, want)
			}
			if got := frames["proxy->client"]; got != answer {
				t.Errorf("proxy->client frame\n got %s\nwant %s", got, answer)
			}
		})
	}
}

// TestTraceParsesWhatItDidNotFindValid: while tracing, a server answer the
// trace did not find valid is validated by the parse as always, whether it
// is invalid JSON or a frame of the right shape cut short: the client gets
// the proxy's error, not a result read out of broken JSON.
func TestTraceParsesWhatItDidNotFindValid(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","messages":[]}`,
		`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","messages":[}}`,
	} {
		u := newUpstream(t)
		u.setHandler(func(w http.ResponseWriter, r *http.Request, b string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, body, gjson.Get(b, "id").Raw)
		})
		var buf syncBuf
		tw := trace.New(&buf, trace.Options{})
		h := initialized(t, u, Config{Trace: tw})
		h.send(`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p"}}`)
		answer := h.next()
		h.stop()
		if _, err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if gjson.Get(answer, "result").Exists() || gjson.Get(answer, "error.code").Int() != -32603 {
			t.Errorf("the answer to %q: %s", body, answer)
		}
	}
}

// TestTraceCheckedClientLinesParseAsEver: while tracing, the client's line
// is validated once, by the trace's check, for the parse too; a line cut
// short is still a parse error (-32700), and the session goes on.
func TestTraceCheckedClientLinesParseAsEver(t *testing.T) {
	u := newUpstream(t)
	var buf syncBuf
	tw := trace.New(&buf, trace.Options{})
	h := initialized(t, u, Config{Trace: tw})
	h.send(`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p"}`)
	if a := h.next(); gjson.Get(a, "error.code").Int() != -32700 {
		t.Errorf("the answer to a line cut short: %s", a)
	}
	h.send(`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"name":"p"}}`)
	if a := h.next(); gjson.Get(a, "id").Raw != "8" || !gjson.Get(a, "result").Exists() {
		t.Errorf("the answer to the next request: %s", a)
	}
	h.stop()
	if _, err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRawInFindsTheParsedID: the id a parse read from a client's line is
// found where it lies in the line, escapes and all, for the trace record;
// a frame without one has none, and a value that does not say where it
// lies is refused (the trace then reads the id itself).
func TestRawInFindsTheParsedID(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`,
		`{"method":"ping","id":"a\"b\u00e9","jsonrpc":"2.0"}`,
		`{ "jsonrpc" : "2.0" , "id" : -1.5e3 , "method" : "ping" }`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		f, err := rewrite.Parse([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		raw, ok := rawIn([]byte(line), f.ID)
		if !ok || string(raw) != f.ID.Raw || (raw == nil) != !f.ID.Exists() {
			t.Errorf("%s: rawIn = %q, %v; want %q", line, raw, ok, f.ID.Raw)
		}
	}
	if _, ok := rawIn([]byte(`{"id":1}`), gjson.Result{Type: gjson.Number, Raw: "1", Num: 1}); ok {
		t.Error("rawIn took a value that does not say where it lies")
	}
}

// TestTraceExchangeCarriesItsOp: an exchange context names the op of its
// records, for opOf too (a tracedAs exchange needs no withOp under it), so
// an exchange made under it inherits that op; one without an op takes the
// op of the context it was made under, and every other key is the parent's.
func TestTraceExchangeCarriesItsOp(t *testing.T) {
	type other struct{}
	outer := context.WithValue(withOp(context.Background(), "op-outer"), other{}, "kept")
	named := withExchange(outer, &traceExchange{op: "op-named"})
	if got := opOf(named); got != "op-named" {
		t.Errorf("opOf under a named exchange: %q", got)
	}
	nested := withRewrites(named, rwOwn)
	if got := exchangeOf(nested).recordOp(nested); got != "op-named" {
		t.Errorf("an exchange under a named one records op %q, want op-named", got)
	}
	if got := exchangeOf(nested).rewrites; !slices.Equal(got, rwOwn) {
		t.Errorf("the nested exchange's rewrites: %v", got)
	}
	plain := withRewrites(outer, nil)
	if got := exchangeOf(plain).recordOp(plain); got != "op-outer" {
		t.Errorf("an exchange without an op records %q, want the context's op-outer", got)
	}
	if got := nested.Value(other{}); got != "kept" {
		t.Errorf("another key through two exchanges: %v", got)
	}
	if got := noExchange.recordOp(withOp(context.Background(), "op-bare")); got != "op-bare" {
		t.Errorf("records outside any exchange: %q", got)
	}
}
