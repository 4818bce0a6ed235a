package e2e

import (
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
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

// TestHeapGoal: the bridge lets its small heap gather garbage beyond Go's
// default between collections, so its start line shows a GOGC above 100,
// unless the environment sets GOGC (README, "Performance"); serve does the
// same.
func TestHeapGoal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env   string
		check func(int64) bool
		want  string
	}{
		{"GOGC=", func(g int64) bool { return g > 100 }, "above 100"},
		{"GOGC=100", func(g int64) bool { return g == 100 }, "100, as set"},
		{"GOGC=50", func(g int64) bool { return g == 50 }, "50, as set"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Parallel()
			p := startProxy(t, []string{"--log-level", "info", "--log-format", "json", "--demo"}, tc.env)
			waitLog(t, p.stderr, "start line with gogc "+tc.want, func(l gjson.Result) bool {
				return l.Get("msg").Str == "mcp-tasks-proxy started" && l.Get("gogc").Exists() && tc.check(l.Get("gogc").Int())
			})
			p.initialize()
			res := resultOf(t, p.call("2", "tools/call", `{"name":"echo","arguments":{"text":"heap"}}`))
			if !res.Get("content").IsArray() {
				t.Fatalf("echo through the bridge: %s", res)
			}
		})
	}
	t.Run("serve", func(t *testing.T) {
		t.Parallel()
		if v := os.Getenv("GOGC"); v != "" {
			t.Skipf("SKIP: GOGC=%s is set in this test's environment, and serve inherits it", v)
		}
		s := startServe(t, "--log-level", "info", "--log-format", "json", "--demo")
		started := func(l gjson.Result) bool { return l.Get("msg").Str == "mcp-tasks-proxy serve started" }
		if i := slices.IndexFunc(logLines(s.stderr.String()), started); i < 0 {
			t.Fatalf("no start line on stderr:\n%s", s.stderr.String())
		} else if got := logLines(s.stderr.String())[i].Get("gogc").Int(); got <= 100 {
			t.Errorf("serve starts with GOGC %d, want above 100", got)
		}
	})
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

// TestStdioProcsWhileBusy: the stdio bridge goes from one thread to every
// CPU once 32 calls are in flight, and back to one when they are answered
// (README, "Performance"). The server holds each tools/call until 40 have
// arrived, so that 40 are in flight at once whatever the machine's speed;
// every call is answered.
func TestStdioProcsWhileBusy(t *testing.T) {
	t.Parallel()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one CPU for Go here: the bridge stays on one thread (TestStdioProcs covers it)")
	}
	const calls = 40
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	demoHandler := demo.Handler()
	up := newUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mu.Lock()
			if arrived++; arrived == calls {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(waitTimeout):
				http.Error(w, "not every call arrived", http.StatusServiceUnavailable)
				return
			}
		}
		demoHandler.ServeHTTP(w, r)
	}))
	p := startProxy(t, []string{"--url", up.URL, "--no-state", "--log-level", "debug", "--log-format", "json"}, "GOMAXPROCS=")
	p.initialize()
	for i := range calls {
		p.request(strconv.Itoa(10+i), "tools/call", `{"name":"echo","arguments":{"text":"busy"}}`)
	}
	for i := range calls {
		if res := resultOf(t, p.expect(strconv.Itoa(10+i))); !res.Get("content").IsArray() {
			t.Fatalf("call %d: %s", 10+i, res)
		}
	}
	want := int64(runtime.GOMAXPROCS(0)) // the runtime's default, as the proxy's (the same machine and limits)
	waitLog(t, p.stderr, "the bridge on every CPU with 32 or more calls in flight", func(l gjson.Result) bool {
		return l.Get("gomaxprocs").Int() == want && l.Get("in_flight").Int() >= 32
	})
	waitLog(t, p.stderr, "the bridge back on one thread once they were answered", func(l gjson.Result) bool {
		return l.Get("gomaxprocs").Exists() && l.Get("gomaxprocs").Int() == 1 && !l.Get("in_flight").Exists() &&
			l.Get("msg").Str != "mcp-tasks-proxy started"
	})
}
