package demo

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// LegacyVersions are the protocol versions the legacy demo server speaks:
// the 2025 era only, so the proxy's probe finds a legacy server.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// Legacy is a 2025-era MCP server: go-sdk in stateful Streamable HTTP mode
// (sessions, initialize, a GET stream, resumable SSE streams), the peer of
// the proxy's passthrough mode. It has:
//
//   - tool "echo": returns its "text" argument;
//   - tool "confirm": asks the client an elicitation/create question during
//     the call ("Proceed?", {ok: boolean}) → "confirmed: ACTION OK";
//   - tool "summarize": asks the client for sampling/createMessage → "summary:
//     TEXT";
//   - tool "add_tool": registers a tool named by its "name" argument, which
//     sends notifications/tools/list_changed to every session;
//   - tool "touch": sends notifications/resources/updated for "uri" to the
//     sessions subscribed to it;
//   - tool "drop_stream": sends one progress notification, closes its SSE
//     stream with retry 50 ms, then answers "resumed" once the client
//     resumes the stream with GET and Last-Event-ID;
//   - tool "slow": answers after "ms" milliseconds, or when cancelled; one
//     progress notification first when the client asked for progress;
//   - prompt "greeting": the demo's "Hello, NAME!";
//   - resource "legacy://note", subscribable.
//
// Expire ends every session, so the next request with an old session id
// gets HTTP 404, as a server restart or a session timeout would.
type Legacy struct {
	server  *mcp.Server
	handler http.Handler

	mu   sync.Mutex
	subs map[string]map[string]bool // uri → session ids
	// Resumed counts GET requests that carried Last-Event-ID.
	Resumed atomic.Int64
	// Deleted counts DELETE requests (session ends the client asked for).
	Deleted atomic.Int64
}

// NewLegacy builds the legacy demo server.
func NewLegacy() *Legacy {
	l := &Legacy{subs: map[string]map[string]bool{}}
	l.server = mcp.NewServer(&mcp.Implementation{Name: "mcp-tasks-proxy-legacy-demo", Version: "1.0.0"}, &mcp.ServerOptions{
		SupportedProtocolVersions: LegacyVersions,
		SubscribeHandler: func(_ context.Context, r *mcp.SubscribeRequest) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.subs[r.Params.URI] == nil {
				l.subs[r.Params.URI] = map[string]bool{}
			}
			l.subs[r.Params.URI][r.Session.ID()] = true
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *mcp.UnsubscribeRequest) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			delete(l.subs[r.Params.URI], r.Session.ID())
			return nil
		},
		//lint:ignore SA1019 a 2025 server offers logging; that is what passthrough carries.
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}},
	})
	l.addTools()
	l.server.AddPrompt(greetingPromptDef, greetingPrompt)
	l.server.AddResource(&mcp.Resource{URI: "legacy://note", Name: "note", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "a legacy note"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return l.server }, &mcp.StreamableHTTPOptions{
		EventStore: mcp.NewMemoryEventStore(nil),
	})
	l.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "":
			l.Resumed.Add(1)
		case r.Method == http.MethodDelete:
			l.Deleted.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	return l
}

// StartLegacy serves a new legacy demo server on a loopback port, like
// Start; stop ends it.
func StartLegacy(ctx context.Context) (url string, l *Legacy, stop func(), err error) {
	l = NewLegacy()
	url, stop, err = serve(ctx, atPath(l), func() { l.Expire() }, func() {})
	return url, l, stop, err
}

// ServeHTTP serves the MCP endpoint.
func (l *Legacy) ServeHTTP(w http.ResponseWriter, r *http.Request) { l.handler.ServeHTTP(w, r) }

// expireWait bounds the wait for a session's handlers as Expire closes it:
// go-sdk's Close waits for them, and one may wait for a client's answer
// that will never come (the client has gone).
const expireWait = time.Second

// Expire ends every session; the next request that names one gets 404.
func (l *Legacy) Expire() int {
	n := 0
	for ss := range l.server.Sessions() {
		closed := make(chan struct{})
		go func() {
			ss.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(expireWait):
		}
		n++
	}
	return n
}

// Sessions counts the open sessions.
func (l *Legacy) Sessions() int {
	n := 0
	for range l.server.Sessions() {
		n++
	}
	return n
}

type textArg struct {
	Text string `json:"text"`
}

type nameArg struct {
	Name string `json:"name"`
}

type uriArg struct {
	URI string `json:"uri"`
}

type msArg struct {
	MS int `json:"ms"`
}

func (l *Legacy) addTools() {
	s := l.server
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Returns its text argument."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textArg) (*mcp.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "confirm", Description: "Asks the user to confirm (elicitation) during the call."},
		func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{
				Message: "Proceed?",
				RequestedSchema: map[string]any{"type": "object",
					"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
			})
			if err != nil {
				return nil, nil, fmt.Errorf("elicitation failed: %w", err)
			}
			return textResult(fmt.Sprintf("confirmed: %s %v", res.Action, res.Content["ok"])), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "summarize", Description: "Asks the client's model for a summary (sampling) during the call."},
		func(ctx context.Context, r *mcp.CallToolRequest, in textArg) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 2025 sampling is what passthrough must carry.
			res, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 50,
				//lint:ignore SA1019 as above.
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Summarize: " + in.Text}}},
			})
			if err != nil {
				return nil, nil, fmt.Errorf("sampling failed: %w", err)
			}
			text := ""
			if tc, ok := res.Content.(*mcp.TextContent); ok {
				text = tc.Text
			}
			return textResult(fmt.Sprintf("summary: %s", text)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add_tool", Description: "Adds a tool, which sends notifications/tools/list_changed."},
		func(_ context.Context, _ *mcp.CallToolRequest, in nameArg) (*mcp.CallToolResult, any, error) {
			name := strings.TrimSpace(in.Name)
			if name == "" {
				return nil, nil, fmt.Errorf("name is required")
			}
			mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Added at run time."},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return textResult(fmt.Sprintf("%s ran", name)), nil, nil
				})
			return textResult(fmt.Sprintf("added %s", name)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "Sends notifications/resources/updated for uri."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in uriArg) (*mcp.CallToolResult, any, error) {
			if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI}); err != nil {
				return nil, nil, err
			}
			return textResult(fmt.Sprintf("touched %s", in.URI)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "drop_stream", Description: "Closes its own SSE stream mid-call; the answer comes after the client resumes."},
		func(ctx context.Context, r *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if tok := r.Params.GetProgressToken(); tok != nil {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "before the drop"})
			}
			if r.Extra == nil || r.Extra.CloseSSEStream == nil {
				return nil, nil, fmt.Errorf("this transport cannot close the stream")
			}
			r.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 50 * time.Millisecond})
			before := l.Resumed.Load()
			for l.Resumed.Load() == before { // the answer is stored for replay either way
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
			return textResult("resumed"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Answers after ms milliseconds (default 1000), or stops when cancelled; reports progress once at the start."},
		func(ctx context.Context, r *mcp.CallToolRequest, in msArg) (*mcp.CallToolResult, any, error) {
			if tok := r.Params.GetProgressToken(); tok != nil {
				_ = r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 0, Message: "started"})
			}
			d := time.Duration(in.MS) * time.Millisecond
			if in.MS <= 0 {
				d = time.Second
			}
			select {
			case <-time.After(d):
				return textResult(fmt.Sprintf("slept %v", d)), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
}
