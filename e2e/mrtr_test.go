//lint:file-ignore SA1019 sampling, roots and their handlers are deprecated in 2026-07-28 but are exactly what the proxy bridges for a 2025-11-25 client.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// Multi round-trip requests: the server's input_required rounds become the 2025 client's
// elicitation, sampling and roots requests, and its answers the retry.

// TestEraSDKClientInput: the go-sdk legacy client with elicitation (form
// and URL), sampling and roots handlers gets every MRTR tool of the demo
// done through the proxy, in one and in two rounds; upstream, every retry
// has a new id, the same params and the server's requestState byte for
// byte. A ToolListChangedHandler fires after touch, and Subscribe brings
// resources/updated to the ResourceUpdatedHandler.
func TestEraSDKClientInput(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	up := newUpstream(t, lw)

	var (
		mu       sync.Mutex
		urlAsks  []*mcp.ElicitParams
		formAsks []string // requested property names
		samples  int
	)
	toolsChanged := make(chan struct{}, 1)
	updated := make(chan string, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-era-sdk", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case updated <- req.Params.URI:
			default:
			}
		},
		Capabilities: &mcp.ClientCapabilities{
			RootsV2: &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{
				Form: &mcp.FormElicitationCapabilities{},
				URL:  &mcp.URLElicitationCapabilities{},
			},
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			if req.Params.Mode == "url" {
				cp := *req.Params
				urlAsks = append(urlAsks, &cp)
				return &mcp.ElicitResult{Action: "accept"}, nil
			}
			schema, _ := json.Marshal(req.Params.RequestedSchema)
			switch {
			case gjson.GetBytes(schema, "properties.name").Exists():
				formAsks = append(formAsks, "name")
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			case gjson.GetBytes(schema, "properties.colour").Exists():
				formAsks = append(formAsks, "colour")
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "teal"}}, nil
			}
			return nil, fmt.Errorf("unexpected elicitation schema %s", schema)
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			samples++
			mu.Unlock()
			if len(req.Params.Messages) != 1 {
				return nil, fmt.Errorf("want one message, got %d", len(req.Params.Messages))
			}
			return &mcp.CreateMessageResult{Content: &mcp.TextContent{Text: "hi from the model"}, Model: "e2e-model", Role: "assistant"}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case toolsChanged <- struct{}{}:
			default:
			}
		},
	})
	client.AddRoots(&mcp.Root{URI: "file:///work/a", Name: "a"}, &mcp.Root{URI: "file:///work/b", Name: "b"})

	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	stderr := &syncBuffer{}
	cmd := exec.Command(binPath, up.URL)
	cmd.Env = proxyEnv()
	cmd.Stderr = stderr
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect (initialize): %v; stderr:\n%s", err, stderr.String())
	}
	defer func() {
		if err := session.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("proxy exit state %v, want exit status 0", cmd.ProcessState)
		}
		if t.Failed() {
			t.Logf("proxy stderr:\n%s", stderr.String())
		}
	}()

	call := func(t *testing.T, tool string, args map[string]any) string {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if res.IsError {
			t.Fatalf("%s: tool error %q", tool, erText(res))
		}
		return erText(res)
	}

	for _, tc := range []struct {
		tool   string
		want   string
		rounds int // input rounds
	}{
		{"ask_name", "hello, Ada", 1},
		{"ask_two_rounds", "hello, Ada; colour: teal; roots: 2", 2},
		{"sample", "hi from the model", 1},
		{"list_roots", "file:///work/a, file:///work/b", 1},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			if got := call(t, tc.tool, map[string]any{}); got != tc.want {
				t.Errorf("%s = %q, want %q", tc.tool, got, tc.want)
			}
			erCheckRetries(t, up, tc.tool, tc.rounds+1)
		})
	}

	t.Run("ask_two_rounds asked both round-2 requests", func(t *testing.T) {
		calls := erToolCalls(up, "ask_two_rounds")
		if len(calls) != 3 {
			t.Skipf("ask_two_rounds made %d attempts", len(calls))
		}
		resp := gjson.GetBytes(calls[2].Body, "params.inputResponses")
		if n := len(resp.Get("roots-2.roots").Array()); n != 2 {
			t.Errorf("inputResponses roots-2 = %s, want the client's 2 roots", resp.Get("roots-2").Raw)
		}
		if got := resp.Get("colour-2.content.colour").String(); got != "teal" {
			t.Errorf("inputResponses colour-2 = %s, want the client's ElicitResult", resp.Get("colour-2").Raw)
		}
		// The client's capabilities went upstream in the 2026 shape.
		caps := gjson.GetBytes(calls[0].Body, `params._meta.io\.modelcontextprotocol/clientCapabilities`)
		for _, k := range []string{"elicitation.form", "elicitation.url", "sampling", "roots"} {
			if !caps.Get(k).IsObject() {
				t.Errorf("upstream clientCapabilities %s lack %s", caps.Raw, k)
			}
		}
		if caps.Get("roots.listChanged").Exists() {
			t.Errorf("upstream clientCapabilities %s keep roots.listChanged (2026 has no such field)", caps.Raw)
		}
	})

	t.Run("open_url", func(t *testing.T) {
		if got := call(t, "open_url", map[string]any{}); got != "consent: accept" {
			t.Errorf("open_url = %q, want %q", got, "consent: accept")
		}
		calls := erCheckRetries(t, up, "open_url", 2)
		mu.Lock()
		defer mu.Unlock()
		if len(urlAsks) != 1 {
			t.Fatalf("the client got %d URL elicitations, want 1", len(urlAsks))
		}
		a := urlAsks[0]
		if a.ElicitationID == "" {
			t.Errorf("URL elicitation without elicitationId (2025-11-25 requires one): %+v", a)
		}
		if a.URL != demo.ConsentURL || a.Message == "" {
			t.Errorf("URL elicitation = %+v, want url %s and the server's message", a, demo.ConsentURL)
		}
		if len(calls) == 2 {
			got := gjson.GetBytes(calls[1].Body, "params.inputResponses.consent-1")
			if got.Get("action").String() != "accept" {
				t.Errorf("inputResponses consent-1 = %s, want the client's accept", got.Raw)
			}
		}
	})

	t.Run("handlers", func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"name", "name", "colour"}; !slices.Equal(formAsks, want) {
			t.Errorf("form elicitations %v, want %v (one per input request, never repeated)", formAsks, want)
		}
		if samples != 1 {
			t.Errorf("sampling handler ran %d times, want 1", samples)
		}
	})

	t.Run("ToolListChangedHandler", func(t *testing.T) {
		lc := lw.wait(t, "the list-change subscriptions/listen", (*erListen).isListChange)
		if !lc.filter.Get("toolsListChanged").Bool() {
			t.Fatalf("list-change filter %s does not ask for toolsListChanged", lc.filter.Raw)
		}
		erWait(t, lc.acked, "the acknowledgement of the list-change stream")
		if got := call(t, "touch", map[string]any{"what": "tools"}); got != "touched tools" {
			t.Errorf("touch = %q", got)
		}
		erWait(t, toolsChanged, "the go-sdk ToolListChangedHandler")
	})

	t.Run("Subscribe and ResourceUpdatedHandler", func(t *testing.T) {
		if err := session.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://readme"}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		if got := call(t, "touch", map[string]any{"what": "resource", "uri": "demo://readme"}); got != "updated demo://readme" {
			t.Errorf("touch = %q", got)
		}
		select {
		case uri := <-updated:
			if uri != "demo://readme" {
				t.Errorf("ResourceUpdatedHandler got %q, want demo://readme", uri)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("ResourceUpdatedHandler did not run within %v", waitTimeout)
		}
		if err := session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "demo://readme"}); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
		rl := lw.wait(t, "the demo://readme listen", func(l *erListen) bool { return !l.isListChange() })
		erWait(t, rl.done, "the server seeing the demo://readme stream closed")
	})
}

// TestEraMissingCapability: an input request for a capability the client
// did not declare is never sent; the call fails with an error naming the
// capability.
func TestEraMissingCapability(t *testing.T) {
	t.Parallel()

	t.Run("demo ask_name without elicitation", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		e := errorOf(t, p.call(`"ask"`, "tools/call", `{"name":"ask_name","arguments":{}}`))
		if msg := e.Get("message").String(); !strings.Contains(msg, "elicitation") {
			t.Errorf("error %s does not name the missing elicitation capability", e.Raw)
		}
		resultOf(t, p.call(`"after"`, "ping", ""))
		p.closeStdin()
		if code := p.waitExit(cleanupExitTimeout); code != 0 {
			t.Errorf("exit status %d", code)
		}
		for _, l := range p.all() {
			if gjson.GetBytes(l, "method").String() == "elicitation/create" {
				t.Errorf("elicitation/create sent to a client without the elicitation capability: %s", l)
			}
		}
	})

	// The proxy's own check, against a server that asks regardless of the
	// clientCapabilities it was sent.
	form := `{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`
	url := `{"method":"elicitation/create","params":{"mode":"url","message":"Open it","url":"https://example.com/x"}}`
	sampling := `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}`
	roots := `{"method":"roots/list"}`
	for _, tc := range []struct {
		name, caps, requests, missing string
	}{
		{"form elicitation", `{}`, `{"a":` + form + `}`, "elicitation"},
		{"url elicitation without elicitation.url", `{"elicitation":{}}`, `{"a":` + url + `}`, "elicitation.url"},
		{"sampling", `{"elicitation":{},"roots":{}}`, `{"a":` + sampling + `}`, "sampling"},
		{"roots", `{"sampling":{}}`, `{"a":` + roots + `}`, "roots"},
		{"declared first, undeclared second", `{"elicitation":{}}`, `{"a":` + form + `,"b":` + sampling + `}`, "sampling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, _ *http.Request, _, id string, _ []byte) {
				writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"input_required","inputRequests":`+tc.requests+`,"requestState":"s1"}}`)
			}})
			p := startProxy(t, []string{up.URL})
			erInit(p, tc.caps)
			e := errorOf(t, p.call(`"ask"`, "tools/call", `{"name":"needs","arguments":{}}`))
			if msg := e.Get("message").String(); !strings.Contains(msg, tc.missing) {
				t.Errorf("error %s does not name the missing capability %s", e.Raw, tc.missing)
			}
			if got := e.Get("data.missingCapability").String(); got != tc.missing {
				t.Errorf("error.data.missingCapability = %q, want %q (error %s)", got, tc.missing, e.Raw)
			}
			resultOf(t, p.call(`"after"`, "ping", ""))
			if n := len(up.requests("tools/call")); n != 1 {
				t.Errorf("upstream saw %d tools/call, want 1 (no retry without the answers)", n)
			}
			for _, l := range p.all() {
				if m := gjson.GetBytes(l, "method").String(); m != "" {
					t.Errorf("the proxy sent %s although the round cannot be completed: %s", m, l)
				}
			}
		})
	}
}

// TestEraRawMRTR drives the demo's MRTR tools from a raw client: URL
// elicitation followed by requestState-only rounds, a failed elicitation
// (answered upstream as cancel), and the round limit.
func TestEraRawMRTR(t *testing.T) {
	t.Parallel()
	const caps = `{"elicitation":{"form":{},"url":{}},"roots":{}}`

	t.Run("open_url with wait_rounds", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, caps)
		mark := p.mark()
		p.request(`"open"`, "tools/call", `{"name":"open_url","arguments":{"wait_rounds":2}}`)
		_, el := p.waitLine(mark, "an elicitation/create request", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
		req := gjson.ParseBytes(el)
		if req.Get("params.mode").String() != "url" || req.Get("params.url").String() != demo.ConsentURL {
			t.Errorf("elicitation/create = %s, want URL mode for %s", el, demo.ConsentURL)
		}
		if req.Get("params.elicitationId").String() == "" {
			t.Errorf("URL elicitation without elicitationId: %s", el)
		}
		p.send(`{"jsonrpc":"2.0","id":` + req.Get("id").Raw + `,"result":{"action":"accept"}}`)
		if got := resultOf(t, p.expect(`"open"`)).Get("content.0.text").String(); got != "consent: accept" {
			t.Errorf("open_url = %q, want consent: accept", got)
		}
		calls := erCheckRetries(t, up, "open_url", 4)
		for i := 2; i < len(calls); i++ {
			if r := gjson.GetBytes(calls[i].Body, "params.inputResponses"); r.Exists() {
				t.Errorf("retry %d after a requestState-only round carries inputResponses %s", i, r.Raw)
			}
		}
		n := 0
		for _, l := range p.all() {
			if gjson.GetBytes(l, "method").String() == "elicitation/create" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("the client was asked %d times, want once (requestState-only rounds ask nothing)", n)
		}
	})

	t.Run("failed elicitation becomes cancel", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, caps)
		mark := p.mark()
		p.request(`"ask"`, "tools/call", `{"name":"ask_name","arguments":{}}`)
		_, el := p.waitLine(mark, "an elicitation/create request", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
		p.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(el, "id").Raw + `,"error":{"code":-32603,"message":"the user closed the dialog"}}`)
		if got := resultOf(t, p.expect(`"ask"`)).Get("content.0.text").String(); got != "no name given" {
			t.Errorf("ask_name = %q, want no name given", got)
		}
		calls := erCheckRetries(t, up, "ask_name", 2)
		if len(calls) == 2 {
			if got := gjson.GetBytes(calls[1].Body, "params.inputResponses.name-1").Raw; !erJSONEqual(got, `{"action":"cancel"}`) {
				t.Errorf("inputResponses name-1 = %s, want {\"action\":\"cancel\"}", got)
			}
		}
	})

	t.Run("round limit", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{"--max-mrtr-rounds", "1", up.URL})
		erInit(p, caps)
		p.request(`"two"`, "tools/call", `{"name":"ask_two_rounds","arguments":{}}`)
		answered := 0
		for {
			// Answer every input request until the call is answered.
			i, l := p.waitLine(0, "an input request or the answer", func(i int, l outLine) bool {
				return !p.claimed[i] && ((l.resp && l.id == `"two"`) || l.method == "elicitation/create" || l.method == "roots/list")
			})
			p.mu.Lock()
			p.claimed[i] = true
			p.mu.Unlock()
			m := gjson.ParseBytes(l)
			if m.Get("method").String() == "" {
				e := errorOf(t, l)
				if !strings.Contains(e.Get("message").String(), "--max-mrtr-rounds") {
					t.Errorf("error %s should point at --max-mrtr-rounds", e.Raw)
				}
				break
			}
			answered++
			if answered > 3 {
				t.Fatalf("more input requests than ask_two_rounds has: %s", l)
			}
			if m.Get("method").String() == "roots/list" {
				p.send(`{"jsonrpc":"2.0","id":` + m.Get("id").Raw + `,"result":{"roots":[]}}`)
			} else {
				p.send(`{"jsonrpc":"2.0","id":` + m.Get("id").Raw + `,"result":{"action":"accept","content":{"name":"x","colour":"y"}}}`)
			}
		}
		if answered != 1 {
			t.Errorf("the client answered %d input requests, want 1 (one round allowed)", answered)
		}
		if n := len(erToolCalls(up, "ask_two_rounds")); n != 2 {
			t.Errorf("upstream saw %d ask_two_rounds attempts, want 2", n)
		}
	})
}

// TestEraMRTRCancel: a client cancel while the proxy waits for the client's
// input ends the loop: the proxy withdraws its own request with
// notifications/cancelled, never answers the cancelled id and never
// retries upstream.
func TestEraMRTRCancel(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{"elicitation":{}}`)
	mark := p.mark()
	p.request(`"ask"`, "tools/call", `{"name":"ask_name","arguments":{}}`)
	_, el := p.waitLine(mark, "an elicitation/create request", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
	askID := gjson.GetBytes(el, "id").Raw
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"ask","reason":"user"}}`)
	_, cl := p.waitLine(mark, "notifications/cancelled for the proxy's elicitation request", func(_ int, l outLine) bool {
		return l.method == "notifications/cancelled"
	})
	if got := gjson.GetBytes(cl, "params.requestId").Raw; got != askID {
		t.Errorf("the proxy cancelled request %s, want its elicitation request %s", got, askID)
	}
	// A late answer to the withdrawn request, and a cancel for an id that
	// is not in flight, are ignored: the ping's answer is the next line.
	mark = p.mark()
	p.send(`{"jsonrpc":"2.0","id":` + askID + `,"result":{"action":"accept","content":{"name":"late"}}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never-sent"}}`)
	p.request(`"after"`, "ping", "")
	if next := p.line(mark); gjson.GetBytes(next, "id").Raw != `"after"` {
		t.Errorf("a late answer or an unknown cancel produced output: %s", next)
	}
	resultOf(t, p.expect(`"after"`))
	resultOf(t, p.call(`"next"`, "tools/call", `{"name":"echo","arguments":{"text":"still serving"}}`))
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, l := range p.all() {
		if isResponse(l) && gjson.GetBytes(l, "id").Raw == `"ask"` {
			t.Errorf("a response was written for the cancelled id: %s", l)
		}
	}
	if n := len(erToolCalls(up, "ask_name")); n != 1 {
		t.Errorf("upstream saw %d ask_name attempts, want 1 (a cancelled MRTR loop does not retry)", n)
	}
}

// TestEraMRTRTogether: ask_two_rounds' second round sends roots/list and
// elicitation/create to the client together, before either is answered; a
// cancel then withdraws both.
func TestEraMRTRTogether(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{"elicitation":{},"roots":{"listChanged":true}}`)

	answerRound := func(p *rawProc, id string, answer bool) []string {
		p.t.Helper()
		mark := p.mark()
		p.request(id, "tools/call", `{"name":"ask_two_rounds","arguments":{}}`)
		_, el := p.waitLine(mark, "the round-1 elicitation/create", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
		mark = p.mark()
		p.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Lin"}}}`)
		// Both round-2 requests arrive while neither is answered.
		_, roots := p.waitLine(mark, "the round-2 roots/list", func(_ int, l outLine) bool { return l.method == "roots/list" })
		_, colour := p.waitLine(mark, "the round-2 elicitation/create", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
		ids := []string{gjson.GetBytes(roots, "id").Raw, gjson.GetBytes(colour, "id").Raw}
		if answer {
			p.send(`{"jsonrpc":"2.0","id":` + ids[1] + `,"result":{"action":"accept","content":{"colour":"red"}}}`)
			p.send(`{"jsonrpc":"2.0","id":` + ids[0] + `,"result":{"roots":[{"uri":"file:///r","name":"r"}]}}`)
		}
		return ids
	}

	t.Run("answered", func(t *testing.T) {
		p := p.bind(t)
		answerRound(p, `"two"`, true)
		if got := resultOf(t, p.expect(`"two"`)).Get("content.0.text").String(); got != "hello, Lin; colour: red; roots: 1" {
			t.Errorf("ask_two_rounds = %q", got)
		}
		erCheckRetries(t, up, "ask_two_rounds", 3)
	})

	t.Run("cancelled in round 2", func(t *testing.T) {
		p := p.bind(t)
		mark := p.mark()
		ids := answerRound(p, `"two-cancel"`, false)
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"two-cancel"}}`)
		for _, id := range ids {
			p.waitLine(mark, "notifications/cancelled for "+id, func(_ int, l outLine) bool {
				return l.method == "notifications/cancelled" && gjson.GetBytes(l.raw, "params.requestId").Raw == id
			})
		}
		resultOf(t, p.call(`"after"`, "ping", ""))
		if n := len(erToolCalls(up, "ask_two_rounds")); n != 5 {
			t.Errorf("upstream saw %d ask_two_rounds attempts in all, want 5 (3 + 2 before the cancel)", n)
		}
	})

	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d", code)
	}
	for _, l := range p.all() {
		if isResponse(l) && gjson.GetBytes(l, "id").Raw == `"two-cancel"` {
			t.Errorf("a response was written for the cancelled id: %s", l)
		}
	}
}

// erMRTRServer answers prompts/get and resources/read with one
// input_required round (a form elicitation, and a requestState full of
// escapes), then completes; everything else is fakeServer.
type erMRTRServer struct{ fakeServer }

// erState is the raw requestState literal erMRTRServer issues.
const erState = `"st\u00e9\/<&>\"x"`

func (s *erMRTRServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.Header.Get("Mcp-Method")
	if method != "prompts/get" && method != "resources/read" {
		s.fakeServer.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	id := gjson.GetBytes(body, "id").Raw
	state := gjson.GetBytes(body, "params.requestState")
	if !state.Exists() {
		writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"input_required","inputRequests":{"who":`+
			`{"method":"elicitation/create","params":{"mode":"form","message":"Who?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},`+
			`"requestState":`+erState+`}}`)
		return
	}
	if state.Raw != erState {
		writeJSON(w, http.StatusBadRequest, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32602,"message":"requestState was altered"}}`)
		return
	}
	name := gjson.GetBytes(body, "params.inputResponses.who.content.name").Raw
	if method == "prompts/get" {
		writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","messages":[{"role":"user","content":{"type":"text","text":`+name+`}}]}}`)
		return
	}
	uri := gjson.GetBytes(body, "params.uri").Raw
	writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","contents":[{"uri":`+uri+`,"text":`+name+`}]}}`)
}

// TestEraMRTRPromptsAndResources: MRTR also drives prompts/get and
// resources/read.
func TestEraMRTRPromptsAndResources(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, &erMRTRServer{})
	p := startProxy(t, []string{up.URL})
	erInit(p, `{"elicitation":{}}`)
	for _, tc := range []struct {
		method, params, text string
	}{
		{"prompts/get", `{"name":"hello","arguments":{"a":"b"}}`, "messages.0.content.text"},
		{"resources/read", `{"uri":"file:///é"}`, "contents.0.text"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			p := p.bind(t)
			mark := p.mark()
			id := `"` + tc.method + `"`
			p.request(id, tc.method, tc.params)
			_, el := p.waitLine(mark, "elicitation/create", func(_ int, l outLine) bool { return l.method == "elicitation/create" })
			p.send(`{"jsonrpc":"2.0","id":` + gjson.GetBytes(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Zoë"}}}`)
			if got := resultOf(t, p.expect(id)).Get(tc.text).String(); got != "Zoë" {
				t.Errorf("%s answered %q, want Zoë", tc.method, got)
			}
			exs := up.requests(tc.method)
			if len(exs) != 2 {
				t.Fatalf("upstream saw %d %s, want 2", len(exs), tc.method)
			}
			if exs[0].ID == exs[1].ID {
				t.Errorf("the retry reused upstream id %s", exs[0].ID)
			}
			if a, b := erBaseParams(exs[0].Body), erBaseParams(exs[1].Body); !erJSONEqual(a, b) {
				t.Errorf("the retry changed the params:\n %s\n %s", a, b)
			}
			if got := gjson.GetBytes(exs[1].Body, "params.requestState").Raw; got != erState {
				t.Errorf("requestState %s, want %s byte for byte", got, erState)
			}
		})
	}
}
