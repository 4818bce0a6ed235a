package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeRounds writes a --rounds-csv file of one figure: the values of each
// target, round by round (a NaN-free float per round; a missing round is
// left out).
func writeRounds(t *testing.T, dir, name, fig string, vals map[string][]float64) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("metric,workload,unit,target,round,value\n")
	for target, vs := range vals {
		for i, v := range vs {
			if v < 0 {
				continue // a round the target did not run
			}
			fmt.Fprintf(&b, "key,%q,µs,%s,%d,%s\n", fig, target, i+1, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runRatiosText(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errs strings.Builder
	code := runRatios(args, &out, &errs)
	return code, out.String(), errs.String()
}

// ratioRows is the table of the first figure ratios printed.
func ratioRows(t *testing.T, out string) []map[string]string {
	t.Helper()
	i := strings.Index(out, "\n|")
	if i < 0 {
		t.Fatalf("no table:\n%s", out)
	}
	return table(t, out[i:])
}

func TestRatiosOneRun(t *testing.T) {
	dir := t.TempDir()
	// Rounds 1-3 of both; round 4 of a only, which has no ratio.
	path := writeRounds(t, dir, "one.csv", "echo: CPU", map[string][]float64{
		"a": {2, 3, 4, 9},
		"b": {1, 1, 2, -1},
	})
	code, out, errs := runRatiosText(t, "--pair", "a/b", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "echo: CPU: a/b") {
		t.Errorf("no heading for the figure and pair:\n%s", out)
	}
	rows := ratioRows(t, out)
	// The ratios are 2, 3 and 2: median 2; quartiles 2 and 2.5.
	want := map[string]string{"run": "one.csv", "rounds": "3", "median": "2.000×", "IQR": "2.00–2.50"}
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1:\n%s", len(rows), out)
	}
	for k, v := range want {
		if rows[0][k] != v {
			t.Errorf("%s = %q, want %q\n%s", k, rows[0][k], v, out)
		}
	}
	if strings.Contains(out, "run medians") {
		t.Errorf("one run has no line over runs:\n%s", out)
	}
}

func TestRatiosOverRuns(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	// Three runs whose ratios are 1.1, 1.2 and 1.4 in every round.
	for i, q := range []float64{1.1, 1.2, 1.4} {
		b := []float64{10, 20, 40}
		a := []float64{10 * q, 20 * q, 40 * q}
		paths = append(paths, writeRounds(t, dir, fmt.Sprintf("run%d.csv", i), "echo: CPU", map[string][]float64{"new": a, "old": b}))
	}
	args := append([]string{"--pair", "new/old"}, paths...)
	code, out, errs := runRatiosText(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows := ratioRows(t, out)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want a row a run and one for all:\n%s", len(rows), out)
	}
	if r := rows[3]; r["run"] != "all 3 runs' rounds" || r["rounds"] != "9" || r["median"] != "1.200×" {
		t.Errorf("the pooled row is %v:\n%s", r, out)
	}
	var med, lo, hi, least, most float64
	line := out[strings.Index(out, "median of the"):]
	if _, err := fmt.Sscanf(line, "median of the 3 run medians: %f× (95%% interval over runs, bootstrap: %f–%f; run medians %f–%f)",
		&med, &lo, &hi, &least, &most); err != nil {
		t.Fatalf("the line over runs: %v\n%s", err, line)
	}
	if med != 1.2 || least != 1.1 || most != 1.4 {
		t.Errorf("median %v over %v–%v, want 1.2 over 1.1–1.4", med, least, most)
	}
	// A median of draws from the runs lies among the run medians, and the
	// interval is not one point: the runs disagree.
	if lo < least || hi > most || lo >= hi {
		t.Errorf("interval %v–%v, want a span within %v–%v", lo, hi, least, most)
	}
	// The same files give the same figures.
	if _, again, _ := runRatiosText(t, args...); again != out {
		t.Errorf("a second reading differs:\n%s\n%s", out, again)
	}
}

func TestRatiosMetricFilter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "two.csv")
	csv := "metric,workload,unit,target,round,value\n" +
		"k1,\"echo, 64 in flight: CPU\",µs,a,1,2\nk1,\"echo, 64 in flight: CPU\",µs,b,1,1\n" +
		"k2,\"echo, 1 in flight: CPU\",µs,a,1,3\nk2,\"echo, 1 in flight: CPU\",µs,b,1,1\n"
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runRatiosText(t, "--pair", "a/b", "--metric", "64 in flight", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "64 in flight: CPU: a/b") || strings.Contains(out, "1 in flight") {
		t.Errorf("want the 64-in-flight figure alone:\n%s", out)
	}
}

func TestRatiosErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeRounds(t, dir, "good.csv", "echo: CPU", map[string][]float64{"a": {2}, "b": {1}})
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"--pair", "a/b"}, 2, "no CSV file given"},
		{"a flag after the files", []string{good, "--pair", "a/b"}, 2, `"--pair" after the files: flags go before them`},
		{"a pair without a slash", []string{"--pair", "ab", good}, 2, "want A/B"},
		{"not a rounds file", []string{bad}, 1, "bad.csv: not a --rounds-csv file"},
		{"a missing file", []string{filepath.Join(dir, "none.csv")}, 1, "none.csv"},
		{"no pair in the files", []string{"--pair", "x/y", good}, 1, "no figure has rounds of both targets of any pair (x/y)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runRatiosText(t, c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errs, c.code, c.want)
			}
			if out != "" {
				t.Errorf("stdout %q on an error", out)
			}
		})
	}
	// Help is not an error.
	if code, _, errs := runRatiosText(t, "--help"); code != 0 || !strings.Contains(errs, "mcp-tasks-bench ratios [flags] FILE.csv...") {
		t.Errorf("--help: exit %d, %q", code, errs)
	}
}
