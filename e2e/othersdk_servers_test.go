package e2e

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Plain servers of other SDKs, for the tests in othersdk_test.go.
//
// Unlike demo.Handler, these servers carry no workaround of their own: each is
// what an author gets from the SDK's documented API with its defaults, so the
// proxy meets the SDK's own quirks (SSE answers, "content": null on an
// input_required result, a raw Mcp-Name comparison, execution.taskSupport
// without the tasks extension). Both serve the same small surface:
//
//	tools    echo {text}              the text back
//	         confirm                  asks the client (MRTR elicitation, key
//	                                  "ok", requestState osdkConfirmState*),
//	                                  then reports the answer
//	         sleep                    blocks until its request ends (for
//	                                  cancellation)
//	prompts  hello {name}             "Hello, NAME!" (ASCII name)
//	         grüße / café {name}      non-ASCII names (go-sdk / mcp-go)
//	resource osdk://…/notes           a short text
//
// The mcp-go server also has task-declaring tools (upper: taskSupport
// optional, count: forbidden).

const (
	osdkGoSDKName    = "plain-go-sdk"
	osdkMCPGoName    = "plain-mcp-go"
	osdkVersion      = "0.0.1"
	osdkGoSDKNotes   = "osdk://go-sdk/notes"
	osdkMCPGoNotes   = "osdk://mcp-go/notes"
	osdkNotesText    = "notes from a plain server"
	osdkGoSDKPrompt  = "grüße"
	osdkMCPGoPrompt  = "café"
	osdkConfirmState = "confirm-state/1"
	osdkTasksExt     = "io.modelcontextprotocol/tasks"
)

// osdkServer is a plain SDK server behind the recording upstream, with hooks
// that let a test see its sleep tool start and its request end.
type osdkServer struct {
	*upstream

	// sleepStarted receives once per sleep call, when its handler runs.
	sleepStarted chan struct{}
	// sleepHTTPDone is closed when the HTTP request of a sleep call ends
	// (the proxy closed the stream, or the handler returned).
	sleepHTTPDone chan struct{}
	// sleepCtxDone is closed when the sleep handler saw its context end
	// (the SDK cancelled it), as opposed to being released at cleanup.
	sleepCtxDone chan struct{}
	release      chan struct{} // closed at cleanup: every sleep returns

	httpOnce, ctxOnce sync.Once
}

func newOSDKServer() *osdkServer {
	return &osdkServer{
		sleepStarted:  make(chan struct{}, 8),
		sleepHTTPDone: make(chan struct{}),
		sleepCtxDone:  make(chan struct{}),
		release:       make(chan struct{}),
	}
}

// wrap watches the HTTP request of a sleep call in front of the SDK handler.
func (s *osdkServer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" && r.Header.Get("Mcp-Name") == "sleep" {
			go func() {
				<-r.Context().Done()
				s.httpOnce.Do(func() { close(s.sleepHTTPDone) })
			}()
		}
		h.ServeHTTP(w, r)
	})
}

// serve puts h behind the recorder. The sleep handlers are released before
// the upstream closes (cleanups run last-in first-out), so closing never
// waits for a handler the SDK did not cancel.
func (s *osdkServer) serve(t *testing.T, h http.Handler) {
	t.Helper()
	s.upstream = newUpstream(t, s.wrap(h))
	t.Cleanup(func() { close(s.release) })
}

// sleep blocks until ctx ends or the server is released.
func (s *osdkServer) sleep(ctx context.Context) {
	select {
	case s.sleepStarted <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		s.ctxOnce.Do(func() { close(s.sleepCtxDone) })
	case <-s.release:
	}
}

// --- go-sdk v1.8.0 ---

// newGoSDKServer serves a go-sdk v1.8.0 server the way its documentation
// shows for the 2026-07-28 stateless core: StreamableHTTPHandler with
// Stateless set and otherwise default options, so requests are answered with
// text/event-stream (JSONResponse is off) and a closed stream does not cancel
// the handler (PropagateRequestCancellation is off). The server keeps the
// go-sdk's default protocol versions (2026-07-28 and the 2025 ones) and
// declares no extension.
func newGoSDKServer(t *testing.T) *osdkServer {
	t.Helper()
	s := newOSDKServer()
	srv := mcp.NewServer(&mcp.Implementation{Name: osdkGoSDKName, Version: osdkVersion}, nil)

	type echoArgs struct {
		Text string `json:"text" jsonschema:"the text to return"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Return the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "confirm", Description: "Ask the user to confirm, then report the answer."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if resp, ok := req.Params.InputResponses["ok"]; ok {
				er, ok := resp.(*mcp.ElicitResult)
				if !ok {
					return nil, nil, fmt.Errorf("inputResponses.ok is %T, want an ElicitResult", resp)
				}
				if req.Params.RequestState != osdkConfirmState {
					return nil, nil, fmt.Errorf("requestState %q, want %q", req.Params.RequestState, osdkConfirmState)
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
					Text: fmt.Sprintf("confirmed: %s ok=%v", er.Action, er.Content["ok"]),
				}}}, nil, nil
			}
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{"ok": &mcp.ElicitParams{
					Message: "Proceed?",
					RequestedSchema: map[string]any{
						"type":       "object",
						"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
						"required":   []string{"ok"},
					},
				}},
				RequestState: osdkConfirmState,
			}, nil, nil
		})

	mcp.AddTool(srv, &mcp.Tool{Name: "sleep", Description: "Block until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			s.sleep(ctx)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "woke"}}}, nil, nil
		})

	greet := func(format string) mcp.PromptHandler {
		return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{
				Role:    "user",
				Content: &mcp.TextContent{Text: fmt.Sprintf(format, req.Params.Arguments["name"])},
			}}}, nil
		}
	}
	nameArg := []*mcp.PromptArgument{{Name: "name", Description: "Who to greet.", Required: true}}
	srv.AddPrompt(&mcp.Prompt{Name: "hello", Description: "An ASCII-named greeting.", Arguments: nameArg}, greet("Hello, %s!"))
	srv.AddPrompt(&mcp.Prompt{Name: osdkGoSDKPrompt, Description: "A greeting with a non-ASCII name.", Arguments: nameArg}, greet("Grüße, %s!"))

	srv.AddResource(&mcp.Resource{Name: "notes", URI: osdkGoSDKNotes, MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
				URI: req.Params.URI, MIMEType: "text/plain", Text: osdkNotesText,
			}}}, nil
		})

	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	s.serve(t, h)
	return s
}

// --- mcp-go v1.2.1 ---

// newMCPGoServer serves an mcp-go v1.2.1 server with NewStreamableHTTPServer
// and default options: it serves 2026-07-28 (and the 2025 versions) on the
// same endpoint, deciding the era per request. Its tools declare task
// support the only way mcp-go's API allows (Tool.execution.taskSupport, a
// 2025 field). With withTasksExt the server also declares the 2026 tasks
// extension in server/discover; without it, the server declares none.
func newMCPGoServer(t *testing.T, withTasksExt bool) *osdkServer {
	t.Helper()
	s := newOSDKServer()
	s.serve(t, mcpgoserver.NewStreamableHTTPServer(s.mcpGo(withTasksExt)))
	return s
}

// newMCPGoLegacy is the same mcp-go server behind the 2025 recorder, for a
// proxy that reaches it in 2025 (it speaks both eras): every body the proxy
// POSTs is validated against 2025.
func newMCPGoLegacy(t *testing.T) *legacyUpstream {
	t.Helper()
	s := newOSDKServer()
	t.Cleanup(func() { close(s.release) })
	return newLegacyUpstream(t, mcpgoserver.NewStreamableHTTPServer(s.mcpGo(false)))
}

// mcpGo is the mcp-go server of the tests (see newMCPGoServer).
func (s *osdkServer) mcpGo(withTasksExt bool) *mcpgoserver.MCPServer {
	opts := []mcpgoserver.ServerOption{
		mcpgoserver.WithToolCapabilities(false),
		mcpgoserver.WithPromptCapabilities(false),
		mcpgoserver.WithResourceCapabilities(false, false),
		// As mcp-go's own task_tool example does next to WithTaskSupport:
		// the 2025 tasks capability, which mcp-go also puts in its 2026
		// server/discover result.
		mcpgoserver.WithTaskCapabilities(true, true, true),
	}
	if withTasksExt {
		opts = append(opts, mcpgoserver.WithExtensions(map[string]any{osdkTasksExt: map[string]any{}}))
	}
	srv := mcpgoserver.NewMCPServer(osdkMCPGoName, osdkVersion, opts...)

	srv.AddTool(mcpgo.NewTool("echo", mcpgo.WithDescription("Return the text."),
		mcpgo.WithString("text", mcpgo.Required(), mcpgo.Description("The text to return."))),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(req.GetString("text", "")), nil
		})
	srv.AddTool(mcpgo.NewTool("upper", mcpgo.WithDescription("Upper-case the text; may run as a task."),
		mcpgo.WithString("text", mcpgo.Required()),
		mcpgo.WithTaskSupport(mcpgo.TaskSupportOptional)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(string(bytes.ToUpper([]byte(req.GetString("text", ""))))), nil
		})
	srv.AddTool(mcpgo.NewTool("count", mcpgo.WithDescription("Count the text's bytes; never a task."),
		mcpgo.WithString("text", mcpgo.Required()),
		mcpgo.WithTaskSupport(mcpgo.TaskSupportForbidden)),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(fmt.Sprint(len(req.GetString("text", "")))), nil
		})
	srv.AddTool(mcpgo.NewTool("confirm", mcpgo.WithDescription("Ask the user to confirm, then report the answer.")),
		func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			if er := mcpgoserver.ElicitationResponse(req.Params.InputResponses, "ok"); er != nil {
				if req.Params.RequestState != osdkConfirmState {
					return nil, fmt.Errorf("requestState %q, want %q", req.Params.RequestState, osdkConfirmState)
				}
				var ok any
				if m, isMap := er.Content.(map[string]any); isMap {
					ok = m["ok"]
				}
				return mcpgo.NewToolResultText(fmt.Sprintf("confirmed: %s ok=%v", er.Action, ok)), nil
			}
			return mcpgoserver.NewInputRequestBuilder(osdkConfirmState).Elicit("ok", mcpgo.ElicitationParams{
				Message: "Proceed?",
				RequestedSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
					"required":   []string{"ok"},
				},
			}).ToolResult(), nil
		})
	srv.AddTool(mcpgo.NewTool("sleep", mcpgo.WithDescription("Block until cancelled.")),
		func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			s.sleep(ctx)
			return mcpgo.NewToolResultText("woke"), nil
		})

	greet := func(format string) mcpgoserver.PromptHandlerFunc {
		return func(_ context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
			return mcpgo.NewGetPromptResult("", []mcpgo.PromptMessage{
				mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent(fmt.Sprintf(format, req.Params.Arguments["name"]))),
			}), nil
		}
	}
	nameArg := mcpgo.WithArgument("name", mcpgo.ArgumentDescription("Who to greet."), mcpgo.RequiredArgument())
	srv.AddPrompt(mcpgo.NewPrompt("hello", mcpgo.WithPromptDescription("An ASCII-named greeting."), nameArg), greet("Hello, %s!"))
	srv.AddPrompt(mcpgo.NewPrompt(osdkMCPGoPrompt, mcpgo.WithPromptDescription("A greeting with a non-ASCII name."), nameArg), greet("Bonjour, %s!"))

	srv.AddResource(mcpgo.NewResource(osdkMCPGoNotes, "notes", mcpgo.WithMIMEType("text/plain")),
		func(_ context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: osdkNotesText}}, nil
		})
	return srv
}

// --- reading the servers' answers ---

// osdkFrames splits a recorded answer into its JSON-RPC frames: the body of
// an application/json answer, or the data of each text/event-stream event.
func osdkFrames(header http.Header, body []byte) [][]byte {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if mt != "text/event-stream" {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil
		}
		return [][]byte{body}
	}
	var out [][]byte
	body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	for _, block := range bytes.Split(body, []byte("\n\n")) {
		if data := sseData(block); len(bytes.TrimSpace(data)) > 0 {
			out = append(out, data)
		}
	}
	return out
}

// osdkAnswer is the JSON-RPC response (the frame with the request's id and
// no method) of a recorded exchange, and the answer's Content-Type.
func osdkAnswer(t *testing.T, u *upstream, ex *exchange) ([]byte, string) {
	t.Helper()
	_, h, body := u.response(t, ex)
	for _, f := range osdkFrames(h, body) {
		if isResponse(f) {
			return f, h.Get("Content-Type")
		}
	}
	return nil, h.Get("Content-Type")
}
