package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestReverseTasks: a 2025 server's tasks (mcp-go, with the 2025 tasks
// capability, reached in 2025 under --protocol legacy) are offered to a
// modern client that declared the tasks extension: the discover result
// declares the extension, a call of a tool that supports tasks comes back
// as a flat CreateTaskResult, tasks/get inlines the result once the task
// completed, and a tool that forbids tasks runs as a plain call. Every
// frame to the client is validated against 2026 and the extension.
func TestReverseTasks(t *testing.T) {
	t.Parallel()
	s := newMCPGoLegacy(t)
	s.quirks = map[string]string{"notifications/tasks/status": "mcp-go v1.2.1 leaves out the task's ttl, which 2025 requires"}
	p := startModernProxy(t, "--protocol", "legacy", s.URL)
	meta := mcMeta(mcTasksCaps, "")

	d := resultOf(t, mcDiscover(p, "1", meta))
	if !d.Get(`capabilities.extensions.io\.modelcontextprotocol/tasks`).Exists() || d.Get("capabilities.tasks").Exists() {
		t.Errorf("discover from a 2025 server with tasks: capabilities %s, want the extension and no 2025 tasks member", d.Get("capabilities").Raw)
	}

	created := resultOf(t, p.call("2", "tools/call", mcParams(`"name":"upper","arguments":{"text":"task me"}`, meta)))
	id := created.Get("taskId").Str
	if created.Get("resultType").Str != "task" || id == "" || created.Get("task").Exists() {
		t.Fatalf("a tool that supports tasks: want a flat CreateTaskResult, got %s", created.Raw)
	}
	if calls := s.seen(isPost("tools/call")); len(calls) != 1 || !gjson.GetBytes(calls[0].Body, "params.task").IsObject() {
		t.Errorf("the 2025 tools/call should ask for a task (params.task)")
	}

	// Poll as a 2026 client does, bounded; the task completes at once.
	deadline := time.Now().Add(waitTimeout)
	var got gjson.Result
	for n := 3; ; n++ {
		got = resultOf(t, p.call(strconv.Itoa(n), "tasks/get", mcParams(`"taskId":"`+id+`"`, meta)))
		if st := got.Get("status").Str; st != "working" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.Get("status").Str != "completed" || got.Get("result.content.0.text").Str != "TASK ME" || got.Get("resultType").Str != "complete" {
		t.Errorf("tasks/get of the completed task: want its result inlined, got %s", got.Raw)
	}

	plain := resultOf(t, p.call("100", "tools/call", mcParams(`"name":"count","arguments":{"text":"four"}`, meta)))
	if plain.Get("resultType").Str != "complete" || plain.Get("content.0.text").Str != "4" {
		t.Errorf("a tool that forbids tasks: want a plain result, got %s", plain.Raw)
	}
}

// taskAsker is a small 2025 server with one tool, "ask", that runs as a
// task which needs input: while it is input_required, its tasks/result
// stream asks the client to confirm (elicitation/create, related to the
// task), and the task completes with the answer's action.
type taskAsker struct {
	answered chan string // the action of the client's answer, once
	mu       sync.Mutex
	action   string
}

func (a *taskAsker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	m := gjson.ParseBytes(body)
	id := m.Get("id").Raw
	const task = `"taskId":"t-1","createdAt":"2026-12-07T10:00:00Z","lastUpdatedAt":"2026-12-07T10:00:00Z","ttl":60000`
	related := `"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}`
	a.mu.Lock()
	action := a.action
	a.mu.Unlock()
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result)
	}
	switch m.Get("method").Str {
	case "initialize":
		w.Header().Set("Mcp-Session-Id", "s-1")
		reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"task-asker","version":"1"}}`)
	case "tools/list":
		reply(`{"tools":[{"name":"ask","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}`)
	case "tools/call":
		reply(`{"task":{` + task + `,"status":"working"}}`)
	case "tasks/get":
		if action == "" {
			reply(`{` + task + `,"status":"input_required"}`)
		} else {
			reply(`{` + task + `,"status":"completed"}`)
		}
	case "tasks/result":
		if action == "" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"e-1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"Go on?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{}},%s}}\n\n", related)
			w.(http.Flusher).Flush()
			select {
			case action = <-a.answered:
			case <-r.Context().Done():
				return
			case <-time.After(waitTimeout):
				return
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"got %s\"}],%s}}\n\n", id, action, related)
			return
		}
		reply(`{"content":[{"type":"text","text":"got ` + action + `"}],` + related + `}`)
	case "":
		if m.Get("id").Str == "e-1" { // the client's answer to the elicitation
			a.mu.Lock()
			a.action = m.Get("result.action").Str
			a.mu.Unlock()
			a.answered <- m.Get("result.action").Str
		}
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestReverseTaskInput: a 2025 task that needs input is shown to the
// modern client as input_required with the server's request as one of its
// inputRequests (no _meta), tasks/update answers it, and the task
// completes with the answer.
func TestReverseTaskInput(t *testing.T) {
	t.Parallel()
	a := &taskAsker{answered: make(chan string, 1)}
	up := newLegacyUpstream(t, a)
	p := startModernProxy(t, "--protocol", "legacy", up.URL)
	meta := mcMeta(`{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`, "")
	created := resultOf(t, p.call("1", "tools/call", mcParams(`"name":"ask","arguments":{}`, meta)))
	if created.Get("resultType").Str != "task" || created.Get("taskId").Str != "t-1" || created.Get("ttlMs").Int() != 60000 {
		t.Fatalf("want a flat CreateTaskResult for t-1 with ttlMs, got %s", created.Raw)
	}
	poll := func(n *int, want string) gjson.Result {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for {
			*n++
			got := resultOf(t, p.call(strconv.Itoa(*n), "tasks/get", mcParams(`"taskId":"t-1"`, meta)))
			if got.Get("status").Str == want || time.Now().After(deadline) {
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	n := 1
	got := poll(&n, "input_required")
	var key string
	got.Get("inputRequests").ForEach(func(k, v gjson.Result) bool {
		if v.Get("method").Str == "elicitation/create" && v.Get("params.message").Str == "Go on?" && !v.Get("params._meta").Exists() {
			key = k.Str
		}
		return true
	})
	if key == "" {
		t.Fatalf("want the server's elicitation among the task's inputRequests, without its _meta; got %s", got.Raw)
	}
	n++
	ack := resultOf(t, p.call(strconv.Itoa(n), "tasks/update", mcParams(`"taskId":"t-1","inputResponses":{"`+key+`":{"action":"accept","content":{}}}`, meta)))
	if ack.Get("resultType").Str != "complete" {
		t.Errorf("tasks/update: want an empty ack, got %s", ack.Raw)
	}
	got = poll(&n, "completed")
	if got.Get("result.content.0.text").Str != "got accept" || got.Get(`result._meta`).Exists() {
		t.Errorf("the completed task: want the server's result for the answer, without the related-task _meta; got %s", got.Raw)
	}
}
