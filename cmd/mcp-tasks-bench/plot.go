package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// The growth charts: simple SVG line charts, one line per target, written
// with the standard library only.

type series struct {
	name   string
	xs, ys []float64
	dashed bool
}

type chart struct {
	title, xLabel, yLabel string
	logX, logY            bool
	xTick                 func(float64) string
	series                []series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"}

// plots writes the growth charts into dir and returns the files written.
func (rp *reporter) plots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	colors := map[string]string{}
	for i, t := range rp.targets {
		colors[t.name] = palette[i%len(palette)]
	}
	line := func(group, kind, t string, dashed bool) series {
		s := series{name: t, dashed: dashed}
		for _, x := range rp.xs(group) {
			if v, ok := rp.res.median(growthKey(group, x, kind), t); ok && (v > 0 || kind == "added") {
				s.xs, s.ys = append(s.xs, x), append(s.ys, v)
			}
		}
		return s
	}
	var files []string
	write := func(name string, c chart) error {
		var keep []series
		for _, s := range c.series {
			if len(s.xs) >= 2 {
				keep = append(keep, s)
			}
		}
		if len(keep) == 0 {
			return nil
		}
		c.series = keep
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(c.svg(colors)), 0o644); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	sizeTick := func(x float64) string { return strings.ReplaceAll(sizeName(int(x)), " ", "") }
	intTick := func(x float64) string { return fmt.Sprintf("%g", x) }

	var size, rss, rate, cpu, polls chart
	size = chart{title: "Latency by result size", xLabel: "result size", yLabel: "latency (ms), median", logX: true, logY: true, xTick: sizeTick}
	rss = chart{title: "Bridge peak RSS by result size", xLabel: "result size", yLabel: "peak RSS (MiB)", logX: true, logY: true, xTick: sizeTick}
	rate = chart{title: "Throughput by requests in flight (echo)", xLabel: "requests in flight", yLabel: "calls/s", logX: true, xTick: intTick}
	cpu = chart{title: "Bridge CPU per call by requests in flight", xLabel: "requests in flight", yLabel: "CPU per call (µs, utime+stime)", logX: true, xTick: intTick}
	polls = chart{title: fmt.Sprintf("Time beyond the poll intervals by poll count (poll %d ms)", rp.cfg.pollMS), xLabel: "polls until the task completes", yLabel: "added latency (ms)", xTick: intTick}
	for _, t := range rp.targets {
		size.series = append(size.series, line("size", "lat", t.name, false))
		size.series = append(size.series, withName(line("sse", "lat", t.name, true), t.name+" (SSE)"))
		rate.series = append(rate.series, line("inflight", "rate", t.name, false))
		polls.series = append(polls.series, line("polls", "added", t.name, false))
		if t.argv != nil {
			rss.series = append(rss.series, line("size", "rss", t.name, false))
			rss.series = append(rss.series, withName(line("sse", "rss", t.name, true), t.name+" (SSE)"))
			cpu.series = append(cpu.series, line("inflight", "cpu", t.name, false))
		}
	}
	for _, c := range []struct {
		name string
		c    chart
	}{{"growth-size.svg", size}, {"growth-rss.svg", rss}, {"growth-inflight.svg", rate}, {"growth-cpu.svg", cpu}, {"growth-polls.svg", polls}} {
		if err := write(c.name, c.c); err != nil {
			return files, err
		}
	}
	return files, nil
}

func withName(s series, name string) series {
	s.name = name
	return s
}

// svg draws the chart: axes, ticks at the data's x and at round y values,
// one polyline with markers per series, a legend. It runs past 90 lines
// because it writes the SVG document top to bottom, in the order it is
// read; each part shares the scales computed at the start.
func (c chart) svg(colors map[string]string) string {
	const W, H = 720, 440
	const left, right, top, bottom = 80, 190, 40, 60
	pw, ph := float64(W-left-right), float64(H-top-bottom)

	var xs []float64
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for i := range s.xs {
			minX, maxX = math.Min(minX, s.xs[i]), math.Max(maxX, s.xs[i])
			minY, maxY = math.Min(minY, s.ys[i]), math.Max(maxY, s.ys[i])
			if !containsF(xs, s.xs[i]) {
				xs = append(xs, s.xs[i])
			}
		}
	}
	tx := func(v float64) float64 { return v }
	if c.logX {
		tx = math.Log10
	}
	ty := func(v float64) float64 { return v }
	var yTicks []float64
	if c.logY {
		ty = func(v float64) float64 { return math.Log10(math.Max(v, 1e-9)) }
		lo, hi := math.Floor(math.Log10(minY)), math.Ceil(math.Log10(maxY))
		if lo == hi {
			hi++
		}
		minY, maxY = math.Pow(10, lo), math.Pow(10, hi)
		for e := lo; e <= hi; e++ {
			for _, m := range []float64{1, 2, 5} {
				if v := m * math.Pow(10, e); v >= minY && v <= maxY {
					yTicks = append(yTicks, v)
				}
			}
		}
	} else {
		minY = math.Min(0, minY)
		step := niceStep((maxY - minY) / 5)
		maxY = math.Ceil(maxY/step) * step
		minY = math.Floor(minY/step) * step
		if maxY == minY {
			maxY = minY + step
		}
		for v := minY; v <= maxY+step/2; v += step {
			yTicks = append(yTicks, v)
		}
	}
	x0, x1 := tx(minX), tx(maxX)
	if x0 == x1 {
		x1 = x0 + 1
	}
	y0, y1 := ty(minY), ty(maxY)
	if y0 == y1 {
		y1 = y0 + 1
	}
	px := func(v float64) float64 { return float64(left) + (tx(v)-x0)/(x1-x0)*pw }
	py := func(v float64) float64 { return float64(top) + ph - (ty(v)-y0)/(y1-y0)*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(c.title))
	// Grid and ticks.
	for _, v := range yTicks {
		y := py(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, float64(left)+pw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, fmtTick(v))
	}
	for _, v := range xs {
		x := px(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, top, x, float64(top)+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, float64(top)+ph+18, html.EscapeString(c.xTick(v)))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", float64(left)+pw/2, H-18, html.EscapeString(c.xLabel+axisNote(c.logX)))
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", float64(top)+ph/2, html.EscapeString(c.yLabel+axisNote(c.logY)))
	// Lines and legend.
	for i, s := range c.series {
		color := colors[strings.TrimSuffix(s.name, " (SSE)")]
		if color == "" {
			color = palette[i%len(palette)]
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var pts []string
		for j := range s.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.xs[j]), py(s.ys[j])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
		for j := range s.xs {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s</title></circle>`+"\n",
				px(s.xs[j]), py(s.ys[j]), color, html.EscapeString(s.name+" at "+c.xTick(s.xs[j])), fmtTick(s.ys[j]))
		}
		ly := top + 10 + 20*i
		lx := W - right + 15
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", lx, ly, lx+24, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", lx+30, ly+4, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func axisNote(log bool) string {
	if log {
		return " (log scale)"
	}
	return ""
}

func containsF(v []float64, x float64) bool {
	for _, y := range v {
		if y == x {
			return true
		}
	}
	return false
}

// niceStep rounds a raw tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func fmtTick(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 10 || a == 0:
		return fmt.Sprintf("%.4g", v)
	}
	return fmt.Sprintf("%.3g", v)
}
