package demo_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
)

// taskMeta is the request _meta of a client that declares the tasks
// extension.
func taskMeta() map[string]any {
	return meta(map[string]any{
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"extensions": map[string]any{demo.TasksExtension: map[string]any{}},
		},
	})
}

// taskInfo is a CreateTaskResult or GetTaskResult.
type taskInfo struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         json.RawMessage            `json:"result"`
	Error          *struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Meta map[string]any `json:"_meta"`
}

// taskClient talks to one demo peer and validates every task-related frame
// against the 2026-07-28 and ext-tasks schemas.
type taskClient struct {
	*peer
	v *schematest.Validator
}

func newTaskClient(t *testing.T) *taskClient {
	t.Helper()
	v := schematest.Load(t)
	return &taskClient{peer: startPeer(t), v: v}
}

// call sends one request (params get taskMeta() unless they have _meta),
// validates the request body as an upstream request and the response as
// the answer to method, and returns the response.
func (c *taskClient) call(t *testing.T, id any, method, mcpName string, params map[string]any, hdr ...string) (reply, message) {
	t.Helper()
	return c.send(t, true, id, method, mcpName, params, hdr...)
}

// callInvalid is call for a request that is invalid on purpose: only the
// response is validated.
func (c *taskClient) callInvalid(t *testing.T, id any, method, mcpName string, params map[string]any, hdr ...string) (reply, message) {
	t.Helper()
	return c.send(t, false, id, method, mcpName, params, hdr...)
}

func (c *taskClient) send(t *testing.T, checkRequest bool, id any, method, mcpName string, params map[string]any, hdr ...string) (reply, message) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = taskMeta()
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.v.ValidateUpstream(body); checkRequest && err != nil {
		t.Errorf("request: %v", err)
	}
	r := c.post(t, id, method, mcpName, params, hdr...)
	if err := c.v.ValidateUpstreamResult(r.body, method); err != nil {
		t.Errorf("response: %v", err)
	}
	var m message
	decode(t, r.body, &m)
	return r, m
}

var hexID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// checkTask checks the fields every task view shares.
func checkTask(t *testing.T, ti taskInfo) {
	t.Helper()
	if !hexID.MatchString(ti.TaskID) {
		t.Errorf("taskId %q, want 32 lowercase hex digits", ti.TaskID)
	}
	if ti.TTLMs == nil || *ti.TTLMs != demo.TaskTTL.Milliseconds() || ti.PollIntervalMs != demo.TaskPollInterval.Milliseconds() {
		t.Errorf("ttlMs %v, pollIntervalMs %d; want %d and %d", ti.TTLMs, ti.PollIntervalMs,
			demo.TaskTTL.Milliseconds(), demo.TaskPollInterval.Milliseconds())
	}
	created, err1 := time.Parse(time.RFC3339, ti.CreatedAt)
	updated, err2 := time.Parse(time.RFC3339, ti.LastUpdatedAt)
	if err1 != nil || err2 != nil || !strings.HasSuffix(ti.CreatedAt, "Z") || !strings.HasSuffix(ti.LastUpdatedAt, "Z") {
		t.Errorf("createdAt %q, lastUpdatedAt %q: want RFC 3339 UTC (%v, %v)", ti.CreatedAt, ti.LastUpdatedAt, err1, err2)
	} else if updated.Before(created) {
		t.Errorf("lastUpdatedAt %s before createdAt %s", ti.LastUpdatedAt, ti.CreatedAt)
	}
	if info, _ := ti.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != demo.ServerName {
		t.Errorf("_meta %v lacks the serverInfo of %s", ti.Meta, demo.ServerName)
	}
}

// create calls a task tool and returns its CreateTaskResult.
func (c *taskClient) create(t *testing.T, tool string, args map[string]any) taskInfo {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	r, m := c.call(t, "create-"+tool, "tools/call", tool, map[string]any{"name": tool, "arguments": args})
	if r.status != http.StatusOK || m.Error != nil {
		t.Fatalf("tools/call %s: status %d, body %s", tool, r.status, r.body)
	}
	if err := c.v.Validate(schematest.SchemaExtTasks, "CreateTaskResult", m.Result); err != nil {
		t.Error(err)
	}
	var ti taskInfo
	decode(t, m.Result, &ti)
	checkTask(t, ti)
	if ti.ResultType != "task" || ti.Status != "working" || ti.InputRequests != nil || ti.Result != nil || ti.Error != nil {
		t.Errorf("CreateTaskResult %s: want resultType task, status working and no payload", m.Result)
	}
	return ti
}

// statusDefs maps a task status to its ext-tasks DetailedTask variant.
var statusDefs = map[string]string{
	"working":        "WorkingTask",
	"input_required": "InputRequiredTask",
	"completed":      "CompletedTask",
	"failed":         "FailedTask",
	"cancelled":      "CancelledTask",
}

// get calls tasks/get and returns the task, checked against the schema
// variant of its status.
func (c *taskClient) get(t *testing.T, id string) taskInfo {
	t.Helper()
	r, m := c.call(t, "get", "tasks/get", id, map[string]any{"taskId": id})
	if r.status != http.StatusOK || m.Error != nil {
		t.Fatalf("tasks/get: status %d, body %s", r.status, r.body)
	}
	var ti taskInfo
	decode(t, m.Result, &ti)
	checkTask(t, ti)
	def, ok := statusDefs[ti.Status]
	if !ok || ti.ResultType != "complete" || ti.TaskID != id {
		t.Fatalf("tasks/get result %s: want resultType complete, a known status and taskId %s", m.Result, id)
	}
	if err := c.v.Validate(schematest.SchemaExtTasks, def, m.Result); err != nil {
		t.Error(err)
	}
	return ti
}

// poll calls tasks/get every pollIntervalMs until stop accepts the task,
// within testTimeout.
func (c *taskClient) poll(t *testing.T, id string, stop func(taskInfo) bool) taskInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	for {
		ti := c.get(t, id)
		if stop(ti) {
			return ti
		}
		if terminal(ti.Status) {
			t.Fatalf("task %s ended %s (%q) before the awaited state", id, ti.Status, ti.StatusMessage)
		}
		timer := time.NewTimer(time.Duration(ti.PollIntervalMs) * time.Millisecond)
		select {
		case <-ctx.Done():
			timer.Stop()
			t.Fatalf("task %s still %s after %v", id, ti.Status, testTimeout)
		case <-timer.C:
		}
	}
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

func isTerminal(ti taskInfo) bool { return terminal(ti.Status) }

// toolText checks that a task's result is a 2026 CallToolResult with one
// text block and returns the text and isError.
func (c *taskClient) toolText(t *testing.T, ti taskInfo) (string, bool) {
	t.Helper()
	if ti.Status != "completed" {
		t.Fatalf("task %s is %s (%q), want completed", ti.TaskID, ti.Status, ti.StatusMessage)
	}
	if err := c.v.Validate(schematest.Schema2026, "CallToolResult", ti.Result); err != nil {
		t.Error(err)
	}
	var res callResult
	decode(t, ti.Result, &res)
	return res.text(t), res.IsError
}

// ack checks an empty {"resultType":"complete"} acknowledgement.
func (c *taskClient) ack(t *testing.T, method, def, id string, params map[string]any) {
	t.Helper()
	r, m := c.call(t, "ack", method, id, params)
	if r.status != http.StatusOK || m.Error != nil {
		t.Fatalf("%s: status %d, body %s", method, r.status, r.body)
	}
	if err := c.v.Validate(schematest.SchemaExtTasks, def, m.Result); err != nil {
		t.Error(err)
	}
	var res map[string]any
	decode(t, m.Result, &res)
	delete(res, "_meta")
	if !reflect.DeepEqual(res, map[string]any{"resultType": "complete"}) {
		t.Errorf("%s result %s, want only resultType complete (and _meta)", method, m.Result)
	}
}

func TestDiscoverDeclaresTasks(t *testing.T) {
	c := newTaskClient(t)
	_, m := c.call(t, 1, "server/discover", "", nil)
	var res struct {
		Capabilities struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"capabilities"`
	}
	decode(t, m.Result, &res)
	if ext, ok := res.Capabilities.Extensions[demo.TasksExtension].(map[string]any); !ok || len(ext) != 0 {
		t.Errorf("capabilities %s: want extensions[%q] = {}", m.Result, demo.TasksExtension)
	}
}

func TestTaskSlowCompletes(t *testing.T) {
	c := newTaskClient(t)
	created := c.create(t, "slow", map[string]any{"ms": 50})
	if created.StatusMessage != "sleeping" {
		t.Errorf("statusMessage %q, want sleeping", created.StatusMessage)
	}
	done := c.poll(t, created.TaskID, isTerminal)
	if text, isErr := c.toolText(t, done); text != "slept 50 ms" || isErr {
		t.Errorf("result text %q, isError %v; want \"slept 50 ms\", false", text, isErr)
	}
	if done.CreatedAt != created.CreatedAt {
		t.Errorf("createdAt changed from %s to %s", created.CreatedAt, done.CreatedAt)
	}
}

func TestTaskSlowDefaultArgs(t *testing.T) {
	c := newTaskClient(t)
	// "arguments": null is treated as absent: ms defaults to 1000.
	r, m := c.callInvalid(t, 1, "tools/call", "slow", map[string]any{"name": "slow", "arguments": nil})
	var ti taskInfo
	decode(t, m.Result, &ti)
	if r.status != http.StatusOK || ti.ResultType != "task" {
		t.Fatalf("slow with null arguments: status %d, body %s", r.status, r.body)
	}
	if got := c.get(t, ti.TaskID); got.Status != "working" {
		t.Errorf("a 1000 ms slow task is %s at once", got.Status)
	}
	c.ack(t, "tasks/cancel", "CancelTaskResult", ti.TaskID, map[string]any{"taskId": ti.TaskID})

	// Out-of-range ms is a tool error, not a task.
	_, m = c.call(t, 2, "tools/call", "slow", map[string]any{"name": "slow", "arguments": map[string]any{"ms": -1}})
	var res callResult
	decode(t, m.Result, &res)
	if res.ResultType != "complete" || !res.IsError {
		t.Errorf("slow with ms -1: %s, want a complete result with isError", m.Result)
	}
}

func TestTaskFail(t *testing.T) {
	c := newTaskClient(t)
	created := c.create(t, "fail", nil)
	done := c.poll(t, created.TaskID, isTerminal)
	const msg = "the demo tool failed on purpose"
	if done.Status != "failed" || done.Error == nil || done.Error.Code != -32000 || done.Error.Message != msg ||
		done.StatusMessage != msg || done.Result != nil {
		t.Errorf("fail task ended %+v, want failed with error -32000 %q", done, msg)
	}
}

func TestTaskIsError(t *testing.T) {
	c := newTaskClient(t)
	created := c.create(t, "iserror", nil)
	done := c.poll(t, created.TaskID, isTerminal)
	if text, isErr := c.toolText(t, done); text != "the tool reports an error" || !isErr {
		t.Errorf("result text %q, isError %v; want the tool error", text, isErr)
	}
}

func TestTaskNeedsInput(t *testing.T) {
	c := newTaskClient(t)
	wantRequest := map[string]any{
		"method": "elicitation/create",
		"params": map[string]any{
			"mode":    "form",
			"message": "What is your name?",
			"requestedSchema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"name": map[string]any{"type": "string"}},
				"required":   []any{"name"},
			},
		},
	}
	keys := map[string]bool{}
	for _, tc := range []struct {
		name     string
		response map[string]any
		want     string
	}{
		{"accept", map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, "hello, Ada"},
		{"decline", map[string]any{"action": "decline"}, "no name given"},
		{"cancel", map[string]any{"action": "cancel"}, "no name given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			created := c.create(t, "needs_input", nil)
			asking := c.poll(t, created.TaskID, func(ti taskInfo) bool { return ti.Status == "input_required" })
			if len(asking.InputRequests) != 1 {
				t.Fatalf("inputRequests %v, want one request", asking.InputRequests)
			}
			var key string
			for k, raw := range asking.InputRequests {
				key = k
				var got map[string]any
				decode(t, raw, &got)
				if !reflect.DeepEqual(got, wantRequest) {
					t.Errorf("input request %s, want %v", raw, wantRequest)
				}
				if err := c.v.Validate(schematest.Schema2026, "ElicitRequest", raw); err != nil {
					t.Error(err)
				}
			}
			if keys[key] {
				t.Errorf("key %q reused across tasks", key)
			}
			keys[key] = true

			// The same key is listed on every poll until it is answered.
			if again := c.get(t, created.TaskID); again.Status != "input_required" || again.InputRequests[key] == nil {
				t.Errorf("second poll %+v, want key %q still outstanding", again, key)
			}

			c.ack(t, "tasks/update", "UpdateTaskResult", created.TaskID, map[string]any{
				"taskId": created.TaskID,
				"inputResponses": map[string]any{
					key:           tc.response,
					"never-asked": map[string]any{"action": "accept", "content": map[string]any{"name": "Eve"}},
				},
			})
			done := c.poll(t, created.TaskID, func(ti taskInfo) bool {
				if ti.Status == "input_required" {
					t.Fatalf("task asks again after the answer: %+v", ti)
				}
				return isTerminal(ti)
			})
			if text, isErr := c.toolText(t, done); text != tc.want || isErr {
				t.Errorf("result text %q, isError %v; want %q", text, isErr, tc.want)
			}

			// A late answer to the same key is ignored.
			c.ack(t, "tasks/update", "UpdateTaskResult", created.TaskID, map[string]any{
				"taskId":         created.TaskID,
				"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"name": "Bob"}}},
			})
			if again := c.get(t, created.TaskID); again.Status != "completed" || string(again.Result) != string(done.Result) {
				t.Errorf("after a late answer the task is %+v, want it unchanged", again)
			}
		})
	}
}

func TestTaskUpdateRejectsBadInput(t *testing.T) {
	c := newTaskClient(t)
	created := c.create(t, "needs_input", nil)
	asking := c.poll(t, created.TaskID, func(ti taskInfo) bool { return ti.Status == "input_required" })
	var key string
	for k := range asking.InputRequests {
		key = k
	}
	r, m := c.callInvalid(t, 1, "tasks/update", created.TaskID, map[string]any{
		"taskId": created.TaskID, "inputResponses": map[string]any{key: map[string]any{"action": "maybe"}},
	})
	if r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("bad ElicitResult: status %d, body %s; want 400 and -32602", r.status, r.body)
	}
	r, m = c.callInvalid(t, 2, "tasks/update", created.TaskID, map[string]any{"taskId": created.TaskID})
	if r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("tasks/update without inputResponses: status %d, body %s; want 400 and -32602", r.status, r.body)
	}
	c.ack(t, "tasks/cancel", "CancelTaskResult", created.TaskID, map[string]any{"taskId": created.TaskID})
	if got := c.get(t, created.TaskID); got.Status != "cancelled" || got.InputRequests != nil {
		t.Errorf("cancelled input_required task: %+v, want cancelled without inputRequests", got)
	}
}

func TestTaskCancel(t *testing.T) {
	c := newTaskClient(t)
	created := c.create(t, "slow", map[string]any{"ms": 60000})
	if got := c.get(t, created.TaskID); got.Status != "working" {
		t.Fatalf("slow task is %s, want working", got.Status)
	}
	c.ack(t, "tasks/cancel", "CancelTaskResult", created.TaskID, map[string]any{"taskId": created.TaskID})
	got := c.get(t, created.TaskID)
	if got.Status != "cancelled" || got.Result != nil || got.Error != nil {
		t.Errorf("after tasks/cancel: %+v, want cancelled", got)
	}
	// Cancelling a terminal task is acknowledged and changes nothing.
	c.ack(t, "tasks/cancel", "CancelTaskResult", created.TaskID, map[string]any{"taskId": created.TaskID})
	if again := c.get(t, created.TaskID); again.Status != "cancelled" || again.LastUpdatedAt != got.LastUpdatedAt {
		t.Errorf("second cancel changed the task: %+v", again)
	}
}

// wantMissingCapability checks a -32021 answer naming the tasks extension.
func (c *taskClient) wantMissingCapability(t *testing.T, r reply, m message) {
	t.Helper()
	if r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32021 {
		t.Fatalf("status %d, body %s; want 400 and -32021", r.status, r.body)
	}
	if err := c.v.Validate(schematest.Schema2026, "MissingRequiredClientCapabilityError", r.body); err != nil {
		t.Error(err)
	}
	var data map[string]any
	decode(t, m.Error.Data, &data)
	want := map[string]any{"requiredCapabilities": map[string]any{
		"extensions": map[string]any{demo.TasksExtension: map[string]any{}},
	}}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("error data %s, want %v", m.Error.Data, want)
	}
}

func TestTaskRequiresExtension(t *testing.T) {
	c := newTaskClient(t)
	for _, tool := range []string{"slow", "fail", "needs_input", "iserror"} {
		t.Run(tool, func(t *testing.T) {
			r, m := c.call(t, 1, "tools/call", tool, map[string]any{"name": tool, "arguments": map[string]any{}, "_meta": meta(nil)})
			c.wantMissingCapability(t, r, m)
		})
	}
	// An extensions object without the tasks extension does not count.
	r, m := c.call(t, 2, "tools/call", "slow", map[string]any{"name": "slow", "_meta": meta(map[string]any{
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"example.com/other": map[string]any{}}},
	})})
	c.wantMissingCapability(t, r, m)

	created := c.create(t, "slow", map[string]any{"ms": 60000})
	id := created.TaskID
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{"tasks/get", map[string]any{"taskId": id}},
		{"tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}},
		{"tasks/cancel", map[string]any{"taskId": id}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			tc.params["_meta"] = meta(nil)
			r, m := c.call(t, 3, tc.method, id, tc.params)
			c.wantMissingCapability(t, r, m)
		})
	}
	if got := c.get(t, id); got.Status != "working" {
		t.Errorf("refused tasks/cancel changed the task to %s", got.Status)
	}
}

func TestTaskMcpName(t *testing.T) {
	c := newTaskClient(t)
	id := c.create(t, "slow", map[string]any{"ms": 60000}).TaskID
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		params := func() map[string]any {
			p := map[string]any{"taskId": id}
			if method == "tasks/update" {
				p["inputResponses"] = map[string]any{}
			}
			return p
		}
		for _, tc := range []struct {
			name, mcpName string
		}{
			{"wrong", "0123456789abcdef0123456789abcdef"},
			{"missing", ""},
			{"wrong Base64", "=?base64?" + base64.StdEncoding.EncodeToString([]byte("other")) + "?="},
		} {
			t.Run(method+" "+tc.name, func(t *testing.T) {
				r, m := c.call(t, "n", method, tc.mcpName, params())
				if r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32020 || string(m.ID) != `"n"` {
					t.Fatalf("status %d, body %s; want 400 and -32020 for id \"n\"", r.status, r.body)
				}
				if err := c.v.Validate(schematest.Schema2026, "HeaderMismatchError", r.body); err != nil {
					t.Error(err)
				}
			})
		}
		t.Run(method+" Base64", func(t *testing.T) {
			r, m := c.call(t, "b", method, "=?base64?"+base64.StdEncoding.EncodeToString([]byte(id))+"?=", params())
			if r.status != http.StatusOK || m.Error != nil {
				t.Errorf("Base64 Mcp-Name: status %d, body %s", r.status, r.body)
			}
		})
	}
}

func TestTaskUnknownID(t *testing.T) {
	c := newTaskClient(t)
	const id = "00000000000000000000000000000000"
	for _, tc := range []struct {
		method, message string
		params          map[string]any
	}{
		{"tasks/get", "Failed to retrieve task: Task not found", map[string]any{"taskId": id}},
		{"tasks/update", "Failed to update task: Task not found", map[string]any{"taskId": id, "inputResponses": map[string]any{}}},
		{"tasks/cancel", "Failed to cancel task: Task not found", map[string]any{"taskId": id}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			r, m := c.call(t, 1, tc.method, id, tc.params)
			if r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32602 || m.Error.Message != tc.message {
				t.Errorf("status %d, body %s; want 400, -32602 %q", r.status, r.body, tc.message)
			}
		})
	}
}

// TestTaskStoresArePerHandler shows that two handlers do not share tasks.
func TestTaskStoresArePerHandler(t *testing.T) {
	c1 := newTaskClient(t)
	// Closed before c1's leak check runs.
	srv := httptest.NewServer(demo.Handler())
	t.Cleanup(srv.Close)
	c2 := &taskClient{peer: &peer{url: srv.URL, client: srv.Client()}, v: c1.v}

	id := c1.create(t, "slow", map[string]any{"ms": 60000}).TaskID
	r, m := c2.call(t, 1, "tasks/get", id, map[string]any{"taskId": id})
	if r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("another server's task: status %d, body %s; want 400 and -32602", r.status, r.body)
	}
}

func TestTasksResultIsNotAMethod(t *testing.T) {
	c := newTaskClient(t)
	r := c.post(t, 1, "tasks/result", "", map[string]any{"taskId": "x", "_meta": taskMeta()})
	if m := jsonReply(t, r, http.StatusNotFound); m.Error == nil || m.Error.Code != -32601 {
		t.Errorf("tasks/result: %s, want 404 and -32601", r.body)
	}
}

func TestQuickIsSynchronous(t *testing.T) {
	c := newTaskClient(t)
	for _, withExt := range []bool{true, false} {
		params := map[string]any{"name": "quick", "arguments": map[string]any{"text": "now"}}
		if !withExt {
			params["_meta"] = meta(nil)
		}
		r, m := c.call(t, 1, "tools/call", "quick", params)
		var res callResult
		decode(t, m.Result, &res)
		if r.status != http.StatusOK || res.ResultType != "complete" || res.text(t) != "now" || res.IsError {
			t.Errorf("extension %v: status %d, body %s; want a complete result \"now\"", withExt, r.status, r.body)
		}
	}
}
