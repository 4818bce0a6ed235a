package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Change notifications (2026-07-28 subscriptions/listen).
//
// The go-sdk v1.8.0 serves subscriptions/listen itself, statelessly: the
// response is a long-lived SSE stream that starts with
// notifications/subscriptions/acknowledged (params.notifications = the
// honoured subset of the request's filter), then carries the requested
// notifications/{tools,prompts,resources}/list_changed and
// notifications/resources/updated, each with
// _meta["io.modelcontextprotocol/subscriptionId"] = the listen request's
// id. It honours toolsListChanged, promptsListChanged and
// resourcesListChanged because the capabilities declare listChanged, and
// every URI in resourceSubscriptions because the server has a
// SubscribeHandler (capabilities.resources.subscribe = true); any URI is
// accepted. The stream ends when the client closes it, or, when the server
// stops, with the result {"resultType":"complete","_meta":{subscriptionId}}
// (listens.close).
//
// The touch tool makes the notifications happen: "tools", "prompts" and
// "resources" re-register the echo tool, the greeting prompt and the
// readme resource (the lists stay the same), which makes the go-sdk send
// the list_changed notification, debounced by 10 ms, to every listen
// stream that asked for it; "resource" sends notifications/resources/updated
// for uri (default demo://readme) to every listen stream subscribed to it.

// listens tracks the open subscriptions/listen requests of one server, so
// that stopping the server can end them gracefully.
type listens struct {
	mu      sync.Mutex
	closed  bool
	next    uint64
	cancels map[uint64]context.CancelFunc
}

func newListens() *listens {
	return &listens{cancels: map[uint64]context.CancelFunc{}}
}

// middleware gives each subscriptions/listen handler a context that close
// cancels. The go-sdk handler then returns its result, which ends the
// stream properly, instead of the connection being cut.
func (l *listens) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "subscriptions/listen" {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		l.mu.Lock()
		if l.closed {
			cancel()
		} else {
			id := l.next
			l.next++
			l.cancels[id] = cancel
			defer func() {
				l.mu.Lock()
				delete(l.cancels, id)
				l.mu.Unlock()
			}()
		}
		l.mu.Unlock()
		return next(ctx, method, req)
	}
}

// close ends every open listen and every later one at once.
func (l *listens) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, cancel := range l.cancels {
		cancel()
	}
}

// subscribeAny accepts a resource subscription for any URI.
func subscribeAny(context.Context, *mcp.SubscribeRequest) error { return nil }

// unsubscribeAny accepts every unsubscription.
func unsubscribeAny(context.Context, *mcp.UnsubscribeRequest) error { return nil }

// touchArgs are the arguments of the touch tool.
type touchArgs struct {
	What string `json:"what"`
	URI  string `json:"uri"`
}

// addTouch registers the touch tool on s.
func addTouch(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "touch",
		Description: "Trigger a change notification on the subscriptions/listen streams that asked for it: " +
			"what=tools|prompts|resources sends notifications/<what>/list_changed (the lists do not " +
			"really change); what=resource sends notifications/resources/updated for uri (default " +
			readmeURI + ").",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"what":{"type":"string","enum":["tools","prompts","resources","resource"],"description":"Which notification to trigger."},` +
			`"uri":{"type":"string","description":"The updated resource, for what=resource."}},` +
			`"required":["what"],"additionalProperties":false}`),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in touchArgs) (*mcp.CallToolResult, any, error) {
		switch in.What {
		case "tools":
			mcp.AddTool(s, echoToolDef, echoTool)
		case "prompts":
			s.AddPrompt(greetingPromptDef, greetingPrompt)
		case "resources":
			s.AddResource(readmeResourceDef, readReadme)
		case "resource":
			uri := in.URI
			if uri == "" {
				uri = readmeURI
			}
			if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				return nil, nil, fmt.Errorf("notifying %s: %w", uri, err)
			}
			return textResult("updated " + uri), nil, nil
		default:
			return nil, nil, fmt.Errorf("what %q is not tools, prompts, resources or resource", in.What)
		}
		return textResult("touched " + in.What), nil, nil
	})
}
