package bridge

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Hardening of tasks across eras: bounded waits, retried task requests,
// ttl arithmetic, registry-decided synthetic tasks, a state file that
// cannot be used, and trace ops on what task requests cause.

// A ttl too large for a time.Duration (over ~292 years) is held to
// rewrite.MaxTTL: the synthetic task stays listed and its result stays
// readable, instead of expiring at once.
func TestTaskHugeTTLClamped(t *testing.T) {
	maxMs := int64(rewrite.MaxTTL.Milliseconds())
	cases := []struct {
		ttl     string
		seconds bool
	}{
		{"31536000000000", false}, // a thousand years in ms
		{"9223372036854775807", false},
		{"1e300", false},
		{"31536000000", true}, // a thousand years in s
		{"9223372036854775807", true},
		{"1e300", true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s seconds=%v", tc.ttl, tc.seconds), func(t *testing.T) {
			ts := newTaskServer(t, true)
			c := startTasks(t, ts, Config{Tasks: rewrite.TaskOptions{TTLSeconds: tc.seconds}}, elicitCaps)
			want := maxMs
			if tc.seconds {
				want /= 1000
			}
			r := c.call(`1`, "tools/call", `{"name":"sync","task":{"ttl":`+tc.ttl+`}}`)
			id := gjson.Get(r, "result.task.taskId").Str
			if got := gjson.Get(r, "result.task.ttl").Int(); got != want {
				t.Errorf("CreateTaskResult ttl = %s, want %d (MaxTTL): %s", gjson.Get(r, "result.task.ttl").Raw, want, r)
			}
			tasks, _ := c.listTasks(`2`, `{}`)
			v, ok := findTask(tasks, id)
			if !ok {
				t.Fatalf("a task with ttl %s is not listed: %v", tc.ttl, tasks)
			}
			if got := v.Get("ttl").Int(); got != want {
				t.Errorf("listed ttl = %s, want %d", v.Get("ttl").Raw, want)
			}
			res := c.call(`3`, "tasks/result", taskParams(id))
			if gjson.Get(res, "result.structuredContent.n").Int() != 1 {
				t.Errorf("tasks/result of a task with ttl %s: %s", tc.ttl, res)
			}
		})
	}
}

// A server task whose id happens to start with the proxy's synthetic prefix
// is still the server's: the registry says it is not proxy-made, so it is
// polled, its result fetched and its cancel sent upstream.
func TestServerTaskWithSyntheticPrefix(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, elicitCaps)
	done, running := syntheticPrefix+"srv-done", syntheticPrefix+"srv-running"
	for i, id := range []string{done, running} {
		r := c.call(fmt.Sprint(i+1), "tools/call", `{"name":"task","arguments":{"id":`+jstr(id)+`},"task":{}}`)
		if gjson.Get(r, "result.task.taskId").Str != id {
			t.Fatalf("CreateTaskResult: %s", r)
		}
	}
	ts.script(done, stepCompleted(taskOutput))
	g := c.call(`"g"`, "tasks/get", taskParams(done))
	if gjson.Get(g, "result.status").Str != "completed" || ts.count("tasks/get", done) != 1 {
		t.Errorf("tasks/get of a server task with the synthetic prefix = %s (%d tasks/get upstream), want it polled: completed", g, ts.count("tasks/get", done))
	}
	res := c.call(`"r"`, "tasks/result", taskParams(done))
	if gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("tasks/result of a server task with the synthetic prefix: %s", res)
	}
	cx := c.call(`"c"`, "tasks/cancel", taskParams(running))
	if gjson.Get(cx, "result.status").Str != "cancelled" || ts.count("tasks/cancel", running) != 1 {
		t.Errorf("tasks/cancel of a server task with the synthetic prefix = %s (%d tasks/cancel upstream)", cx, ts.count("tasks/cancel", running))
	}
	// tasks/result of one never seen before is polled too.
	ts.script(syntheticPrefix+"srv-other", stepCompleted(taskOutput))
	if res := c.call(`"o"`, "tasks/result", taskParams(syntheticPrefix+"srv-other")); gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
		t.Errorf("tasks/result of an unregistered server task with the synthetic prefix: %s", res)
	}
}
