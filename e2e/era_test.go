//lint:file-ignore SA1019 sampling, roots and their handlers are deprecated in 2026-07-28 but are exactly what the proxy bridges for a 2025-11-25 client.

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
)

// The rest of the era (issue 4): multi round-trip requests, subscriptions,
// x-mcp-header, cancellation, progress, timeouts and plain forwarding, end
// to end on the built binary, with the go-sdk legacy client and the raw
// NDJSON client. Helpers here are prefixed "er".
//
// Cancel mid-stream (a slow_count cancelled after its first progress: the
// server sees the disconnect, the client gets no response) is TestCancel in
// faults_test.go and is not repeated here.

// erSubscriptionID is the gjson path of the 2026 subscription id in params.
const erSubscriptionID = `params._meta.io\.modelcontextprotocol/subscriptionId`

// erWait waits (bounded) for ch to close.
func erWait(t *testing.T, ch <-chan struct{}, desc string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not happen within %v", desc, waitTimeout)
	}
}

// erInit runs the legacy handshake with the given client capabilities.
func erInit(p *rawProc, caps string) {
	p.t.Helper()
	params := `{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"e2e-era","version":"1"}}`
	resultOf(p.t, p.call(`"init"`, "initialize", params))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// erJSONEqual compares two JSON texts by value.
func erJSONEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// erKeys returns the sorted member names of a JSON object.
func erKeys(obj gjson.Result) []string {
	var ks []string
	obj.ForEach(func(k, _ gjson.Result) bool {
		ks = append(ks, k.String())
		return true
	})
	sort.Strings(ks)
	return ks
}

// erToolCalls returns the recorded tools/call exchanges for tool, in order.
func erToolCalls(up *upstream, tool string) []*exchange {
	var out []*exchange
	for _, ex := range up.requests("tools/call") {
		if gjson.GetBytes(ex.Body, "params.name").String() == tool {
			out = append(out, ex)
		}
	}
	return out
}

// erBaseParams is a tools/call body's params without the MRTR members.
func erBaseParams(body []byte) string {
	params := []byte(gjson.GetBytes(body, "params").Raw)
	for _, k := range []string{"inputResponses", "requestState"} {
		if b, err := sjson.DeleteBytes(params, k); err == nil {
			params = b
		}
	}
	return string(params)
}

// erCheckRetries checks the upstream side of one MRTR call of tool: want
// exchanges in all; each retry has a new upstream id, the same params as
// the first attempt, inputResponses for exactly the keys the previous answer
// asked for (none after a requestState-only round), and the previous
// answer's requestState byte for byte; the last answer is complete. It
// returns the exchanges.
func erCheckRetries(t *testing.T, up *upstream, tool string, want int) []*exchange {
	t.Helper()
	calls := erToolCalls(up, tool)
	if len(calls) != want {
		t.Errorf("upstream saw %d tools/call %s, want %d (the first attempt and one retry per round)", len(calls), tool, want)
		return calls
	}
	first := calls[0].Body
	for _, k := range []string{"inputResponses", "requestState"} {
		if gjson.GetBytes(first, "params."+k).Exists() {
			t.Errorf("the first %s attempt carries params.%s: %s", tool, k, shortBytes(first))
		}
	}
	base := erBaseParams(first)
	ids := map[string]bool{calls[0].ID: true}
	for i := 1; i < len(calls); i++ {
		prev, cur := calls[i-1], calls[i]
		if ids[cur.ID] {
			t.Errorf("%s retry %d reuses upstream id %s; every retry needs a new id", tool, i, cur.ID)
		}
		ids[cur.ID] = true
		if got := erBaseParams(cur.Body); !erJSONEqual(got, base) {
			t.Errorf("%s retry %d changed the params:\n first: %s\n retry: %s", tool, i, base, got)
		}
		_, _, resp := up.response(t, prev)
		res := gjson.GetBytes(resp, "result")
		if rt := res.Get("resultType").String(); rt != "input_required" {
			t.Errorf("%s attempt %d was answered %q, want input_required: %s", tool, i-1, rt, shortBytes(resp))
			continue
		}
		sent := res.Get("requestState").Raw
		got := gjson.GetBytes(cur.Body, "params.requestState").Raw
		if sent == "" || got != sent {
			t.Errorf("%s retry %d: requestState is not byte for byte the server's:\n server: %s\n retry:  %s", tool, i, sent, got)
		}
		if !strings.Contains(got, `\u00e9`) || !strings.Contains(got, `\/`) || !strings.Contains(got, `<&>`) {
			t.Errorf("%s retry %d: requestState %s lost the raw escapes the server wrote (%s)", tool, i, got, demo.RequestStateRawSuffix)
		}
		asked := erKeys(res.Get("inputRequests"))
		answered := erKeys(gjson.GetBytes(cur.Body, "params.inputResponses"))
		if !slices.Equal(asked, answered) {
			t.Errorf("%s retry %d: inputResponses keys %v, want the inputRequests keys %v", tool, i, answered, asked)
		}
	}
	_, _, last := up.response(t, calls[len(calls)-1])
	if rt := gjson.GetBytes(last, "result.resultType").String(); rt != "complete" {
		t.Errorf("the last %s attempt was answered %q, want complete: %s", tool, rt, shortBytes(last))
	}
	return calls
}

// erListenWatch sits between the recorder and a handler and records every
// subscriptions/listen request: its filter, when the acknowledgement was
// written, and when its request context ended (the proxy closed the stream,
// or the handler returned).
type erListenWatch struct {
	next http.Handler
	// hold, when set, picks listen requests the server never answers: it
	// only waits for the client to close them (a slow acknowledgement).
	hold func(*erListen) bool

	changes
	listens []*erListen
}

type erListen struct {
	id     string        // the raw upstream JSON-RPC id
	filter gjson.Result  // params.notifications
	acked  chan struct{} // closed once the acknowledgement was written
	done   chan struct{} // closed when the request's context ended
	once   sync.Once
	// drop ends the stream from the server side: the handler's context is
	// cancelled, so the go-sdk ends the listen with its result.
	drop context.CancelFunc
}

func newERListenWatch(next http.Handler) *erListenWatch {
	return &erListenWatch{next: next}
}

func (w *erListenWatch) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Method") != "subscriptions/listen" {
		w.next.ServeHTTP(rw, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	l := &erListen{
		id:     gjson.GetBytes(body, "id").Raw,
		filter: gjson.GetBytes(body, "params.notifications"),
		acked:  make(chan struct{}),
		done:   make(chan struct{}),
	}
	go func() {
		<-r.Context().Done()
		close(l.done)
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	l.drop = cancel
	w.mu.Lock()
	w.listens = append(w.listens, l)
	w.notifyLocked()
	w.mu.Unlock()
	if w.hold != nil && w.hold(l) {
		<-ctx.Done()
		return
	}
	w.next.ServeHTTP(&erAckWriter{ResponseWriter: rw, l: l}, r.WithContext(ctx))
}

// wait returns the first listen request that satisfies pred.
func (w *erListenWatch) wait(t *testing.T, desc string, pred func(*erListen) bool) *erListen {
	t.Helper()
	var found *erListen
	w.until(t, func() bool {
		for _, l := range w.listens {
			if pred(l) {
				found = l
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("upstream never received %s within %v", desc, waitTimeout) })
	return found
}

func (w *erListenWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.listens)
}

// erAckWriter notices the acknowledgement in a listen response.
type erAckWriter struct {
	http.ResponseWriter
	l    *erListen
	seen []byte
}

func (a *erAckWriter) Write(b []byte) (int, error) {
	n, err := a.ResponseWriter.Write(b)
	if len(a.seen) < 1<<16 {
		a.seen = append(a.seen, b...)
		if bytes.Contains(a.seen, []byte("notifications/subscriptions/acknowledged")) {
			a.l.once.Do(func() { close(a.l.acked) })
		}
	}
	return n, err
}

func (a *erAckWriter) Flush() { _ = http.NewResponseController(a.ResponseWriter).Flush() }

func (a *erAckWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// isListChange reports whether a listen request is the list-change stream.
func (l *erListen) isListChange() bool { return !l.filter.Get("resourceSubscriptions").Exists() }

// erText is the text of a CallToolResult's first content block.
func erText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

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

// TestEraSubscriptions: list changes and resource subscriptions over
// subscriptions/listen, as a raw client sees them.
func TestEraSubscriptions(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	up := newUpstream(t, lw)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)

	lc := lw.wait(t, "the list-change subscriptions/listen", (*erListen).isListChange)
	for _, k := range []string{"toolsListChanged", "promptsListChanged", "resourcesListChanged"} {
		if !lc.filter.Get(k).Bool() {
			t.Errorf("list-change filter %s: %s is not true (the demo declares listChanged)", lc.filter.Raw, k)
		}
	}
	erWait(t, lc.acked, "the acknowledgement of the list-change stream")

	mark := p.mark()
	resultOf(t, p.call(`"touch-tools"`, "tools/call", `{"name":"touch","arguments":{"what":"tools"}}`))
	_, l := p.waitLine(mark, "notifications/tools/list_changed", func(_ int, l outLine) bool {
		return l.method == "notifications/tools/list_changed"
	})
	if gjson.GetBytes(l, erSubscriptionID).Exists() {
		t.Errorf("list_changed keeps the 2026 subscriptionId: %s", l)
	}
	if n := lw.count(); n != 1 {
		t.Errorf("%d listen streams before any subscribe, want 1", n)
	}

	res := resultOf(t, p.call(`"sub"`, "resources/subscribe", `{"uri":"demo://readme"}`))
	if res.Raw != "{}" {
		t.Errorf("resources/subscribe = %s, want {}", res.Raw)
	}
	rl := lw.wait(t, "the listen request for demo://readme", func(l *erListen) bool { return !l.isListChange() })
	if got := rl.filter.Get("resourceSubscriptions").Raw; got != `["demo://readme"]` {
		t.Errorf("resource listen filter %s, want resourceSubscriptions [demo://readme]", rl.filter.Raw)
	}
	// A second subscribe to the same URI opens nothing new.
	resultOf(t, p.call(`"sub-again"`, "resources/subscribe", `{"uri":"demo://readme"}`))

	mark = p.mark()
	resultOf(t, p.call(`"touch-res"`, "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"demo://readme"}}`))
	_, l = p.waitLine(mark, "notifications/resources/updated", func(_ int, l outLine) bool {
		return l.method == "notifications/resources/updated"
	})
	if got := gjson.GetBytes(l, "params.uri").String(); got != "demo://readme" {
		t.Errorf("resources/updated %s, want uri demo://readme", l)
	}
	if gjson.GetBytes(l, erSubscriptionID).Exists() {
		t.Errorf("resources/updated keeps the 2026 subscriptionId: %s", l)
	}
	if n := lw.count(); n != 2 {
		t.Errorf("%d listen streams after two subscribes to one URI, want 2 (list changes + one per URI)", n)
	}

	res = resultOf(t, p.call(`"unsub"`, "resources/unsubscribe", `{"uri":"demo://readme"}`))
	if res.Raw != "{}" {
		t.Errorf("resources/unsubscribe = %s, want {}", res.Raw)
	}
	erWait(t, rl.done, "the server seeing the demo://readme listen stream closed after unsubscribe")
	ex := up.waitRequest(t, "the demo://readme listen", func(ex *exchange) bool { return ex.ID == rl.id })
	up.response(t, ex) // the handler has returned: the server dropped the subscription
	select {
	case <-lc.done:
		t.Errorf("unsubscribe closed the list-change stream too")
	default:
	}

	// No more updates reach the client; list changes still do.
	resultOf(t, p.call(`"touch-res-2"`, "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"demo://readme"}}`))
	mark = p.mark()
	resultOf(t, p.call(`"touch-prompts"`, "tools/call", `{"name":"touch","arguments":{"what":"prompts"}}`))
	p.waitLine(mark, "notifications/prompts/list_changed", func(_ int, l outLine) bool {
		return l.method == "notifications/prompts/list_changed"
	})
	resultOf(t, p.call(`"last-ping"`, "ping", ""))
	p.closeStdin()
	if code := p.waitExit(cleanupExitTimeout); code != 0 {
		t.Errorf("exit status %d", code)
	}
	updated := 0
	for _, l := range p.all() {
		if gjson.GetBytes(l, "method").String() == "notifications/resources/updated" {
			updated++
		}
	}
	if updated != 1 {
		t.Errorf("the client got %d resources/updated, want 1 (none after unsubscribe)", updated)
	}
	for _, l := range p.all() {
		if m := gjson.GetBytes(l, "method").String(); m == "notifications/subscriptions/acknowledged" || m == "subscriptions/listen" {
			t.Errorf("a listen message reached the client: %s", l)
		}
	}
	if n := lw.count(); n != 2 {
		t.Errorf("%d listen streams over the session, want 2 (no reconnects, nothing reopened)", n)
	}
	erWait(t, lc.done, "the list-change stream closing when the session ends")
}

// TestEraParamHeaders: x-mcp-header against the demo, whose server checks
// the Mcp-Param-* headers strictly.
func TestEraParamHeaders(t *testing.T) {
	t.Parallel()

	t.Run("after tools/list", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		tools := resultOf(t, p.call(`"list"`, "tools/list", `{}`)).Get("tools").Array()
		var names []string
		var weather gjson.Result
		for _, tool := range tools {
			names = append(names, tool.Get("name").String())
			if tool.Get("name").String() == "weather" {
				weather = tool
			}
		}
		if slices.Contains(names, demo.BadHeaderTool) {
			t.Errorf("tools/list = %v still lists %s, whose x-mcp-header is invalid", names, demo.BadHeaderTool)
		}
		if !weather.Exists() {
			t.Fatalf("tools/list = %v, missing weather", names)
		}
		if got := weather.Get(`inputSchema.properties.city.x-mcp-header`).String(); got != "City" {
			t.Errorf("weather's city annotation = %q, want City (valid annotations stay): %s", got, weather.Raw)
		}
		for _, tool := range tools {
			if got := tool.Get("execution.taskSupport").String(); got != "optional" {
				t.Errorf("tool %s execution.taskSupport = %q, want optional (the demo has the tasks extension)", tool.Get("name").String(), got)
			}
		}

		res := resultOf(t, p.call(`"zurich"`, "tools/call", `{"name":"weather","arguments":{"city":"Zürich","days":3}}`))
		if got := res.Get("content.0.text").String(); got != "weather for Zürich (3 days)" || res.Get("isError").Bool() {
			t.Errorf("weather Zürich = %s", res.Raw)
		}
		calls := erToolCalls(up, "weather")
		if len(calls) != 1 {
			t.Fatalf("upstream saw %d weather calls, want 1 (the headers were right the first time)", len(calls))
		}
		h := calls[0].Header
		if got := h.Values("Mcp-Param-City"); !slices.Equal(got, []string{"=?base64?WsO8cmljaA==?="}) {
			t.Errorf("Mcp-Param-City = %q, want [=?base64?WsO8cmljaA==?=]", got)
		}
		if got := h.Values("Mcp-Param-Days"); !slices.Equal(got, []string{"3"}) {
			t.Errorf("Mcp-Param-Days = %q, want [3]", got)
		}

		res = resultOf(t, p.call(`"paris"`, "tools/call", `{"name":"weather","arguments":{"city":"Paris"}}`))
		if got := res.Get("content.0.text").String(); got != "weather for Paris (1 days)" || res.Get("isError").Bool() {
			t.Errorf("weather Paris = %s", res.Raw)
		}
		calls = erToolCalls(up, "weather")
		if len(calls) != 2 {
			t.Fatalf("upstream saw %d weather calls, want 2", len(calls))
		}
		h = calls[1].Header
		if got := h.Values("Mcp-Param-City"); !slices.Equal(got, []string{"Paris"}) {
			t.Errorf("Mcp-Param-City = %q, want [Paris]", got)
		}
		if got := h.Values("Mcp-Param-Days"); len(got) != 0 {
			t.Errorf("Mcp-Param-Days = %q for an absent argument, want none", got)
		}
		if n := len(up.requests("tools/list")); n != 1 {
			t.Errorf("upstream saw %d tools/list, want 1 (the client's own)", n)
		}
		p.closeStdin()
		if code := p.waitExit(cleanupExitTimeout); code != 0 {
			t.Errorf("exit status %d", code)
		}
		if log := p.stderr.String(); !strings.Contains(log, demo.BadHeaderTool) {
			t.Errorf("no warning naming %s on stderr:\n%s", demo.BadHeaderTool, log)
		}
	})

	t.Run("value shapes", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		resultOf(t, p.call(`"list"`, "tools/list", `{}`))
		for i, tc := range []struct {
			args, header string // header: the exact Mcp-Param-City, "" for a Base64 sentinel
		}{
			{`{"city":"Oslo","days":-1}`, "Oslo"},
			{`{"city":" padded "}`, ""},
			{`{"city":"=?base64?T3Nsbw==?="}`, ""},
			{`{"city":"東京","days":14}`, ""},
			{`{"city":"tab\there"}`, ""},
			{`{"city":"New York","days":null}`, "New York"},
		} {
			id := fmt.Sprintf(`"v%d"`, i)
			res := resultOf(t, p.call(id, "tools/call", `{"name":"weather","arguments":`+tc.args+`}`))
			nullDays := gjson.Get(tc.args, "days").Type == gjson.Null && gjson.Get(tc.args, "days").Exists()
			// With days null the headers pass (the server checks them
			// first) and the tool's schema then refuses null.
			if !nullDays && (res.Get("isError").Bool() || !strings.HasPrefix(res.Get("content.0.text").String(), "weather for ")) {
				t.Errorf("weather %s = %s", tc.args, res.Raw)
				continue
			}
			calls := erToolCalls(up, "weather")
			if d := calls[len(calls)-1].Header.Values("Mcp-Param-Days"); nullDays && len(d) != 0 {
				t.Errorf("weather %s: Mcp-Param-Days = %q for a null argument, want none", tc.args, d)
			}
			h := calls[len(calls)-1].Header.Values("Mcp-Param-City")
			city := gjson.Get(tc.args, "city").String()
			switch {
			case len(h) != 1:
				t.Errorf("weather %s: Mcp-Param-City = %q, want one value", tc.args, h)
			case tc.header != "" && h[0] != tc.header:
				t.Errorf("weather %s: Mcp-Param-City = %q, want %q", tc.args, h[0], tc.header)
			case tc.header == "" && city != "" && !strings.HasPrefix(h[0], "=?base64?"):
				t.Errorf("weather %s: Mcp-Param-City = %q, want the Base64 sentinel", tc.args, h[0])
			}
		}
		if n := len(erToolCalls(up, "weather")); n != 6 {
			t.Errorf("upstream saw %d weather calls for 6, want 6 (no -32020 retries: the headers were right)", n)
		}
	})

	t.Run("first call of the session", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		res := resultOf(t, p.call(`"first"`, "tools/call", `{"name":"weather","arguments":{"city":"Zürich","days":2}}`))
		if got := res.Get("content.0.text").String(); got != "weather for Zürich (2 days)" || res.Get("isError").Bool() {
			t.Errorf("weather as the first call = %s", res.Raw)
		}
		calls := erToolCalls(up, "weather")
		if len(calls) != 1 {
			t.Fatalf("upstream saw %d weather calls, want 1 (headers right the first time, no -32020 retry)", len(calls))
		}
		if got := calls[0].Header.Get("Mcp-Param-City"); got != "=?base64?WsO8cmljaA==?=" {
			t.Errorf("Mcp-Param-City = %q", got)
		}
		lists := up.requests("tools/list")
		if len(lists) != 1 {
			t.Fatalf("upstream saw %d tools/list, want 1 (fetched once, lazily)", len(lists))
		}
		all := up.requests("")
		if slices.Index(all, lists[0]) > slices.Index(all, calls[0]) {
			t.Errorf("the lazy tools/list came after the call it was for")
		}
		resultOf(t, p.call(`"second"`, "tools/call", `{"name":"weather","arguments":{"city":"Oslo"}}`))
		if n := len(up.requests("tools/list")); n != 1 {
			t.Errorf("upstream saw %d tools/list after two calls, want 1", n)
		}
	})
}

// TestEraTimeouts: --idle-timeout against a silent server and
// --request-timeout against one that keeps sending progress.
func TestEraTimeouts(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name    string
		headers bool // send SSE headers, then nothing
	}{
		{"no answer at all", false},
		{"silent event stream", true},
	} {
		t.Run("idle: "+tc.name, func(t *testing.T) {
			t.Parallel()
			gone := make(chan struct{})
			var once sync.Once
			up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, r *http.Request, name, id string, _ []byte) {
				if name != "silent" {
					writeJSON(w, http.StatusOK, `{"jsonrpc":"2.0","id":`+id+`,"result":{"resultType":"complete","content":[{"type":"text","text":"ok"}]}}`)
					return
				}
				if tc.headers {
					w.Header().Set("Content-Type", "text/event-stream")
					w.WriteHeader(http.StatusOK)
					_ = http.NewResponseController(w).Flush()
				}
				<-r.Context().Done()
				once.Do(func() { close(gone) })
			}})
			p := startProxy(t, []string{"--idle-timeout", "500ms", up.URL})
			erInit(p, `{}`)
			e := errorOf(t, p.call(`"idle"`, "tools/call", `{"name":"silent","arguments":{}}`))
			if e.Get("code").Int() != -32603 || !strings.Contains(e.Get("message").String(), "--idle-timeout") {
				t.Errorf("error %s, want -32603 naming --idle-timeout", e.Raw)
			}
			erWait(t, gone, "the server seeing the timed-out request closed")
			resultOf(t, p.call(`"after"`, "ping", ""))
			if got := resultOf(t, p.call(`"works"`, "tools/call", `{"name":"fine","arguments":{}}`)).Get("content.0.text").String(); got != "ok" {
				t.Errorf("call after the timeout answered %q", got)
			}
		})
	}

	t.Run("request timeout with steady progress", func(t *testing.T) {
		t.Parallel()
		gone := make(chan struct{})
		var once sync.Once
		up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, r *http.Request, _, _ string, body []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			tok := gjson.GetBytes(body, "params._meta.progressToken").Raw
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for i := 1; ; i++ {
				fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%d}}\n\n", tok, i)
				_ = http.NewResponseController(w).Flush()
				select {
				case <-r.Context().Done():
					once.Do(func() { close(gone) })
					return
				case <-tick.C:
				}
			}
		}})
		// The idle timeout is far longer than the gap between two progress
		// notifications and far shorter than the hard maximum: the call
		// outlives it only because progress restarts it.
		p := startProxy(t, []string{"--idle-timeout", "1s", "--request-timeout", "2500ms", up.URL})
		erInit(p, `{}`)
		mark := p.mark()
		e := errorOf(t, p.call(`"long"`, "tools/call", `{"name":"forever","arguments":{},"_meta":{"progressToken":"long"}}`))
		if e.Get("code").Int() != -32603 || !strings.Contains(e.Get("message").String(), "--request-timeout") {
			t.Errorf("error %s, want -32603 naming --request-timeout", e.Raw)
		}
		erWait(t, gone, "the server seeing the timed-out request closed")
		progress := 0
		for _, l := range p.all()[mark:] {
			if gjson.GetBytes(l, "method").String() == "notifications/progress" {
				progress++
			}
		}
		if progress == 0 {
			t.Errorf("no progress reached the client before the timeout")
		}
		resultOf(t, p.call(`"after"`, "ping", ""))
	})
}

// TestEraProgressMonotonic: progress that goes backwards or repeats on the
// stream is dropped; the rest reaches the client in order, before the
// response.
func TestEraProgressMonotonic(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, &fakeServer{Call: func(w http.ResponseWriter, _ *http.Request, _, id string, body []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		tok := gjson.GetBytes(body, "params._meta.progressToken").Raw
		for _, v := range []string{"1", "3", "2", "3", "4"} {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%s,\"progress\":%s}}\n\n", tok, v)
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", id)
	}})
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	mark := p.mark()
	resultOf(t, p.call(`"p"`, "tools/call", `{"name":"steps","arguments":{},"_meta":{"progressToken":7}}`))
	var seen []string
	answered := false
	for _, l := range p.all()[mark:] {
		switch {
		case gjson.GetBytes(l, "method").String() == "notifications/progress":
			if answered {
				t.Errorf("progress after the response: %s", l)
			}
			if tok := gjson.GetBytes(l, "params.progressToken").Raw; tok != "7" {
				t.Errorf("progress token %s, want 7", tok)
			}
			seen = append(seen, gjson.GetBytes(l, "params.progress").Raw)
		case gjson.GetBytes(l, "id").Raw == `"p"`:
			answered = true
		}
	}
	if want := []string{"1", "3", "4"}; !slices.Equal(seen, want) {
		t.Errorf("progress seen %v, want %v", seen, want)
	}
}

// TestEraForwarded: methods without special handling are forwarded with
// _meta and headers, and their answers (results or the server's errors)
// come back.
func TestEraForwarded(t *testing.T) {
	t.Parallel()

	t.Run("demo", func(t *testing.T) {
		t.Parallel()
		up := newDemoUpstream(t)
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)

		tl := resultOf(t, p.call(`"templates"`, "resources/templates/list", `{}`))
		found := false
		for _, rt := range tl.Get("resourceTemplates").Array() {
			found = found || rt.Get("uriTemplate").String() == "demo://echo/{text}"
		}
		if !found {
			t.Errorf("resources/templates/list = %s, want demo://echo/{text}", tl.Raw)
		}
		if n := len(up.requests("resources/templates/list")); n != 1 {
			t.Errorf("upstream saw %d resources/templates/list, want 1", n)
		}

		resp := p.call(`"complete"`, "completion/complete", `{"ref":{"type":"ref/prompt","name":"greeting"},"argument":{"name":"name","value":"W"}}`)
		exs := up.requests("completion/complete")
		if len(exs) != 1 {
			t.Fatalf("upstream saw %d completion/complete, want 1", len(exs))
		}
		status, _, body := up.response(t, exs[0])
		if e := gjson.GetBytes(resp, "error"); e.Exists() {
			// The server's own error, passed through.
			want := gjson.GetBytes(body, "error")
			if e.Get("code").Int() != want.Get("code").Int() || e.Get("message").String() != want.Get("message").String() {
				t.Errorf("completion/complete error %s, want the server's %s", e.Raw, want.Raw)
			}
			if status != http.StatusOK && e.Get("data.httpStatus").Int() != int64(status) {
				t.Errorf("completion/complete error %s: data.httpStatus should be %d", e.Raw, status)
			}
		} else if !resultOf(t, resp).Get("completion").IsObject() {
			t.Errorf("completion/complete = %s, want a CompleteResult", resp)
		}

		e := errorOf(t, p.call(`"foo"`, "foo/bar", `{"x":1}`))
		if e.Get("code").Int() != -32601 {
			t.Errorf("foo/bar: %s, want -32601", e.Raw)
		}
		exs = up.requests("foo/bar")
		if len(exs) != 1 {
			t.Fatalf("upstream saw %d foo/bar, want 1 (unknown methods are forwarded)", len(exs))
		}
		if status, _, _ := up.response(t, exs[0]); status != http.StatusNotFound || e.Get("data.httpStatus").Int() != 404 {
			t.Errorf("foo/bar: the demo answered HTTP %d, the client got %s; want 404 and data.httpStatus 404", status, e.Raw)
		}
		if got := gjson.GetBytes(exs[0].Body, "params.x").Raw; got != "1" {
			t.Errorf("foo/bar params not forwarded: %s", shortBytes(exs[0].Body))
		}
	})

	t.Run("404 method not found", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t, &fakeServer{})
		p := startProxy(t, []string{up.URL})
		erInit(p, `{}`)
		e := errorOf(t, p.call(`"foo"`, "foo/bar", `{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`))
		if e.Get("code").Int() != -32601 {
			t.Errorf("foo/bar: %s, want -32601 (method not found)", e.Raw)
		}
		if got := e.Get("data.httpStatus").Int(); got != 404 {
			t.Errorf("foo/bar: error.data.httpStatus = %d, want 404 (error %s)", got, e.Raw)
		}
		exs := up.requests("foo/bar")
		if len(exs) != 1 {
			t.Fatalf("upstream saw %d foo/bar, want 1", len(exs))
		}
		if got := gjson.GetBytes(exs[0].Body, "params._meta.traceparent").String(); !strings.HasPrefix(got, "00-0af7") {
			t.Errorf("the client's _meta was not kept: %s", shortBytes(exs[0].Body))
		}
		resultOf(t, p.call(`"after"`, "ping", ""))
		// The server declares no listChanged and the client subscribed to
		// nothing: no listen stream (it would have been opened at
		// notifications/initialized, before the calls above).
		if n := len(up.requests("subscriptions/listen")); n != 0 {
			t.Errorf("upstream saw %d subscriptions/listen with nothing to listen for, want 0", n)
		}
	})
}

// TestEraListenReconnect: a listen stream the server ends is reopened with
// the same filter (and a new upstream id); after the list-change stream
// comes back the client is told that each kind may have changed (README,
// "Change notifications"), and both streams carry notifications again.
func TestEraListenReconnect(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	up := newUpstream(t, lw)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	first := lw.wait(t, "the list-change subscriptions/listen", (*erListen).isListChange)
	erWait(t, first.acked, "the acknowledgement of the list-change stream")
	resultOf(t, p.call(`"sub"`, "resources/subscribe", `{"uri":"demo://readme"}`))
	res1 := lw.wait(t, "the demo://readme listen", func(l *erListen) bool { return !l.isListChange() })

	t.Run("list-change stream", func(t *testing.T) {
		p := p.bind(t)
		mark := p.mark()
		first.drop()
		second := lw.wait(t, "the reopened list-change listen", func(l *erListen) bool { return l != first && l.isListChange() })
		if !erJSONEqual(second.filter.Raw, first.filter.Raw) {
			t.Errorf("reopened with filter %s, want %s", second.filter.Raw, first.filter.Raw)
		}
		if second.id == first.id {
			t.Errorf("reopened with the same upstream id %s", first.id)
		}
		erWait(t, second.acked, "the acknowledgement of the reopened list-change stream")
		// The proxy tells the client once per kind, on the stream's own
		// goroutine, before it forwards anything the reopened stream
		// carries; so by the time a change made after the reconnect
		// arrives, the "may have changed" notifications are on stdout
		// before it. touch resources makes a resources/list_changed; tools
		// and prompts can only come from the reconnect.
		resultOf(t, p.call(`"touch-resources"`, "tools/call", `{"name":"touch","arguments":{"what":"resources"}}`))
		i, _ := p.waitLine(mark, "notifications/resources/list_changed", func(_ int, l outLine) bool {
			return l.method == "notifications/resources/list_changed"
		})
		seen := map[string]bool{}
		for _, l := range p.all()[mark:i] {
			seen[gjson.GetBytes(l, "method").String()] = true
		}
		for _, m := range []string{"notifications/tools/list_changed", "notifications/prompts/list_changed"} {
			if !seen[m] {
				t.Errorf("after the list-change stream was reopened the client was not sent %s (changes may have been missed while it was down); stdout so far:\n%s", m, p.dump())
			}
		}
		if t.Failed() {
			return
		}
		p.waitLine(i+1, "the resources/list_changed that touch made", func(_ int, l outLine) bool {
			return l.method == "notifications/resources/list_changed"
		})
	})

	t.Run("resource stream", func(t *testing.T) {
		p := p.bind(t)
		res1.drop()
		res2 := lw.wait(t, "the reopened demo://readme listen", func(l *erListen) bool { return l != res1 && !l.isListChange() })
		if !erJSONEqual(res2.filter.Raw, res1.filter.Raw) {
			t.Errorf("reopened with filter %s, want %s", res2.filter.Raw, res1.filter.Raw)
		}
		erWait(t, res2.acked, "the acknowledgement of the reopened demo://readme stream")
		mark := p.mark()
		resultOf(t, p.call(`"touch-res"`, "tools/call", `{"name":"touch","arguments":{"what":"resource","uri":"demo://readme"}}`))
		p.waitLine(mark, "notifications/resources/updated from the reopened stream", func(_ int, l outLine) bool {
			return l.method == "notifications/resources/updated"
		})
	})
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

// TestEraLazyToolsListConcurrent: many first calls at once fetch the tool
// list once, and every one carries its Mcp-Param-* headers.
func TestEraLazyToolsListConcurrent(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	const n = 8
	for i := range n {
		p.request(fmt.Sprint(i), "tools/call", fmt.Sprintf(`{"name":"weather","arguments":{"city":"Zürich","days":%d}}`, i+1))
	}
	for i := range n {
		res := resultOf(t, p.expect(fmt.Sprint(i)))
		if got, want := res.Get("content.0.text").String(), fmt.Sprintf("weather for Zürich (%d days)", i+1); got != want || res.Get("isError").Bool() {
			t.Errorf("call %d = %s, want %q", i, res.Raw, want)
		}
	}
	if got := len(up.requests("tools/list")); got != 1 {
		t.Errorf("upstream saw %d tools/list, want 1", got)
	}
	if got := len(erToolCalls(up, "weather")); got != n {
		t.Errorf("upstream saw %d weather calls, want %d (no header-mismatch retries)", got, n)
	}
}

// TestEraUnsubscribeBeforeAck: an unsubscribe that arrives while the
// subscribe for the same URI still waits for the server's acknowledgement
// closes the pending stream, and both requests get their one answer.
func TestEraUnsubscribeBeforeAck(t *testing.T) {
	t.Parallel()
	lw := newERListenWatch(demo.Handler())
	lw.hold = func(l *erListen) bool { return !l.isListChange() }
	up := newUpstream(t, lw)
	p := startProxy(t, []string{up.URL})
	erInit(p, `{}`)
	p.request(`"sub"`, "resources/subscribe", `{"uri":"demo://readme"}`)
	rl := lw.wait(t, "the demo://readme listen", func(l *erListen) bool { return !l.isListChange() })
	res := resultOf(t, p.call(`"unsub"`, "resources/unsubscribe", `{"uri":"demo://readme"}`))
	if res.Raw != "{}" {
		t.Errorf("resources/unsubscribe = %s, want {}", res.Raw)
	}
	erWait(t, rl.done, "the server seeing the pending demo://readme stream closed")
	// The subscribe must not wait for an acknowledgement that can no
	// longer come (--idle-timeout, 10 min by default): an error or {}.
	sub := p.expect(`"sub"`)
	if !gjson.GetBytes(sub, "error").Exists() && gjson.GetBytes(sub, "result").Raw != "{}" {
		t.Errorf("resources/subscribe answered %s", sub)
	}
	resultOf(t, p.call(`"after"`, "ping", ""))
}
