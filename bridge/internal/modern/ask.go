package modern

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Requests from the proxy to the legacy client: the 2025 face of 2026 input
// requests. Their ids live in the proxy's own space ("mtp-N"), apart from
// the client's ids.

// clientCan reports whether the client declared the capability an input
// request needs (2026 servers MUST NOT ask for what the request's
// clientCapabilities do not declare), and names the missing one by its 2025
// path: "elicitation", "elicitation.form" (a bare {} means form, as 2025
// reads it), "elicitation.url", "sampling", "sampling.tools" (a request
// that offers tools), "roots".
func (s *server) clientCan(method string, params gjson.Result) (bool, string) {
	var caps gjson.Result
	if st := s.state.Load(); st != nil {
		caps = gjson.ParseBytes(st.legacyCaps)
	}
	switch method {
	case "elicitation/create":
		e := caps.Get("elicitation")
		if !e.IsObject() {
			return false, "elicitation"
		}
		if mode := params.Get("mode"); mode.Exists() && mode.Str != "form" {
			// "url", or a mode 2025 does not know: declared only by name.
			return e.Get(gjson.Escape(mode.String())).Exists(), "elicitation." + mode.String()
		}
		return e.Get("form").Exists() || !e.Get("url").Exists(), "elicitation.form"
	case "sampling/createMessage":
		if !caps.Get("sampling").IsObject() {
			return false, "sampling"
		}
		if params.Get("tools").Exists() || params.Get("toolChoice").Exists() {
			return caps.Get("sampling.tools").Exists(), "sampling.tools"
		}
		return true, ""
	case "roots/list":
		return caps.Get("roots").IsObject(), "roots"
	}
	return false, method
}

// inputRequest is one entry of a modern inputRequests map.
type inputRequest struct {
	key    string
	method string
	params gjson.Result
}

func inputRequests(m gjson.Result) []inputRequest {
	var out []inputRequest
	m.ForEach(func(k, v gjson.Result) bool {
		out = append(out, inputRequest{key: k.String(), method: v.Get("method").String(), params: v.Get("params")})
		return true
	})
	return out
}

// askInput sends one input request to the client and returns the answer
// for inputResponses. relatedTask ties it to a task the client knows.
func (s *server) askInput(ctx context.Context, in inputRequest, relatedTask string) ([]byte, error) {
	if err := s.cannotAsk(in); err != nil {
		return nil, err
	}
	return s.inputAnswer(ctx, in, s.env.AskStart(link.OpOf(ctx), in.method, s.inputParams(in, relatedTask)))
}

// cannotAsk is the error for an input request the client did not declare
// the capability for, or nil when it may be sent.
func (s *server) cannotAsk(in inputRequest) *missingCapabilityError {
	ok, missing := s.clientCan(in.method, in.params)
	if ok {
		return nil
	}
	input := in.method // for people: with an elicitation's mode
	if in.method == "elicitation/create" {
		input += " (" + cmp.Or(in.params.Get("mode").String(), "form") + ")"
	}
	return &missingCapabilityError{method: in.method, input: input, capability: missing}
}

// firstUnaskable is the error for the first of reqs the client cannot be
// sent, in document order, or nil when every one can.
func (s *server) firstUnaskable(reqs []inputRequest) *missingCapabilityError {
	for _, in := range reqs {
		if err := s.cannotAsk(in); err != nil {
			return err
		}
	}
	return nil
}

// missingCapabilityError is an input request the client cannot be sent:
// the server asked for something the client declared it cannot give. The
// client is told with one JSON-RPC error (frame), whoever waits: the
// request itself (MRTR) or the task's waiting call.
type missingCapabilityError struct {
	method     string // the input request's method
	input      string // the method, with an elicitation's mode
	capability string // the 2025 capability path the client lacks
}

func (e *missingCapabilityError) Error() string {
	return fmt.Sprintf("the server needs %s from the client, but the client did not declare the %s capability in initialize", e.input, e.capability)
}

// rpcError is the JSON-RPC error for e: code -32021
// (MissingRequiredClientCapability), the code a 2026 server gives when it
// checks the capability itself and the one a 2025 client then sees passed
// through, so that both cases read the same. what is the
// work that cannot finish ("tools/call", "task T"). data holds
// requiredCapabilities (a ClientCapabilities object), missingCapability
// (the path), the input's method, and taskId when there is a task.
func (e *missingCapabilityError) rpcError(what, taskID string) rewrite.Error {
	msg := fmt.Sprintf("Missing required client capability: the server needs %s from the client to finish %s, but the client did not declare %s in initialize; a client that supports it must declare it, or use a tool that does not need it",
		e.input, what, e.capability)
	d := []byte(`{"requiredCapabilities":`)
	d = append(d, requiredCapabilities(e.capability)...)
	d = append(d, `,"missingCapability":`...)
	d = rewrite.AppendString(d, e.capability)
	d = append(d, `,"method":`...)
	d = rewrite.AppendString(d, e.method)
	if taskID != "" {
		d = append(d, `,"taskId":`...)
		d = rewrite.AppendString(d, taskID)
	}
	return rewrite.Error{Code: protocol.CodeMissingRequiredCapability, Message: msg, Data: append(d, '}')}
}

// requiredCapabilities is a capability path as the ClientCapabilities
// object that declares it: "elicitation.url" is {"elicitation":{"url":{}}}.
func requiredCapabilities(path string) []byte {
	parts := strings.Split(path, ".")
	var b []byte
	for _, p := range parts {
		b = append(rewrite.AppendString(append(b, '{'), p), ':')
	}
	b = append(b, "{}"...)
	for range parts {
		b = append(b, '}')
	}
	return b
}

func (s *server) inputParams(in inputRequest, relatedTask string) []byte {
	var elicitationID string
	if in.method == "elicitation/create" && in.params.Get("mode").String() == "url" {
		elicitationID = "mtp-elicitation-" + randomHex(12)
	}
	if !in.params.Exists() && relatedTask == "" {
		return nil // e.g. roots/list: no params at all
	}
	return rewrite.InputRequestParams(in.params, relatedTask, elicitationID)
}

func (s *server) inputAnswer(ctx context.Context, in inputRequest, p *link.PendingAsk) ([]byte, error) {
	res, err := p.Wait(ctx)
	if err != nil {
		if _, ok := err.(*link.ClientError); ok && in.method == "elicitation/create" {
			// Policy (docs/policies.md, Client input): an elicitation the
			// client failed becomes a cancel, so the server can move on.
			s.env.Warn("the client answered an elicitation with an error; sending cancel", zap.Error(err))
			return cancelAnswer, nil
		}
		return nil, err
	}
	return rewrite.InputResponse(res), nil
}
