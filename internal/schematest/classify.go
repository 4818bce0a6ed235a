package schematest

import (
	"errors"
	"fmt"
	"sort"
)

// ProtocolVersionMetaKey is the request _meta key that every 2026 request
// (including the ext-tasks tasks/* requests, whose schema does not require
// it) must carry; [Validator.ValidateUpstream] asserts it explicitly.
const ProtocolVersionMetaKey = "io.modelcontextprotocol/protocolVersion"

// ref names one $defs entry of one schema file.
type ref struct{ schema, def string }

func (r ref) String() string { return r.schema + "#/$defs/" + r.def }

// Frame classification tables. Every def name was checked against the $defs of
// the schema files (see TestMappedDefsExist).
var (
	// legacyServerRequests: requests the proxy sends to the legacy client
	// (2025). The tasks/* entries cover polling client-side tasks.
	legacyServerRequests = map[string]string{
		"elicitation/create":     "ElicitRequest",
		"sampling/createMessage": "CreateMessageRequest",
		"roots/list":             "ListRootsRequest",
		"ping":                   "PingRequest",
		"tasks/get":              "GetTaskRequest",
		"tasks/result":           "GetTaskPayloadRequest",
		"tasks/list":             "ListTasksRequest",
		"tasks/cancel":           "CancelTaskRequest",
	}

	// legacyNotifications: notifications the proxy sends to the legacy client.
	legacyNotifications = map[string]string{
		"notifications/progress":               "ProgressNotification",
		"notifications/message":                "LoggingMessageNotification",
		"notifications/tools/list_changed":     "ToolListChangedNotification",
		"notifications/prompts/list_changed":   "PromptListChangedNotification",
		"notifications/resources/list_changed": "ResourceListChangedNotification",
		"notifications/resources/updated":      "ResourceUpdatedNotification",
		"notifications/cancelled":              "CancelledNotification",
		"notifications/tasks/status":           "TaskStatusNotification",
		"notifications/elicitation/complete":   "ElicitationCompleteNotification",
	}

	// legacyResults: result defs (2025) of the responses the proxy sends to
	// the legacy client, keyed by the client's request method. Every listed
	// def must validate. tools/call is special-cased (CreateTaskResult when the
	// result has "task"). EmptyResult is the 2025 alias of Result.
	legacyResults = map[string][]string{
		"initialize":               {"InitializeResult"},
		"ping":                     {"EmptyResult"},
		"logging/setLevel":         {"EmptyResult"},
		"resources/subscribe":      {"EmptyResult"},
		"resources/unsubscribe":    {"EmptyResult"},
		"tools/list":               {"ListToolsResult"},
		"tools/call":               {"CallToolResult"},
		"prompts/list":             {"ListPromptsResult"},
		"prompts/get":              {"GetPromptResult"},
		"resources/list":           {"ListResourcesResult"},
		"resources/templates/list": {"ListResourceTemplatesResult"},
		"resources/read":           {"ReadResourceResult"},
		"completion/complete":      {"CompleteResult"},
		"tasks/get":                {"GetTaskResult"},
		"tasks/list":               {"ListTasksResult"},
		"tasks/cancel":             {"CancelTaskResult"},
		// Only tools/call is task-augmentable server-side in 2025, so the
		// payload is a CallToolResult.
		"tasks/result": {"GetTaskPayloadResult", "CallToolResult"},
	}

	// modernRequests: requests the proxy POSTs to the modern server.
	modernRequests = map[string]ref{
		"server/discover":          {Schema2026, "DiscoverRequest"},
		"tools/list":               {Schema2026, "ListToolsRequest"},
		"tools/call":               {Schema2026, "CallToolRequest"},
		"prompts/list":             {Schema2026, "ListPromptsRequest"},
		"prompts/get":              {Schema2026, "GetPromptRequest"},
		"resources/list":           {Schema2026, "ListResourcesRequest"},
		"resources/templates/list": {Schema2026, "ListResourceTemplatesRequest"},
		"resources/read":           {Schema2026, "ReadResourceRequest"},
		"completion/complete":      {Schema2026, "CompleteRequest"},
		"subscriptions/listen":     {Schema2026, "SubscriptionsListenRequest"},
		"tasks/get":                {SchemaExtTasks, "GetTaskRequest"},
		"tasks/update":             {SchemaExtTasks, "UpdateTaskRequest"},
		"tasks/cancel":             {SchemaExtTasks, "CancelTaskRequest"},
	}

	// modernNotifications: notifications a modern server sends (SSE events).
	// Note the ext-tasks status notification is "notifications/tasks", not the
	// 2025 "notifications/tasks/status".
	modernNotifications = map[string]ref{
		"notifications/progress":                   {Schema2026, "ProgressNotification"},
		"notifications/message":                    {Schema2026, "LoggingMessageNotification"},
		"notifications/tools/list_changed":         {Schema2026, "ToolListChangedNotification"},
		"notifications/prompts/list_changed":       {Schema2026, "PromptListChangedNotification"},
		"notifications/resources/list_changed":     {Schema2026, "ResourceListChangedNotification"},
		"notifications/resources/updated":          {Schema2026, "ResourceUpdatedNotification"},
		"notifications/cancelled":                  {Schema2026, "CancelledNotification"},
		"notifications/subscriptions/acknowledged": {Schema2026, "SubscriptionsAcknowledgedNotification"},
		"notifications/tasks":                      {SchemaExtTasks, "TaskStatusNotification"},
	}

	// modernResults: result defs for resultType "complete" (or absent),
	// keyed by the request method.
	modernResults = map[string]ref{
		"server/discover":          {Schema2026, "DiscoverResult"},
		"tools/list":               {Schema2026, "ListToolsResult"},
		"tools/call":               {Schema2026, "CallToolResult"},
		"prompts/list":             {Schema2026, "ListPromptsResult"},
		"prompts/get":              {Schema2026, "GetPromptResult"},
		"resources/list":           {Schema2026, "ListResourcesResult"},
		"resources/templates/list": {Schema2026, "ListResourceTemplatesResult"},
		"resources/read":           {Schema2026, "ReadResourceResult"},
		"completion/complete":      {Schema2026, "CompleteResult"},
		"subscriptions/listen":     {Schema2026, "SubscriptionsListenResult"},
		"tasks/get":                {SchemaExtTasks, "GetTaskResult"},
		"tasks/update":             {SchemaExtTasks, "UpdateTaskResult"},
		"tasks/cancel":             {SchemaExtTasks, "CancelTaskResult"},
	}

	// inputRequiredMethods may answer resultType "input_required" (MRTR,
	// 2026-07-28).
	inputRequiredMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

	// taskMethods may answer resultType "task" (ext-tasks supported methods).
	taskMethods = map[string]bool{"tools/call": true}
)

// frame is a decoded JSON-RPC message plus its original bytes.
type frame struct {
	raw []byte
	obj map[string]any
}

func parseFrame(b []byte) (*frame, error) {
	doc, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("frame %s: not JSON: %w", shorten(b), err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("frame %s: not a JSON object (batches are not allowed)", shorten(b))
	}
	return &frame{raw: b, obj: obj}, nil
}

func (f *frame) has(key string) bool { _, ok := f.obj[key]; return ok }

func (f *frame) method() string { s, _ := f.obj["method"].(string); return s }

// kind classifies the frame: "request", "notification", "error", "result".
func (f *frame) kind() (string, error) {
	switch {
	case f.has("method") && f.has("id"):
		return "request", nil
	case f.has("method"):
		return "notification", nil
	case f.has("error") && f.has("result"):
		return "", fmt.Errorf("frame %s: a response must not carry both result and error", shorten(f.raw))
	case f.has("error"):
		return "error", nil
	case f.has("result"):
		return "result", nil
	}
	return "", fmt.Errorf("frame %s: not a JSON-RPC message (no method, result or error)", shorten(f.raw))
}

// checkError validates an error response. JSON-RPC 2.0 uses "id": null for
// errors about requests whose id could not be read, but in both MCP schemas
// JSONRPCErrorResponse.id is an optional RequestId (string|integer) that does
// not admit null. For "id": null the frame is therefore validated with the id
// member removed: the envelope (jsonrpc, the Error object) is still checked.
func (v *Validator) checkError(schema string, f *frame) error {
	obj := f.obj
	if id, ok := obj["id"]; ok && id == nil {
		obj = make(map[string]any, len(f.obj))
		for k, val := range f.obj {
			if k != "id" {
				obj[k] = val
			}
		}
	}
	return v.check(schema, "JSONRPCErrorResponse", obj, "", f.raw)
}

// ValidateClientBound validates a frame the proxy writes to the LEGACY
// client, against the 2025-11-25 schema. requestMethod is the method of the
// client request a response answers (ignored for requests and
// notifications).
//
//   - method and id: a server→client request, validated against the def for
//     the method (elicitation/create ElicitRequest, sampling/createMessage
//     CreateMessageRequest, roots/list ListRootsRequest, ping PingRequest,
//     tasks/get GetTaskRequest, tasks/result GetTaskPayloadRequest,
//     tasks/list ListTasksRequest, tasks/cancel CancelTaskRequest); other
//     methods against the JSONRPCRequest envelope.
//   - method without id: a notification (notifications/progress
//     ProgressNotification, notifications/message LoggingMessageNotification,
//     notifications/{tools,prompts,resources}/list_changed
//     {Tool,Prompt,Resource}ListChangedNotification,
//     notifications/resources/updated ResourceUpdatedNotification,
//     notifications/cancelled CancelledNotification,
//     notifications/tasks/status TaskStatusNotification,
//     notifications/elicitation/complete ElicitationCompleteNotification);
//     other methods against the JSONRPCNotification envelope.
//   - error: JSONRPCErrorResponse. The schema does not admit "id": null; such
//     a frame is validated without its id (see checkError).
//   - result: JSONRPCResultResponse plus the result def(s) for requestMethod
//     (see legacyResults; tools/call uses CreateTaskResult when the result
//     has "task", tasks/result checks GetTaskPayloadResult and
//     CallToolResult). An unknown or empty requestMethod checks the envelope
//     only.
//
// The 2025 result types accept extra properties, so leaked 2026 fields pass
// here; use [CheckLegacyClean] for those.
func (v *Validator) ValidateClientBound(frameBytes []byte, requestMethod string) error {
	f, err := parseFrame(frameBytes)
	if err != nil {
		return err
	}
	k, err := f.kind()
	if err != nil {
		return err
	}
	switch k {
	case "request":
		def, ok := legacyServerRequests[f.method()]
		if !ok {
			def = "JSONRPCRequest"
		}
		return v.check(Schema2025, def, f.obj, "", f.raw)
	case "notification":
		def, ok := legacyNotifications[f.method()]
		if !ok {
			def = "JSONRPCNotification"
		}
		return v.check(Schema2025, def, f.obj, "", f.raw)
	case "error":
		return v.checkError(Schema2025, f)
	}
	if err := v.check(Schema2025, "JSONRPCResultResponse", f.obj, "", f.raw); err != nil {
		return err
	}
	defs := legacyResults[requestMethod]
	result := f.obj["result"]
	if requestMethod == "tools/call" {
		if r, ok := result.(map[string]any); ok {
			if _, isTask := r["task"]; isTask {
				defs = []string{"CreateTaskResult"}
			}
		}
	}
	var errs []error
	for _, def := range defs {
		errs = append(errs, v.check(Schema2025, def, result, "/result", f.raw))
	}
	return errors.Join(errs...)
}

// ValidateUpstream validates a body the proxy POSTs to the MODERN server.
// It must be a single JSON-RPC request (method and id). The method picks the
// def: 2026-07-28 DiscoverRequest, ListToolsRequest, CallToolRequest,
// ListPromptsRequest, GetPromptRequest, ListResourcesRequest,
// ListResourceTemplatesRequest, ReadResourceRequest, CompleteRequest,
// SubscriptionsListenRequest, and ext-tasks GetTaskRequest,
// UpdateTaskRequest, CancelTaskRequest for tasks/get, tasks/update and
// tasks/cancel. Other methods are checked against the 2026 JSONRPCRequest
// envelope.
//
// Because the ext-tasks requests do not require params._meta in their
// schema, every request is additionally required to carry a params._meta
// object with a non-empty string ProtocolVersionMetaKey, and that _meta is
// validated against the 2026 RequestMetaObject (which also requires
// io.modelcontextprotocol/clientCapabilities). The protocol version value
// itself is not compared.
func (v *Validator) ValidateUpstream(body []byte) error {
	f, err := parseFrame(body)
	if err != nil {
		return err
	}
	if !f.has("method") || !f.has("id") {
		return fmt.Errorf("upstream body %s: not a JSON-RPC request (needs method and id)", shorten(body))
	}
	r, ok := modernRequests[f.method()]
	if !ok {
		r = ref{Schema2026, "JSONRPCRequest"}
	}
	var errs []error
	errs = append(errs, v.check(r.schema, r.def, f.obj, "", f.raw))
	params, _ := f.obj["params"].(map[string]any)
	meta, ok := params["_meta"].(map[string]any)
	if !ok {
		errs = append(errs, fmt.Errorf("upstream %s request %s: params._meta object is missing (every 2026 request needs %q)", f.method(), shorten(body), ProtocolVersionMetaKey))
	} else {
		if pv, _ := meta[ProtocolVersionMetaKey].(string); pv == "" {
			errs = append(errs, fmt.Errorf("upstream %s request %s: params._meta[%q] is missing or not a non-empty string", f.method(), shorten(body), ProtocolVersionMetaKey))
		}
		errs = append(errs, v.check(Schema2026, "RequestMetaObject", meta, "/params/_meta", f.raw))
	}
	return errors.Join(errs...)
}

// ValidateUpstreamResult validates a frame a MODERN server sends to the proxy
// (a JSON response body or one SSE event), against the 2026-07-28 and
// ext-tasks schemas. requestMethod is the method of the request it answers.
//
//   - result: the 2026 JSONRPCResultResponse envelope (which requires
//     result.resultType), then by resultType: "input_required" →
//     InputRequiredResult (only for tools/call, prompts/get, resources/read,
//     and with inputRequests or requestState present); "task" → ext-tasks
//     CreateTaskResult (only for tools/call); otherwise the method's result
//     def (DiscoverResult, ListToolsResult, CallToolResult,
//     ListPromptsResult, GetPromptResult, ListResourcesResult,
//     ListResourceTemplatesResult, ReadResourceResult, CompleteResult,
//     SubscriptionsListenResult, ext-tasks GetTaskResult, UpdateTaskResult,
//     CancelTaskResult), with resultType required to be "complete". Unknown
//     or empty requestMethod: envelope only.
//   - error: 2026 JSONRPCErrorResponse ("id": null handled as in
//     ValidateClientBound).
//   - notification (SSE events): the 2026 notification def for the method
//     (ext-tasks TaskStatusNotification for "notifications/tasks"), else the
//     JSONRPCNotification envelope.
//   - request: 2026 servers send no JSON-RPC requests; only the
//     JSONRPCRequest envelope is checked.
func (v *Validator) ValidateUpstreamResult(frameBytes []byte, requestMethod string) error {
	f, err := parseFrame(frameBytes)
	if err != nil {
		return err
	}
	k, err := f.kind()
	if err != nil {
		return err
	}
	switch k {
	case "request":
		return v.check(Schema2026, "JSONRPCRequest", f.obj, "", f.raw)
	case "notification":
		r, ok := modernNotifications[f.method()]
		if !ok {
			r = ref{Schema2026, "JSONRPCNotification"}
		}
		return v.check(r.schema, r.def, f.obj, "", f.raw)
	case "error":
		return v.checkError(Schema2026, f)
	}
	if err := v.check(Schema2026, "JSONRPCResultResponse", f.obj, "", f.raw); err != nil {
		return err
	}
	r, known := modernResults[requestMethod]
	if !known {
		return nil
	}
	result, _ := f.obj["result"].(map[string]any)
	rt, _ := result["resultType"].(string)
	switch rt {
	case "input_required":
		if !inputRequiredMethods[requestMethod] {
			return fmt.Errorf("%s result %s: resultType \"input_required\" is only legal on %s", requestMethod, shorten(f.raw), keys(inputRequiredMethods))
		}
		_, hasReqs := result["inputRequests"]
		_, hasState := result["requestState"]
		if !hasReqs && !hasState {
			return fmt.Errorf("%s result %s: an InputRequiredResult needs inputRequests or requestState", requestMethod, shorten(f.raw))
		}
		return v.check(Schema2026, "InputRequiredResult", result, "/result", f.raw)
	case "task":
		if !taskMethods[requestMethod] {
			return fmt.Errorf("%s result %s: resultType \"task\" is only legal on %s", requestMethod, shorten(f.raw), keys(taskMethods))
		}
		return v.check(SchemaExtTasks, "CreateTaskResult", result, "/result", f.raw)
	case "complete":
		return v.check(r.schema, r.def, result, "/result", f.raw)
	}
	return fmt.Errorf("%s result %s: unrecognized resultType %q", requestMethod, shorten(f.raw), rt)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// legacyClientResults: result defs (2025) of the client's answers to server
// requests, keyed by the server request's method.
var legacyClientResults = map[string]string{
	"elicitation/create":     "ElicitResult",
	"sampling/createMessage": "CreateMessageResult",
	"roots/list":             "ListRootsResult",
	"ping":                   "EmptyResult",
}

// ValidateLegacyUpstream validates a message the proxy sends to a LEGACY
// (2025) server in passthrough mode, against the 2025-11-25 schema: a
// request against ClientRequest (every 2025 client request), a
// notification against ClientNotification, an error response against
// JSONRPCErrorResponse, and a result against JSONRPCResultResponse plus
// the result def of serverMethod, the server request it answers
// (elicitation/create, sampling/createMessage, roots/list, ping; envelope
// only for others or "").
func (v *Validator) ValidateLegacyUpstream(body []byte, serverMethod string) error {
	f, err := parseFrame(body)
	if err != nil {
		return err
	}
	k, err := f.kind()
	if err != nil {
		return err
	}
	switch k {
	case "request":
		return v.check(Schema2025, "ClientRequest", f.obj, "", f.raw)
	case "notification":
		return v.check(Schema2025, "ClientNotification", f.obj, "", f.raw)
	case "error":
		return v.checkError(Schema2025, f)
	}
	if err := v.check(Schema2025, "JSONRPCResultResponse", f.obj, "", f.raw); err != nil {
		return err
	}
	if def, ok := legacyClientResults[serverMethod]; ok {
		return v.check(Schema2025, def, f.obj["result"], "/result", f.raw)
	}
	return nil
}
