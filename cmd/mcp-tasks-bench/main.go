// Command mcp-tasks-bench measures mcp-tasks-proxy end to end against the
// same calls made straight over HTTP by a 2026-07-28 client, and against a
// do-nothing stdio→HTTP forwarder (the floor of any stdio bridge).
//
// It starts a small in-process MCP server on loopback HTTP (see
// upstream.go), then, for each of several rounds, runs every workload
// against every target in turn:
//
//   - direct: a 2026-07-28 client POSTing to the server (the baseline);
//   - floor (--floor): this binary re-executed as a do-nothing stdio→HTTP
//     forwarder (see floor.go): the cost of a second process and its pipes;
//   - proxy: mcp-tasks-proxy spawned with --url, --no-state and --log-level
//     error, driven as a 2025-11-25 stdio client speaks (NDJSON);
//   - proxy+trace (--trace): the same with --trace FILE;
//   - compare (--compare CMD): any other stdio bridge, such as mcp-remote.
//
// Every answer is verified (its id, its content, its size, the absence of
// 2026 members in a 2025 result); one wrong or missing answer fails the run
// with exit status 1. The report (stdout) gives the median over rounds of
// each figure, each target's ratio to direct and the proxy's to the floor;
// progress and diagnostics go to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const usage = `mcp-tasks-bench measures mcp-tasks-proxy end to end: a legacy (2025-11-25)
stdio client through the proxy to an in-process modern (2026-07-28) server on
loopback, against the same calls made directly over HTTP (direct) and through
a do-nothing stdio→HTTP forwarder (floor: what any stdio bridge pays).

Usage:
  mcp-tasks-bench [flags]

Examples:
  # Build the proxy from this module and run every workload (about a minute)
  go run ./cmd/mcp-tasks-bench

  # A quick look: 2 rounds, fewer calls
  go run ./cmd/mcp-tasks-bench --rounds 2 --n 300 --calls 500

  # Without the floor target (a do-nothing stdio→HTTP forwarder), a shorter run
  go run ./cmd/mcp-tasks-bench --floor=false

  # A given binary, with the cost of tracing
  go run ./cmd/mcp-tasks-bench --proxy ./mcp-tasks-proxy --trace

  # How cost grows with result size and with requests in flight
  go run ./cmd/mcp-tasks-bench --workloads size,inflight \
      --sizes 1KiB,16KiB,256KiB,1MiB,4MiB,16MiB --inflight 1,8,64,256

  # Against another stdio bridge ({url} is the server's URL); mcp-remote
  # speaks 2026-07-28 to the server with --protocol auto
  go run ./cmd/mcp-tasks-bench --compare 'npx -y mcp-remote {url} --protocol auto' --compare-name mcp-remote

Targets:
  direct       a 2026-07-28 client POSTing to the server in process
  floor        this binary re-executed as the smallest stdio→HTTP forwarder:
               a line in, a POST with the 2025-11-25 headers, the body out as
               a line; no translation (the server answers in its 2025 era).
               It is the cost of a second process and its pipes; proxy − floor
               is what the proxy's own code costs. It cannot run "task".
  proxy        mcp-tasks-proxy, spawned with --url, driven as a 2025 client
  proxy+trace  the same with --trace FILE (--trace)
  compare      another stdio bridge (--compare)

Every answer is verified: its id, its content byte for byte, and for a 2025
result the absence of 2026-only members (resultType, the serverInfo _meta).
A wrong or missing answer fails the run (exit status 1). A --compare bridge
that leaks 2026 members into otherwise right answers is measured anyway; the
report counts those answers and quotes the first.

Workloads (--workloads, comma-separated):
  seq       sequential echo calls: p50, p90, p99 latency
  inflight  echo calls with C in flight (--inflight): throughput
            (both also give, per call, the bridge's CPU time, its threads'
            run-queue wait and how often they were put on a CPU, from
            /proc/PID/task/*/schedstat: what each call costs the machine)
  size      results of each --sizes: latency, and the bridge's peak RSS (VmHWM)
  startup   spawn to the initialize answer (direct: a fresh server/discover)
  task      a call the server answers with a task (pollIntervalMs --poll-ms)
            that the proxy follows: the time beyond the poll interval

Flags:
`

type config struct {
	proxy       string
	proxyArgs   []string
	compare     string
	compareName string
	trace       bool
	floor       bool
	rounds      int
	n           int
	calls       int
	inflight    []int
	sizes       []int
	sizeCalls   int
	startups    int
	taskCalls   int
	pollMS      int
	timeout     time.Duration
	workloads   map[string]bool
	keep        bool
}

var allWorkloads = []string{"seq", "inflight", "size", "startup", "task"}

func main() {
	if url := os.Getenv(floorEnv); url != "" {
		os.Exit(floorMain(url))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("mcp-tasks-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.proxy, "proxy", "", "the mcp-tasks-proxy binary (default: go build it from the module in the current directory)")
	fs.Func("proxy-arg", "an extra argument for the proxy, such as --max-in-flight=256; repeatable", func(s string) error {
		cfg.proxyArgs = append(cfg.proxyArgs, s)
		return nil
	})
	fs.StringVar(&cfg.compare, "compare", "", "another stdio bridge command to run through the same workloads, run with sh -c; {url} is replaced by the server's URL")
	fs.StringVar(&cfg.compareName, "compare-name", "compare", "the name of the --compare target in the report")
	fs.BoolVar(&cfg.floor, "floor", true, "also run the floor target: this binary re-executed as a do-nothing stdio→HTTP forwarder, the cost of a second process and its pipes")
	fs.BoolVar(&cfg.trace, "trace", false, "also run the proxy with --trace FILE (a temporary file), as target proxy+trace")
	fs.IntVar(&cfg.rounds, "rounds", 5, "rounds; each runs every workload on every target, interleaved")
	fs.IntVar(&cfg.n, "n", 1000, "sequential echo calls per round (seq)")
	fs.IntVar(&cfg.calls, "calls", 2000, "echo calls per round and level of concurrency (inflight; at least 4× the level)")
	inflight := fs.String("inflight", "1,8,64,256", "levels of concurrency (inflight)")
	sizes := fs.String("sizes", "1KiB,1MiB,16MiB", "result sizes (size)")
	fs.IntVar(&cfg.sizeCalls, "size-calls", 5, "timed calls per size per round, after one warm-up call (size)")
	fs.IntVar(&cfg.startups, "startups", 5, "spawns per round (startup)")
	fs.IntVar(&cfg.taskCalls, "task-calls", 3, "task calls per round (task)")
	fs.IntVar(&cfg.pollMS, "poll-ms", 100, "the task's pollIntervalMs (task); the proxy clamps it to at least 100")
	fs.DurationVar(&cfg.timeout, "timeout", time.Minute, "the longest wait for any one answer")
	wl := fs.String("workloads", strings.Join(allWorkloads, ","), "workloads to run")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (built binary, trace files)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	var err error
	if cfg.inflight, err = intList(*inflight, strconv.Atoi); err != nil {
		return cfg, fmt.Errorf("--inflight: %w", err)
	}
	if cfg.sizes, err = intList(*sizes, parseSize); err != nil {
		return cfg, fmt.Errorf("--sizes: %w", err)
	}
	cfg.workloads = map[string]bool{}
	for _, w := range strings.Split(*wl, ",") {
		w = strings.TrimSpace(w)
		if !contains(allWorkloads, w) {
			return cfg, fmt.Errorf("--workloads: unknown workload %q (have %s)", w, strings.Join(allWorkloads, ", "))
		}
		cfg.workloads[w] = true
	}
	switch cfg.compareName {
	case "direct", "floor", "proxy", "proxy+trace":
		return cfg, fmt.Errorf("--compare-name %q is the name of a built-in target", cfg.compareName)
	}
	for name, v := range map[string]int{"--rounds": cfg.rounds, "--n": cfg.n, "--calls": cfg.calls, "--size-calls": cfg.sizeCalls, "--startups": cfg.startups, "--task-calls": cfg.taskCalls} {
		if v < 1 {
			return cfg, fmt.Errorf("%s must be at least 1", name)
		}
	}
	for _, c := range cfg.inflight {
		if c < 1 {
			return cfg, errors.New("--inflight levels must be at least 1")
		}
	}
	if cfg.pollMS < 0 {
		return cfg, errors.New("--poll-ms must not be negative")
	}
	return cfg, nil
}

func intList(s string, parse func(string) (int, error)) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// run is the whole tool; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcp-tasks-bench:", err)
		return 2
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "mcp-tasks-bench: "+format+"\n", a...) }

	tmp, err := os.MkdirTemp("", "mcp-tasks-bench-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	if cfg.keep {
		logf("keeping %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	proxy := cfg.proxy
	if proxy == "" {
		proxy = filepath.Join(tmp, "mcp-tasks-proxy")
		logf("building mcp-tasks-proxy into %s", tmp)
		out, err := exec.CommandContext(ctx, "go", "build", "-o", proxy, "github.com/mcp-tasks-proxy/mcp-tasks-proxy/cmd/mcp-tasks-proxy").CombinedOutput()
		if err != nil {
			logf("go build failed (run from inside the module, or pass --proxy PATH): %v\n%s", err, out)
			return 1
		}
	} else if proxy, err = filepath.Abs(proxy); err != nil {
		logf("%v", err)
		return 1
	}

	up, err := startUpstream()
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer up.close()

	base := append([]string{proxy, "--url", up.url, "--no-state", "--log-level", "error"}, cfg.proxyArgs...)
	targets := []*target{{name: "direct", tasks: true}}
	if cfg.floor {
		exe, err := os.Executable()
		if err != nil {
			logf("the floor target re-executes this binary: %v", err)
			return 1
		}
		targets = append(targets, &target{name: "floor", argv: []string{exe}, env: []string{floorEnv + "=" + up.url}, legacy: true})
	}
	targets = append(targets, &target{name: "proxy", argv: base, legacy: true, tasks: true, proxy: true})
	if cfg.trace {
		argv := append(append([]string(nil), base...), "--trace", filepath.Join(tmp, "proxy.trace"))
		targets = append(targets, &target{name: "proxy+trace", argv: argv, legacy: true, tasks: true, proxy: true})
	}
	if cfg.compare != "" {
		cmd := strings.ReplaceAll(cfg.compare, "{url}", up.url)
		targets = append(targets, &target{name: cfg.compareName, argv: []string{"/bin/sh", "-c", "exec " + cmd}, legacy: true, tolerateLeaks: true})
	}

	res := &results{}
	r := &runner{cfg: cfg, url: up.url, res: res, log: logf}
	payloads := map[int][]byte{}
	for _, s := range cfg.sizes {
		payloads[s] = payload(s)
	}

	start := time.Now()
	for round := range cfg.rounds {
		logf("round %d of %d", round+1, cfg.rounds)
		// Rotate the order of the targets each round, so that no target
		// always runs right after another's heavy workload.
		order := make([]*target, len(targets))
		for i := range targets {
			order[i] = targets[(i+round)%len(targets)]
		}
		each := func(name string, f func(t *target) error) error {
			if !cfg.workloads[name] {
				return nil
			}
			for _, t := range order {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := f(t); err != nil {
					return err
				}
			}
			return nil
		}
		steps := []func() error{
			func() error { return each("startup", func(t *target) error { return r.startup(ctx, t) }) },
			func() error { return each("seq", func(t *target) error { return r.seq(ctx, t, round) }) },
			func() error {
				return each("inflight", func(t *target) error {
					for _, c := range cfg.inflight {
						if err := r.inflight(ctx, t, c, round); err != nil {
							return err
						}
					}
					return nil
				})
			},
			func() error {
				return each("size", func(t *target) error {
					for _, s := range cfg.sizes {
						if err := r.size(ctx, t, s, payloads[s]); err != nil {
							return err
						}
					}
					return nil
				})
			},
			func() error {
				return each("task", func(t *target) error {
					if !t.runs("task") {
						return nil
					}
					return r.task(ctx, t, round)
				})
			},
		}
		for _, step := range steps {
			if err := step(); err != nil {
				logf("FAILED: %v", err)
				return 1
			}
		}
	}
	logf("done in %s", time.Since(start).Round(time.Millisecond))
	report(stdout, cfg, up.url, proxy, targets, res)
	return 0
}

func report(w io.Writer, cfg config, url, proxy string, targets []*target, res *results) {
	has := func(name string) bool {
		for _, t := range targets {
			if t.name == name {
				return true
			}
		}
		return false
	}
	floor := has("floor")
	var counts []string
	for _, t := range targets {
		counts = append(counts, fmt.Sprintf("%d %s", t.verified.Load(), t.name))
	}
	fmt.Fprintf(w, "mcp-tasks-bench: %d rounds, %d CPUs (GOMAXPROCS %d), %s/%s, %s\n", cfg.rounds, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(w, "upstream %s; proxy %s\n", url, proxy)
	fmt.Fprintf(w, "every answer verified (%s); figures are medians over rounds\n", strings.Join(counts, ", "))
	for _, t := range targets {
		if n := t.leaks.Load(); n > 0 {
			fmt.Fprintf(w, "%s: %d of those answers are 2025 results that carry 2026-only members (counted, not failed, for a --compare bridge), first: %s\n",
				t.name, n, *t.leakSample.Load())
		}
	}
	if floor {
		fmt.Fprintf(w, "ratios are to direct, and proxy/floor the proxy's to the floor\n\n")
	} else {
		fmt.Fprintf(w, "ratios are to direct\n\n")
	}

	hdr := []string{"workload", "metric"}
	for _, t := range targets {
		hdr = append(hdr, t.name)
		if t.name != "direct" {
			hdr = append(hdr, t.name+"/direct")
		}
		if t.name == "proxy" && floor {
			hdr = append(hdr, "proxy/floor")
		}
	}
	ratio := func(v, d float64, ok, dok bool) string {
		if ok && dok && d != 0 {
			return fmt.Sprintf("%.2f×", v/d)
		}
		return "–"
	}
	notApplicable := false
	rows := [][]string{hdr}
	for _, m := range res.metrics {
		row := []string{m.workload, m.label + " (" + m.unit + ")"}
		d, dok := res.median(m.key, "direct")
		f, fok := res.median(m.key, "floor")
		for _, t := range targets {
			v, ok := res.median(m.key, t.name)
			if !ok && !t.runs(m.wl) {
				row = append(row, "n/a")
				notApplicable = true
			} else {
				row = append(row, num(v, ok))
			}
			if t.name != "direct" {
				row = append(row, ratio(v, d, ok, dok))
			}
			if t.name == "proxy" && floor {
				row = append(row, ratio(v, f, ok, fok))
			}
		}
		rows = append(rows, row)
	}
	writeTable(w, rows)
	if floor {
		fmt.Fprintln(w, "\nfloor = a do-nothing Go stdio→HTTP forwarder (this binary re-executed: a line in, a POST, the body")
		fmt.Fprintln(w, "out as a line; no translation), i.e. the cost of the second process and its pipes;")
		fmt.Fprintln(w, "proxy − floor = what the proxy's own code costs.")
	}
	if notApplicable {
		fmt.Fprintln(w, "n/a = the workload does not apply: the task workload needs a client of the 2026 tasks extension.")
	}

	// The targets of the performance issue, where measured; with the floor,
	// a second figure against it where it tells what the proxy adds.
	var verdicts []string
	add := func(ok bool, format string, a ...any) {
		mark := "MET   "
		if !ok {
			mark = "MISSED"
		}
		verdicts = append(verdicts, mark+" "+fmt.Sprintf(format, a...))
	}
	get := func(key, t string) (float64, bool) { return res.median(key, t) }
	vsFloor := func(key string, format func(p, f float64) string) string {
		p, pok := get(key, "proxy")
		f, fok := get(key, "floor")
		if !pok || !fok || f == 0 {
			return ""
		}
		return "; " + format(p, f)
	}
	if p, ok := get("seq-p50", "proxy"); ok {
		d, _ := get("seq-p50", "direct")
		add(p <= 1.3*d, "sequential echo p50 ≤ 1.3× direct: %.0f µs vs %.0f µs (%.2f×)%s", p, d, p/d,
			vsFloor("seq-p50", func(p, f float64) string {
				return fmt.Sprintf("floor %.0f µs, proxy/floor %.2f×, proxy − floor %.0f µs", f, p/f, p-f)
			}))
	}
	if p, ok := get("seq-p99", "proxy"); ok {
		d, _ := get("seq-p99", "direct")
		add(p-d <= 1000, "added p99 ≤ 1 ms: %.0f µs − %.0f µs = %.0f µs%s", p, d, p-d,
			vsFloor("seq-p99", func(p, f float64) string { return fmt.Sprintf("floor %.0f µs, proxy − floor %.0f µs", f, p-f) }))
	}
	if p, ok := get("inflight-0064", "proxy"); ok {
		d, _ := get("inflight-0064", "direct")
		add(p >= 0.7*d, "throughput at 64 in flight ≥ 0.7× direct: %.0f vs %.0f calls/s (%.2f×)%s", p, d, p/d,
			vsFloor("inflight-0064", func(p, f float64) string {
				return fmt.Sprintf("floor %.0f calls/s, proxy/floor %.2f×", f, p/f)
			}))
	}
	if p, ok := get(fmt.Sprintf("size-%012d-b", 16<<20), "proxy"); ok {
		add(p <= 48, "16 MiB result, proxy peak RSS ≤ 3× payload (48 MiB): %.1f MiB (%.2f×)%s", p, p/16,
			vsFloor(fmt.Sprintf("size-%012d-b", 16<<20), func(p, f float64) string { return fmt.Sprintf("floor %.1f MiB (%.2f×)", f, f/16) }))
	}
	if p, ok := get("startup", "proxy"); ok {
		d, _ := get("startup", "direct")
		add(p <= 50+d, "start-up ≤ 50 ms + one discover round trip (%.2f ms): %.1f ms%s", d, p,
			vsFloor("startup", func(p, f float64) string { return fmt.Sprintf("floor %.1f ms", f) }))
	}
	if p, ok := get("seq-p50", "proxy+trace"); ok {
		d, _ := get("seq-p50", "proxy")
		add(p <= 1.1*d, "tracing on ≤ 10%% on sequential echo p50: %.0f µs vs %.0f µs (%+.1f%%)", p, d, 100*(p/d-1))
	}
	if len(verdicts) > 0 {
		fmt.Fprintln(w, "\ntargets:")
		for _, v := range verdicts {
			fmt.Fprintln(w, "  "+v)
		}
	}
}

func num(v float64, ok bool) string {
	switch {
	case !ok:
		return "–"
	case v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// writeTable prints rows as an aligned Markdown table.
func writeTable(w io.Writer, rows [][]string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i < 2 {
				b.WriteString(" " + c + pad + " |")
			} else {
				b.WriteString(" " + pad + c + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i := range sep {
		if i < 2 {
			sep[i] = strings.Repeat("-", width[i])
		} else {
			sep[i] = strings.Repeat("-", width[i]-1) + ":"
		}
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}
