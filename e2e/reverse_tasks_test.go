package e2e

import (
	"strconv"
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
