package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// reporter prints what a run measured: the table of every figure, the
// targets with their verdicts, and the growth tables.
type reporter struct {
	cfg     config
	targets []*target
	res     *results
}

func (rp *reporter) has(name string) bool {
	for _, t := range rp.targets {
		if t.name == name {
			return true
		}
	}
	return false
}

// base is what ratios are taken to: the floor when it ran, else direct.
func (rp *reporter) base() string {
	if rp.has("floor") {
		return "floor"
	}
	return "direct"
}

// proxies are the targets judged against the performance targets.
func (rp *reporter) proxies() []*target {
	var out []*target
	for _, t := range rp.targets {
		if t.proxy && t.traceOf == "" {
			out = append(out, t)
		}
	}
	return out
}

// ratioCols are the ratio columns that follow t's column.
func (rp *reporter) ratioCols(t *target) [][2]string {
	base := rp.base()
	var cols [][2]string
	switch {
	case t.name == "direct" || t.name == base:
	case t.traceOf != "":
		cols = append(cols, [2]string{t.name, t.traceOf})
	case len(t.vs) > 0:
		for _, v := range t.vs {
			cols = append(cols, [2]string{t.name, v})
		}
	default:
		cols = append(cols, [2]string{t.name, base})
	}
	ps := rp.proxies()
	if len(ps) > 1 && t == ps[len(ps)-1] {
		for _, p := range ps[:len(ps)-1] {
			if !slices.Contains(cols, [2]string{t.name, p.name}) {
				cols = append(cols, [2]string{t.name, p.name})
			}
		}
	}
	return cols
}

func (rp *reporter) write(w io.Writer, srv *server, proxy, proxyB string) {
	cfg, res := rp.cfg, rp.res
	var counts []string
	for _, t := range rp.targets {
		counts = append(counts, fmt.Sprintf("%d %s", t.verified.Load(), t.name))
	}
	where := "in a process of its own"
	if cfg.inProcess {
		where = "in the bench's process (--server inprocess)"
	}
	fmt.Fprintf(w, "mcp-tasks-bench: %d rounds, %d CPUs (GOMAXPROCS %d), %s/%s, %s\n", cfg.rounds, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(w, "server %s, %s; %s %s", srv.url, where, cfg.proxyName, proxy)
	if proxyB != "" {
		fmt.Fprintf(w, "; %s %s", cfg.proxyBName, proxyB)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "every answer verified (%s); figures are medians over rounds\n", strings.Join(counts, ", "))
	for _, t := range rp.targets {
		if n := t.leaks.Load(); n > 0 {
			fmt.Fprintf(w, "%s: %d of those answers are 2025 results that carry 2026-only members (counted, not failed, for a --compare bridge), first: %s\n",
				t.name, n, *t.leakSample.Load())
		}
	}
	fmt.Fprintf(w, "ratios are medians of the per-round ratios (the targets of one round ran close in time); \"rounds\" is their least–greatest\n\n")

	hdr := []string{"workload", "metric"}
	var spread [2]string
	if ps := rp.proxies(); len(ps) > 0 && rp.base() != ps[0].name {
		spread = [2]string{ps[0].name, rp.base()}
	}
	for _, t := range rp.targets {
		hdr = append(hdr, t.name)
		for _, c := range rp.ratioCols(t) {
			hdr = append(hdr, c[0]+"/"+c[1])
			if c == spread {
				hdr = append(hdr, "rounds")
			}
		}
	}
	rows := [][]string{hdr}
	notApplicable := false
	for _, m := range res.metrics {
		row := []string{m.workload, m.label + " (" + m.unit + ")"}
		for _, t := range rp.targets {
			v, ok := res.median(m.key, t.name)
			if !ok && !t.runs(m.wl) {
				row = append(row, "n/a")
				notApplicable = true
			} else {
				row = append(row, num(v, ok))
			}
			for _, c := range rp.ratioCols(t) {
				q, lo, hi, ok := res.ratios(m.key, c[0], c[1])
				row = append(row, ratioText(q, ok))
				if c == spread {
					if ok {
						row = append(row, fmt.Sprintf("%.2f–%.2f", lo, hi))
					} else {
						row = append(row, "–")
					}
				}
			}
		}
		rows = append(rows, row)
	}
	writeTable(w, rows)
	if rp.has("floor") {
		fmt.Fprintln(w, "\nfloor = the smallest correct stdio bridge (this binary re-executed): initialize answered locally, each")
		fmt.Fprintln(w, "line a POST with the _meta envelope and the MCP headers on a kept-alive client, a goroutine per request")
		fmt.Fprintln(w, "that strips the 2026 members, follows a task, and writes one line under a mutex; what any bridge pays.")
	}
	if notApplicable {
		fmt.Fprintln(w, "n/a = the workload does not apply: the task workload needs a client of the 2026 tasks extension.")
	}
	rp.verdicts(w)
	rp.growth(w)
}

func ratioText(q float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f×", q)
}

// verdicts prints the performance targets, each MET or MISSED, for each
// proxy target, against the floor, and what tracing costs (COST: it has no
// target).
func (rp *reporter) verdicts(w io.Writer) {
	res := rp.res
	if !rp.has("floor") {
		return
	}
	var lines []string
	add := func(ok bool, format string, a ...any) {
		mark := "MET   "
		if !ok {
			mark = "MISSED"
		}
		lines = append(lines, mark+" "+fmt.Sprintf(format, a...))
	}
	for _, p := range rp.proxies() {
		name := p.name
		ratio := func(key string, limit float64, higher bool, what, unit string) {
			pv, pok := res.median(key, name)
			fv, fok := res.median(key, "floor")
			if !pok || !fok {
				return
			}
			cmp := "≤"
			if higher {
				cmp = "≥"
			}
			q, lo, hi, ok := res.ratios(key, name, "floor")
			if !ok {
				lines = append(lines, fmt.Sprintf("UNKNOWN %s: %s %s %.2f× the floor's: %s %s vs floor %s %s (too few calls: /proc counts CPU in 10 ms ticks)",
					name, what, cmp, limit, num(pv, true), unit, num(fv, true), unit))
				return
			}
			met := q <= limit
			if higher {
				met = q >= limit
			}
			add(met, "%s: %s %s %.2f× the floor's: %s %s vs floor %s %s = %.2f× (rounds %.2f–%.2f×)",
				name, what, cmp, limit, num(pv, true), unit, num(fv, true), unit, q, lo, hi)
		}
		ratio("seq-p50", 1.10, false, "sequential echo p50", "µs")
		if pv, ok := res.median("seq-p99", name); ok {
			if fv, ok := res.median("seq-p99", "floor"); ok {
				add(pv-fv <= 1000, "%s: added p99 ≤ 1 ms: %s − floor %s = %+.0f µs", name, num(pv, true), num(fv, true), pv-fv)
			}
		}
		ratio("inflight-0064", 0.90, true, "calls/s at 64 in flight", "calls/s")
		ratio("seq-stat", 1.35, false, "CPU per sequential call (utime+stime)", "µs")
		ratio("inflight-0064-stat", 1.35, false, "CPU per call at 64 in flight (utime+stime)", "µs")
		for _, g := range []struct{ group, enc string }{{"size", jsonName(rp.cfg)}, {"sse", "SSE"}} {
			key := fmt.Sprintf("%s-%012d", g.group, 16<<20)
			ratio(key+"-a", 1.25, false, "16 MiB result ("+g.enc+") latency", "ms")
			if v, ok := res.median(key+"-b", name); ok {
				f, _ := res.median(key+"-b", "floor")
				add(v <= 80, "%s: 16 MiB result (%s) peak RSS ≤ 80 MiB: %.1f MiB = %.2f× the payload (floor %.1f MiB)", name, g.enc, v, v/16, f)
			}
		}
		if v, ok := res.median("startup", name); ok {
			d, _ := res.median("startup", "direct")
			f, _ := res.median("startup", "floor")
			add(v <= 50+d, "%s: start-up ≤ 50 ms + one discover round trip (%.2f ms): %.1f ms (floor %.1f ms, which probes nothing)", name, d, v, f)
		}
	}
	for _, t := range rp.targets {
		if t.traceOf == "" {
			continue
		}
		if q, lo, hi, ok := res.ratios("seq-p50", t.name, t.traceOf); ok {
			c, _, _, cok := res.ratios("seq-stat", t.name, t.traceOf)
			cpu := ""
			if cok {
				cpu = fmt.Sprintf("; CPU per call %+.0f%%", 100*(c-1))
			}
			lines = append(lines, fmt.Sprintf("COST   tracing on, sequential echo p50: %+.1f%% (rounds %+.1f%% to %+.1f%%)%s", 100*(q-1), 100*(lo-1), 100*(hi-1), cpu))
		}
		// Tracing has no target (it costs what it costs when it is on, and
		// nothing when it is off): its cost is reported at each level, on
		// the scheduler's own CPU accounting (schedstat), which is finer
		// than /proc's utime and stime.
		for _, x := range rp.xs("inflight") {
			if q, lo, hi, ok := res.ratios(fmt.Sprintf("inflight-%04d-cpu", int(x)), t.name, t.traceOf); ok {
				lines = append(lines, fmt.Sprintf("COST   tracing on, CPU per call at %d in flight (schedstat): %+.1f%% (rounds %+.1f%% to %+.1f%%)", int(x), 100*(q-1), 100*(lo-1), 100*(hi-1)))
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "\ntargets (against the floor; ratios are medians of per-round ratios):")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
}

// xs are the distinct x of a growth group, ascending.
func (rp *reporter) xs(group string) []float64 {
	var xs []float64
	for _, m := range rp.res.metrics {
		if m.group == group && !slices.Contains(xs, m.x) {
			xs = append(xs, m.x)
		}
	}
	slices.Sort(xs)
	return xs
}

// growthKey is the metric key of a growth figure: kind "lat", "rss",
// "rate", "cpu", "added".
func growthKey(group string, x float64, kind string) string {
	switch group {
	case "size", "sse":
		suffix := "-a"
		if kind == "rss" {
			suffix = "-b"
		}
		return fmt.Sprintf("%s-%012d%s", group, int(x), suffix)
	case "inflight":
		if kind == "cpu" {
			return fmt.Sprintf("inflight-%04d-stat", int(x))
		}
		return fmt.Sprintf("inflight-%04d", int(x))
	case "polls":
		suffix := "-a"
		if kind == "added" {
			suffix = "-b"
		}
		return fmt.Sprintf("task-%04d%s", int(x), suffix)
	}
	return ""
}

func xName(group string, x float64) string {
	if group == "size" || group == "sse" {
		return sizeName(int(x))
	}
	return strconv.Itoa(int(x))
}

// growth prints a table for each growth group measured at two x or more.
func (rp *reporter) growth(w io.Writer) {
	type col struct {
		head string
		cell func(x float64) string
	}
	base := rp.base()
	val := func(group, kind, t string) func(float64) string {
		return func(x float64) string { v, ok := rp.res.median(growthKey(group, x, kind), t); return num(v, ok) }
	}
	rat := func(group, kind, a, b string) func(float64) string {
		return func(x float64) string {
			q, _, _, ok := rp.res.ratios(growthKey(group, x, kind), a, b)
			return ratioText(q, ok)
		}
	}
	for _, g := range []struct {
		group, title, xhead string
		main, mainUnit      string
		extra, extraUnit    string
	}{
		{"size", "How the cost grows with the result size (" + jsonName(rp.cfg) + ")", "result", "lat", "ms", "rss", "MiB"},
		{"sse", "How the cost grows with the result size (one SSE event)", "result", "lat", "ms", "rss", "MiB"},
		{"inflight", "How the cost grows with requests in flight (echo)", "in flight", "rate", "calls/s", "cpu", "µs"},
		{"polls", fmt.Sprintf("How the cost grows with a followed task's poll count (poll %d ms)", rp.cfg.pollMS), "polls", "lat", "ms", "added", "ms"},
	} {
		xs := rp.xs(g.group)
		if len(xs) < 2 {
			continue
		}
		extraLabel := map[string]string{"rss": "peak RSS", "cpu": "CPU per call", "added": "added beyond the polls"}[g.extra]
		mainLabel := map[string]string{"lat": "latency", "rate": "throughput"}[g.main]
		var cols []col
		for _, t := range rp.targets {
			if !t.runs(map[string]string{"size": "size", "sse": "size", "inflight": "inflight", "polls": "task"}[g.group]) {
				continue
			}
			cols = append(cols, col{t.name + " " + mainLabel + " (" + g.mainUnit + ")", val(g.group, g.main, t.name)})
		}
		for _, p := range rp.proxies() {
			if p.name != base {
				cols = append(cols, col{p.name + "/" + base, rat(g.group, g.main, p.name, base)})
			}
		}
		for _, t := range rp.targets {
			if (t.argv == nil && g.extra != "added") || !t.runs(map[string]string{"size": "size", "sse": "size", "inflight": "inflight", "polls": "task"}[g.group]) {
				continue
			}
			cols = append(cols, col{t.name + " " + extraLabel + " (" + g.extraUnit + ")", val(g.group, g.extra, t.name)})
		}
		if g.extra == "cpu" {
			for _, p := range rp.proxies() {
				if p.name != base {
					cols = append(cols, col{p.name + "/" + base + " CPU", rat(g.group, g.extra, p.name, base)})
				}
			}
		}
		rows := [][]string{{g.xhead}}
		for _, c := range cols {
			rows[0] = append(rows[0], c.head)
		}
		for _, x := range xs {
			row := []string{xName(g.group, x)}
			for _, c := range cols {
				row = append(row, c.cell(x))
			}
			rows = append(rows, row)
		}
		fmt.Fprintf(w, "\n%s:\n\n", g.title)
		writeTableN(w, rows, 1)
	}
}
