package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// The fault suite's task cases of what a client cannot give, and of a
// server that hangs on a poll.

// tiCaps are the client capabilities mcpc declares: roots, sampling and
// tasks, no elicitation.
const tiCaps = `{"roots":{},"sampling":{},"tasks":{"list":{},"cancel":{}}}`

// tiMissing requires resp to be the one -32021 error that names the form
// elicitation and the elicitation capability the client lacks.
func tiMissing(t *testing.T, resp []byte) {
	t.Helper()
	e := fsCheckError(t, resp, -32021, "elicitation/create (form)", "did not declare elicitation")
	if e.Get("data.missingCapability").String() != "elicitation" || !e.Get("data.requiredCapabilities.elicitation").IsObject() {
		t.Errorf("error.data does not name the missing capability: %s", e.Raw)
	}
}

// TestFaultSuiteTasksInput: the demo's needs_input task asks for a name
// (form elicitation) from a client that declared no elicitation. Whether
// the client polls with tasks/get, waits in tasks/result or makes a plain
// tools/call the proxy follows, its wait ends at once (long before
// --request-timeout) with one -32021 naming the input and the capability;
// tasks/get shows the task failed, never input_required; the server's
// elicitation is answered {"action":"cancel"}; the client is never sent an
// elicitation/create.
func TestFaultSuiteTasksInput(t *testing.T) {
	t.Parallel()
	up := newDemoUpstream(t)
	p := startProxy(t, []string{"--no-state", up.URL})
	erInit(p, tiCaps)
	create := func(id string) string {
		t.Helper()
		task := resultOf(t, p.call(id, "tools/call", `{"name":"needs_input","arguments":{},"task":{"ttl":60000}}`)).Get("task")
		if task.Get("taskId").String() == "" {
			t.Fatalf("needs_input with params.task: want a CreateTaskResult, got %s", task.Raw)
		}
		return task.Get("taskId").String()
	}
	cancelled := func(t *testing.T, taskID string) {
		t.Helper()
		up.waitRequest(t, "tasks/update answering the elicitation with cancel for "+taskID, func(ex *exchange) bool {
			b := gjson.ParseBytes(ex.Body)
			if ex.RPCMethod != "tasks/update" || b.Get("params.taskId").String() != taskID {
				return false
			}
			n := 0
			b.Get("params.inputResponses").ForEach(func(_, v gjson.Result) bool {
				if v.Get("action").String() == "cancel" {
					n++
				}
				return true
			})
			return n == 1
		})
	}

	t.Run("polling with tasks/get", func(t *testing.T) {
		taskID := create(`"ti-create-poll"`)
		// The pace between polls is the client's interval (mcpc: 200 ms),
		// not a synchronization; the whole wait is bounded.
		deadline := time.Now().Add(waitTimeout)
		var view gjson.Result
		for i := 0; ; i++ {
			view = resultOf(t, p.call(fmt.Sprintf(`"ti-get-%d"`, i), "tasks/get", tkTaskParams(taskID)))
			st := view.Get("status").String()
			if st == "input_required" {
				t.Fatalf("tasks/get shows input_required for input the client cannot give: %s", view.Raw)
			}
			if st != "working" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the task stayed working for %v: %s", waitTimeout, view.Raw)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if view.Get("status").String() != "failed" || !strings.Contains(view.Get("statusMessage").String(), "elicitation") {
			t.Errorf("tasks/get: want the task failed with a statusMessage naming elicitation, got %s", view.Raw)
		}
		cancelled(t, taskID)
		tiMissing(t, p.call(`"ti-result-after-poll"`, "tasks/result", tkTaskParams(taskID)))
	})
	t.Run("waiting in tasks/result", func(t *testing.T) {
		taskID := create(`"ti-create-result"`)
		tiMissing(t, p.call(`"ti-result"`, "tasks/result", tkTaskParams(taskID)))
		cancelled(t, taskID)
	})
	t.Run("a followed tools/call", func(t *testing.T) {
		tiMissing(t, p.call(`"ti-follow"`, "tools/call", `{"name":"needs_input","arguments":{}}`))
	})
	for _, l := range p.all() {
		if gjson.GetBytes(l, "method").String() == "elicitation/create" {
			t.Errorf("elicitation/create sent to a client without the elicitation capability: %s", l)
		}
	}
	fsAlive(p, "needs_input")
	fsFinish(t, p)
}

// TestFaultSuiteTasksPollTimeout: with --poll-timeout 200ms, a tasks/get
// that hangs is given up and made again: a followed tools/call and the
// client's own tasks/get each complete with the task's answer, after two
// tasks/get upstream (the hung one, then its repeat).
func TestFaultSuiteTasksPollTimeout(t *testing.T) {
	t.Parallel()
	fs := newFSServer()
	up := newUpstream(t, fs)
	fs.on("tools/call mk", func(w http.ResponseWriter, _ *http.Request, q fsReq) {
		args := q.Params.Get("arguments")
		fsWrite(w, http.StatusOK, fsResult(q.ID, fsTaskAs("task", args.Get("taskId").Raw, "working", "100", "")))
	})
	// hangsFirst: the first tasks/get hangs until the proxy gives up on it;
	// later ones find the task completed. Should the proxy not give up
	// within 75 times its bound (15 s: the bound was not applied; the old
	// fixed bound was 30 s), the hung poll ends with the task failed, so
	// the call cannot end with the task's result.
	hangsFirst := func(taskID string) fsHandler {
		return func(w http.ResponseWriter, r *http.Request, q fsReq) {
			if q.N == 1 {
				select {
				case <-r.Context().Done():
				case <-time.After(15 * time.Second):
					fsWrite(w, http.StatusOK, fsResult(q.ID, fsTask(fsQuote(taskID), "failed", "",
						`,"error":{"code":-32603,"message":"the hung poll was not given up"}`)))
				}
				return
			}
			fsWrite(w, http.StatusOK, fsResult(q.ID, fsTask(fsQuote(taskID), "completed", "",
				`,"result":{"content":[{"type":"text","text":`+fsQuote("done "+taskID)+`}]}`)))
		}
	}
	fs.on("tasks/get pt-follow", hangsFirst("pt-follow"))
	fs.on("tasks/get pt-get", hangsFirst("pt-get"))
	p := startProxy(t, []string{"--no-state", "--poll-timeout", "200ms", up.URL})
	tkInit(p)

	t.Run("followed tools/call", func(t *testing.T) {
		res := resultOf(t, p.call(`"pt-follow"`, "tools/call", `{"name":"mk","arguments":{"taskId":"pt-follow"}}`))
		if got := res.Get("content.0.text").String(); got != "done pt-follow" {
			t.Errorf("followed call answered %q, want the task's result", got)
		}
		fsHitsAtLeast(t, fs, "tasks/get pt-follow", 2)
		fsDistinct(t, fs, "tasks/get pt-follow")
	})
	t.Run("the client's tasks/get", func(t *testing.T) {
		task := resultOf(t, p.call(`"pt-create"`, "tools/call", `{"name":"mk","arguments":{"taskId":"pt-get"},"task":{"ttl":60000}}`)).Get("task")
		if task.Get("taskId").String() != "pt-get" {
			t.Fatalf("task-augmented call: %s", task.Raw)
		}
		view := resultOf(t, p.call(`"pt-get"`, "tasks/get", tkTaskParams("pt-get")))
		if view.Get("status").String() != "completed" {
			t.Errorf("tasks/get after a hung poll: %s, want completed", view.Raw)
		}
		fsHitsAtLeast(t, fs, "tasks/get pt-get", 2)
		fsDistinct(t, fs, "tasks/get pt-get")
	})
	fsAlive(p, "hung tasks/get")
	fsFinish(t, p)
}

// fsHitsAtLeast requires the server to have seen at least want requests key:
// a poll the proxy gives up on is made again, and under load a later poll may
// outlast its short test bound too; what the test pins is that the hung one
// was given up and the call went on.
func fsHitsAtLeast(t *testing.T, s *fsServer, key string, want int) {
	t.Helper()
	if got := s.count(key); got < want {
		t.Errorf("the server saw %d requests %q, want at least %d", got, key, want)
	}
}
