// Command mcp-tasks-bench measures mcp-tasks-proxy end to end, as users run
// it: a legacy (2025-11-25) stdio client, the bridge in a process of its
// own, and a modern (2026-07-28) server in another, over loopback HTTP.
//
// It starts a small MCP server (upstream.go) in a process of its own (this
// binary re-executed), then, for each of several rounds, runs every
// workload against every target in turn, in an order that rotates:
//
//   - direct: a 2026-07-28 client POSTing to the server from the bench
//     process: no bridge at all;
//   - floor: this binary re-executed as the smallest correct stdio bridge
//     (floor.go): what any bridge pays; the targets are stated against it;
//   - proxy: mcp-tasks-proxy spawned with --url, --no-state and --log-level
//     error, driven as a 2025-11-25 stdio client speaks (NDJSON);
//   - proxy-b (--proxy-b): a second proxy binary, to compare two builds;
//   - proxy+trace (--trace): the proxy with --trace FILE;
//   - compare (--compare CMD): any other stdio bridge, such as mcp-remote.
//
// Every answer is verified (its id, its content, its size, the absence of
// 2026 members in a 2025 result); one wrong or missing answer fails the run
// with exit status 1. The report (stdout) gives the median over rounds of
// each figure, the ratios to the floor with their spread over rounds, the
// targets, and the growth tables; --plot-dir writes the growth charts as
// SVG. Progress and diagnostics go to stderr.
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
	"strconv"
	"strings"
	"time"
)

const usage = `mcp-tasks-bench measures mcp-tasks-proxy end to end, as users run it: a legacy
(2025-11-25) stdio client, the bridge in its own process, and a modern
(2026-07-28) server in another process on loopback HTTP. The same verified calls
go through the proxy, through the smallest correct bridge (floor) and straight
to the server (direct), interleaved round by round.

Usage:
  mcp-tasks-bench [flags]
  mcp-tasks-bench ratios [flags] FILE.csv...   (ratios over runs; see ratios --help)

Examples:
  # Build the proxy from this module and run every workload (a few minutes)
  go run ./cmd/mcp-tasks-bench

  # A quick look: 2 rounds, fewer calls
  go run ./cmd/mcp-tasks-bench --rounds 2 --n 300 --calls 500

  # Two builds of the proxy side by side, in the same interleaved run
  go run ./cmd/mcp-tasks-bench --proxy /tmp/proxy-after --proxy-name after \
      --proxy-b /tmp/proxy-before --proxy-b-name before

  # Serve mode: a legacy HTTP client through the proxy's HTTP front,
  # against direct and the stdio proxy
  go run ./cmd/mcp-tasks-bench --serve --workloads startup,seq,inflight

  # A given binary, with the cost of tracing
  go run ./cmd/mcp-tasks-bench --proxy ./mcp-tasks-proxy --trace

  # How cost grows with result size, requests in flight and task polls,
  # as tables and SVG charts
  go run ./cmd/mcp-tasks-bench --rounds 3 --workloads size,inflight,task \
      --sizes 1KiB,16KiB,256KiB,1MiB,4MiB,16MiB,64MiB --sse-sizes 16MiB \
      --inflight 1,4,16,64,256 --polls 1,2,4,8 --plot-dir docs/bench

  # Keep every round's figures, then pool the runs: medians of per-round
  # ratios, and how far the run medians scatter
  go run ./cmd/mcp-tasks-bench --trace --workloads inflight --inflight 64 --rounds-csv /tmp/run1.csv
  go run ./cmd/mcp-tasks-bench ratios --pair proxy+trace/proxy --metric '64 in flight' /tmp/run*.csv

  # CPU profiles of every proxy and floor session, for go tool pprof
  go run ./cmd/mcp-tasks-bench --workloads inflight --inflight 64 --proxy-cpuprofile /tmp/prof

  # Against another stdio bridge ({url} is the server's URL); mcp-remote
  # speaks 2026-07-28 to the server with --protocol auto
  go run ./cmd/mcp-tasks-bench --compare 'npx -y mcp-remote {url} --protocol auto' --compare-name mcp-remote

Targets:
  direct       a 2026-07-28 client POSTing to the server from the bench's
               process: no bridge, no stdio
  floor        this binary re-executed as the smallest correct stdio bridge:
               it answers initialize itself, turns each line into a POST with
               the _meta envelope and the MCP headers on a kept-alive client,
               in a goroutine per request that strips the 2026 members of the
               result, follows a task, and writes the answer as one line
               under a mutex. What any bridge pays; the targets are stated
               against it
  proxy        mcp-tasks-proxy (--proxy, or built from this module)
  proxy-b      a second proxy binary (--proxy-b), to compare two builds
  proxy+trace  the proxy with --trace FILE (--trace)
  serve        the proxy in serve mode, reached by a 2025-11-25 Streamable
               HTTP client: initialize, then POSTs with Mcp-Session-Id, and
               DELETE at the end (--serve)
  compare      another stdio bridge (--compare)

The server runs in a process of its own (this binary re-executed), as users'
servers do; --server inprocess keeps it in the bench's process, as the bench
did before (direct then crosses no process boundary at all).

Every answer is verified: its id, its content byte for byte, and for a 2025
result the absence of 2026-only members (resultType, the serverInfo _meta).
A wrong or missing answer fails the run (exit status 1). A --compare bridge
that leaks 2026 members into otherwise right answers is measured anyway; the
report counts those answers and quotes the first.

Workloads (--workloads, comma-separated):
  seq       sequential echo calls: p50, p90, p99 latency
  inflight  echo calls with C in flight (--inflight): throughput
            (both also give, per call, the bridge's CPU time from
            /proc/PID/stat (utime+stime, and stime alone: the kernel's
            share), its read and write system calls from /proc/PID/io, and
            from /proc/PID/task/*/schedstat its threads' run-queue wait and
            how often they were put on a CPU)
  size      results of each --sizes (JSON) and --sse-sizes (one SSE event):
            latency, and the bridge's peak RSS (VmHWM)
  startup   spawn to the initialize answer (direct: a fresh server/discover)
  task      a call the server answers with a task that completes on the
            Nth tasks/get (--polls), polled every --poll-ms: the time beyond
            the poll intervals

Flags:
`

type config struct {
	proxy       string
	proxyName   string
	proxyArgs   []string
	proxyB      string
	proxyBName  string
	compare     string
	compareName string
	trace       bool
	serve       bool
	modern      bool
	floor       bool
	inProcess   bool
	rounds      int
	n           int
	calls       int
	inflight    []int
	sizes       []int
	sseSizes    []int
	chunked     bool
	sizeCalls   int
	startups    int
	taskCalls   int
	pollMS      int
	polls       []int
	timeout     time.Duration
	workloads   map[string]bool
	keep        bool
	plotDir     string
	roundsCSV   string
	profileDir  string
}

var allWorkloads = []string{"seq", "inflight", "size", "startup", "task"}

func main() {
	if url := os.Getenv(floorEnv); url != "" {
		os.Exit(floorMain(url))
	}
	if os.Getenv(serverEnv) != "" {
		os.Exit(serverMain())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// newFlagSet is a flag set that prints its usage text, then its flags, to
// stderr, and returns errors rather than exiting.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// flagStatus is the exit status after a command line that did not parse:
// 0 after --help (the flag set printed the usage), else 2, with the error
// on stderr.
func flagStatus(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "mcp-tasks-bench:", err)
	return 2
}

// parseFlags parses the command line. It runs past 90 lines because it is
// the bench's flag list, one line a flag, followed by the checks of their
// values: split, the list would be read in pieces.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := newFlagSet("mcp-tasks-bench", usage, stderr)
	fs.StringVar(&cfg.proxy, "proxy", "", "the mcp-tasks-proxy binary (default: go build it from the module in the current directory)")
	fs.StringVar(&cfg.proxyName, "proxy-name", "proxy", "the name of the --proxy target in the report")
	fs.Func("proxy-arg", "an extra argument for the proxy (and --proxy-b), such as --max-in-flight=256; repeatable", func(s string) error {
		cfg.proxyArgs = append(cfg.proxyArgs, s)
		return nil
	})
	fs.StringVar(&cfg.proxyB, "proxy-b", "", "a second mcp-tasks-proxy binary, run and judged like the first in the same interleaved run (before/after)")
	fs.StringVar(&cfg.proxyBName, "proxy-b-name", "proxy-b", "the name of the --proxy-b target in the report")
	fs.StringVar(&cfg.compare, "compare", "", "another stdio bridge command to run through the same workloads, run with sh -c; {url} is replaced by the server's URL")
	fs.StringVar(&cfg.compareName, "compare-name", "compare", "the name of the --compare target in the report")
	fs.BoolVar(&cfg.floor, "floor", true, "also run the floor target: this binary re-executed as the smallest correct stdio bridge")
	fs.BoolVar(&cfg.trace, "trace", false, "also run the proxy with --trace FILE (a temporary file), as target proxy+trace")
	fs.BoolVar(&cfg.modern, "modern-client", false, "also run a 2026-07-28 stdio client through the proxy (relayed to the 2026 server), as target proxy/2026-client; its ratios are to direct (the same client over HTTP) and to the stdio proxy with its 2025 client")
	fs.BoolVar(&cfg.serve, "serve", false, "also run the proxy in serve mode (mcp-tasks-proxy serve, one process per session), reached by a 2025-11-25 Streamable HTTP client, as target serve; its ratios are to direct and to the stdio proxy")
	server := fs.String("server", "process", "where the bench server runs: process (its own, as users run) or inprocess (the bench's)")
	fs.IntVar(&cfg.rounds, "rounds", 5, "rounds; each runs every workload on every target, interleaved")
	fs.IntVar(&cfg.n, "n", 1000, "sequential echo calls per round (seq)")
	fs.IntVar(&cfg.calls, "calls", 3000, "echo calls per round and level of concurrency (inflight; at least 4× the level)")
	inflight := fs.String("inflight", "1,8,64,256", "levels of concurrency (inflight)")
	sizes := fs.String("sizes", "1KiB,1MiB,16MiB", "result sizes, answered as JSON (size)")
	sseSizes := fs.String("sse-sizes", "16MiB", "result sizes answered as one SSE event (size); none for none")
	fs.BoolVar(&cfg.chunked, "chunked", false, "send the JSON results (--sizes) without a Content-Length, chunked, as a server that streams its JSON encoder does (size)")
	fs.IntVar(&cfg.sizeCalls, "size-calls", 5, "timed calls per size per round, after one warm-up call (size)")
	fs.IntVar(&cfg.startups, "startups", 5, "spawns per round (startup)")
	fs.IntVar(&cfg.taskCalls, "task-calls", 3, "task calls per round and poll count (task)")
	fs.IntVar(&cfg.pollMS, "poll-ms", 100, "the task's pollIntervalMs (task); the proxy clamps it to at least 100")
	polls := fs.String("polls", "1", "poll counts: the task completes on the Nth tasks/get (task)")
	fs.DurationVar(&cfg.timeout, "timeout", time.Minute, "the longest wait for any one answer")
	wl := fs.String("workloads", strings.Join(allWorkloads, ","), "workloads to run")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (built binary, trace files)")
	fs.StringVar(&cfg.roundsCSV, "rounds-csv", "", "write every figure of every round as CSV (metric, workload, unit, target, round, value) into this file, for a closer look at the spread than the report's medians")
	fs.StringVar(&cfg.plotDir, "plot-dir", "", "write the growth charts (size, inflight, task polls) as SVG files into this directory")
	fs.StringVar(&cfg.profileDir, "proxy-cpuprofile", "", "write a CPU profile of each proxy and floor session, DIR/TARGET-WORKLOAD-N.pprof (the proxy's --cpuprofile; profiling slows both: for go tool pprof, not for the figures)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	switch *server {
	case "process":
	case "inprocess":
		cfg.inProcess = true
	default:
		return cfg, fmt.Errorf("--server %q: want process or inprocess", *server)
	}
	var err error
	if cfg.inflight, err = intList(*inflight, strconv.Atoi); err != nil {
		return cfg, fmt.Errorf("--inflight: %w", err)
	}
	if cfg.sizes, err = intList(*sizes, parseSize); err != nil {
		return cfg, fmt.Errorf("--sizes: %w", err)
	}
	if *sseSizes != "none" && *sseSizes != "" {
		if cfg.sseSizes, err = intList(*sseSizes, parseSize); err != nil {
			return cfg, fmt.Errorf("--sse-sizes: %w", err)
		}
	}
	if cfg.polls, err = intList(*polls, strconv.Atoi); err != nil {
		return cfg, fmt.Errorf("--polls: %w", err)
	}
	cfg.workloads = map[string]bool{}
	for _, w := range strings.Split(*wl, ",") {
		w = strings.TrimSpace(w)
		if !contains(allWorkloads, w) {
			return cfg, fmt.Errorf("--workloads: unknown workload %q (have %s)", w, strings.Join(allWorkloads, ", "))
		}
		cfg.workloads[w] = true
	}
	names := map[string]string{"direct": "", "floor": "", "proxy+trace": ""}
	for _, n := range []struct{ flag, name string }{{"--proxy-name", cfg.proxyName}, {"--proxy-b-name", cfg.proxyBName}, {"--compare-name", cfg.compareName}} {
		if _, taken := names[n.name]; taken || n.name == "" || strings.ContainsAny(n.name, "|/ ") {
			return cfg, fmt.Errorf("%s %q: the name is empty, has | / or a space, or is another target's", n.flag, n.name)
		}
		names[n.name] = n.flag
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
	for _, p := range cfg.polls {
		if p < 1 {
			return cfg, errors.New("--polls counts must be at least 1")
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

// absProxy returns path made absolute, or builds the proxy into dir.
func absProxy(ctx context.Context, path, dir string, logf func(string, ...any)) (string, error) {
	if path != "" {
		return filepath.Abs(path)
	}
	path = filepath.Join(dir, "mcp-tasks-proxy")
	logf("building mcp-tasks-proxy into %s", dir)
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	// As releases are built (.goreleaser.yaml): static, without cgo. A
	// build with cgo links libc dynamically, and its start-up pays the
	// dynamic loader (0.7 ms more here).
	cmd := exec.CommandContext(bctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", path, "github.com/mcp-tasks-proxy/mcp-tasks-proxy/cmd/mcp-tasks-proxy")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build failed (run from inside the module, or pass --proxy PATH): %v\n%s", err, out)
	}
	return path, nil
}

// run is the whole tool; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "ratios" {
		return runRatios(args[1:], stdout, stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return flagStatus(err, stderr)
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
	if cfg.profileDir != "" {
		if err := os.MkdirAll(cfg.profileDir, 0o755); err != nil {
			logf("--proxy-cpuprofile: %v", err)
			return 1
		}
		if cfg.profileDir, err = filepath.Abs(cfg.profileDir); err != nil {
			logf("--proxy-cpuprofile: %v", err)
			return 1
		}
	}

	proxy, err := absProxy(ctx, cfg.proxy, tmp, logf)
	if err != nil {
		logf("%v", err)
		return 1
	}
	var proxyB string
	if cfg.proxyB != "" {
		if proxyB, err = filepath.Abs(cfg.proxyB); err != nil {
			logf("%v", err)
			return 1
		}
	}

	srv, err := startServer(cfg.inProcess, 30*time.Second)
	if err != nil {
		logf("%v", err)
		return 1
	}
	defer srv.close()

	targets, err := makeTargets(cfg, srv.url, proxy, proxyB, tmp)
	if err != nil {
		logf("%v", err)
		return 1
	}
	res := &results{}
	start := time.Now()
	if err := runRounds(ctx, cfg, &runner{cfg: cfg, url: srv.url, res: res, log: logf}, targets); err != nil {
		logf("FAILED: %v", err)
		return 1
	}
	logf("done in %s", time.Since(start).Round(time.Millisecond))
	rep := &reporter{cfg: cfg, targets: targets, res: res}
	rep.write(stdout, srv, proxy, proxyB)
	if cfg.roundsCSV != "" {
		if err := res.writeCSV(cfg.roundsCSV, targets); err != nil {
			logf("--rounds-csv: %v", err)
			return 1
		}
		logf("wrote %s", cfg.roundsCSV)
	}
	if cfg.plotDir != "" {
		files, err := rep.plots(cfg.plotDir)
		if err != nil {
			logf("--plot-dir: %v", err)
			return 1
		}
		for _, f := range files {
			logf("wrote %s", f)
		}
	}
	return 0
}

// makeTargets lists the targets of the run, in the order of the report:
// direct, the floor, the proxy (and its second build, its traced twin, its
// serve mode), and a --compare bridge.
func makeTargets(cfg config, url, proxy, proxyB, tmp string) ([]*target, error) {
	proxyArgv := func(bin string) []string {
		return append([]string{bin, "--url", url, "--no-state", "--log-level", "error"}, cfg.proxyArgs...)
	}
	targets := []*target{{name: "direct", tasks: true}}
	if cfg.floor {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("the floor target re-executes this binary: %w", err)
		}
		targets = append(targets, &target{name: "floor", argv: []string{exe}, env: []string{floorEnv + "=" + url}, legacy: true, tasks: true, profileDir: cfg.profileDir})
	}
	targets = append(targets, &target{name: cfg.proxyName, argv: proxyArgv(proxy), legacy: true, tasks: true, proxy: true, profileDir: cfg.profileDir})
	if proxyB != "" {
		targets = append(targets, &target{name: cfg.proxyBName, argv: proxyArgv(proxyB), legacy: true, tasks: true, proxy: true, profileDir: cfg.profileDir})
	}
	if cfg.trace {
		argv := append(proxyArgv(proxy), "--trace", filepath.Join(tmp, "proxy.trace"))
		targets = append(targets, &target{name: "proxy+trace", argv: argv, legacy: true, tasks: true, proxy: true, traceOf: cfg.proxyName, profileDir: cfg.profileDir})
	}
	if cfg.modern {
		targets = append(targets, &target{name: "proxy/2026-client", argv: proxyArgv(proxy), modern: true, proxy: true, vs: []string{"direct", cfg.proxyName}})
	}
	if cfg.serve {
		argv := append([]string{proxy, "serve", "--listen", "127.0.0.1:0", "--url", url, "--no-state", "--log-level", "error"}, cfg.proxyArgs...)
		targets = append(targets, &target{name: "serve", argv: argv, legacy: true, tasks: true, serve: true, vs: []string{"direct", cfg.proxyName}})
	}
	if cfg.compare != "" {
		cmd := strings.ReplaceAll(cfg.compare, "{url}", url)
		targets = append(targets, &target{name: cfg.compareName, argv: []string{"/bin/sh", "-c", "exec " + cmd}, legacy: true, tolerateLeaks: true})
	}

	return targets, nil
}

// runRounds runs every workload on every target, round by round: within a
// round, each level or size runs on every target before the next, so that
// the targets of one comparison run close in time.
func runRounds(ctx context.Context, cfg config, r *runner, targets []*target) error {
	payloads := map[int][]byte{}
	for _, s := range append(append([]int(nil), cfg.sizes...), cfg.sseSizes...) {
		if payloads[s] == nil {
			payloads[s] = payload(s)
		}
	}

	for round := range cfg.rounds {
		r.log("round %d of %d", round+1, cfg.rounds)
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
				if !t.runs(name) {
					continue
				}
				if err := f(t); err != nil {
					return err
				}
			}
			return nil
		}
		// Within a workload, each level or size runs on every target before
		// the next, so that the targets of one comparison are close in time.
		var steps []func() error
		steps = append(steps, func() error { return each("startup", func(t *target) error { return r.startup(ctx, t) }) })
		steps = append(steps, func() error { return each("seq", func(t *target) error { return r.seq(ctx, t, round) }) })
		for _, c := range cfg.inflight {
			steps = append(steps, func() error { return each("inflight", func(t *target) error { return r.inflight(ctx, t, c, round) }) })
		}
		for _, sz := range cfg.sizes {
			steps = append(steps, func() error {
				return each("size", func(t *target) error { return r.size(ctx, t, sz, false, payloads[sz]) })
			})
		}
		for _, sz := range cfg.sseSizes {
			steps = append(steps, func() error {
				return each("size", func(t *target) error { return r.size(ctx, t, sz, true, payloads[sz]) })
			})
		}
		for _, p := range cfg.polls {
			steps = append(steps, func() error { return each("task", func(t *target) error { return r.task(ctx, t, round, p) }) })
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
	}
	return nil
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

// writeTable prints rows as an aligned Markdown table, its first two
// columns left-aligned.
func writeTable(w io.Writer, rows [][]string) { writeTableN(w, rows, 2) }

// writeTableN prints rows as an aligned Markdown table, its first left
// columns left-aligned and the others right-aligned.
func writeTableN(w io.Writer, rows [][]string, left int) {
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
			if i < left {
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
		if i < left {
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
