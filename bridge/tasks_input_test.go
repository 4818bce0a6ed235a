package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Input a task asks for that the client declared it cannot give
// (elicitation without elicitation or its mode, sampling without sampling,
// roots without roots) is never waited on (docs/policies.md, Client input): the
// waiting call ends at once with one -32021 naming the input and the
// capability, the client sees the task failed from then on, and the server
// is told: an elicitation is answered {"action":"cancel"} with tasks/update,
// anything else gets tasks/cancel.

const (
	samplingK1 = `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarize"}}],"maxTokens":50}}`
	rootsK1    = `{"method":"roots/list"}`
	urlK1      = `{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://example.com/login"}}`
)

// checkMissing requires frame to be the one -32021 error naming input and
// capability (and the task, when taskID is set), and returns it.
func checkMissing(t *testing.T, frame, input, capability, taskID string) gjson.Result {
	t.Helper()
	e := gjson.Get(frame, "error")
	if e.Get("code").Int() != -32021 {
		t.Errorf("want error -32021, got %s", frame)
	}
	msg := e.Get("message").Str
	for _, w := range []string{input, capability, "did not declare"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error message %q does not say %q", msg, w)
		}
	}
	if got := e.Get("data.missingCapability").Str; got != capability {
		t.Errorf("error.data.missingCapability = %q, want %q", got, capability)
	}
	// requiredCapabilities is the ClientCapabilities object that declares it.
	if !e.Get("data.requiredCapabilities." + capability).IsObject() {
		t.Errorf("error.data.requiredCapabilities does not declare %s: %s", capability, e.Raw)
	}
	if taskID != "" && e.Get("data.taskId").Str != taskID {
		t.Errorf("error.data.taskId = %q, want %q", e.Get("data.taskId").Str, taskID)
	}
	return e
}

// noInputRequests requires that the client was sent no input request.
func noInputRequests(t *testing.T, c *legacyClient) {
	t.Helper()
	c.sync()
	for _, f := range c.all {
		switch gjson.Get(f, "method").Str {
		case "elicitation/create", "sampling/createMessage", "roots/list":
			t.Errorf("input request sent to a client that cannot answer it: %s", f)
		}
	}
}

// A client that polls with tasks/get: the poll that shows the input
// request shows the task failed instead, the server gets the elicitation
// cancelled, and every later view, tasks/result, tasks/cancel and
// tasks/list agree, whatever the server does next.
func TestTaskInputRequiredWithoutCapability(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{}, `{"roots":{},"sampling":{}}`)
	c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-noelicit"},"task":{}}`)
	ts.script("t-noelicit", stepInputRequired(`{"k1":`+elicitK1+`}`))
	g := c.call(`2`, "tasks/get", taskParams("t-noelicit"))
	if st := gjson.Get(g, "result.status").Str; st != "failed" {
		t.Errorf("tasks/get of a task waiting for input the client cannot give: status %q, want failed: %s", st, g)
	}
	if msg := gjson.Get(g, "result.statusMessage").Str; !strings.Contains(msg, "elicitation/create (form)") || !strings.Contains(msg, "elicitation") {
		t.Errorf("statusMessage %q does not name the input and the capability", msg)
	}
	up := ts.waitFor(t, "tasks/update", "t-noelicit", 1)
	if got := gjson.Get(up[0], "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"cancel"}}`) {
		t.Errorf("the server was answered %s, want the elicitation cancelled", got)
	}
	// The server goes on and completes; the client's view stays failed.
	ts.script("t-noelicit", stepCompleted(taskOutput))
	if g := c.call(`3`, "tasks/get", taskParams("t-noelicit")); gjson.Get(g, "result.status").Str != "failed" {
		t.Errorf("tasks/get after the server completed: %s, want failed (sticky)", g)
	}
	checkMissing(t, c.call(`4`, "tasks/result", taskParams("t-noelicit")), "elicitation/create (form)", "elicitation", "t-noelicit")
	if r := c.call(`5`, "tasks/cancel", taskParams("t-noelicit")); gjson.Get(r, "error.code").Int() != -32602 || !strings.Contains(gjson.Get(r, "error.message").Str, "'failed'") {
		t.Errorf("tasks/cancel of the failed task: %s", r)
	}
	tasks, _ := c.listTasks(`6`, `{}`)
	if v, ok := findTask(tasks, "t-noelicit"); !ok || v.Get("status").Str != "failed" {
		t.Errorf("tasks/list shows %v, want the task failed", v)
	}
	noInputRequests(t, c)
	if n := ts.count("tasks/update", "t-noelicit"); n != 1 {
		t.Errorf("%d tasks/update upstream, want 1 (the server is told once)", n)
	}
	if n := ts.count("tasks/cancel", "t-noelicit"); n != 0 {
		t.Errorf("%d tasks/cancel upstream, want none (the elicitation was answered)", n)
	}
}

// A waiting tasks/result and a followed tools/call end at once with the
// error, for every kind of input and capability path; the server is told.
func TestTaskWaitWithoutCapability(t *testing.T) {
	for _, tc := range []struct {
		name, caps, reqs, input, capability string
		// update: the server is answered with cancel for every key;
		// otherwise it gets tasks/cancel.
		update bool
	}{
		{"form without elicitation", `{"sampling":{}}`, `{"k1":` + elicitK1 + `}`, "elicitation/create (form)", "elicitation", true},
		{"form with only url declared", `{"elicitation":{"url":{}}}`, `{"k1":` + elicitK1 + `}`, "elicitation/create (form)", "elicitation.form", true},
		{"url with a bare elicitation", `{"elicitation":{}}`, `{"k1":` + urlK1 + `}`, "elicitation/create (url)", "elicitation.url", true},
		{"sampling", `{"elicitation":{},"roots":{}}`, `{"k1":` + samplingK1 + `}`, "sampling/createMessage", "sampling", false},
		{"roots", `{"elicitation":{},"sampling":{}}`, `{"k1":` + rootsK1 + `}`, "roots/list", "roots", false},
		{"one of two elicitations", `{"elicitation":{}}`, `{"k1":` + elicitK1 + `,"k2":` + urlK1 + `}`, "elicitation/create (url)", "elicitation.url", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("tasks/result", func(t *testing.T) {
				ts := newTaskServer(t, true)
				c := startTasks(t, ts, Config{}, tc.caps)
				c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-res"},"task":{}}`)
				ts.script("t-res", stepWorking(""), stepInputRequired(tc.reqs))
				checkMissing(t, c.call(`2`, "tasks/result", taskParams("t-res")), tc.input, tc.capability, "t-res")
				checkTold(t, ts, "t-res", tc.reqs, tc.update)
				noInputRequests(t, c)
				for _, f := range c.all {
					if gjson.Get(f, "method").Str == "notifications/tasks/status" && gjson.Get(f, "params.status").Str == "input_required" {
						t.Errorf("the client was told the task waits for input it cannot give: %s", f)
					}
				}
				if g := c.call(`3`, "tasks/get", taskParams("t-res")); gjson.Get(g, "result.status").Str != "failed" {
					t.Errorf("tasks/get after the failed wait: %s, want failed", g)
				}
			})
			t.Run("followed", func(t *testing.T) {
				ts := newTaskServer(t, true)
				c := startTasks(t, ts, Config{}, tc.caps)
				ts.script("t-fol", stepInputRequired(tc.reqs))
				checkMissing(t, c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-fol"}}`), tc.input, tc.capability, "t-fol")
				checkTold(t, ts, "t-fol", tc.reqs, tc.update)
				noInputRequests(t, c)
			})
		})
	}
}

// checkTold requires the server of task id to have been told, once, that
// its input requests reqs will not be answered as asked.
func checkTold(t *testing.T, ts *taskServer, id, reqs string, update bool) {
	t.Helper()
	if update {
		up := ts.waitFor(t, "tasks/update", id, 1)
		want := map[string]any{}
		gjson.Parse(reqs).ForEach(func(k, _ gjson.Result) bool {
			want[k.Str] = map[string]any{"action": "cancel"}
			return true
		})
		b, _ := json.Marshal(want)
		if got := gjson.Get(up[0], "params.inputResponses"); !sameJSON(got.Raw, string(b)) {
			t.Errorf("tasks/update inputResponses = %s, want every key cancelled", got.Raw)
		}
		return
	}
	ts.waitFor(t, "tasks/cancel", id, 1)
	if n := ts.count("tasks/update", id); n != 0 {
		t.Errorf("%d tasks/update, want none: the task is cancelled", n)
	}
}
