package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// target is one way of reaching the upstream: a stdio bridge (argv) or the
// direct HTTP client (argv nil).
type target struct {
	name string
	argv []string
	// env: extra environment for the spawned bridge.
	env []string
	// legacy: the target answers as a 2025 server (every stdio bridge), so
	// results must carry no 2026-only members.
	legacy bool
	// tasks: the target can reach the task tool (a bridge that speaks 2026
	// to the server, or the direct client).
	tasks bool
	// proxy: this is mcp-tasks-proxy (or its second build), judged against
	// the targets.
	proxy bool
	// traceOf: for proxy+trace, the target it is the traced twin of.
	traceOf string
	// modern: a 2026-07-28 client speaks to the stdio bridge (relayed).
	modern bool
	// serve: argv runs the proxy in serve mode, reached over HTTP by a
	// legacy Streamable HTTP client (startServe) instead of over stdio.
	serve bool
	// vs: the targets this one's ratio columns compare it to, instead of
	// the floor.
	vs []string
	// profileDir: profile each session into a file of its own: the proxy
	// with --cpuprofile, the floor through floorProfileEnv.
	profileDir string
	sessions   atomic.Int64
	// tolerateLeaks: a 2025 result that carries 2026 members is counted in
	// leaks instead of failing the run. Only for --compare bridges: they
	// are measured here, not judged; the content is still checked.
	tolerateLeaks bool
	// verified counts the answers checked and found right.
	verified atomic.Int64
	// leaks counts 2025 results that carried 2026 members, and leakSample
	// keeps the first.
	leaks      atomic.Int64
	leakSample atomic.Pointer[string]
}

// runs tells whether workload wl applies to the target: the task workload
// needs a client of the 2026 tasks extension.
func (t *target) runs(wl string) bool {
	return wl != "task" || t.tasks
}

func (t *target) open(ctx context.Context, url, wl string) (session, time.Duration, error) {
	if t.argv == nil {
		return startDirect(ctx, url)
	}
	if t.serve {
		return startServe(ctx, t.argv)
	}
	argv, env := t.argv, t.env
	if t.profileDir != "" {
		f := filepath.Join(t.profileDir, fmt.Sprintf("%s-%s-%03d.pprof", t.name, wl, t.sessions.Add(1)))
		if t.proxy {
			argv = append(append([]string(nil), argv...), "--cpuprofile", f)
		} else {
			env = append(append([]string(nil), env...), floorProfileEnv+"="+f)
		}
	}
	return startStdio(ctx, argv, env, t.modern)
}

// metric is one row of the report; wl is the workload (--workloads) that
// measures it.
type metric struct {
	key, wl, workload, label, unit string
	higherBetter                   bool
	// group and x place the figure in a growth table: group "size",
	// "sse", "inflight" or "polls", x the size, level or count.
	group string
	x     float64
}

// results holds one value per round for each metric and target.
type results struct {
	mu      sync.Mutex
	metrics []metric
	vals    map[string]map[string][]float64
}

func (r *results) add(m metric, t string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.vals == nil {
		r.vals = map[string]map[string][]float64{}
	}
	if _, ok := r.vals[m.key]; !ok {
		r.vals[m.key] = map[string][]float64{}
		r.metrics = append(r.metrics, m)
	}
	r.vals[m.key][t] = append(r.vals[m.key][t], v)
}

// median of the per-round values; ok is false when there are none.
func (r *results) median(key, t string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.vals[key][t]
	if len(v) == 0 {
		return 0, false
	}
	return median(v), true
}

// writeCSV writes every per-round figure to path: one row per metric,
// target and round, in the report's order.
func (r *results) writeCSV(path string, targets []*target) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"metric", "workload", "unit", "target", "round", "value"})
	for _, m := range r.metrics {
		for _, t := range targets {
			for i, v := range r.vals[m.key][t.name] {
				w.Write([]string{m.key, m.workload + ": " + m.label, m.unit, t.name, strconv.Itoa(i + 1), strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// values of the per-round figures.
func (r *results) values(key, t string) []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.vals[key][t])
}

// ratios are a's figures over b's, round by round (both ran in the same
// round, close in time): their median, least and greatest.
func (r *results) ratios(key, a, b string) (med, lo, hi float64, ok bool) {
	va, vb := r.values(key, a), r.values(key, b)
	var q []float64
	for i := range min(len(va), len(vb)) {
		if vb[i] != 0 {
			q = append(q, va[i]/vb[i])
		}
	}
	if len(q) == 0 {
		return 0, 0, 0, false
	}
	return median(q), slices.Min(q), slices.Max(q), true
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// runner runs the workloads of one bench.
type runner struct {
	cfg config
	url string
	res *results
	log func(format string, args ...any)
}

// ---- verification ----

// checkText checks a result with one TextContent equal to want. A legacy
// target must not leak 2026 members (resultType, the serverInfo _meta).
func checkText(t *target, res []byte, want string) error {
	r := gjson.ParseBytes(res)
	got := r.Get("content.0.text")
	if got.Type != gjson.String || got.Str != want {
		return fmt.Errorf("%s: wrong content: want %.80q, got %.200s", t.name, want, res)
	}
	return checkShape(t, r)
}

// checkBlob checks a blob result of exactly want (compared byte for byte).
func checkBlob(t *target, res []byte, want []byte) error {
	r := gjson.ParseBytes(res)
	got := r.Get("content.0.text")
	if got.Type != gjson.String || len(got.Str) != len(want) || got.Str != string(want) {
		return fmt.Errorf("%s: wrong blob: want %d bytes, got %d (%.120s…)", t.name, len(want), len(got.Str), res)
	}
	return checkShape(t, r)
}

func checkShape(t *target, r gjson.Result) error {
	if !t.legacy {
		if r.Get("resultType").String() != "complete" {
			return fmt.Errorf("%s: a 2026 result without resultType complete: %.200s", t.name, r.Raw)
		}
		return nil
	}
	if r.Get("resultType").Exists() || r.Get(`_meta.io\.modelcontextprotocol/serverInfo`).Exists() {
		if !t.tolerateLeaks {
			return fmt.Errorf("%s: a 2025 result carries 2026 members: %.200s", t.name, r.Raw)
		}
		if t.leaks.Add(1) == 1 {
			sample := fmt.Sprintf("%.200s", r.Raw)
			t.leakSample.Store(&sample)
		}
	}
	return nil
}

// echo makes one echo call with a unique text and verifies the answer.
func echo(ctx context.Context, t *target, s session, tag string, i int64) error {
	want := "bench " + tag + " " + strconv.FormatInt(i, 10)
	res, err := s.call(ctx, "echo", `{"text":"`+want+`"}`)
	if err != nil {
		return fmt.Errorf("%s: echo: %w", t.name, err)
	}
	return t.checked(checkText(t, res, want))
}

// checked counts a verified answer.
func (t *target) checked(err error) error {
	if err == nil {
		t.verified.Add(1)
	}
	return err
}

func (r *runner) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.cfg.timeout)
}

// withSession opens a session, warms it up with a few echo calls (so the
// proxy has fetched its tools/list and the connection pool is primed), runs
// f and closes the session. A protocol violation the reader saw fails the
// workload even when every call returned.
func (r *runner) withSession(ctx context.Context, t *target, wl string, f func(s session) error) error {
	octx, cancel := r.callCtx(ctx)
	s, _, err := t.open(octx, r.url, wl)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	err = func() error {
		for i := range 5 {
			cctx, cancel := r.callCtx(ctx)
			err := echo(cctx, t, s, "warm-up", int64(i))
			cancel()
			if err != nil {
				return err
			}
		}
		return f(s)
	}()
	if ss, ok := s.(*stdioSession); ok && err == nil {
		err = ss.failure()
		if err != nil {
			err = fmt.Errorf("%s: %w", t.name, err)
		}
	}
	if cerr := s.close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// seq: n sequential echo calls; p50, p90 and p99 latency.
func (r *runner) seq(ctx context.Context, t *target, round int) error {
	return r.withSession(ctx, t, "seq", func(s session) error {
		lat := make([]time.Duration, 0, r.cfg.n)
		tag := "seq-" + strconv.Itoa(round)
		sm := r.startSched(t, s)
		for i := range r.cfg.n {
			cctx, cancel := r.callCtx(ctx)
			t0 := time.Now()
			err := echo(cctx, t, s, tag, int64(i))
			lat = append(lat, time.Since(t0))
			cancel()
			if err != nil {
				return err
			}
		}
		slices.Sort(lat)
		base := metric{key: "seq", wl: "seq", workload: "sequential echo"}
		for _, p := range []struct {
			name string
			q    float64
		}{{"p50", 0.50}, {"p90", 0.90}, {"p99", 0.99}} {
			r.res.add(metric{key: base.key + "-" + p.name, wl: base.wl, workload: base.workload, label: p.name, unit: "µs"}, t.name, us(percentile(lat, p.q)))
		}
		sm.stop(base, int64(r.cfg.n))
		return nil
	})
}

// inflight: c workers keep c echo calls in flight for max(calls, 4c)
// calls; throughput in calls/s.
func (r *runner) inflight(ctx context.Context, t *target, c, round int) error {
	return r.withSession(ctx, t, "inflight", func(s session) error {
		total := int64(max(r.cfg.calls, 4*c))
		var next atomic.Int64
		var firstErr error
		var once sync.Once
		tag := "inflight-" + strconv.Itoa(c) + "-" + strconv.Itoa(round)
		var wg sync.WaitGroup
		sm := r.startSched(t, s)
		t0 := time.Now()
		for range c {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= total {
						return
					}
					cctx, cancel := r.callCtx(ctx)
					err := echo(cctx, t, s, tag, i)
					cancel()
					if err != nil {
						once.Do(func() { firstErr = err })
						next.Store(total)
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(t0)
		if firstErr != nil {
			return firstErr
		}
		m := metric{key: fmt.Sprintf("inflight-%04d", c), wl: "inflight", workload: "echo, " + strconv.Itoa(c) + " in flight", label: "throughput", unit: "calls/s", higherBetter: true, group: "inflight", x: float64(c)}
		r.res.add(m, t.name, float64(total)/elapsed.Seconds())
		sm.stop(m, total)
		return nil
	})
}

// jsonName names the JSON results of the size workload.
func jsonName(cfg config) string {
	if cfg.chunked {
		return "JSON, chunked"
	}
	return "JSON"
}

// size: calls of the blob tool returning size bytes, as JSON (chunked with
// --chunked) or as one SSE event; median latency and the bridge's peak RSS
// (VmHWM) over the session.
func (r *runner) size(ctx context.Context, t *target, size int, sse bool, want []byte) error {
	return r.withSession(ctx, t, "size", func(s session) error {
		group, enc, how := "size", jsonName(r.cfg), ""
		switch {
		case sse:
			group, enc, how = "sse", "SSE", `,"sse":true`
		case r.cfg.chunked:
			how = `,"chunked":true`
		}
		args := `{"bytes":` + strconv.Itoa(size) + how + `}`
		lat := make([]float64, 0, r.cfg.sizeCalls)
		for i := range r.cfg.sizeCalls + 1 {
			cctx, cancel := r.callCtx(ctx)
			t0 := time.Now()
			res, err := s.call(cctx, "blob", args)
			d := time.Since(t0)
			cancel()
			if err != nil {
				return fmt.Errorf("%s: blob %d %s: %w", t.name, size, enc, err)
			}
			if err := t.checked(checkBlob(t, res, want)); err != nil {
				return err
			}
			if i > 0 { // the first call is a warm-up
				lat = append(lat, ms(d))
			}
		}
		wl := "result " + sizeName(size) + " " + enc
		key := fmt.Sprintf("%s-%012d", group, size)
		r.res.add(metric{key: key + "-a", wl: "size", workload: wl, label: "latency p50", unit: "ms", group: group, x: float64(size)}, t.name, median(lat))
		if pid := s.pid(); pid != 0 {
			if hwm, err := treeHWM(pid); err == nil {
				r.res.add(metric{key: key + "-b", wl: "size", workload: wl, label: "bridge peak RSS", unit: "MiB", group: group, x: float64(size)}, t.name, float64(hwm)/(1<<20))
			} else {
				r.log("%s: peak RSS: %v", t.name, err)
			}
		}
		return nil
	})
}

// startup: spawn (or a fresh HTTP client) to the initialize answer (or the
// server/discover answer), k times; the median.
func (r *runner) startup(ctx context.Context, t *target) error {
	var d []float64
	for range r.cfg.startups {
		cctx, cancel := r.callCtx(ctx)
		s, took, err := t.open(cctx, r.url, "startup")
		cancel()
		if err != nil {
			return fmt.Errorf("%s: start-up: %w", t.name, err)
		}
		t.verified.Add(1) // open checked the initialize (or discover) answer
		d = append(d, ms(took))
		if err := s.close(); err != nil {
			return err
		}
	}
	r.res.add(metric{key: "startup", wl: "startup", workload: "start-up", label: "to initialize answer", unit: "ms"}, t.name, median(d))
	return nil
}

// task: a tools/call the server answers with a task that completes on the
// polls-th tasks/get; the time beyond the poll intervals.
func (r *runner) task(ctx context.Context, t *target, round, polls int) error {
	return r.withSession(ctx, t, "task", func(s session) error {
		wait := time.Duration(polls*r.cfg.pollMS) * time.Millisecond
		var total, added []float64
		for i := range r.cfg.taskCalls {
			nonce := fmt.Sprintf("%d-%d-%d", round, polls, i)
			cctx, cancel := r.callCtx(ctx)
			t0 := time.Now()
			res, err := s.call(cctx, "task", `{"poll_ms":`+strconv.Itoa(r.cfg.pollMS)+`,"polls":`+strconv.Itoa(polls)+`,"nonce":"`+nonce+`"}`)
			d := time.Since(t0)
			cancel()
			if err != nil {
				return fmt.Errorf("%s: task: %w", t.name, err)
			}
			if err := t.checked(checkText(t, res, "task done "+nonce)); err != nil {
				return err
			}
			total = append(total, ms(d))
			added = append(added, ms(d-wait))
		}
		wl := fmt.Sprintf("task followed (%d× poll %d ms)", polls, r.cfg.pollMS)
		key := fmt.Sprintf("task-%04d", polls)
		r.res.add(metric{key: key + "-a", wl: "task", workload: wl, label: "latency", unit: "ms", group: "polls", x: float64(polls)}, t.name, median(total))
		r.res.add(metric{key: key + "-b", wl: "task", workload: wl, label: "added beyond the polls", unit: "ms", group: "polls", x: float64(polls)}, t.name, median(added))
		return nil
	})
}

// procTree lists pid and its descendants (a bridge started through npx is
// several processes).
func procTree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// treeHWM sums VmHWM over pid and its descendants.
func treeHWM(pid int) (int64, error) {
	var total int64
	for _, p := range procTree(pid) {
		v, err := vmHWM(p)
		if err != nil && p == pid {
			return 0, err
		}
		total += v
	}
	return total, nil
}

// schedStat is what the kernel's scheduler accounted to a process tree,
// summed over its threads (/proc/PID/task/TID/schedstat).
type schedStat struct {
	cpu    time.Duration // on a CPU
	wait   time.Duration // runnable, waiting for a CPU (wake-up latency)
	slices int64         // times put on a CPU
	// From /proc/PID/stat and /proc/PID/io, per process (exited threads
	// included): user and system CPU time in clock ticks, system time
	// alone, and read and write system calls.
	ticks    int64
	sysTicks int64
	syscalls int64
}

func (a schedStat) sub(b schedStat) schedStat {
	return schedStat{cpu: a.cpu - b.cpu, wait: a.wait - b.wait, slices: a.slices - b.slices,
		ticks: a.ticks - b.ticks, sysTicks: a.sysTicks - b.sysTicks, syscalls: a.syscalls - b.syscalls}
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// procTimes reads utime+stime of pid from /proc/PID/stat, and stime alone
// (the kernel's share), in clock ticks.
func procTimes(pid int) (total, sys int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	// After "pid (comm)": state is field 3, utime 14 and stime 15.
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return u + st, st, errors.Join(err1, err2)
}

// procSyscalls reads syscr+syscw of pid from /proc/PID/io.
func procSyscalls(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, err
	}
	var n int64
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && (k == "syscr" || k == "syscw") {
			c, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, err
			}
			n += c
		}
	}
	return n, nil
}

// treeSched sums schedstat over every thread of pid and its descendants.
// Threads that exit between two samples take their share with them; Go
// keeps its threads, and so does Node.
func treeSched(pid int) (schedStat, error) {
	var st schedStat
	for _, p := range procTree(pid) {
		ticks, sys, err := procTimes(p)
		if err != nil {
			if p == pid {
				return st, err
			}
			continue
		}
		st.ticks += ticks
		st.sysTicks += sys
		if n, err := procSyscalls(p); err == nil {
			st.syscalls += n
		}
		dir := filepath.Join("/proc", strconv.Itoa(p), "task")
		ents, err := os.ReadDir(dir)
		if err != nil {
			if p == pid {
				return st, err
			}
			continue
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat"))
			if err != nil {
				continue // the thread ended
			}
			f := strings.Fields(string(b))
			if len(f) < 3 {
				return st, fmt.Errorf("%s/%s/schedstat: %q", dir, e.Name(), b)
			}
			cpu, err1 := strconv.ParseInt(f[0], 10, 64)
			wait, err2 := strconv.ParseInt(f[1], 10, 64)
			n, err3 := strconv.ParseInt(f[2], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				return st, fmt.Errorf("%s/%s/schedstat: %w", dir, e.Name(), err)
			}
			st.cpu += time.Duration(cpu)
			st.wait += time.Duration(wait)
			st.slices += n
		}
	}
	return st, nil
}

// schedMeter measures a bridge's scheduler accounting over a stretch of
// calls. For a direct session (no bridge) or where /proc has no schedstat,
// it records nothing.
type schedMeter struct {
	r      *runner
	t      *target
	pid    int
	before schedStat
	ok     bool
}

func (r *runner) startSched(t *target, s session) *schedMeter {
	m := &schedMeter{r: r, t: t, pid: s.pid()}
	if m.pid == 0 {
		return m
	}
	st, err := treeSched(m.pid)
	if err != nil {
		r.log("%s: schedstat: %v", t.name, err)
		return m
	}
	m.before, m.ok = st, true
	return m
}

// stop adds the bridge's CPU time (from /proc/PID/stat and from
// schedstat), read and write system calls, run-queue wait and times
// scheduled per call, as rows of base's workload.
func (m *schedMeter) stop(base metric, calls int64) {
	if !m.ok || calls <= 0 {
		return
	}
	after, err := treeSched(m.pid)
	if err != nil {
		m.r.log("%s: schedstat: %v", m.t.name, err)
		return
	}
	d, n := after.sub(m.before), float64(calls)
	for _, row := range []struct {
		suffix, label, unit string
		v                   float64
	}{
		{"-stat", "bridge CPU per call, utime+stime", "µs", us(time.Duration(d.ticks)*clockTick) / n},
		{"-stime", "bridge system CPU per call, stime", "µs", us(time.Duration(d.sysTicks)*clockTick) / n},
		{"-cpu", "bridge CPU per call, schedstat", "µs", us(d.cpu) / n},
		{"-sys", "bridge read+write syscalls per call", "count", float64(d.syscalls) / n},
		{"-wait", "bridge run-queue wait per call", "µs", us(d.wait) / n},
		{"-slices", "bridge times scheduled per call", "count", float64(d.slices) / n},
	} {
		m.r.res.add(metric{key: base.key + row.suffix, wl: base.wl, workload: base.workload, label: row.label, unit: row.unit, group: base.group, x: base.x}, m.t.name, row.v)
	}
}

// vmHWM reads the peak resident set size of pid, in bytes.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + " B"
}

// parseSize reads 1024, 1KiB, 1K, 16MiB, 16M (binary units).
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if v, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = v, u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(t))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q (try 1KiB, 16MiB)", s)
	}
	return n * mult, nil
}
