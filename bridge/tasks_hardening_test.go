package bridge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/statefile"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
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
	// done even has the shape of the ids the proxy mints: the registry
	// still knows it for the server's.
	done, running := syntheticPrefix+strings.Repeat("5e", 16), syntheticPrefix+"srv-running"
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

// Frames the proxy sends because of a task request carry that request's
// trace op: progress of a followed task, status notifications of a
// tasks/result wait and of a tasks/list refresh, and the tasks/cancel of a
// followed call the client gave up.
func TestTaskNotificationsCarryTheirOp(t *testing.T) {
	ts := newTaskServer(t, true)
	var buf syncBuf
	tw := trace.New(&buf, trace.Options{})
	c := startTasks(t, ts, Config{Observer: tw}, elicitCaps)

	ts.script("t-op-follow", stepWorking("step 1"), stepCompleted(taskOutput))
	c.call(`"follow"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-follow"},"_meta":{"progressToken":"tok"}}`)

	c.call(`"create-res"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-res"},"task":{}}`)
	ts.script("t-op-res", stepWorking(""), stepCompleted(taskOutput))
	c.call(`"res"`, "tasks/result", taskParams("t-op-res"))

	c.call(`"create-list"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-list"},"task":{}}`)
	ts.script("t-op-list", stepCompleted(taskOutput))
	c.listTasks(`"list"`, `{}`)

	ts.script("t-op-abandon", stepWorking("busy"))
	c.send(`"abandon"`, "tools/call", `{"name":"task","arguments":{"id":"t-op-abandon"}}`)
	ts.waitFor(t, "tasks/get", "t-op-abandon", 1)
	c.h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"abandon"}}`)
	ts.waitFor(t, "tasks/cancel", "t-op-abandon", 1)
	c.sync()
	c.stop()
	if dropped, err := tw.Close(); dropped != 0 || err != nil {
		t.Fatalf("trace Close: %d dropped, %v", dropped, err)
	}

	var recs []gjson.Result
	ops := map[string]string{} // the op of each client request, by raw id
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		r := gjson.Parse(line)
		recs = append(recs, r)
		if r.Get("dir").Str == "client->proxy" && r.Get("op").Str != "" {
			ops[r.Get("frame.id").Raw] = r.Get("op").Str
		}
	}
	seen := map[string]int{}
	for _, r := range recs {
		method := r.Get("frame.method").Str
		op := r.Get("op").Str
		switch {
		case r.Get("dir").Str == "proxy->client" && method == "notifications/progress":
			seen[method]++
			if op == "" || op != ops[`"follow"`] {
				t.Errorf("notifications/progress traced with op %q, want the followed call's %q: %s", op, ops[`"follow"`], r.Raw)
			}
		case r.Get("dir").Str == "proxy->client" && method == "notifications/tasks/status":
			seen[method+" "+r.Get("frame.params.taskId").Str]++
			wantOp := ops[`"res"`]
			if r.Get("frame.params.taskId").Str == "t-op-list" {
				wantOp = ops[`"list"`]
			}
			if op == "" || op != wantOp {
				t.Errorf("notifications/tasks/status traced with op %q, want %q: %s", op, wantOp, r.Raw)
			}
		case r.Get("dir").Str == "proxy->server" && method == "tasks/cancel":
			seen[method]++
			if op == "" || op != ops[`"abandon"`] {
				t.Errorf("tasks/cancel of an abandoned followed call traced with op %q, want %q: %s", op, ops[`"abandon"`], r.Raw)
			}
		}
	}
	for _, k := range []string{"notifications/progress", "notifications/tasks/status t-op-res", "notifications/tasks/status t-op-list", "tasks/cancel"} {
		if seen[k] == 0 {
			t.Errorf("no %s record in the trace: the test proves nothing", k)
		}
	}
}

// shortPolls is a session config whose polls are bounded by d.
func shortPolls(d time.Duration) Config { return Config{PollTimeout: d} }

// startWithTaskCfg is startWithTask with a config.
func startWithTaskCfg(t *testing.T, id string, cfg Config) (*taskServer, *legacyClient) {
	t.Helper()
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, cfg, elicitCaps)
	c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":`+jstr(id)+`},"task":{}}`)
	return ts, c
}

// A tasks/get poll that hangs ends within the poll bound, not the idle
// timeout (ten minutes), and the poll is made again: every wait on a task
// ends. The bound is 50 ms here; each answer is awaited for at most `wait`.
func TestTaskPollTimeout(t *testing.T) {
	t.Run("tasks/result", func(t *testing.T) {
		ts, c := startWithTaskCfg(t, "t-hang-res", shortPolls(50*time.Millisecond))
		ts.script("t-hang-res", stepCompleted(taskOutput))
		ts.fault("tasks/get", faultHang)
		if res := c.call(`2`, "tasks/result", taskParams("t-hang-res")); gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
			t.Errorf("tasks/result after a hung poll: %s", res)
		}
		if n := ts.count("tasks/get", "t-hang-res"); n != 2 {
			t.Errorf("%d tasks/get, want 2 (the hung one, then its repeat)", n)
		}
	})
	t.Run("followed", func(t *testing.T) {
		ts := newTaskServer(t, true)
		c := startTasks(t, ts, shortPolls(50*time.Millisecond), elicitCaps)
		ts.script("t-hang-follow", stepCompleted(taskOutput))
		ts.fault("tasks/get", faultHang, faultHang)
		if r := c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-hang-follow"}}`); gjson.Get(r, "result.structuredContent.answer").Int() != 42 {
			t.Errorf("followed call after two hung polls: %s", r)
		}
		if n := ts.count("tasks/get", "t-hang-follow"); n != 3 {
			t.Errorf("%d tasks/get, want 3", n)
		}
	})
	t.Run("tasks/get", func(t *testing.T) {
		ts, c := startWithTaskCfg(t, "t-hang-get", shortPolls(50*time.Millisecond))
		ts.script("t-hang-get", stepCompleted(taskOutput))
		ts.fault("tasks/get", faultHang)
		if g := c.call(`2`, "tasks/get", taskParams("t-hang-get")); gjson.Get(g, "result.status").Str != "completed" {
			t.Errorf("tasks/get after a hung poll: %s", g)
		}
		// Every retry hangs too: an error naming the bound, in bounded time.
		ts.fault("tasks/get", faultHang, faultHang, faultHang)
		c.call(`3`, "tools/call", `{"name":"task","arguments":{"id":"t-hang-all"},"task":{}}`)
		g := c.call(`4`, "tasks/get", taskParams("t-hang-all"))
		if gjson.Get(g, "error.code").Int() != -32603 || !strings.Contains(gjson.Get(g, "error.message").Str, "did not answer within 50ms") {
			t.Errorf("tasks/get whose every attempt hangs: %s", g)
		}
		if n := ts.count("tasks/get", "t-hang-all"); n != 1+maxBrokenRetries {
			t.Errorf("%d tasks/get for a hanging server, want %d", n, 1+maxBrokenRetries)
		}
	})
	t.Run("tasks/list", func(t *testing.T) {
		ts, c := startWithTaskCfg(t, "t-hang-list", shortPolls(50*time.Millisecond))
		ts.fault("tasks/get", faultHang)
		tasks, _ := c.listTasks(`2`, `{}`)
		if v, ok := findTask(tasks, "t-hang-list"); !ok || v.Get("status").Str != "working" {
			t.Errorf("tasks/list with a hung refresh = %v, want the last known state", tasks)
		}
	})
}

// A tasks/get the server redirects to another origin is refused and not
// made again (the same request meets the same redirect): the client gets
// one error naming the target and the fix, not a suggestion to try again.
func TestTaskGetRedirectNotRetried(t *testing.T) {
	ts, c := startWithTask(t, "t-redirect")
	ts.fault("tasks/get", faultRedirect, faultRedirect, faultRedirect)
	g := c.call(`2`, "tasks/get", taskParams("t-redirect"))
	msg := gjson.Get(g, "error.message").Str
	if !strings.Contains(msg, "elsewhere.invalid") || strings.Contains(msg, "try again") || gjson.Get(g, "error.data.cause").Str != "redirect" {
		t.Errorf("tasks/get redirected to another origin: %s", g)
	}
	if n := ts.count("tasks/get", "t-redirect"); n != 1 {
		t.Errorf("%d tasks/get, want 1: a refused redirect is not retried", n)
	}
}

// A tasks/update that meets an HTTP 500 and then a reset is sent again (it
// is idempotent per input key); the client is asked once, and once the
// server has the answer a poll that still shows the key changes nothing.
func TestTaskUpdateRetried(t *testing.T) {
	ts, c := startWithTask(t, "t-upd")
	ts.script("t-upd", stepInputRequired(`{"k1":`+elicitK1+`}`))
	ts.fault("tasks/update", faultHTTP500, faultReset)
	c.call(`2`, "tasks/get", taskParams("t-upd"))
	el := c.awaitMethod("elicitation/create")
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Luca"}}}`)
	up := ts.waitFor(t, "tasks/update", "t-upd", 3)
	for i, b := range up {
		if got := gjson.Get(b, "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"accept","content":{"name":"Luca"}}}`) {
			t.Errorf("tasks/update %d inputResponses = %s", i+1, got)
		}
	}
	if ids := []string{gjson.Get(up[0], "id").Raw, gjson.Get(up[1], "id").Raw, gjson.Get(up[2], "id").Raw}; ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("a retried tasks/update reused its upstream id: %v", ids)
	}
	c.call(`3`, "tasks/get", taskParams("t-upd")) // the key shows again: delivered already
	c.sync()
	if n := c.count("elicitation/create"); n != 1 {
		t.Errorf("the client was asked %d times, want once", n)
	}
	if n := ts.count("tasks/update", "t-upd"); n != 3 {
		t.Errorf("%d tasks/update, want 3 (500, reset, accepted) and none once accepted", n)
	}
}

// A tasks/update that fails every retry keeps the client's answer: the next
// poll that shows the key sends it again, without asking the client again.
func TestTaskUpdateHeldAnswerResent(t *testing.T) {
	ts, c := startWithTask(t, "t-held")
	ts.script("t-held", stepInputRequired(`{"k1":`+elicitK1+`}`))
	ts.fault("tasks/update", faultHTTP500, faultReset, faultHTTP500)
	c.call(`2`, "tasks/get", taskParams("t-held"))
	el := c.awaitMethod("elicitation/create")
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el, "id").Raw + `,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	ts.waitFor(t, "tasks/update", "t-held", 1+maxBrokenRetries)
	// Later polls show the key still open; one of them, once the failed
	// delivery has given up, sends the held answer again.
	deadline := time.Now().Add(wait)
	for i := 0; ts.count("tasks/update", "t-held") <= 1+maxBrokenRetries; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("the held answer was not sent again; %d tasks/update", ts.count("tasks/update", "t-held"))
		}
		c.call(fmt.Sprintf(`"poll-%d"`, i), "tasks/get", taskParams("t-held"))
		time.Sleep(20 * time.Millisecond)
	}
	up := ts.requests("tasks/update", "t-held")
	if got := gjson.Get(up[len(up)-1], "params.inputResponses").Raw; !sameJSON(got, `{"k1":{"action":"accept","content":{"name":"Ada"}}}`) {
		t.Errorf("resent tasks/update inputResponses = %s", got)
	}
	c.sync()
	if n := c.count("elicitation/create"); n != 1 {
		t.Errorf("the client was asked %d times for one answer, want once", n)
	}
}

// The wait for the client's answer to a task's input request ends after
// --request-timeout: the client is told the request is no longer needed,
// and a later poll that still shows the key asks again.
func TestTaskInputWaitBounded(t *testing.T) {
	ts := newTaskServer(t, true)
	c := startTasks(t, ts, Config{RequestTimeout: 500 * time.Millisecond}, elicitCaps)
	c.call(`1`, "tools/call", `{"name":"task","arguments":{"id":"t-slow-client"},"task":{}}`)
	ts.script("t-slow-client", stepInputRequired(`{"k1":`+elicitK1+`}`))
	c.call(`2`, "tasks/get", taskParams("t-slow-client"))
	el := c.awaitMethod("elicitation/create")
	cancelled := c.awaitMethod("notifications/cancelled")
	if got := gjson.Get(cancelled, "params.requestId").Raw; got != gjson.Get(el, "id").Raw {
		t.Errorf("notifications/cancelled for %s, want the unanswered %s", got, gjson.Get(el, "id").Raw)
	}
	// Asked again by a later poll, and answered this time.
	deadline := time.Now().Add(wait)
	for i := 0; c.count("elicitation/create") < 2; i++ {
		if time.Now().After(deadline) {
			t.Fatal("the timed-out input request was not asked again")
		}
		c.call(fmt.Sprintf(`"poll-%d"`, i), "tasks/get", taskParams("t-slow-client"))
		time.Sleep(20 * time.Millisecond)
	}
	el2 := c.awaitMethod("elicitation/create")
	c.h.send(`{"jsonrpc":"2.0","id":` + gjson.Get(el2, "id").Raw + `,"result":{"action":"decline"}}`)
	if up := ts.waitFor(t, "tasks/update", "t-slow-client", 1); !sameJSON(gjson.Get(up[0], "params.inputResponses").Raw, `{"k1":{"action":"decline"}}`) {
		t.Errorf("tasks/update: %s", up[0])
	}
}

// stateWarnings returns the log entries about the state file, and fails on
// any at error level.
func stateWarnings(t *testing.T, logs *observer.ObservedLogs) []observer.LoggedEntry {
	t.Helper()
	var warns []observer.LoggedEntry
	for _, e := range logs.All() {
		if !strings.Contains(e.Message, "state file") && !strings.Contains(e.Message, "recording") {
			continue
		}
		switch e.Level {
		case zapcore.WarnLevel:
			warns = append(warns, e)
		case zapcore.ErrorLevel, zapcore.DPanicLevel:
			t.Errorf("logged at %v: %s %v", e.Level, e.Message, e.Context)
		}
	}
	return warns
}

// useTasks creates a real and a synthetic task, lists them and reads the
// synthetic one's result; it returns the synthetic id.
func useTasks(t *testing.T, ts *taskServer, c *legacyClient, realID string) string {
	t.Helper()
	c.call(`"u1"`, "tools/call", `{"name":"task","arguments":{"id":`+jstr(realID)+`},"task":{}}`)
	r := c.call(`"u2"`, "tools/call", `{"name":"sync","task":{}}`)
	synth := gjson.Get(r, "result.task.taskId").Str
	tasks, _ := c.listTasks(`"u3"`, `{}`)
	for _, id := range []string{realID, synth} {
		if _, ok := findTask(tasks, id); !ok {
			t.Errorf("tasks/list = %v, want %s listed", tasks, id)
		}
	}
	if res := c.call(`"u4"`, "tasks/result", taskParams(synth)); gjson.Get(res, "result.structuredContent.n").Int() != 1 {
		t.Errorf("tasks/result of the synthetic task: %s", res)
	}
	if g := c.call(`"u5"`, "tasks/get", taskParams(realID)); gjson.Get(g, "result.status").Str != "working" {
		t.Errorf("tasks/get of %s: %s", realID, g)
	}
	return synth
}

// A state directory that cannot be created (its parent is a regular file:
// that fails for root too) leaves the session on memory with one warning,
// and tasks are listed as usual.
func TestTaskStateDirUncreatable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTaskServer(t, true)
	core, logs := observer.New(zapcore.DebugLevel)
	c := startTasks(t, ts, Config{StatePath: filepath.Join(dir, "file", "state.json"), Logger: zap.New(core)}, elicitCaps)
	useTasks(t, ts, c, "t-nodir")
	c.stop()
	if w := stateWarnings(t, logs); len(w) != 1 {
		t.Errorf("%d warnings about the state file, want exactly one: %v", len(w), w)
	}
}

// A state file that cannot be written falls back to memory seeded with the
// records the file holds, with one warning: a task created afterwards is
// listed, and an old one keeps its cached result. Writing is made to fail
// for root too: the lock file's path is a directory, or another process
// holds the lock and never lets go. For other users a
// read-only directory is tried as well (the lock file exists, so the write
// itself fails); root skips it.
func TestTaskStateFileUnwritable(t *testing.T) {
	old := `{"version":1,"tasks":[{"id":"t-old","seq":1,"task":{"taskId":"t-old","status":"completed","createdAt":"` + tsCreated + `","lastUpdatedAt":"` + tsUpdated + `","ttlMs":60000},"result":` + taskOutput + `}]}`
	for _, how := range []string{"lock path is a directory", "lock held by a stuck process", "read-only directory"} {
		t.Run(how, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.json")
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			switch how {
			case "lock path is a directory":
				if err := os.Mkdir(path+".lock", 0o700); err != nil {
					t.Fatal(err)
				}
			case "lock held by a stuck process":
				unlock, err := (&statefile.File{LockPath: path + ".lock"}).Lock(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(unlock)
				old := stateLockTimeout
				stateLockTimeout = 50 * time.Millisecond
				t.Cleanup(func() { stateLockTimeout = old })
			case "read-only directory":
				if os.Geteuid() == 0 {
					t.Skip("root writes to a read-only directory")
				}
				// The lock file exists, so locking works and writing fails.
				if err := os.WriteFile(path+".lock", nil, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(dir, 0o500); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(dir, 0o700) })
			}
			ts := newTaskServer(t, true)
			core, logs := observer.New(zapcore.DebugLevel)
			c := startTasks(t, ts, Config{StatePath: path, Logger: zap.New(core)}, elicitCaps)
			useTasks(t, ts, c, "t-new")
			tasks, _ := c.listTasks(`"l"`, `{}`)
			if _, ok := findTask(tasks, "t-old"); !ok {
				t.Errorf("the task the file held is not listed: %v", tasks)
			}
			if res := c.call(`"r"`, "tasks/result", taskParams("t-old")); gjson.Get(res, "result.structuredContent.answer").Int() != 42 {
				t.Errorf("tasks/result of the task the file held: %s", res)
			}
			c.stop()
			if w := stateWarnings(t, logs); len(w) != 1 {
				t.Errorf("%d warnings about the state file, want exactly one: %v", len(w), w)
			}
			if b, _ := os.ReadFile(path); string(b) != old {
				t.Errorf("the state file changed:\n%s", b)
			}
		})
	}
}

// A state file of a newer format version is left byte for byte as it was,
// unknown fields and all, while the session keeps its tasks in memory and
// warns once.
func TestTaskStateFileNewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	newer := `{"version":2,"upstream":"http://elsewhere/mcp","format":{"compression":"none"},"tasks":[{"id":"t-v2","seq":1,"task":{"taskId":"t-v2","status":"working"},"origin":"session-7","labels":["a","b"]}]}` + "\n"
	if err := os.WriteFile(path, []byte(newer), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTaskServer(t, true)
	core, logs := observer.New(zapcore.DebugLevel)
	c := startTasks(t, ts, Config{StatePath: path, Logger: zap.New(core)}, elicitCaps)
	useTasks(t, ts, c, "t-now")
	c.call(`"x"`, "tasks/cancel", taskParams("t-now"))
	c.stop()
	if b, err := os.ReadFile(path); err != nil || string(b) != newer {
		t.Errorf("the newer state file changed (%v):\n got: %s\nwant: %s", err, b, newer)
	}
	w := stateWarnings(t, logs)
	if len(w) != 1 || !strings.Contains(w[0].Message, "newer") {
		t.Errorf("warnings about the state file = %v, want one about the newer version", w)
	}
}

// A state file that is not valid JSON is left as it is for the user to
// fix, loudly (one error that names the way out), while the session keeps
// its tasks in memory.
func TestTaskStateFileInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	broken := `{"version":1,"tasks":[{"id":"t-cut"`
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := newTaskServer(t, true)
	core, logs := observer.New(zapcore.DebugLevel)
	c := startTasks(t, ts, Config{StatePath: path, Logger: zap.New(core)}, elicitCaps)
	useTasks(t, ts, c, "t-mem")
	c.stop()
	if b, err := os.ReadFile(path); err != nil || string(b) != broken {
		t.Errorf("the invalid state file changed (%v): %s", err, b)
	}
	errs := logs.FilterLevelExact(zapcore.ErrorLevel).FilterMessageSnippet("state file").All()
	if len(errs) != 1 || !strings.Contains(errs[0].Message, "not valid JSON") || !strings.Contains(errs[0].Message, "move it away") {
		t.Errorf("errors about the state file = %v, want one saying it is not valid JSON and to move it away", errs)
	}
}
