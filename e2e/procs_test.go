package e2e

import (
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
