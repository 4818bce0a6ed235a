package rewrite_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/schematest"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// TestTaskNormalization runs the table of spec vector 17: a modern task
// object in, the legacy Task view out, under both --task-iserror settings.
// Every view must also be a valid 2025 Task.
func TestTaskNormalization(t *testing.T) {
	vec := schematest.LoadVector(t, "17-task-normalization-cases.json")
	v := schematest.Load(t)
	if len(vec.Cases) == 0 {
		t.Fatal("vector 17 has no cases")
	}
	for _, c := range vec.Cases {
		desc := gjson.GetBytes(c, "description").String()
		modern := gjson.GetBytes(c, "modern")
		want := gjson.GetBytes(c, "legacy").Raw
		got := rewrite.ReadTask(modern).View(rewrite.TaskOptions{}, rewrite.ViewOverride{})
		assertJSONEqual(t, desc, got, []byte(want))
		if err := v.Validate("2025-11-25", "Task", got); err != nil {
			t.Errorf("%s: %v", desc, err)
		}
		if failed := gjson.GetBytes(c, "legacy_with_task_iserror_failed"); failed.Exists() {
			got := rewrite.ReadTask(modern).View(rewrite.TaskOptions{IsErrorFailed: true}, rewrite.ViewOverride{})
			assertJSONEqual(t, desc+" (--task-iserror failed)", got, []byte(failed.Raw))
		}
	}
}

func TestTaskViewOptions(t *testing.T) {
	task := rewrite.ReadTask(gjson.Parse(`{"taskId":"t1","status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":90500,"pollIntervalMs":2500,"statusMessage":"busy"}`))
	tests := []struct {
		name string
		o    rewrite.TaskOptions
		ov   rewrite.ViewOverride
		want string
	}{
		{"plain", rewrite.TaskOptions{}, rewrite.ViewOverride{},
			`{"taskId":"t1","status":"working","statusMessage":"busy","createdAt":"a","lastUpdatedAt":"b","ttl":90500,"pollInterval":2500}`},
		{"ttl in seconds", rewrite.TaskOptions{TTLSeconds: true}, rewrite.ViewOverride{},
			`{"taskId":"t1","status":"working","statusMessage":"busy","createdAt":"a","lastUpdatedAt":"b","ttl":90,"pollInterval":2500}`},
		{"cancelled by the client", rewrite.TaskOptions{}, rewrite.ViewOverride{Status: "cancelled", StatusMessage: "The task was cancelled by request.", LastUpdatedAt: "c"},
			`{"taskId":"t1","status":"cancelled","statusMessage":"The task was cancelled by request.","createdAt":"a","lastUpdatedAt":"c","ttl":90500,"pollInterval":2500}`},
	}
	for _, tt := range tests {
		if got := task.View(tt.o, tt.ov); string(got) != tt.want {
			t.Errorf("%s:\n got: %s\nwant: %s", tt.name, got, tt.want)
		}
	}
}

func TestPollInterval(t *testing.T) {
	tests := []struct {
		raw  string
		want time.Duration
	}{
		{`1000`, time.Second},
		{`250.9`, 250*time.Millisecond + 900*time.Microsecond},
		{`1099511627776`, 5 * time.Minute}, // 2^40
		{`0`, 100 * time.Millisecond},
		{`5`, 100 * time.Millisecond},
		{`-5`, 2 * time.Second},
		{`null`, 2 * time.Second},
		{`"x"`, 2 * time.Second},
		{``, 2 * time.Second},
		{`1e400`, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := rewrite.PollInterval(gjson.Parse(tt.raw)); got != tt.want {
			t.Errorf("PollInterval(%s) = %v, want %v", tt.raw, got, tt.want)
		}
	}
}

func TestCreateTaskResult(t *testing.T) {
	in := gjson.Parse(`{"taskId":"t","status":"input_required","createdAt":"a","lastUpdatedAt":"a","resultType":"task","ttlMs":null,"_meta":{"io.modelcontextprotocol/serverInfo":{},"io.modelcontextprotocol/model-immediate-response":"started"}}`)
	got := rewrite.CreateTaskResult(rewrite.ReadTask(in), rewrite.TaskOptions{})
	want := `{"task":{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"a","ttl":null},"_meta":{"io.modelcontextprotocol/model-immediate-response":"started"}}`
	if string(got) != want {
		t.Errorf("CreateTaskResult\n got: %s\nwant: %s", got, want)
	}
	v := schematest.Load(t)
	if err := v.Validate("2025-11-25", "CreateTaskResult", got); err != nil {
		t.Error(err)
	}
}

func TestResultFrameForRelatedTask(t *testing.T) {
	tests := []struct{ name, result, want string }{
		{"no _meta", `{"content":[],"isError":false,"resultType":"complete"}`,
			`{"jsonrpc":"2.0","id":8,"result":{"content":[],"isError":false,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}}}}`},
		{"serverInfo only", `{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{}}}`,
			`{"jsonrpc":"2.0","id":8,"result":{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}}}}`},
		{"other _meta kept", `{"_meta":{"a":1,"io.modelcontextprotocol/related-task":{"taskId":"old"}},"content":[]}`,
			`{"jsonrpc":"2.0","id":8,"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"},"a":1},"content":[]}}`},
		{"only resultType", `{"resultType":"complete"}`,
			`{"jsonrpc":"2.0","id":8,"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}}}}`},
		{"non-object _meta", `{"content":[],"_meta":7}`,
			`{"jsonrpc":"2.0","id":8,"result":{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}}}}`},
	}
	for _, tt := range tests {
		got, err := rewrite.ResultFrameFor([]byte("8"), "tools/call", gjson.Parse(tt.result), "T")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n got: %s\nwant: %s", tt.name, got, tt.want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON", tt.name)
		}
	}
	// Without a related task it is the plain rewrite.
	got, _ := rewrite.ResultFrameFor([]byte(`"c"`), "tools/call", gjson.Parse(`{"content":[],"resultType":"complete"}`), "")
	if string(got) != `{"jsonrpc":"2.0","id":"c","result":{"content":[]}}` {
		t.Errorf("plain: %s", got)
	}
}

func FuzzTaskView(f *testing.F) {
	f.Add(`{"taskId":"t","status":"completed","createdAt":"a","lastUpdatedAt":"b","ttlMs":1.5,"pollIntervalMs":-1,"result":{"isError":true}}`, true)
	f.Add(`{"taskId":1,"status":7,"ttlSeconds":null,"pollInterval":"x","_meta":{"a":1}}`, false)
	f.Fuzz(func(t *testing.T, in string, flag bool) {
		if !gjson.Valid(in) || len(in) == 0 || in[0] != '{' {
			return
		}
		task := rewrite.ReadTask(gjson.Parse(in))
		o := rewrite.TaskOptions{IsErrorFailed: flag, TTLSeconds: !flag}
		for _, out := range [][]byte{
			task.View(o, rewrite.ViewOverride{}),
			rewrite.CreateTaskResult(task, o),
			rewrite.TaskResult(task, o, rewrite.ViewOverride{Status: rewrite.StatusCancelled}),
		} {
			if !gjson.ValidBytes(out) {
				t.Fatalf("invalid JSON from %s: %s", in, out)
			}
		}
		view := gjson.ParseBytes(task.View(o, rewrite.ViewOverride{}))
		for _, k := range []string{"result", "error", "inputRequests", "resultType", "ttlMs", "pollIntervalMs"} {
			if view.Get(k).Exists() {
				t.Fatalf("view of %s keeps %s", in, k)
			}
		}
		if d := rewrite.PollInterval(task.PollInterval); d < rewrite.MinPollInterval || d > rewrite.MaxPollInterval {
			t.Fatalf("poll interval %v out of bounds", d)
		}
	})
}

func TestInputRequestParams(t *testing.T) {
	tests := []struct{ name, params, related, elicit, want string }{
		{"form elicitation", `{"mode":"form","message":"m"}`, "T", "",
			`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}},"mode":"form","message":"m"}`},
		{"existing _meta", `{"message":"m","_meta":{"a":1}}`, "T", "",
			`{"message":"m","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"},"a":1}}`},
		{"url elicitation gets an id", `{"mode":"url","url":"https://x","message":"m"}`, "", "E1",
			`{"elicitationId":"E1","mode":"url","url":"https://x","message":"m"}`},
		{"url elicitation keeps its id", `{"mode":"url","elicitationId":"own"}`, "", "E1",
			`{"mode":"url","elicitationId":"own"}`},
		{"no params", ``, "T", "",
			`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}}}`},
		{"empty params, nothing to add", `{}`, "", "", `{}`},
		{"non-object _meta replaced", `{"_meta":null,"x":1}`, "T", "",
			`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}},"x":1}`},
	}
	for _, tt := range tests {
		got := rewrite.InputRequestParams(gjson.Parse(tt.params), tt.related, tt.elicit)
		if string(got) != tt.want {
			t.Errorf("%s:\n got: %s\nwant: %s", tt.name, got, tt.want)
		}
	}
}

func TestInputResponse(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"action":"accept","content":{"name":"Luca"},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"T"}}}`,
			`{"action":"accept","content":{"name":"Luca"}}`},
		{`{"_meta":{"a":1,"io.modelcontextprotocol/related-task":{}},"roots":[]}`, `{"_meta":{"a":1},"roots":[]}`},
		{`{"action":"decline"}`, `{"action":"decline"}`},
	}
	for _, tt := range tests {
		if got := rewrite.InputResponse(gjson.Parse(tt.in)); string(got) != tt.want {
			t.Errorf("InputResponse(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestListenNotification(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"u-1"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`},
		{`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"uri":"file:///a"}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`},
		{`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"x":1,"io.modelcontextprotocol/subscriptionId":7}}}`,
			`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"x":1}}}`},
		{`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`, `{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`},
	}
	for _, tt := range tests {
		f := mustParse(t, tt.in)
		if got := rewrite.ListenNotification(&f); string(got) != tt.want {
			t.Errorf("ListenNotification(%s)\n got: %s\nwant: %s", tt.in, got, tt.want)
		}
	}
}

// TestTaskViewHugeTTL: a ttl past what a time.Duration holds (~292 years) is
// shown as MaxTTL, never wrapped negative; ttlSeconds × 1000 cannot
// overflow either.
func TestTaskViewHugeTTL(t *testing.T) {
	maxMs := rewrite.MaxTTL.Milliseconds()
	for _, member := range []string{
		`"ttlMs":31536000000000`, `"ttlMs":9223372036854775807`, `"ttlMs":1e300`,
		`"ttlSeconds":31536000000`, `"ttlSeconds":9223372036854775807`, `"ttlSeconds":1e300`,
		`"ttl":9223372036854775807`, `"ttl":1e300`,
	} {
		task := rewrite.ReadTask(gjson.Parse(`{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"a",` + member + `}`))
		for _, seconds := range []bool{false, true} {
			want := maxMs
			if seconds {
				want /= 1000
			}
			got := gjson.GetBytes(task.View(rewrite.TaskOptions{TTLSeconds: seconds}, rewrite.ViewOverride{}), "ttl")
			if got.Type != gjson.Number || got.Int() != want {
				t.Errorf("%s (seconds=%v): ttl %s, want %d", member, seconds, got.Raw, want)
			}
		}
	}
	// Within the bound nothing changes.
	task := rewrite.ReadTask(gjson.Parse(`{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"a","ttlSeconds":86400}`))
	if got := gjson.GetBytes(task.View(rewrite.TaskOptions{}, rewrite.ViewOverride{}), "ttl").Raw; got != "86400000" {
		t.Errorf("ttlSeconds 86400: ttl %s, want 86400000", got)
	}
}

func TestTTLMillis(t *testing.T) {
	maxMs := rewrite.MaxTTL.Milliseconds()
	tests := []struct {
		raw     string
		seconds bool
		want    int64
		ok      bool
	}{
		{`60000`, false, 60000, true},
		{`1.9`, false, 1, true},
		{`30`, true, 30000, true},
		{`0`, false, 0, true},
		{`-1`, false, 0, false},
		{`null`, false, 0, false},
		{`"60000"`, false, 0, false},
		{`31536000000000`, false, maxMs, true},
		{`9223372036854775807`, false, maxMs, true},
		{`9223372036854775807`, true, maxMs, true},
		{`1e300`, true, maxMs, true},
		{`1e999`, false, maxMs, true},
	}
	for _, tt := range tests {
		got, ok := rewrite.TTLMillis(gjson.Parse(tt.raw), tt.seconds)
		if got != tt.want || ok != tt.ok {
			t.Errorf("TTLMillis(%s, seconds=%v) = %d, %v; want %d, %v", tt.raw, tt.seconds, got, ok, tt.want, tt.ok)
		}
	}
}
