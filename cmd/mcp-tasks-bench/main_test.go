package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// fakeBridgeEnv makes the test binary act as a broken stdio bridge: it
// answers initialize properly, then, with "1", answers every tools/call with
// the wrong text, so the bench must refuse its answers; with "leak", it
// echoes the right text in a result that carries a 2026-only _meta member.
const fakeBridgeEnv = "MCP_TASKS_BENCH_FAKE_BRIDGE"

func TestMain(m *testing.M) {
	// The floor target re-executes the running binary, here this test.
	if url := os.Getenv(floorEnv); url != "" {
		os.Exit(floorMain(url))
	}
	if mode := os.Getenv(fakeBridgeEnv); mode != "" {
		fakeBridge(mode == "leak")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeBridge(leak bool) {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		r := gjson.GetManyBytes(in.Bytes(), "id", "method", "params.arguments.text")
		if !r[0].Exists() {
			continue
		}
		var result string
		switch r[1].String() {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`
		case "tools/call":
			if leak {
				result = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x","version":"1"}},"content":[{"type":"text","text":` + r[2].Raw + `}]}`
				break
			}
			fallthrough
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
			"| workload", "proxy/direct", "proxy+trace/direct", "floor/direct", "proxy/floor",
			"floor = a do-nothing Go stdio→HTTP forwarder", "proxy − floor = what the proxy's own code costs",
			"n/a = the workload does not apply",
			"| start-up", "| sequential echo", "| echo, 1 in flight", "| echo, 3 in flight",
			"| result 1 KiB", "| result 300 KiB", "bridge peak RSS", "| task followed (poll 100 ms)",
			"bridge CPU per call", "bridge run-queue wait per call", "bridge times scheduled per call",
			"targets:", "sequential echo p50", "tracing on",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		if !strings.Contains(out, "; floor ") || !strings.Contains(out, "proxy/floor ") {
			t.Errorf("the verdicts give no figure against the floor:\n%s", out)
		}
		// The floor's answers went through the same checks as the others.
		for _, name := range []string{"direct", "floor", "proxy", "proxy+trace"} {
			if n := verified(out, name); n == 0 {
				t.Errorf("no verified answers for %s:\n%s", name, out)
			}
		}
		// Every metric row has a number for direct, the floor and the proxy;
		// the floor's task rows say n/a.
		tab := table(t, out)
		for _, row := range tab {
			for _, col := range []string{"direct", "floor", "proxy", "proxy/floor"} {
				v := row[col]
				switch {
				case col == "floor" && strings.HasPrefix(row["workload"], "task"):
					if v != "n/a" {
						t.Errorf("floor on %s: %q, want n/a", row["workload"], v)
					}
				case col == "direct" && strings.HasPrefix(row["metric"], "bridge "):
					// peak RSS and scheduler accounting are a bridge
					// process's; direct has none.
				case col == "proxy/floor" && strings.HasPrefix(row["workload"], "task"):
				case v == "" || v == "–" || v == "n/a":
					t.Errorf("%s, %s: no figure for %s (%q)", row["workload"], row["metric"], col, v)
				}
			}
		}
		if len(tab) == 0 {
			t.Errorf("no table rows:\n%s", out)
		}
		// The scheduler accounting is a real reading: a bridge that answered
		// calls used CPU and was put on a CPU.
		sched := 0
		for _, row := range tab {
			if !strings.HasPrefix(row["metric"], "bridge CPU per call") && !strings.HasPrefix(row["metric"], "bridge times scheduled per call") {
				continue
			}
			sched++
			for _, col := range []string{"floor", "proxy", "proxy+trace"} {
				if v, err := strconv.ParseFloat(row[col], 64); err != nil || v <= 0 {
					t.Errorf("%s, %s: %s = %q, want a positive figure", row["workload"], row["metric"], col, row[col])
				}
			}
		}
		if sched != 2*3 { // seq and two levels of inflight
			t.Errorf("%d scheduler rows, want 6:\n%s", sched, out)
		}
	})

	t.Run("without the floor", func(t *testing.T) {
		code, out, errs := runBench(t, append(tiny(proxy), "--workloads", "seq", "--floor=false")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		if strings.Contains(out, "floor") {
			t.Errorf("--floor=false still reports a floor:\n%s", out)
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

	t.Run("era leaks are counted for a compare bridge and fail the proxy", func(t *testing.T) {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(fakeBridgeEnv, "leak")
		code, out, errs := runBench(t, append(tiny(proxy), "--workloads", "seq", "--floor=false", "--compare", exe+" {url}", "--compare-name", "fake")...)
		if code != 0 {
			t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
		// 5 warm-up calls and --n 5.
		if !strings.Contains(out, "fake: 10 of those answers are 2025 results that carry 2026-only members") ||
			!strings.Contains(out, `io.modelcontextprotocol/serverInfo`) {
			t.Errorf("the report does not count the leaks:\n%s", out)
		}
		// A leaking answer is still checked for its content and counted as
		// verified: every one of the 10 leaked, and every one was right.
		if n := verified(out, "fake"); n != 10 {
			t.Errorf("%d verified answers for the leaking bridge, want 10:\n%s", n, out)
		}
		code, out, errs = runBench(t, append(tiny(exe), "--workloads", "seq", "--floor=false")...)
		if code != 1 || !strings.Contains(errs, "proxy: a 2025 result carries 2026 members") {
			t.Errorf("the same bridge as --proxy: exit %d, want 1 naming the leak\nstdout:\n%s\nstderr:\n%s", code, out, errs)
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		if code, _, errs := runBench(t, "--sizes", "lots"); code != 2 || !strings.Contains(errs, "--sizes") {
			t.Errorf("exit %d, stderr %q", code, errs)
		}
		if code, _, errs := runBench(t, "--help"); code != 0 || !strings.Contains(errs, "Examples:") || !strings.Contains(errs, "--floor=false") {
			t.Errorf("--help: exit %d, stderr %q", code, errs)
		}
		if code, _, errs := runBench(t, "--compare", "true", "--compare-name", "floor"); code != 2 || !strings.Contains(errs, "built-in target") {
			t.Errorf("--compare-name floor: exit %d, stderr %q", code, errs)
		}
	})
}

// verified reads the count of verified answers the report gives for name.
func verified(out, name string) int {
	m := regexp.MustCompile(`every answer verified \(([^)]*)\)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	for _, c := range strings.Split(m[1], ", ") {
		if n, tname, ok := strings.Cut(c, " "); ok && tname == name {
			v, _ := strconv.Atoi(n)
			return v
		}
	}
	return 0
}

// table reads the report's Markdown table: one map per row, by column name.
func table(t *testing.T, out string) []map[string]string {
	t.Helper()
	var hdr []string
	var rows []map[string]string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case hdr == nil:
			hdr = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			if len(cells) != len(hdr) {
				t.Fatalf("row of %d cells under %d headers: %s", len(cells), len(hdr), line)
			}
			row := map[string]string{}
			for i, c := range cells {
				row[hdr[i]] = c
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// TestFloorForwarder drives the floor forwarder in process against the
// bench server: an answer per request, in one line each, nothing for a
// notification, and a JSON-RPC error for what it cannot forward.
func TestFloorForwarder(t *testing.T) {
	up, err := startUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.close()

	serve := func(url, in string) []string {
		t.Helper()
		var out bytes.Buffer
		f := &floor{url: url, client: &http.Client{Timeout: 10 * time.Second}, out: &out}
		done := make(chan error, 1)
		go func() { done <- f.serve(strings.NewReader(in)) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the forwarder did not return at the end of its input")
		}
		return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	}

	lines := serve(up.url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}

{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}
`)
	got := map[string]gjson.Result{}
	for _, l := range lines {
		if !gjson.Valid(l) {
			t.Fatalf("not one JSON line: %q", l)
		}
		r := gjson.Parse(l)
		got[r.Get("id").Raw] = r
	}
	if len(lines) != 3 || len(got) != 3 {
		t.Fatalf("want 3 answers (none for the notification), got %q", lines)
	}
	if v := got["1"].Get("result.protocolVersion").Str; v != legacyVersion {
		t.Errorf("initialize answered %q, want %s", v, legacyVersion)
	}
	if r := got[`"two"`].Get("result"); r.Get("content.0.text").Str != "hi" || r.Get("resultType").Exists() {
		t.Errorf("echo: %s", r.Raw)
	}
	if !got["3"].Get("error").Exists() {
		t.Errorf("the server's error did not come through: %s", got["3"].Raw)
	}

	// Nothing listens: the request is answered with an error, not dropped.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	lines = serve(dead, `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n")
	if len(lines) != 1 || gjson.Get(lines[0], "id").Raw != "7" || !strings.Contains(gjson.Get(lines[0], "error.message").Str, "floor:") {
		t.Errorf("unreachable server: %q", lines)
	}
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
