package e2e

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// Duplicate keys (a member the proxy acts on must never be read one way by
// the proxy and another by the server): the proxy reads the first of
// two members of one name, most servers the last. A tools/call whose
// params name a tool twice ("slow", then "echo", hidden by --ignore-tool
// echo) would reach the hidden tool, and a request with two ids would put
// the client's own id on the wire in place of the proxy's. Each such frame
// gets exactly one JSON-RPC error, the upstream never sees it, and the
// proxy keeps serving: through stdio to a 2026 server (modern) and to a
// 2025 server (passthrough), and through serve.

// The frames under test. Each carries a marker in a member the proxy does
// not read, so that the upstream's bodies tell whether it reached them.
const (
	dkNameMark = "dup-name-reached-the-server"
	dkIDMark   = "dup-id-reached-the-server"
	dkName     = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","name":"echo","arguments":{"text":"` + dkNameMark + `"}}}`
	dkID       = `{"jsonrpc":"2.0","id":"38","id":38,"method":"tools/call","params":{"name":"nosuch","arguments":{"text":"` + dkIDMark + `"}}}`
)

// dkCheckName requires resp to be the refusal of dkName: -32602 with its
// id, naming the member.
func dkCheckName(t *testing.T, resp []byte) {
	t.Helper()
	if id := gjson.GetBytes(resp, "id").Raw; id != "1" {
		t.Errorf("the refusal of a duplicated params.name has id %s, want 1: %s", id, resp)
	}
	fsCheckError(t, resp, -32602, `"name"`, "more than once")
}

// dkCheckID requires resp to be the refusal of dkID: -32600 with a null id
// (which of the two ids is meant cannot be read), naming the member.
func dkCheckID(t *testing.T, resp []byte) {
	t.Helper()
	if id := gjson.GetBytes(resp, "id").Raw; id != "null" {
		t.Errorf("the refusal of a duplicated id has id %s, want null: %s", id, resp)
	}
	fsCheckError(t, resp, -32600, `"id"`, "more than once")
}

// dkStdio sends both frames to a stdio proxy whose upstream's request
// bodies saw counts, and then a tools/list, which must work and hide echo.
func dkStdio(t *testing.T, p *rawProc, saw func(marker string) int) {
	from := p.mark()
	p.send(dkName)
	dkCheckName(t, p.expect("1"))
	p.send(dkID)
	// The answer to dkID: null once refused, "38" when it went upstream.
	_, resp := p.waitLine(from, "the answer to the frame with two ids", func(_ int, l outLine) bool {
		return l.resp && (l.id == "null" || l.id == `"38"`)
	})
	dkCheckID(t, resp)
	res := resultOf(t, p.call(`"after"`, "tools/list", ""))
	dkHidden(t, res)
	for _, m := range []string{dkNameMark, dkIDMark} {
		if n := saw(m); n != 0 {
			t.Errorf("the upstream received %d requests carrying %q; the frame must be refused before it is sent", n, m)
		}
	}
	// Every request has one answer: "38" none, since its answer is null.
	fsFinish(t, p, `"38"`)
}

// dkHidden requires a tools/list result that lists tools but not echo.
func dkHidden(t *testing.T, res gjson.Result) {
	t.Helper()
	tools := res.Get("tools.#.name").Array()
	if len(tools) == 0 {
		t.Errorf("tools/list after the refusals listed no tools: %s", res.Raw)
	}
	for _, n := range tools {
		if n.Str == "echo" {
			t.Errorf("tools/list lists echo despite --ignore-tool echo: %s", res.Raw)
		}
	}
}

func TestFaultSuiteDupKeys(t *testing.T) {
	t.Parallel()

	t.Run("stdio modern", func(t *testing.T) {
		t.Parallel()
		up := newServeUp(t, dkTwoIDs{demo.Handler()}, true)
		p := startProxy(t, []string{"--no-state", "--ignore-tool", "echo", up.URL})
		p.initialize()
		// The other way: a server answer with two ids would reach the
		// client with the first one restored and the second one, another
		// request's, read by most clients. It is a malformed answer: one
		// error for the request, naming the member.
		e := fsCheckError(t, p.call(`"two-ids"`, "tools/call", `{"name":"nosuch","arguments":{"text":"`+dkTwoIDsMark+`"}}`), -32603, `"id"`, "more than once", "server")
		if e.Get("data.body").String() == "" {
			t.Errorf("the error does not quote the server's answer in error.data.body: %s", e.Raw)
		}
		dkStdio(t, p, up.count)
	})

	t.Run("stdio passthrough", func(t *testing.T) {
		t.Parallel()
		up := newLegacyUpstream(t, demo.NewLegacy())
		p := startPassthrough(t, up, "--ignore-tool", "echo")
		dkStdio(t, p, func(marker string) int {
			return len(up.seen(func(s legacySeen) bool { return bytes.Contains(s.Body, []byte(marker)) }))
		})
	})

	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		up := newServeUp(t, demo.Handler(), true)
		s, f, c := serveAt(t, up.URL, false, "--ignore-tool", "echo")
		dkCheckName(t, dkServeAnswer(t, c.send(http.MethodPost, []byte(dkName), nil)))
		dkCheckID(t, dkServeAnswer(t, c.send(http.MethodPost, []byte(dkID), nil)))
		dkHidden(t, resultOf(t, c.call(`"after"`, "tools/list", "")))

		// An initialize with a duplicated member has no session to be
		// answered in: it is refused on its POST, naming the member.
		fresh := s.rawSession(t, f)
		a := fresh.send(http.MethodPost, []byte(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`), nil)
		if a.status != http.StatusBadRequest || a.header.Get("Mcp-Session-Id") != "" {
			t.Errorf("an initialize with two protocolVersions: status %d, session %q; want 400 and no session", a.status, a.header.Get("Mcp-Session-Id"))
		}
		fsCheckError(t, a.body, -32602, `"protocolVersion"`, "more than once")

		for _, m := range []string{dkNameMark, dkIDMark, "2025-06-18"} {
			if n := up.count(m); n != 0 {
				t.Errorf("the upstream received %d requests carrying %q; the frame must be refused before it is sent", n, m)
			}
		}
		s.stop(t)
	})
}

// dkTwoIDsMark in a tools/call makes dkTwoIDs answer it with two ids.
const dkTwoIDsMark = "answer-with-two-ids"

// dkTwoIDs is a 2026 server that answers a tools/call carrying
// dkTwoIDsMark with its own id and then another.
type dkTwoIDs struct{ next http.Handler }

func (h dkTwoIDs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if bytes.Contains(body, []byte(dkTwoIDsMark)) {
		fsWrite(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+gjson.GetBytes(body, "id").Raw+`,"id":"another-request","result":{"resultType":"complete","content":[]}}`)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.next.ServeHTTP(w, r)
}

// dkServeAnswer is the one JSON-RPC message of a POST's answer: 200 with
// a JSON body, or an event stream that carries exactly one message.
func dkServeAnswer(t *testing.T, a serveAnswer) []byte {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("status %d, want 200 with the JSON-RPC error; body %s", a.status, shortBytes(a.body))
	}
	mt, _, _ := mime.ParseMediaType(a.header.Get("Content-Type"))
	switch mt {
	case "application/json":
		return a.body
	case "text/event-stream":
		var msgs [][]byte
		r := newSSEReader(bytes.NewReader(a.body))
		for {
			ev, err := r.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("reading the answer's event stream: %v", err)
			}
			if d := bytes.TrimSpace(ev.data); len(d) > 0 {
				msgs = append(msgs, d)
			}
		}
		if len(msgs) != 1 {
			t.Fatalf("the answer's stream carried %d messages, want exactly 1: %s", len(msgs), shortBytes(a.body))
		}
		return msgs[0]
	}
	t.Fatalf("Content-Type %q, want application/json or text/event-stream", strings.TrimSpace(a.header.Get("Content-Type")))
	return nil
}
