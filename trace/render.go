package trace

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// summaryLen is the number of characters of a frame shown by View.
const summaryLen = 120

const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiDim     = "\x1b[2m"
	ansiRed     = "\x1b[31m"
	ansiGreen   = "\x1b[32m"
	ansiYellow  = "\x1b[33m"
	ansiMagenta = "\x1b[35m"
	ansiCyan    = "\x1b[36m"
)

// readRecords reads JSONL records, skipping blank lines and counting lines
// that are not a record (invalid JSON or no dir) as malformed.
func readRecords(r io.Reader) (recs []Record, malformed int, err error) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var rec Record
			if json.Unmarshal(line, &rec) != nil || rec.Dir == "" {
				malformed++
			} else {
				recs = append(recs, rec)
			}
		}
		if errors.Is(err, io.EOF) {
			return recs, malformed, nil
		}
		if err != nil {
			return recs, malformed, err
		}
	}
}

// group is the records of one op, in file order.
type group struct {
	op   string
	recs []Record
}

// groupByOp groups records by op in order of first appearance; records
// without an op share the group "-".
func groupByOp(recs []Record) []*group {
	var groups []*group
	index := map[string]*group{}
	for _, r := range recs {
		op := cmp.Or(r.Op, "-")
		g := index[op]
		if g == nil {
			g = &group{op: op}
			index[op] = g
			groups = append(groups, g)
		}
		g.recs = append(g.recs, r)
	}
	return groups
}

// body returns the frame, or the head of a truncated one.
func body(r Record) []byte {
	if r.Truncated {
		if h := gjson.GetBytes(r.Frame, "head"); h.Exists() {
			return []byte(h.Str)
		}
	}
	return r.Frame
}

// kind classifies a record: the JSON-RPC method of a request or
// notification, "response" or "error". isErr also covers transport errors
// and HTTP statuses >= 400.
func kind(r Record) (label string, isMsg, isAnswer, isErr bool) {
	f := body(r)
	switch {
	case gjson.GetBytes(f, "method").Type == gjson.String:
		label, isMsg = gjson.GetBytes(f, "method").Str, true
	case gjson.GetBytes(f, "error").Exists():
		label, isAnswer, isErr = "error", true, true
	case gjson.GetBytes(f, "result").Exists():
		label, isAnswer = "response", true
	case r.Method != "":
		label, isMsg = r.Method, true
	case r.Error != "":
		label = "error"
	case r.Note != "":
		label = "note"
	case r.Dir == ProxyToServer && r.HTTP != nil && r.HTTP.Method != "":
		label = r.HTTP.Method // a GET or DELETE of a passthrough session
	default:
		label = "response"
		isAnswer = len(r.Frame) > 0
	}
	if r.Error != "" || (r.HTTP != nil && r.HTTP.Status >= 400) {
		isErr = true
	}
	return label, isMsg, isAnswer, isErr
}

// rpcID returns the record's JSON-RPC id, compacted, or "".
func rpcID(r Record) string {
	id := r.ID
	if len(id) == 0 {
		if v := gjson.GetBytes(body(r), "id"); v.Exists() {
			id = []byte(v.Raw)
		}
	}
	var b bytes.Buffer
	if len(id) == 0 || json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// clientRequest returns the first client->proxy message of g.
func (g *group) clientRequest() (Record, bool) {
	for _, r := range g.recs {
		if _, isMsg, _, _ := kind(r); isMsg && r.Dir == ClientToProxy {
			return r, true
		}
	}
	return Record{}, false
}

// arrows show the hops from the proxy's side.
var arrows = map[Dir]string{ClientToProxy: "← client", ProxyToClient: "→ client",
	ProxyToServer: "→ server", ServerToProxy: "← server", Proxy: "• proxy"}

// ms formats milliseconds: 0.42ms, 12.3ms, 1.25s.
func ms(v float64) string {
	switch {
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.2fs", v/1000)
	case math.Abs(v) < 1 && v != 0:
		return fmt.Sprintf("%.2fms", v)
	}
	return fmt.Sprintf("%.1fms", v)
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summary is the frame on one line, cut to summaryLen characters.
func summary(r Record) string {
	f := body(r)
	var b bytes.Buffer
	s := string(f)
	if json.Compact(&b, f) == nil {
		s = b.String()
	}
	s = strings.Join(strings.Fields(s), " ")
	cut := r.Truncated
	if utf8.RuneCountInString(s) > summaryLen {
		s = string([]rune(s)[:summaryLen])
		cut = true
	}
	s = printable(s)
	if cut {
		s += "…"
	}
	return s
}

// View prints a trace as a timeline grouped by op, in order of first
// appearance: a header per op (op, method, client id, total duration), then
// one line per record (time since the op began, hop, method or
// response/error, HTTP status, latency, rewrites, frame summary). Malformed
// lines are skipped and counted at the end. color adds ANSI colours. Text
// from the trace is shown through printable, so a peer's control characters
// never reach the reader's terminal.
func View(w io.Writer, r io.Reader, color bool) error {
	recs, malformed, err := readRecords(r)
	if err != nil {
		return err
	}
	paint := func(code, s string) string {
		if !color || s == "" || code == "" {
			return s
		}
		return code + s + ansiReset
	}
	bw := bufio.NewWriter(w)
	for i, g := range groupByOp(recs) {
		if i > 0 {
			bw.WriteByte('\n')
		}
		head := []string{"op " + printable(g.op)}
		if req, ok := g.clientRequest(); ok {
			label, _, _, _ := kind(req)
			head = append(head, printable(label))
			if id := rpcID(req); id != "" {
				head = append(head, "id "+printable(id))
			}
		}
		noun := "records"
		if len(g.recs) == 1 {
			noun = "record"
		}
		byTime := func(a, b Record) int { return a.Time.Compare(b.Time) }
		span := slices.MaxFunc(g.recs, byTime).Time.Sub(slices.MinFunc(g.recs, byTime).Time)
		head = append(head, fmt.Sprintf("(%d %s, %s)", len(g.recs), noun, ms(durMs(span))))
		fmt.Fprintln(bw, paint(ansiBold, strings.Join(head, "  ")))

		start := g.recs[0].Time
		for _, rec := range g.recs {
			label, _, _, isErr := kind(rec)
			var fields []string
			add := func(code, s string) {
				if s != "" {
					fields = append(fields, paint(code, s))
				}
			}
			hop := ansiMagenta
			if rec.Dir == ClientToProxy || rec.Dir == ProxyToClient {
				hop = ansiCyan
			}
			add(ansiDim, fmt.Sprintf("%-10s", "+"+ms(durMs(rec.Time.Sub(start)))))
			add(hop, fmt.Sprintf("%-8s", cmp.Or(arrows[rec.Dir], printable(string(rec.Dir)))))
			add(map[string]string{"error": ansiRed, "response": ansiGreen}[label], printable(label))
			if h := rec.HTTP; h != nil && h.Status != 0 {
				c := ansiGreen
				if h.Status >= 400 {
					c = ansiRed
				}
				add(c, fmt.Sprintf("HTTP %d", h.Status))
			}
			if rec.LatencyMs != 0 {
				add("", ms(rec.LatencyMs))
			}
			if len(rec.Rewrites) > 0 {
				add(ansiYellow, "["+printable(strings.Join(rec.Rewrites, " "))+"]")
			}
			if rec.Error != "" {
				add(ansiRed, "error: "+printable(rec.Error))
			} else if isErr && label != "error" {
				add(ansiRed, "!")
			}
			add("", printable(rec.Note))
			add("", summary(rec))
			fmt.Fprintln(bw, "  "+strings.Join(fields, "  "))
		}
	}
	if malformed > 0 {
		fmt.Fprintf(bw, "\n%d malformed line(s) skipped\n", malformed)
	}
	return bw.Flush()
}

type methodStats struct {
	count, rpcErrs, httpErrs int
	lat                      []float64
}

// percentile returns the nearest-rank p-th percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Stats prints a table per client method: the number of client messages,
// JSON-RPC error answers, HTTP statuses >= 400 in its ops, and latency p50
// and p99 (nearest rank). A request's latency runs from the client->proxy
// record to the proxy->client answer with the same op and id, or is the
// answer's LatencyMs when set. A TOTAL line and the record, op and malformed
// line counts follow. Methods are shown through printable.
func Stats(w io.Writer, r io.Reader) error {
	recs, malformed, err := readRecords(r)
	if err != nil {
		return err
	}
	groups := groupByOp(recs)
	stats := map[string]*methodStats{}
	for _, g := range groups {
		g.tally(stats)
	}
	// One row per method, most requests first, then TOTAL.
	bw := bufio.NewWriter(w)
	methods := slices.Collect(maps.Keys(stats))
	slices.SortFunc(methods, func(a, b string) int {
		if c := stats[b].count - stats[a].count; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	width := len("METHOD")
	for _, m := range methods {
		width = max(width, utf8.RuneCountInString(printable(m)))
	}
	row := func(name string, count, rpcErrs, httpErrs any, p50, p99 string) {
		fmt.Fprintf(bw, "%-*s  %7v  %7v  %9v  %9s  %9s\n", width, name, count, rpcErrs, httpErrs, p50, p99)
	}
	pcts := func(lat []float64) (string, string) {
		if len(lat) == 0 {
			return "-", "-"
		}
		slices.Sort(lat)
		return ms(percentile(lat, 50)), ms(percentile(lat, 99))
	}
	row("METHOD", "COUNT", "ERRORS", "HTTP>=400", "P50", "P99")
	var total methodStats
	for _, m := range methods {
		s := stats[m]
		p50, p99 := pcts(s.lat)
		row(printable(m), s.count, s.rpcErrs, s.httpErrs, p50, p99)
		total.count += s.count
		total.rpcErrs += s.rpcErrs
		total.httpErrs += s.httpErrs
		total.lat = append(total.lat, s.lat...)
	}
	p50, p99 := pcts(total.lat)
	row("TOTAL", total.count, total.rpcErrs, total.httpErrs, p50, p99)
	fmt.Fprintf(bw, "\n%d records, %d ops", len(recs), len(groups))
	if malformed > 0 {
		fmt.Fprintf(bw, ", %d malformed line(s) skipped", malformed)
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}

// tally adds one op's requests, errors and latencies to stats, by method.
func (g *group) tally(stats map[string]*methodStats) {
	get := func(m string) *methodStats {
		if stats[m] == nil {
			stats[m] = &methodStats{}
		}
		return stats[m]
	}
	type pending struct {
		method string
		at     time.Time
	}
	open := map[string]pending{} // by id
	opMethod := ""
	if req, ok := g.clientRequest(); ok {
		opMethod, _, _, _ = kind(req)
	}
	for _, rec := range g.recs {
		label, isMsg, isAnswer, _ := kind(rec)
		if rec.HTTP != nil && rec.HTTP.Status >= 400 {
			m := cmp.Or(opMethod, rec.Method, "-")
			get(m).httpErrs++
		}
		switch {
		case rec.Dir == ClientToProxy && isMsg:
			get(label).count++
			if id := rpcID(rec); id != "" {
				open[id] = pending{label, rec.Time}
			}
		case rec.Dir == ProxyToClient && isAnswer:
			id := rpcID(rec)
			p, ok := open[id]
			if !ok {
				continue
			}
			delete(open, id)
			s := get(p.method)
			if label == "error" {
				s.rpcErrs++
			}
			l := rec.LatencyMs
			if l == 0 {
				l = durMs(rec.Time.Sub(p.at))
			}
			s.lat = append(s.lat, l)
		}
	}
}

// printable returns s with everything that could drive the reader's
// terminal shown as an escape instead: C0 controls (tab, CR and LF
// included), DEL and C1 controls as \xNN or \u00NN, the Unicode bidi
// controls (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069),
// which reorder the text shown around them, and the line and paragraph
// separators U+2028 and U+2029 as \uNNNN, and each byte that is not UTF-8
// as \xNN (a lone 0x9b is CSI to a terminal that reads 8-bit controls).
// Every string a trace file supplies goes through it before it is printed:
// the file is written from what clients and servers sent. Backslashes are
// left alone, so a frame's own JSON escapes stay readable.
func printable(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 || r == 0x7f || r == utf8.RuneError || r >= 0x80 && unsafeRune(r)
	}) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports a rune at or above 0x80 that printable escapes: a C1
// control, a bidi control or a line or paragraph separator.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x2028 || r == 0x2029:
		return true
	}
	return unicode.Is(unicode.Bidi_Control, r)
}
