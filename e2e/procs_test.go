package e2e

import (
	"runtime"
	"slices"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"
)

// TestStdioProcs: the stdio bridge runs Go code on one thread unless the
// GOMAXPROCS environment variable says otherwise (README, "Performance"),
// and its start line says which. An empty GOMAXPROCS counts as unset, as
// it does for the Go runtime.
func TestStdioProcs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  string
		want int64
	}{
		{"GOMAXPROCS=", 1},
		{"GOMAXPROCS=3", 3},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, []string{"--log-level", "info", "--log-format", "json", "--demo"}, tc.env)
			waitLog(t, p.stderr, "start line with gomaxprocs "+strconv.FormatInt(tc.want, 10), func(l gjson.Result) bool {
				return l.Get("msg").Str == "mcp-tasks-proxy started" && l.Get("gomaxprocs").Int() == tc.want
			})
			p.initialize()
			res := resultOf(t, p.call("2", "tools/call", `{"name":"echo","arguments":{"text":"threads"}}`))
			if !res.Get("content").IsArray() {
				t.Fatalf("echo through the bridge: %s", res)
			}
		})
	}
}

// TestServeProcs: serve keeps the Go runtime's own setting, one thread per
// CPU (README, "Performance"), as this test process has it, and its start
// line says so.
func TestServeProcs(t *testing.T) {
	t.Parallel()
	want := int64(runtime.GOMAXPROCS(0))
	s := startServe(t, "--log-level", "info", "--log-format", "json", "--demo")
	started := func(l gjson.Result) bool { return l.Get("msg").Str == "mcp-tasks-proxy serve started" }
	if i := slices.IndexFunc(logLines(s.stderr.String()), started); i < 0 {
		t.Fatalf("no start line on stderr:\n%s", s.stderr.String())
	} else if got := logLines(s.stderr.String())[i].Get("gomaxprocs").Int(); got != want {
		t.Errorf("serve runs with gomaxprocs %d, want the runtime's own %d", got, want)
	}
}
