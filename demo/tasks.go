package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The io.modelcontextprotocol/tasks extension (2026), as the demo serves it.
const (
	// TasksExtension is the identifier of the tasks extension. The server
	// declares it in server/discover and serves task tools as tasks only
	// to requests whose _meta clientCapabilities.extensions declare it.
	TasksExtension = "io.modelcontextprotocol/tasks"
	// TaskTTL is the ttlMs every demo task reports (and after which the
	// store forgets it).
	TaskTTL = time.Hour
	// TaskPollInterval is the pollIntervalMs every demo task reports.
	TaskPollInterval = 200 * time.Millisecond

	// taskStep is how long the fail, iserror and needs_input tasks stay in
	// one state before moving on, so that clients see working first.
	taskStep = 50 * time.Millisecond
	// maxSlowMS bounds the slow tool's "ms" argument (10 minutes).
	maxSlowMS = 600000

	// Task status values.
	statusWorking       = "working"
	statusInputRequired = "input_required"
	statusCompleted     = "completed"
	statusFailed        = "failed"
	statusCancelled     = "cancelled"

	// failMessage is the error message and status message of the fail tool.
	failMessage = "the demo tool failed on purpose"
	// failCode is the JSON-RPC error code of the fail tool's task.
	failCode = -32000

	// timeLayout renders createdAt and lastUpdatedAt: RFC 3339, UTC,
	// millisecond precision.
	timeLayout = "2006-01-02T15:04:05.000Z"

	// maxTaskBody bounds how much of a tasks/* request body the Mcp-Name
	// check buffers; it matches the handler's MaxRequestBodyBytes.
	maxTaskBody = 128 << 20
)

// taskMethods are the extension's methods whose Mcp-Name must equal
// params.taskId.
var taskMethods = map[string]bool{"tasks/get": true, "tasks/update": true, "tasks/cancel": true}

// taskStore holds the tasks of one server. It is shared by all the
// stateless requests that server handles. Every field of every task is
// guarded by mu; timers are time.AfterFunc timers, so a pending step holds
// no goroutine.
type taskStore struct {
	mu     sync.Mutex
	tasks  map[string]*task
	closed bool
	now    func() time.Time
}

func newTaskStore() *taskStore {
	return &taskStore{tasks: map[string]*task{}, now: time.Now}
}

// task is one task's state.
type task struct {
	id            string
	status        string
	statusMessage string
	createdAt     time.Time
	lastUpdatedAt time.Time
	// result is the CallToolResult of a completed task.
	result json.RawMessage
	// err is the JSON-RPC error of a failed task.
	err *jsonrpc.Error
	// inputRequests are the outstanding requests of an input_required task.
	inputRequests map[string]any
	// onInput handles the response to an outstanding input request key; it
	// runs with the store locked, after the key was removed from
	// inputRequests.
	onInput func(t *task, key string, response json.RawMessage) error
	// timer is the pending step, if any.
	timer *time.Timer
}

func (t *task) terminal() bool {
	return t.status == statusCompleted || t.status == statusFailed || t.status == statusCancelled
}

// newTaskID returns 128 random bits in hex.
func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// createLocked stores a new working task.
func (s *taskStore) createLocked(statusMessage string) *task {
	now := s.now()
	t := &task{
		id:            newTaskID(),
		status:        statusWorking,
		statusMessage: statusMessage,
		createdAt:     now,
		lastUpdatedAt: now,
	}
	s.expireLocked(now)
	s.tasks[t.id] = t
	return t
}

// expireLocked forgets the tasks whose TTL has run out.
func (s *taskStore) expireLocked(now time.Time) {
	for id, t := range s.tasks {
		if now.Sub(t.createdAt) >= TaskTTL {
			if t.timer != nil {
				t.timer.Stop()
			}
			delete(s.tasks, id)
		}
	}
}

// lookupLocked returns the live task with the given id, or a -32602 error
// whose message starts with what ("Failed to retrieve task", ...).
func (s *taskStore) lookupLocked(id, what string) (*task, error) {
	t, ok := s.tasks[id]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: what + ": Task not found"}
	}
	if s.now().Sub(t.createdAt) >= TaskTTL {
		if t.timer != nil {
			t.timer.Stop()
		}
		delete(s.tasks, id)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: what + ": Task has expired"}
	}
	return t, nil
}

// setLocked moves t to status with the given message.
func (s *taskStore) setLocked(t *task, status, message string) {
	t.status = status
	t.statusMessage = message
	t.lastUpdatedAt = s.now()
}

// completeLocked completes t with a CallToolResult holding one text block.
func (s *taskStore) completeLocked(t *task, text string, isError bool, message string) {
	res := struct {
		ResultType string        `json:"resultType"`
		Content    []mcp.Content `json:"content"`
		IsError    bool          `json:"isError,omitempty"`
	}{"complete", []mcp.Content{&mcp.TextContent{Text: text}}, isError}
	b, err := json.Marshal(res)
	if err != nil { // cannot happen: the value is plain data
		s.failLocked(t, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		return
	}
	t.result = b
	s.setLocked(t, statusCompleted, message)
}

// failLocked fails t with the given JSON-RPC error.
func (s *taskStore) failLocked(t *task, e *jsonrpc.Error) {
	t.err = e
	s.setLocked(t, statusFailed, e.Message)
}

// afterLocked runs step on t after d, with the store locked, unless t has
// become terminal or got another pending step meanwhile. It replaces any
// pending step. A closed store schedules nothing.
func (s *taskStore) afterLocked(t *task, d time.Duration, step func(t *task)) {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if s.closed {
		return
	}
	var timer *time.Timer
	timer = time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.timer != timer || t.terminal() {
			return
		}
		t.timer = nil
		step(t)
	})
	t.timer = timer
}

// close stops every pending step; later tasks never progress. It is called
// when the server that owns the store stops.
func (s *taskStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, t := range s.tasks {
		if t.timer != nil {
			t.timer.Stop()
			t.timer = nil
		}
	}
}

// taskView is the wire form of a task (the ext-tasks Task fields plus the
// DetailedTask payload of its status).
type taskView struct {
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	InputRequests  map[string]any  `json:"inputRequests,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *jsonrpc.Error  `json:"error,omitempty"`
}

// viewLocked returns t's wire form. detailed adds the payload of its status
// (inputRequests, result or error), as tasks/get returns it; without it the
// view is a plain Task, as CreateTaskResult carries it.
func (t *task) viewLocked(detailed bool) taskView {
	v := taskView{
		TaskID:         t.id,
		Status:         t.status,
		StatusMessage:  t.statusMessage,
		CreatedAt:      t.createdAt.UTC().Format(timeLayout),
		LastUpdatedAt:  t.lastUpdatedAt.UTC().Format(timeLayout),
		TTLMs:          TaskTTL.Milliseconds(),
		PollIntervalMs: TaskPollInterval.Milliseconds(),
	}
	if !detailed {
		return v
	}
	switch t.status {
	case statusInputRequired:
		v.InputRequests = make(map[string]any, len(t.inputRequests))
		for k, r := range t.inputRequests {
			v.InputRequests[k] = r
		}
	case statusCompleted:
		v.Result = t.result
	case statusFailed:
		v.Error = t.err
	}
	return v
}

// taskResult is a CreateTaskResult (resultType "task") or a GetTaskResult
// (resultType "complete"): Result & (Detailed)Task, flat.
type taskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	taskView
}

// ackResult is the empty UpdateTaskResult / CancelTaskResult.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskIDParams are the params of tasks/get and tasks/cancel.
type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// updateTaskParams are the params of tasks/update.
type updateTaskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
}

// declaresTasks reports whether a request _meta declares the tasks
// extension in clientCapabilities.extensions.
func declaresTasks(meta map[string]any) bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	exts, _ := caps["extensions"].(map[string]any)
	_, ok := exts[TasksExtension].(map[string]any)
	return ok
}

// errNoTasksCapability is the -32021 answer to a request that needs the
// tasks extension but did not declare it. The transport sends it with HTTP
// status 400.
func errNoTasksCapability(what string) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("Missing required client capability: %s requires the %s extension", what, TasksExtension),
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + TasksExtension + `":{}}}}`),
	}
}

// taskSlotKey is the context key of the *taskSlot that middleware gives
// each tools/call.
type taskSlotKey struct{}

// taskSlot receives the CreateTaskResult of a task tool, which replaces the
// tool's CallToolResult on the wire. The go-sdk types a tool handler's
// result as *CallToolResult, so a task tool cannot return the flat
// CreateTaskResult itself.
type taskSlot struct {
	created *taskResult
}

// middleware is a receiving middleware that lets task tools answer
// tools/call with a CreateTaskResult.
func (s *taskStore) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		slot := &taskSlot{}
		res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
		if err == nil && slot.created != nil {
			return slot.created, nil
		}
		return res, err
	}
}

// startTask creates a task for a task tool's call and hands its
// CreateTaskResult to the middleware; setup (called with the store locked)
// schedules the task's progress. It answers -32021 when the request does
// not declare the extension.
func (s *taskStore) startTask(ctx context.Context, req *mcp.CallToolRequest, statusMessage string, setup func(t *task)) (*mcp.CallToolResult, any, error) {
	if !declaresTasks(req.Params.GetMeta()) {
		return nil, nil, errNoTasksCapability(fmt.Sprintf("tool %q", req.Params.Name))
	}
	slot, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
	if slot == nil {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "demo server: task middleware is not installed"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.createLocked(statusMessage)
	setup(t)
	slot.created = &taskResult{ResultType: "task", taskView: t.viewLocked(false)}
	return &mcp.CallToolResult{}, nil, nil
}

// slowArgs are the arguments of the slow tool, after schema defaults.
type slowArgs struct {
	MS int `json:"ms"`
}

func (s *taskStore) slowTool(ctx context.Context, req *mcp.CallToolRequest, in slowArgs) (*mcp.CallToolResult, any, error) {
	return s.startTask(ctx, req, "sleeping", func(t *task) {
		s.afterLocked(t, time.Duration(in.MS)*time.Millisecond, func(t *task) {
			s.completeLocked(t, fmt.Sprintf("slept %d ms", in.MS), false, "done")
		})
	})
}

func (s *taskStore) failTool(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	return s.startTask(ctx, req, "about to fail", func(t *task) {
		s.afterLocked(t, taskStep, func(t *task) {
			s.failLocked(t, &jsonrpc.Error{Code: failCode, Message: failMessage})
		})
	})
}

func (s *taskStore) isErrorTool(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	return s.startTask(ctx, req, "working", func(t *task) {
		s.afterLocked(t, taskStep, func(t *task) {
			s.completeLocked(t, "the tool reports an error", true, "completed with a tool error")
		})
	})
}

// nameRequest is the elicitation the needs_input task asks for.
var nameRequest = map[string]any{
	"method": "elicitation/create",
	"params": map[string]any{
		"mode":    "form",
		"message": "What is your name?",
		"requestedSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"name": map[string]any{"type": "string"}},
			"required":   []string{"name"},
		},
	},
}

// elicitResult is the part of an ElicitResult the needs_input task reads.
type elicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

func (s *taskStore) needsInputTool(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	return s.startTask(ctx, req, "starting", func(t *task) {
		s.afterLocked(t, taskStep, func(t *task) {
			// The key is random, so it is never reused within the task
			// (nor across tasks).
			key := "name-" + newTaskID()[:12]
			t.inputRequests = map[string]any{key: nameRequest}
			t.onInput = func(t *task, _ string, raw json.RawMessage) error {
				var r elicitResult
				if err := json.Unmarshal(raw, &r); err != nil {
					return fmt.Errorf("not an ElicitResult: %v", err)
				}
				greeting := "no name given"
				switch r.Action {
				case "accept":
					if name, _ := r.Content["name"].(string); name != "" {
						greeting = "hello, " + name
					}
				case "decline", "cancel":
				default:
					return fmt.Errorf("ElicitResult action %q is not accept, decline or cancel", r.Action)
				}
				s.setLocked(t, statusWorking, "greeting")
				s.afterLocked(t, taskStep, func(t *task) {
					s.completeLocked(t, greeting, false, "done")
				})
				return nil
			}
			s.setLocked(t, statusInputRequired, "waiting for your name")
		})
	})
}

// getTask serves tasks/get.
func (s *taskStore) getTask(_ context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskResult, error) {
	if p == nil || !declaresTasks(p.GetMeta()) {
		return nil, errNoTasksCapability("tasks/get")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(p.TaskID, "Failed to retrieve task")
	if err != nil {
		return nil, err
	}
	return &taskResult{ResultType: "complete", taskView: t.viewLocked(true)}, nil
}

// updateTask serves tasks/update: it hands each response whose key is
// outstanding to the task and ignores the other keys.
func (s *taskStore) updateTask(_ context.Context, _ *mcp.ServerSession, p *updateTaskParams) (*ackResult, error) {
	if p == nil || !declaresTasks(p.GetMeta()) {
		return nil, errNoTasksCapability("tasks/update")
	}
	if p.InputResponses == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `tasks/update requires "inputResponses"`}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(p.TaskID, "Failed to update task")
	if err != nil {
		return nil, err
	}
	for key, resp := range p.InputResponses {
		if t.status != statusInputRequired {
			break
		}
		if _, outstanding := t.inputRequests[key]; !outstanding || t.onInput == nil {
			continue
		}
		delete(t.inputRequests, key)
		if err := t.onInput(t, key, resp); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("inputResponses[%q]: %v", key, err)}
		}
	}
	return &ackResult{ResultType: "complete"}, nil
}

// cancelTask serves tasks/cancel: a non-terminal task is cancelled at once
// and its pending step stopped; a terminal task is left alone (2026 leaves
// that case open; the demo just acknowledges).
func (s *taskStore) cancelTask(_ context.Context, _ *mcp.ServerSession, p *taskIDParams) (*ackResult, error) {
	if p == nil || !declaresTasks(p.GetMeta()) {
		return nil, errNoTasksCapability("tasks/cancel")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.lookupLocked(p.TaskID, "Failed to cancel task")
	if err != nil {
		return nil, err
	}
	if !t.terminal() {
		if t.timer != nil {
			t.timer.Stop()
			t.timer = nil
		}
		t.inputRequests = nil
		s.setLocked(t, statusCancelled, "cancelled at the client's request")
	}
	return &ackResult{ResultType: "complete"}, nil
}

// addTasks registers the task tools, the tasks/* methods and the task
// middleware on s, all backed by store.
func addTasks(s *mcp.Server, store *taskStore) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "slow",
		Description: "Task tool (needs the " + TasksExtension + " extension): " +
			"a task that completes after ms milliseconds with the text \"slept <ms> ms\".",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"ms":{"type":"integer","minimum":0,"maximum":%d,"default":1000,"description":"How long the task runs, in milliseconds."}},`+
			`"additionalProperties":false}`, maxSlowMS)),
	}, store.slowTool)

	mcp.AddTool(s, &mcp.Tool{
		Name: "fail",
		Description: "Task tool (needs the " + TasksExtension + " extension): " +
			"a task that fails with a JSON-RPC error.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
	}, store.failTool)

	mcp.AddTool(s, &mcp.Tool{
		Name: "needs_input",
		Description: "Task tool (needs the " + TasksExtension + " extension): " +
			"a task that asks for your name (elicitation via tasks/update) and greets you.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
	}, store.needsInputTool)

	mcp.AddTool(s, &mcp.Tool{
		Name: "iserror",
		Description: "Task tool (needs the " + TasksExtension + " extension): " +
			"a task that completes with a tool error result (isError: true).",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
	}, store.isErrorTool)

	mcp.AddTool(s, &mcp.Tool{
		Name: "quick",
		Description: "Return the given text at once, never as a task, even when the " +
			"client declares the " + TasksExtension + " extension.",
		InputSchema: json.RawMessage(`{"type":"object",` +
			`"properties":{"text":{"type":"string","description":"Text to return."}},` +
			`"required":["text"],"additionalProperties":false}`),
	}, echoTool)

	for _, err := range []error{
		mcp.AddReceivingCustomMethod(s, "tasks/get", store.getTask),
		mcp.AddReceivingCustomMethod(s, "tasks/update", store.updateTask),
		mcp.AddReceivingCustomMethod(s, "tasks/cancel", store.cancelTask),
	} {
		if err != nil {
			panic(err) // only for a standard method name, which these are not
		}
	}
}

// checkTaskName answers 400 with -32020 (HeaderMismatch) and reports false
// when a tasks/get, tasks/update or tasks/cancel request's Mcp-Name header
// (already Base64-decoded) differs from params.taskId. The go-sdk v1.8.0
// checks Mcp-Name only for tools/call, prompts/get and resources/read. The
// body is buffered and handed on unchanged; a body that is not one
// JSON-RPC request is left for the go-sdk to reject.
func checkTaskName(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if r.Body == nil {
		return r, true
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, maxTaskBody+1))
	body := r.Body
	r = r.Clone(r.Context())
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), body), body}
	if err != nil || len(buf) > maxTaskBody {
		return r, true
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			TaskID *string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(buf, &msg) != nil || !taskMethods[msg.Method] {
		return r, true
	}
	name := r.Header.Get(nameHeader)
	switch {
	case len(r.Header.Values(nameHeader)) == 0:
		writeHeaderMismatchID(w, msg.ID, fmt.Errorf("missing required Mcp-Name header for method %q", msg.Method))
		return nil, false
	case msg.Params.TaskID == nil:
		return r, true // the method handler rejects the missing taskId
	case name != *msg.Params.TaskID:
		writeHeaderMismatchID(w, msg.ID, fmt.Errorf("the Mcp-Name header value %q does not match params.taskId %q", name, *msg.Params.TaskID))
		return nil, false
	}
	return r, true
}
