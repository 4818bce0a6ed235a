// Package demo owns the embedded modern MCP server that `mcp-tasks-proxy --demo`
// and the end-to-end tests talk to.
//
// It is a test and demonstration peer, not part of the data path: the bridge
// never imports it, and nothing it does decides what is correct on the wire.
// It is built on the go-sdk and speaks only protocol 2026-07-28 over stateless
// Streamable HTTP (no sessions, no initialize, per-request _meta), with:
//
//   - tool "echo": returns its "text" argument as one TextContent;
//   - tool "slow_count": sends n progress notifications and one info log on
//     its SSE response stream, then answers "counted to n";
//   - tool "whoami": reports the request _meta and Mcp-* headers it saw;
//   - tool "quick": returns its "text" argument at once, never as a task;
//   - task tools "slow" (completes after "ms" milliseconds, default 1000),
//     "fail" (fails with JSON-RPC error -32000), "needs_input" (asks for a
//     name with an elicitation/create input request, then greets) and
//     "iserror" (completes with an isError tool result);
//   - multi round-trip tools "ask_name", "ask_two_rounds", "open_url",
//     "sample" and "list_roots" (see below);
//   - tool "weather", whose arguments city and days are mirrored in the
//     Mcp-Param-City and Mcp-Param-Days headers (x-mcp-header), and the
//     listed-only "bad_header_tool", whose annotation is invalid;
//   - tool "touch": triggers a list_changed or resources/updated
//     notification on the subscriptions/listen streams that asked for it;
//   - prompt "greeting": one user message "Hello, NAME!";
//   - resource "demo://readme" and resource template "demo://echo/{text}".
//
// # Multi round-trip requests
//
// The MRTR tools answer a first call with {"resultType":"input_required",
// "inputRequests":{KEY:{method,params}},"requestState":STATE} and complete
// when the client retries the same tools/call with params.inputResponses
// (KEY → result) and params.requestState = STATE, echoed byte for byte:
//
//   - ask_name: "name-1" elicitation/create (form, "What is your name?",
//     {name: string}) → "hello, NAME", or "no name given" when the user
//     declines or cancels;
//   - ask_two_rounds: "name-1" as ask_name; then "roots-2" roots/list and
//     "colour-2" elicitation/create ({colour: string}) in one round →
//     "hello, NAME; colour: COLOUR; roots: N" (NAME "stranger" and COLOUR
//     "unknown" when not given);
//   - open_url: "consent-1" elicitation/create in URL mode ({"mode":"url",
//     "message":…,"url":"https://example.com/consent"}, no elicitationId)
//     → "consent: ACTION"; with arguments {"wait_rounds":N} the answer is
//     followed by N requestState-only input_required rounds (no
//     inputRequests) before the result;
//   - sample: "sample-1" sampling/createMessage (one user message "Say
//     hi", maxTokens 50) → the text of the CreateMessageResult;
//   - list_roots: "roots-1" roots/list → the root URIs joined by ", "
//     ("(no roots)" for none).
//
// A retry that lacks a needed response gets the same inputRequests again
// (with a new requestState); a response of the wrong kind is -32602. A
// tool needing a client capability that the request's clientCapabilities
// do not declare (elicitation form — an empty "elicitation" object counts
// —, elicitation.url, sampling, roots) answers -32021 with
// data.requiredCapabilities. Every requestState is signed and ends, on the
// wire, with the raw JSON text [RequestStateRawSuffix] (raw "<&>", an
// escaped "\/" and a "\u00e9" escape); a retry whose requestState literal
// differs in any byte from one the server issued — including a
// decode-and-re-encode that keeps the value — is refused with 400 and
// -32602 "requestState was altered".
//
// # Change notifications
//
// subscriptions/listen (go-sdk) answers with a long-lived SSE stream:
// notifications/subscriptions/acknowledged first, then the requested
// list_changed and resources/updated notifications, each carrying
// _meta["io.modelcontextprotocol/subscriptionId"] = the listen id. The
// capabilities declare listChanged for tools, prompts and resources and
// resources.subscribe; every resourceSubscriptions URI is accepted.
// Stopping the server ends open listens with their result.
//
// # Tasks
//
// The server implements the 2026 tasks extension [TasksExtension]: it
// declares capabilities.extensions["io.modelcontextprotocol/tasks"] = {} in
// server/discover and serves tasks/get, tasks/update and tasks/cancel. A
// call to a task tool whose _meta clientCapabilities.extensions declare the
// extension is answered with a flat CreateTaskResult (resultType "task",
// status "working"); without the declaration it is refused with -32021
// (MissingRequiredClientCapability, HTTP 400), as are the tasks/* methods.
// tasks/* requests must carry Mcp-Name equal to params.taskId (else 400,
// -32020). Tasks live in memory, per server, for [TaskTTL]; their ids are
// 128 random bits in hex; they suggest polling every [TaskPollInterval].
// The needs_input task answers a tasks/update whose ElicitResult accepts a
// name with "hello, NAME" and any other action with "no name given". A
// completed task's result is the CallToolResult the call would have
// returned (with resultType "complete"); tasks/cancel cancels a working or
// input_required task at once and just acknowledges a finished one.
//
// Calls to slow_count and subscriptions/listen are answered with
// text/event-stream; every other request is answered with
// application/json, so both response kinds of the transport are exercised.
//
//	url, stop, err := demo.Start(ctx)
//	if err != nil { ... }
//	defer stop()
//	// point the proxy at url
package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/httpserve"
)

const (
	// ServerName is the name the server reports in
	// _meta["io.modelcontextprotocol/serverInfo"].
	ServerName = "mcp-tasks-proxy-demo"
	// ServerVersion is the version the server reports alongside ServerName.
	ServerVersion = "1.0.0"
	// ProtocolVersion is the only protocol revision the server accepts.
	ProtocolVersion = "2026-07-28"
	// Path is where Start serves Handler.
	Path = "/mcp"

	instructions = "Demo server for mcp-tasks-proxy: echo, slow_count, whoami, quick, " +
		"the task tools slow, fail, needs_input and iserror (they need the " +
		TasksExtension + " extension), the multi round-trip tools ask_name, " +
		"ask_two_rounds, open_url, sample and list_roots, weather (x-mcp-header), " +
		"touch (change notifications), a greeting prompt, a readme resource " +
		"and a demo://echo/{text} resource template."

	// logLevelKey is the request _meta key of the 2026-07-28 log level
	// (mcp.MetaKeyLogLevel, deprecated with the logging feature).
	logLevelKey = "io.modelcontextprotocol/logLevel"

	readmeURI  = "demo://readme"
	echoPrefix = "demo://echo/"

	maxCount = 50
	maxDelay = 10000 // milliseconds

	stopTimeout = 2 * time.Second
)

// readme is the text of the demo://readme resource.
const readme = `# mcp-tasks-proxy demo server

This server speaks MCP 2026-07-28 over stateless Streamable HTTP.

- ` + "`echo`" + ` returns the text you give it.
- ` + "`slow_count`" + ` counts to n, reporting progress on the way.
- ` + "`whoami`" + ` shows the request metadata the server received.
- ` + "`quick`" + ` returns the text you give it, never as a task.
- ` + "`slow`" + `, ` + "`fail`" + `, ` + "`needs_input`" + ` and ` + "`iserror`" + ` run as tasks
  (extension ` + "`" + TasksExtension + "`" + `): they finish after a delay, fail,
  ask for your name, or report a tool error.
- ` + "`ask_name`" + `, ` + "`ask_two_rounds`" + `, ` + "`open_url`" + `, ` + "`sample`" + ` and
  ` + "`list_roots`" + ` ask you for input through multi round-trip requests.
- ` + "`weather`" + ` also reads its arguments from Mcp-Param-* headers.
- ` + "`touch`" + ` sends a change notification to subscriptions/listen streams.
- The ` + "`greeting`" + ` prompt says hello.
`

// streamingTools are the tools whose calls are answered with
// text/event-stream, because they emit notifications before their result.
var streamingTools = map[string]bool{"slow_count": true}

// NewServer returns the go-sdk server with the demo's tools, prompt,
// resources and tasks extension. It accepts only protocol 2026-07-28. The
// server holds no per-client state apart from its in-memory task store,
// which every handler serving it shares; pending task steps are timers, so
// an abandoned server leaks no goroutines.
func NewServer() *mcp.Server {
	s, _ := newServer()
	return s
}

// newServer is NewServer, also returning the server's task store.
func newServer() (*mcp.Server, *taskStore) {
	s, store, _ := newServerListens()
	return s, store
}

// newServerListens is newServer, also returning the server's open listens.
func newServerListens() (*mcp.Server, *taskStore, *listens) {
	caps := &mcp.ServerCapabilities{
		// Setting Capabilities drops the go-sdk default {"logging":{}}; keep it.
		//lint:ignore SA1019 the demo exercises the deprecated logging feature on purpose.
		Logging:   &mcp.LoggingCapabilities{},
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
	}
	caps.AddExtension(TasksExtension, nil)
	s := mcp.NewServer(
		&mcp.Implementation{Name: ServerName, Version: ServerVersion},
		&mcp.ServerOptions{
			Instructions:              instructions,
			SupportedProtocolVersions: []string{ProtocolVersion},
			Capabilities:              caps,
			// A SubscribeHandler makes the go-sdk honour resourceSubscriptions
			// in subscriptions/listen.
			SubscribeHandler:   subscribeAny,
			UnsubscribeHandler: unsubscribeAny,
		},
	)

	store := newTaskStore()
	ls := newListens()
	// One call, so that guard is the outermost middleware.
	s.AddReceivingMiddleware(guard, ls.middleware, injectBadHeaderTool, store.middleware)

	mcp.AddTool(s, echoToolDef, echoTool)

	mcp.AddTool(s, &mcp.Tool{
		Name: "slow_count",
		Description: "Count from 1 to n, sending a progress notification per step " +
			"(when the request has a progressToken) and one info log (when the " +
			"request's log level permits), waiting delay_ms between steps.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"n":{"type":"integer","minimum":1,"maximum":%d,"default":3,"description":"How far to count."},`+
			`"delay_ms":{"type":"integer","minimum":0,"maximum":%d,"default":0,"description":"Pause between steps, in milliseconds."}},`+
			`"additionalProperties":false}`, maxCount, maxDelay)),
	}, slowCountTool)

	mcp.AddTool(s, &mcp.Tool{
		Name:        "whoami",
		Description: "Report the request _meta and Mcp-* headers the server received (for tests and debugging).",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, whoamiTool)

	s.AddPrompt(greetingPromptDef, greetingPrompt)

	s.AddResource(readmeResourceDef, readReadme)

	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "echo",
		Description: "A text resource whose content is the {text} part of its URI.",
		MIMEType:    "text/plain",
		URITemplate: echoPrefix + "{text}",
	}, readEcho)

	addTasks(s, store)
	addMRTR(s, newMRTR())
	addParamHeaderTools(s)
	addTouch(s)
	return s, store, ls
}

// The definitions the touch tool registers again.
var (
	echoToolDef = &mcp.Tool{
		Name:        "echo",
		Description: "Return the given text unchanged.",
		InputSchema: json.RawMessage(`{"type":"object",` +
			`"properties":{"text":{"type":"string","description":"Text to return."}},` +
			`"required":["text"],"additionalProperties":false}`),
	}
	greetingPromptDef = &mcp.Prompt{
		Name:        "greeting",
		Description: "A one-line greeting.",
		Arguments: []*mcp.PromptArgument{{
			Name:        "name",
			Description: "Who to greet.",
			Required:    true,
		}},
	}
	readmeResourceDef = &mcp.Resource{
		Name:        "readme",
		Description: "What this demo server offers.",
		MIMEType:    "text/markdown",
		URI:         readmeURI,
	}
)

// Handler returns an http.Handler serving NewServer statelessly at protocol
// 2026-07-28. Calls to slow_count get text/event-stream responses; all other
// requests get application/json. Closing a response stream cancels the
// request's handler.
//
// A Base64-encoded Mcp-Name header (=?base64?...?=) is decoded before the
// go-sdk compares it with the body; go-sdk v1.8.0 would compare the encoded
// form and reject it. For tasks/get, tasks/update and tasks/cancel the
// handler itself compares Mcp-Name with params.taskId. For weather it
// checks the Mcp-Param-* headers (400, -32020 "Header mismatch: ..."). For
// the multi round-trip tools it writes and checks the raw requestState
// bytes (400, -32602 "requestState was altered").
//
// Each call returns a handler with its own server and task store.
func Handler() http.Handler {
	h, _, _ := newHandler()
	return h
}

// newHandler is Handler, also returning a func that ends its open
// subscriptions/listen streams (and any later one at once) and a func that
// stops the pending steps of its tasks.
func newHandler() (_ http.Handler, closeListens, closeTasks func()) {
	srv, store, ls := newServerListens()
	getServer := func(*http.Request) *mcp.Server { return srv }
	sseOpts := mcp.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		// The proxy accepts messages up to 128 MiB by default; so does
		// the demo, so large payloads can be tried end to end.
		MaxRequestBodyBytes: 128 << 20,
	}
	jsonOpts := sseOpts
	jsonOpts.JSONResponse = true
	sse := mcp.NewStreamableHTTPHandler(getServer, &sseOpts)
	plain := mcp.NewStreamableHTTPHandler(getServer, &jsonOpts)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, ok := decodeNameHeader(w, r)
		if !ok {
			return
		}
		method := r.Header.Get("Mcp-Method")
		if taskMethods[method] {
			if r, ok = checkTaskName(w, r); !ok {
				return
			}
		}
		if method == "tools/call" && r.Header.Get("MCP-Protocol-Version") == ProtocolVersion {
			name := r.Header.Get(nameHeader)
			if bindings := paramHeaderTools[name]; bindings != nil {
				var body []byte
				if r, body, ok = peekBody(r); ok && gjson.GetBytes(body, "method").Str == "tools/call" &&
					gjson.GetBytes(body, "params.name").Str == name {
					if err := checkParamHeaders(r.Header, body, bindings); err != nil {
						writeHeaderMismatchID(w, rawID(body), err)
						return
					}
				}
			}
			if mrtrTools[name] {
				serveMRTR(plain, w, r)
				return
			}
		}
		if method == "tools/call" && streamingTools[r.Header.Get("Mcp-Name")] {
			sse.ServeHTTP(w, r)
			return
		}
		plain.ServeHTTP(w, r)
	}), ls.close, store.close
}

// Start serves Handler at Path on a free loopback port and returns its URL,
// e.g. "http://127.0.0.1:41234/mcp". The server runs until stop is called or
// ctx is done. stop shuts it down gracefully, forcing it closed after 2 s; it
// is idempotent, safe for concurrent use, and returns when the server has
// stopped accepting connections. Stopping also stops the pending steps of
// the server's tasks, so no task timer outlives it.
func Start(ctx context.Context) (url string, stop func(), err error) {
	handler, closeListens, closeTasks := newHandler()
	return serve(ctx, atPath(handler), closeListens, closeTasks)
}

// atPath is a handler for serve: h alone at Path.
func atPath(h http.Handler) func(url string) (http.Handler, error) {
	return func(string) (http.Handler, error) {
		mux := http.NewServeMux()
		mux.Handle(Path, h)
		return mux, nil
	}
}

// serve serves the handler that handler builds for the server's URL
// (http://127.0.0.1:PORT/mcp) on a free loopback port until stop is called or
// ctx ends. Before a graceful shutdown it calls closeStreams, so long-lived
// streams do not hold it up; after it, cleanup.
func serve(ctx context.Context, handler func(url string) (http.Handler, error), closeStreams, cleanup func()) (url string, stop func(), err error) {
	if err := ctx.Err(); err != nil {
		return "", nil, fmt.Errorf("demo: not starting: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("demo: listen on loopback: %w", err)
	}
	url = "http://" + ln.Addr().String() + Path
	h, err := handler(url)
	if err != nil {
		_ = ln.Close()
		return "", nil, err
	}
	return url, httpserve.Serve(ctx, ln, h, stopTimeout, closeStreams, cleanup), nil
}

// guard is the outermost receiving middleware. It works around go-sdk v1.8.0
// crashing the whole process on a tools/call whose "arguments" is null for a
// tool with schema defaults (it applies the defaults to a nil map), by
// treating null as absent; and it turns any other panic in a handler into an
// internal error, so a misbehaving peer cannot take down the process that
// embeds the demo.
func guard(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil &&
			string(bytes.TrimSpace(p.Arguments)) == "null" {
			p.Arguments = nil
		}
		defer func() {
			if v := recover(); v != nil {
				res, err = nil, &jsonrpc.Error{
					Code:    jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("demo server: %s handler panicked: %v", method, v),
				}
			}
		}()
		return next(ctx, method, req)
	}
}

// echoArgs are the arguments of the echo tool.
type echoArgs struct {
	Text string `json:"text"`
}

func echoTool(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
}

// slowCountArgs are the arguments of the slow_count tool, after the schema
// defaults are applied.
type slowCountArgs struct {
	N       int `json:"n"`
	DelayMS int `json:"delay_ms"`
}

func slowCountTool(ctx context.Context, req *mcp.CallToolRequest, in slowCountArgs) (*mcp.CallToolResult, any, error) {
	n := in.N
	// Log is deprecated with the logging feature (SEP-2577) but still part of
	// 2026-07-28. The go-sdk sends the message only if the request's
	// _meta["io.modelcontextprotocol/logLevel"] is at or below "info".
	//lint:ignore SA1019 the demo exercises the deprecated logging feature on purpose.
	if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{
		Level:  "info",
		Logger: "slow_count",
		Data:   fmt.Sprintf("counting to %d", n),
	}); err != nil {
		return nil, nil, fmt.Errorf("sending log message: %w", err)
	}

	token := req.Params.GetProgressToken()
	delay := time.Duration(in.DelayMS) * time.Millisecond
	for i := 1; i <= n; i++ {
		if i > 1 && delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, nil, ctx.Err()
			case <-t.C:
			}
		}
		if token == nil {
			continue
		}
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      float64(i),
			Total:         float64(n),
			Message:       fmt.Sprintf("step %d of %d", i, n),
		}); err != nil {
			return nil, nil, fmt.Errorf("sending progress %d of %d: %w", i, n, err)
		}
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("counted to %d", n)}},
	}, nil, nil
}

// WhoAmI is the structured result of the whoami tool: what the server saw of
// the request. Absent _meta keys are omitted.
type WhoAmI struct {
	// ProtocolVersion is the request's protocol version as the go-sdk read it.
	ProtocolVersion string `json:"protocolVersion"`
	// LogLevel is _meta["io.modelcontextprotocol/logLevel"] as sent.
	LogLevel any `json:"logLevel,omitempty"`
	// ClientInfo is _meta["io.modelcontextprotocol/clientInfo"] as sent.
	ClientInfo any `json:"clientInfo,omitempty"`
	// ClientCapabilities is _meta["io.modelcontextprotocol/clientCapabilities"] as sent.
	ClientCapabilities any `json:"clientCapabilities,omitempty"`
	// ProgressToken is _meta.progressToken as sent.
	ProgressToken any `json:"progressToken,omitempty"`
	// Meta is the whole request _meta as decoded by the go-sdk (numbers
	// become float64, so large integers may lose precision).
	Meta map[string]any `json:"meta"`
	// Headers holds the request's Mcp-* and MCP-Protocol-Version headers,
	// keyed by canonical name; no other header is reported.
	Headers map[string]string `json:"headers"`
}

func whoamiTool(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, *WhoAmI, error) {
	meta := map[string]any(req.Params.GetMeta())
	if meta == nil {
		meta = map[string]any{}
	}
	out := &WhoAmI{
		ProtocolVersion:    req.ProtocolVersion(),
		LogLevel:           meta[logLevelKey],
		ClientInfo:         meta[mcp.MetaKeyClientInfo],
		ClientCapabilities: meta[mcp.MetaKeyClientCapabilities],
		ProgressToken:      meta["progressToken"],
		Meta:               meta,
		Headers:            map[string]string{},
	}
	if req.Extra != nil {
		for k, v := range req.Extra.Header {
			if strings.HasPrefix(k, "Mcp-") && len(v) > 0 {
				out.Headers[k] = v[0]
			}
		}
	}
	return nil, out, nil
}

func greetingPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	name, ok := req.Params.Arguments["name"]
	if !ok || name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `prompt "greeting" requires argument "name"`}
	}
	return &mcp.GetPromptResult{
		Description: "A one-line greeting.",
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: "Hello, " + name + "!"},
		}},
	}, nil
}

func readReadme(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI:      req.Params.URI,
		MIMEType: "text/markdown",
		Text:     readme,
	}}}, nil
}

func readEcho(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	raw, ok := strings.CutPrefix(req.Params.URI, echoPrefix)
	if !ok {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	text, err := url.PathUnescape(raw)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("bad escape in %q: %v", req.Params.URI, err)}
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI:      req.Params.URI,
		MIMEType: "text/plain",
		Text:     text,
	}}}, nil
}
