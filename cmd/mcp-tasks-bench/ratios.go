package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The ratios subcommand reads the per-round figures of one or more runs
// (--rounds-csv files) and gives, for pairs of targets, the ratios a run's
// report gives (medians of per-round ratios) with their spread, and across
// runs how far the run medians themselves scatter. On a loaded machine one
// run's median moves with the load of its hour: a change is judged by the
// ratio within each run, and a target by the run medians of many runs.

const ratiosUsage = `mcp-tasks-bench ratios reads the per-round figures that --rounds-csv wrote,
from one run or many, and prints for each pair of targets A/B the median of
A's figure over B's, round by round (the targets of one round ran seconds
apart), with the interquartile range of those ratios.

With two runs or more it adds a line over all of them: the median of the
run medians, with a 95% interval from a bootstrap over the runs (runs drawn
with replacement, 10000 times, with a fixed seed so that the same files give
the same figures), and the median of all their rounds together. The runs'
medians scatter more than one run's rounds suggest, because the load of the
machine changes from one run to the next; the interval over runs says how
well the runs so far pin a ratio down.

Usage:
  mcp-tasks-bench ratios [flags] FILE.csv...

Examples:
  # What tracing costs at 64 in flight, over every run on record
  mcp-tasks-bench ratios --pair proxy+trace/proxy --metric '64 in flight' /tmp/run*.csv

  # A before/after pair of one run, on CPU per call only
  mcp-tasks-bench ratios --pair after/before --metric 'CPU per call, schedstat' /tmp/runA.csv

Flags:
`

// ratiosConfig is the command line of the ratios subcommand.
type ratiosConfig struct {
	pairs   [][2]string
	metrics []string
	files   []string
}

func parseRatiosFlags(args []string, stderr io.Writer) (ratiosConfig, error) {
	var cfg ratiosConfig
	fs := newFlagSet("mcp-tasks-bench ratios", ratiosUsage, stderr)
	fs.Func("pair", "a pair of targets A/B, as the runs named them, such as proxy+trace/proxy; repeatable (default proxy/floor and proxy+trace/proxy)", func(s string) error {
		a, b, ok := strings.Cut(s, "/")
		if !ok || a == "" || b == "" || strings.Contains(b, "/") {
			return fmt.Errorf("want A/B, two target names, got %q", s)
		}
		cfg.pairs = append(cfg.pairs, [2]string{a, b})
		return nil
	})
	fs.Func("metric", "only the figures whose workload and metric contain this text, such as '64 in flight: bridge CPU per call, schedstat'; repeatable (default every figure)", func(s string) error {
		cfg.metrics = append(cfg.metrics, s)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.files = fs.Args()
	for _, f := range cfg.files {
		if strings.HasPrefix(f, "-") {
			return cfg, fmt.Errorf("ratios: %q after the files: flags go before them", f)
		}
	}
	if len(cfg.files) == 0 {
		return cfg, errors.New("ratios: no CSV file given (write them with --rounds-csv)")
	}
	if len(cfg.pairs) == 0 {
		cfg.pairs = [][2]string{{"proxy", "floor"}, {"proxy+trace", "proxy"}}
	}
	return cfg, nil
}

// roundsFile is one run's figures: by workload and metric (the CSV's
// "workload" column), by target, by round.
type roundsFile struct {
	name    string
	order   []string // the figures in the file's order
	figures map[string]map[string]map[int]float64
}

func readRoundsCSV(path string) (*roundsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	want := []string{"metric", "workload", "unit", "target", "round", "value"}
	if len(rows) == 0 || !slices.Equal(rows[0], want) {
		return nil, fmt.Errorf("%s: not a --rounds-csv file (its header is not %s)", path, strings.Join(want, ","))
	}
	rf := &roundsFile{name: filepath.Base(path), figures: map[string]map[string]map[int]float64{}}
	for i, row := range rows[1:] {
		round, err1 := strconv.Atoi(row[4])
		v, err2 := strconv.ParseFloat(row[5], 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, i+2, err)
		}
		fig := row[1]
		byTarget := rf.figures[fig]
		if byTarget == nil {
			byTarget = map[string]map[int]float64{}
			rf.figures[fig] = byTarget
			rf.order = append(rf.order, fig)
		}
		if byTarget[row[3]] == nil {
			byTarget[row[3]] = map[int]float64{}
		}
		byTarget[row[3]][round] = v
	}
	return rf, nil
}

// roundRatios are a's figures over b's in the rounds both have, in round
// order.
func (rf *roundsFile) roundRatios(fig, a, b string) []float64 {
	va, vb := rf.figures[fig][a], rf.figures[fig][b]
	var rounds []int
	for r := range va {
		if d, ok := vb[r]; ok && d != 0 {
			rounds = append(rounds, r)
		}
	}
	slices.Sort(rounds)
	q := make([]float64, len(rounds))
	for i, r := range rounds {
		q[i] = va[r] / vb[r]
	}
	return q
}

// quantile is the p-quantile of the sorted s, by linear interpolation
// between the nearest ranks; at 0.5 it is the median.
func quantile(s []float64, p float64) float64 {
	x := p * float64(len(s)-1)
	i := int(x)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}

// bootstrapMedian is a 95% interval of the median of v: the 2.5th and
// 97.5th percentiles of the medians of n resamples of v, each as long as v
// and drawn from it with replacement, from a fixed seed.
func bootstrapMedian(v []float64, n int) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	meds := make([]float64, n)
	s := make([]float64, len(v))
	for i := range meds {
		for j := range s {
			s[j] = v[rng.IntN(len(v))]
		}
		slices.Sort(s)
		meds[i] = quantile(s, 0.5)
	}
	slices.Sort(meds)
	return quantile(meds, 0.025), quantile(meds, 0.975)
}

// bootstraps is how many resamples the interval over runs draws.
const bootstraps = 10000

// runRatios is the ratios subcommand; it returns the exit status.
func runRatios(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseRatiosFlags(args, stderr)
	if err != nil {
		return flagStatus(err, stderr)
	}
	var files []*roundsFile
	for _, p := range cfg.files {
		rf, err := readRoundsCSV(p)
		if err != nil {
			fmt.Fprintln(stderr, "mcp-tasks-bench:", err)
			return 1
		}
		files = append(files, rf)
	}
	// The figures in the order the files first name them.
	var figs []string
	for _, rf := range files {
		for _, fig := range rf.order {
			if !slices.Contains(figs, fig) && matchesAny(fig, cfg.metrics) {
				figs = append(figs, fig)
			}
		}
	}
	printed := 0
	for _, pair := range cfg.pairs {
		for _, fig := range figs {
			if writeRatios(stdout, files, fig, pair[0], pair[1]) {
				printed++
			}
		}
	}
	if printed == 0 {
		fmt.Fprintf(stderr, "mcp-tasks-bench: ratios: no figure has rounds of both targets of any pair (%s)\n", pairNames(cfg.pairs))
		return 1
	}
	return 0
}

func matchesAny(fig string, subs []string) bool {
	if len(subs) == 0 {
		return true
	}
	for _, s := range subs {
		if strings.Contains(fig, s) {
			return true
		}
	}
	return false
}

func pairNames(pairs [][2]string) string {
	var s []string
	for _, p := range pairs {
		s = append(s, p[0]+"/"+p[1])
	}
	return strings.Join(s, ", ")
}

// writeRatios writes the table of a/b on fig, a row a run; it reports
// false, writing nothing, when no run has rounds of both.
func writeRatios(w io.Writer, files []*roundsFile, fig, a, b string) bool {
	rows := [][]string{{"run", "rounds", "median", "IQR"}}
	var meds, all []float64
	for _, rf := range files {
		q := rf.roundRatios(fig, a, b)
		if len(q) == 0 {
			continue
		}
		m, iqr := summary(q)
		meds = append(meds, m)
		all = append(all, q...)
		rows = append(rows, []string{rf.name, strconv.Itoa(len(q)), fmt.Sprintf("%.3f×", m), iqr})
	}
	if len(meds) == 0 {
		return false
	}
	fmt.Fprintf(w, "\n%s: %s/%s\n\n", fig, a, b)
	if len(meds) > 1 {
		m, iqr := summary(all)
		rows = append(rows, []string{fmt.Sprintf("all %d runs' rounds", len(meds)), strconv.Itoa(len(all)), fmt.Sprintf("%.3f×", m), iqr})
	}
	writeTableN(w, rows, 1)
	if len(meds) > 1 {
		lo, hi := bootstrapMedian(meds, bootstraps)
		fmt.Fprintf(w, "\nmedian of the %d run medians: %.3f× (95%% interval over runs, bootstrap: %.3f–%.3f; run medians %.3f–%.3f)\n",
			len(meds), median(meds), lo, hi, slices.Min(meds), slices.Max(meds))
	}
	return true
}

// summary sorts v, a sample of its caller's own, and gives its median and
// interquartile range: one sort for both.
func summary(v []float64) (med float64, iqr string) {
	slices.Sort(v)
	return quantile(v, 0.5), fmt.Sprintf("%.2f–%.2f", quantile(v, 0.25), quantile(v, 0.75))
}
