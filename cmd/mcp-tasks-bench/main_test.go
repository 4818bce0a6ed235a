package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
	// The floor target and the server re-execute the running binary, here
	// this test.
	if url := os.Getenv(floorEnv); url != "" {
		os.Exit(floorMain(url))
	}
	if os.Getenv(serverEnv) != "" {
		os.Exit(serverMain())
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
		"--sizes", "1KiB,300KiB", "--sse-sizes", "200KiB", "--size-calls", "1", "--startups", "1", "--task-calls", "1",
		"--poll-ms", "100", "--polls", "1,2", "--timeout", "15s",
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
			"| workload", "proxy/floor", " rounds |", "proxy+trace/proxy",
			"floor = the smallest correct stdio bridge", "in a process of its own",
			"| start-up", "| sequential echo", "| echo, 1 in flight", "| echo, 3 in flight",
			"| result 1 KiB JSON", "| result 300 KiB JSON", "| result 200 KiB SSE", "bridge peak RSS",
			"| task followed (1× poll 100 ms)", "| task followed (2× poll 100 ms)",
			"bridge CPU per call, utime+stime", "bridge system CPU per call, stime", "bridge CPU per call, schedstat", "bridge read+write syscalls per call",
			"bridge run-queue wait per call", "bridge times scheduled per call",
			"targets (against the floor", "sequential echo p50 ≤ 1.10× the floor's", "added p99 ≤ 1 ms",
			"CPU per sequential call (utime+stime) ≤ 1.35× the floor's", "start-up ≤ 50 ms", "tracing on, sequential echo p50",
			"tracing on, CPU per call at 1 in flight (schedstat)", "tracing on, CPU per call at 3 in flight (schedstat)",
			"How the cost grows with the result size (JSON)", "How the cost grows with requests in flight",
			"How the cost grows with a followed task's poll count",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		// The answers of every target went through the same checks.
		for _, name := range []string{"direct", "floor", "proxy", "proxy+trace"} {
			if n := verified(out, name); n == 0 {
				t.Errorf("no verified answers for %s:\n%s", name, out)
			}
		}
		// Every metric row has a figure for direct, the floor and the proxy
		// (direct has no bridge process to account).
		tab := table(t, out)
		if len(tab) == 0 {
			t.Fatalf("no table rows:\n%s", out)
		}
		for _, row := range tab {
			for _, col := range []string{"direct", "floor", "proxy", "proxy/floor", "rounds"} {
				v := row[col]
				switch {
				case col == "direct" && strings.HasPrefix(row["metric"], "bridge "):
				case (col == "proxy/floor" || col == "rounds") && strings.HasPrefix(row["metric"], "bridge ") &&
					(strings.Contains(row["metric"], "utime+stime") || strings.Contains(row["metric"], ", stime")):
					// 10 ms ticks over a handful of calls may read 0.
				case v == "" || v == "–" || v == "n/a":
					t.Errorf("%s, %s: no figure for %s (%q)", row["workload"], row["metric"], col, v)
				}
			}
		}
		// The scheduler accounting is a real reading: a bridge that answered
		// calls used CPU, made system calls and was put on a CPU.
		sched := 0
		for _, row := range tab {
			switch row["metric"] {
			case "bridge CPU per call, schedstat (µs)", "bridge times scheduled per call (count)", "bridge read+write syscalls per call (count)":
			default:
				continue
			}
			sched++
			for _, col := range []string{"floor", "proxy", "proxy+trace"} {
				if v, err := strconv.ParseFloat(row[col], 64); err != nil || v <= 0 {
					t.Errorf("%s, %s: %s = %q, want a positive figure", row["workload"], row["metric"], col, row[col])
				}
			}
		}
		if sched != 3*3 { // seq and two levels of inflight
			t.Errorf("%d scheduler rows, want 9:\n%s", sched, out)
		}
	})

	t.Run("every round as CSV", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rounds.csv")
		code, out, errs := runBench(t, append(tiny(proxy), "--rounds", "2", "--workloads", "seq", "--rounds-csv", path)...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rows, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 || strings.Join(rows[0], ",") != "metric,workload,unit,target,round,value" {
			t.Fatalf("header %q", rows)
		}
		// Each target's p50 in both rounds, and the report's figure their
		// median.
		p50 := map[string][]float64{}
		for _, r := range rows[1:] {
			if r[0] != "seq-p50" {
				continue
			}
			v, err := strconv.ParseFloat(r[5], 64)
			if err != nil || v <= 0 {
				t.Fatalf("row %q: want a positive figure", r)
			}
			if r[4] != strconv.Itoa(len(p50[r[3]])+1) {
				t.Fatalf("row %q: rounds out of order", r)
			}
			p50[r[3]] = append(p50[r[3]], v)
		}
		for _, row := range table(t, out) {
			if row["metric"] != "p50 (µs)" {
				continue
			}
			for _, name := range []string{"direct", "floor", "proxy"} {
				v := p50[name]
				if len(v) != 2 {
					t.Fatalf("%s: %d rounds in the CSV, want 2", name, len(v))
				}
				if got := num((v[0]+v[1])/2, true); got != row[name] {
					t.Errorf("%s: the report says p50 %s, the CSV's rounds give %s", name, row[name], got)
				}
			}
			// The ratios subcommand reads the file back to the report's
			// ratio: both are the median of the per-round ratios.
			code, rout, rerrs := runBench(t, "ratios", "--pair", "proxy/floor", "--metric", "sequential echo: p50", path)
			if code != 0 {
				t.Fatalf("ratios: exit %d\nstderr:\n%s", code, rerrs)
			}
			rt := ratioRows(t, rout)
			if len(rt) != 1 || rt[0]["run"] != "rounds.csv" || rt[0]["rounds"] != "2" {
				t.Fatalf("ratios: want one run of 2 rounds:\n%s", rout)
			}
			got, err1 := strconv.ParseFloat(strings.TrimSuffix(rt[0]["median"], "×"), 64)
			want, err2 := strconv.ParseFloat(strings.TrimSuffix(row["proxy/floor"], "×"), 64)
			if err := errors.Join(err1, err2); err != nil || math.Abs(got-want) > 0.0051 {
				t.Errorf("ratios says proxy/floor %s, the report %s (%v)", rt[0]["median"], row["proxy/floor"], err)
			}
		}
	})

	t.Run("two proxy builds and the growth charts", func(t *testing.T) {
		dir := t.TempDir()
		code, out, errs := runBench(t, append(tiny(proxy), "--workloads", "inflight,size,task", "--sse-sizes", "none",
			"--proxy-name", "after", "--proxy-b", proxy, "--proxy-b-name", "before", "--plot-dir", dir, "--server", "inprocess")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		for _, want := range []string{"after/floor", "before/floor", "before/after", "in the bench's process",
			"after: calls/s at 64 in flight", "before: calls/s at 64 in flight"} {
			if !strings.Contains(out, want) && !(strings.Contains(want, "64 in flight") && !strings.Contains(out, "64 in flight")) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
		for _, name := range []string{"after", "before"} {
			if n := verified(out, name); n == 0 {
				t.Errorf("no verified answers for %s:\n%s", name, out)
			}
		}
		for _, f := range []string{"growth-size.svg", "growth-rss.svg", "growth-inflight.svg", "growth-cpu.svg", "growth-polls.svg"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if f == "growth-cpu.svg" && os.IsNotExist(err) {
				continue // see below
			}
			if err != nil {
				t.Errorf("no chart: %v", err)
				continue
			}
			svg := string(b)
			// CPU from /proc/PID/stat counts 10 ms ticks: over this run's
			// handful of calls a bridge may show none, and have no line.
			lines := 3
			if f == "growth-cpu.svg" {
				lines = 0
			}
			if !strings.HasPrefix(svg, "<svg ") || !strings.HasSuffix(svg, "</svg>\n") || strings.Count(svg, "<polyline") < lines ||
				lines > 0 && (!strings.Contains(svg, ">after<") || !strings.Contains(svg, ">floor<")) {
				t.Errorf("%s is not a chart of the targets:\n%.600s", f, svg)
			}
			if err := xml.Unmarshal(b, new(struct{})); err != nil {
				t.Errorf("%s is not well-formed XML: %v", f, err)
			}
		}
	})

	t.Run("chunked JSON results", func(t *testing.T) {
		code, out, errs := runBench(t, append(tiny(proxy), "--workloads", "size", "--sse-sizes", "none", "--chunked")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		for _, want := range []string{"| result 1 KiB JSON, chunked", "| result 300 KiB JSON, chunked", "How the cost grows with the result size (JSON, chunked)"} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("without the floor", func(t *testing.T) {
		code, out, errs := runBench(t, append(tiny(proxy), "--workloads", "seq", "--floor=false")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		if strings.Contains(out, "floor") || !strings.Contains(out, "proxy/direct") {
			t.Errorf("--floor=false still reports a floor, or no ratio to direct:\n%s", out)
		}
	})

	t.Run("serve mode", func(t *testing.T) {
		code, out, errs := runBench(t, append(tiny(proxy), "--workloads", "startup,seq,inflight,task", "--serve")...)
		if code != 0 {
			t.Fatalf("exit %d\nstderr:\n%s", code, errs)
		}
		if n := verified(out, "serve"); n == 0 {
			t.Errorf("no verified answers for serve:\n%s", out)
		}
		for _, want := range []string{"serve/direct", "serve/proxy"} {
			if !strings.Contains(out, want) {
				t.Errorf("report lacks the ratio column %q:\n%s", want, out)
			}
		}
		// serve is a bridge process of its own: its CPU and syscalls are
		// accounted like the stdio proxy's.
		for _, row := range table(t, out) {
			if strings.Contains(row["metric"], "CPU per call, utime+stime") && (row["serve"] == "" || row["serve"] == "–") {
				t.Errorf("no CPU figure for serve in %v", row)
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
		if code, _, errs := runBench(t, "--help"); code != 0 || !strings.Contains(errs, "Examples:") || !strings.Contains(errs, "--proxy-b") {
			t.Errorf("--help: exit %d, stderr %q", code, errs)
		}
		if code, _, errs := runBench(t, "--compare", "true", "--compare-name", "floor"); code != 2 || !strings.Contains(errs, "another target's") {
			t.Errorf("--compare-name floor: exit %d, stderr %q", code, errs)
		}
		if code, _, errs := runBench(t, "--proxy-b", "x", "--proxy-b-name", "proxy"); code != 2 || !strings.Contains(errs, "another target's") {
			t.Errorf("--proxy-b-name proxy: exit %d, stderr %q", code, errs)
		}
		if code, _, errs := runBench(t, "--server", "far"); code != 2 || !strings.Contains(errs, "--server") {
			t.Errorf("--server far: exit %d, stderr %q", code, errs)
		}
		if code, _, errs := runBench(t, "--polls", "0"); code != 2 || !strings.Contains(errs, "--polls") {
			t.Errorf("--polls 0: exit %d, stderr %q", code, errs)
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

// table reads the report's first Markdown table: one map per row, by
// column name.
func table(t *testing.T, out string) []map[string]string {
	t.Helper()
	var hdr []string
	var rows []map[string]string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "| ") {
			if hdr != nil {
				break
			}
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

// TestBlobChunked: the blob tool's JSON answer has a Content-Length, and
// none with chunked (net/http then sends it chunked); its text is the same.
func TestBlobChunked(t *testing.T) {
	up, err := startUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.close()
	for _, chunked := range []bool{false, true} {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"blob","arguments":{"bytes":70000,"chunked":%v}}}`, chunked)
		req, err := http.NewRequest(http.MethodPost, up.url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("MCP-Protocol-Version", legacyVersion)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(b, "result.content.0.text").Str; got != string(payload(70000)) {
			t.Fatalf("chunked %v: text of %d bytes, want the 70000-byte payload", chunked, len(got))
		}
		if chunked != (resp.ContentLength < 0) || chunked != slices.Contains(resp.TransferEncoding, "chunked") {
			t.Errorf("chunked %v: Content-Length %d, Transfer-Encoding %v", chunked, resp.ContentLength, resp.TransferEncoding)
		}
	}
}

// TestFloorForwarder drives the floor bridge in process against the bench
// server: initialize answered locally, nothing for a notification, one
// line per answer with the 2026 members gone, a task followed, an SSE
// answer read, and a JSON-RPC error for what it cannot forward.
func TestFloorForwarder(t *testing.T) {
	up, err := startUpstream()
	if err != nil {
		t.Fatal(err)
	}
	defer up.close()

	serve := func(url, in string) map[string]gjson.Result {
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
			t.Fatal("the floor did not return at the end of its input")
		}
		got := map[string]gjson.Result{}
		for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if !gjson.Valid(l) {
				t.Fatalf("not one JSON line: %q", l)
			}
			r := gjson.Parse(l)
			if _, dup := got[r.Get("id").Raw]; dup {
				t.Fatalf("two answers for id %s", r.Get("id").Raw)
			}
			got[r.Get("id").Raw] = r
		}
		return got
	}

	got := serve(up.url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}

{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":9},"name":"task","arguments":{"poll_ms":1,"polls":3,"nonce":"n"}}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"blob","arguments":{"bytes":1000,"sse":true}}}
{"jsonrpc":"2.0","id":6,"method":"ping"}
`)
	if len(got) != 6 {
		t.Fatalf("want 6 answers (none for the notification), got %v", got)
	}
	if v := got["1"].Get("result.protocolVersion").Str; v != legacyVersion {
		t.Errorf("initialize answered %q, want %s", v, legacyVersion)
	}
	for id, want := range map[string]string{`"two"`: "hi", "4": "task done n", "5": string(payload(1000))} {
		r := got[id].Get("result")
		if r.Get("content.0.text").Str != want || r.Get("resultType").Exists() || r.Get("_meta").Exists() {
			t.Errorf("id %s: %.300s", id, got[id].Raw)
		}
	}
	if !got["3"].Get("error").Exists() {
		t.Errorf("the server's error did not come through: %s", got["3"].Raw)
	}
	if got["6"].Get("error").Exists() {
		t.Errorf("ping: %s", got["6"].Raw)
	}

	// Nothing listens: the request is answered with an error, not dropped.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	got = serve(dead, `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n")
	if len(got) != 1 || !strings.Contains(got["7"].Get("error.message").Str, "floor:") {
		t.Errorf("unreachable server: %v", got)
	}
}

func TestStrip2026(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}}}}`: `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		`{"id":1,"result":{"resultType":"complete", "_meta":{"a":1,"io.modelcontextprotocol/serverInfo":{}},"x":[1,2]},"jsonrpc":"2.0"}`:       `{"id":1,"result":{"_meta":{"a":1},"x":[1,2]},"jsonrpc":"2.0"}`,
		`{"id":1,"result":{"content":[]}}`:              `{"id":1,"result":{"content":[]}}`,
		`{"id":1,"error":{"code":1,"message":"m"}}`:     `{"id":1,"error":{"code":1,"message":"m"}}`,
		`{"id":1,"result":{"resultType":"complete"}}`:   `{"id":1,"result":{}}`,
		`{"id":1,"result":{"a":"resultType","b":true}}`: `{"id":1,"result":{"a":"resultType","b":true}}`,
	} {
		if got := string(strip2026([]byte(in))); got != want {
			t.Errorf("strip2026(%s)\n = %s\nwant %s", in, got, want)
		}
	}
}

func TestWithMeta(t *testing.T) {
	meta := directMeta[1 : len(directMeta)-1]
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                             `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":` + directMeta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`:                                 `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":` + directMeta + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e"}}`:                 `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":` + directMeta + `,"name":"e"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"p":1}}}`: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{` + meta + `,"p":1}}}`,
	} {
		line := []byte(in)
		got := string(withMeta(line, gjson.GetBytes(line, "params")))
		if got != want {
			t.Errorf("withMeta(%s)\n = %s\nwant %s", in, got, want)
		}
		if !gjson.Valid(got) {
			t.Errorf("withMeta(%s) is not JSON", in)
		}
	}
	if got := headerSafe("échec"); got != "=?base64?w6ljaGVj?=" {
		t.Errorf("headerSafe: %q", got)
	}
	if got := headerSafe("echo"); got != "echo" {
		t.Errorf("headerSafe: %q", got)
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
