package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// fakeBridgeEnv makes the test binary act as a broken stdio bridge: it
// answers initialize properly, then answers every tools/call with the wrong
// text, so the bench must refuse its answers.
const fakeBridgeEnv = "MCP_TASKS_BENCH_FAKE_BRIDGE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeBridgeEnv) == "1" {
		fakeBridge()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeBridge() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		r := gjson.GetManyBytes(in.Bytes(), "id", "method")
		if !r[0].Exists() {
			continue
		}
		var result string
		switch r[1].String() {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`
		default:
			result = `{"content":[{"type":"text","text":"not what you sent"}]}`
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", r[0].Raw, result)
	}
}

// buildProxy builds mcp-tasks-proxy once for the tests of this package.
func buildProxy(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcp-tasks-proxy")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcp-tasks-proxy/mcp-tasks-proxy/cmd/mcp-tasks-proxy").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tiny is a configuration that runs every workload with a handful of calls.
func tiny(proxy string) []string {
	return []string{
		"--proxy", proxy, "--rounds", "1", "--n", "5", "--calls", "8", "--inflight", "1,3",
		"--sizes", "1KiB,300KiB", "--size-calls", "1", "--startups", "1", "--task-calls", "1",
		"--poll-ms", "100", "--timeout", "15s",
	}
}

func runBench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestBenchTiny(t *testing.T) {
	proxy := buildProxy(t)

	t.Run("verified table", func(t *testing.T) {
		code, out, errs := runBench(t, append(tiny(proxy), "--trace")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		for _, want := range []string{
			"| workload", "proxy/direct", "proxy+trace/direct",
			"| start-up", "| sequential echo", "| echo, 1 in flight", "| echo, 3 in flight",
			"| result 1 KiB", "| result 300 KiB", "bridge peak RSS", "| task followed (poll 100 ms)",
			"targets:", "sequential echo p50", "tracing on",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		// Every metric row has a number for direct and for the proxy.
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| workload") || strings.Contains(line, "peak RSS") {
				continue
			}
			cells := strings.Split(line, "|")
			if len(cells) < 6 || strings.TrimSpace(cells[3]) == "–" || strings.TrimSpace(cells[4]) == "–" {
				t.Errorf("row without figures: %s", line)
			}
		}
	})

	t.Run("wrong answers fail the run", func(t *testing.T) {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(fakeBridgeEnv, "1")
		code, out, errs := runBench(t, append(tiny(proxy), "--workloads", "seq", "--compare", exe+" {url}", "--compare-name", "fake")...)
		if code != 1 {
			t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		if !strings.Contains(errs, "fake: wrong content") {
			t.Errorf("stderr does not name the wrong answer:\n%s", errs)
		}
		if strings.Contains(out, "| workload") {
			t.Errorf("a failed run printed a report:\n%s", out)
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		if code, _, errs := runBench(t, "--sizes", "lots"); code != 2 || !strings.Contains(errs, "--sizes") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
		if code, _, errs := runBench(t, "--help"); code != 0 || !strings.Contains(errs, "Examples:") {
			t.Errorf("--help: exit %d, stderr %q", code, errs)
		}
	})
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"1024": 1024, "1KiB": 1 << 10, "16MiB": 16 << 20, "2M": 2 << 20, "3K": 3 << 10, "5B": 5} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := parseSize("-1"); err == nil {
		t.Error("parseSize(-1) succeeded")
	}
}
