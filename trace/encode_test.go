package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// encodeStd is the line encoding/json writes for r: what encoder.encode
// must reproduce byte for byte.
func encodeStd(t testing.TB, r Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// prepare redacts r and caps its frame, as Emit does before it encodes a
// line, but all of it before encoding and remembering nothing: the
// reference the one-pass path is tested against.
func (w *Writer) prepare(r *Record) {
	w.finish(r, nil, false)
}

// encodeDiff encodes r with e and with encoding/json, and says how the two
// lines differ ("" when they do not).
func encodeDiff(t testing.TB, e *encoder, r Record) string {
	t.Helper()
	got, err := e.encode(&r)
	if err != nil {
		t.Fatal(err)
	}
	if want := encodeStd(t, r); !bytes.Equal(got, want) {
		return fmt.Sprintf("\n got %s\nwant %s", got, want)
	}
	return ""
}

var encodeFrames = []string{
	``, `{"jsonrpc":"2.0","id":1,"result":{}}`,
	"{ \"a\" : [ 1 ,\n\t2 ] ,\r\n \"b\" : \"x y \\\" z\\\\\" , \"c\":\"<&>\u2028\" }",
	`"a string frame"`, `{"frame":0,"k":"\"frame\":0"}`, `[1, 2, 3]`, `{"s":"é😀\u00e9"}`,
}

func TestEncoderMatchesEncodingJSON(t *testing.T) {
	ts := time.Date(2026, 12, 1, 8, 0, 0, 123456789, time.UTC)
	for _, f := range encodeFrames {
		for _, r := range []Record{
			{Time: ts, Dir: ClientToProxy, Op: "op-1", Method: "tools/call", ID: json.RawMessage(`{"frame":0}`), Frame: json.RawMessage(f)},
			{Time: ts, Dir: ServerToProxy, Session: "s-1 \"frame\":0", Op: "op-2", Frame: json.RawMessage(f), LatencyMs: 0.359},
			{Time: ts, Dir: ProxyToServer, Rewrites: []string{"meta.inject"}, HTTP: &HTTP{Method: "POST", URL: "http://h/mcp", Header: map[string]string{"frame": "0", "B": "\"frame\":0"}},
				Frame: json.RawMessage(f), Truncated: true, LatencyMs: 1.25, Error: `"frame":0 err <&>`, Note: "n"},
		} {
			var e encoder
			if d := encodeDiff(t, &e, r); d != "" {
				t.Errorf("frame %q:%s", f, d)
			}
		}
	}
}

func TestEncoderFields(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("x", -(3*3600 + 30*60)), time.FixedZone("y", 14*3600)}
	odd := "a\"b\\c\x00\x01\b\f\n\r\t\x1f\x7f<&>\u2028\u2029\xff\xc3(é😀"
	for i, r := range []Record{
		{},
		{Dir: Proxy, Note: odd},
		{Time: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), Dir: Dir(odd), Op: odd, Method: odd, Error: odd},
		{Dir: ClientToProxy, Session: odd}, {Session: "s", Op: "o"},
		{Time: time.Date(9998, 12, 31, 23, 59, 59, 999999999, zones[2]), ID: json.RawMessage(`"x"`), Rewrites: []string{}},
		{Time: time.Date(2026, 7, 28, 12, 0, 0, 500, zones[3]), Rewrites: []string{odd, "", "b"}, HTTP: &HTTP{}},
		{HTTP: &HTTP{Status: -1, Header: map[string]string{}}},
		{HTTP: &HTTP{Status: 200, Header: map[string]string{"b": "1", "a": odd, odd: "", "": "e", "B": "2", "é": "3"}}},
		{HTTP: &HTTP{Method: "GET"}, Frame: json.RawMessage(`{"a": [1, 2]}`), Truncated: true},
		{HTTP: &HTTP{URL: "http://h/?q=<&>"}, LatencyMs: 1e-7},
		{LatencyMs: 1e21}, {LatencyMs: 123456789.125}, {LatencyMs: -0.5}, {LatencyMs: 1e-6}, {LatencyMs: 5e-324},
		{LatencyMs: math.Copysign(0, -1)}, {LatencyMs: 1.7976931348623157e308}, {LatencyMs: 0.001},
	} {
		for _, z := range zones {
			if !r.Time.IsZero() {
				r.Time = r.Time.In(z)
			}
			var e encoder
			if d := encodeDiff(t, &e, r); d != "" {
				t.Errorf("record %d:%s", i, d)
			}
		}
	}
}

// TestAppendFloatMillis: the fast path for a latency in whole microseconds
// writes what encoding/json writes, at every magnitude.
func TestAppendFloatMillis(t *testing.T) {
	ns := []int64{1, 9, 10, 100, 359, 1000, 1001, 1010, 1100, 999999, 123456789125, 999999999999999, 1e15, 1e15 + 1, 1 << 53}
	for n := int64(1); n < 200000; n += 7 {
		ns = append(ns, n)
	}
	for _, n := range ns {
		for _, f := range []float64{float64(n) / 1000, float64(n) / 1000 * 1.0000001, float64(n) / 1024} {
			want, _ := json.Marshal(f)
			if got := appendFloat(nil, f); !bytes.Equal(got, want) {
				t.Fatalf("%v (n %d): got %s, want %s", f, n, got, want)
			}
		}
	}
}

// TestEncoderFallsBack: what encoding/json cannot encode fails as it did.
func TestEncoderFallsBack(t *testing.T) {
	for i, r := range []Record{
		{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("z", 24*3600))},
		{LatencyMs: math.NaN()},
		{LatencyMs: math.Inf(-1)},
	} {
		var e encoder
		if line, err := e.encode(&r); err == nil {
			t.Errorf("record %d encoded as %s", i, line)
		}
		var b bytes.Buffer
		if json.NewEncoder(&b).Encode(r) == nil {
			t.Errorf("record %d: encoding/json encodes it", i)
		}
	}
}

// FuzzEncodeRecord holds the encoder to encoding/json for every field of a
// record as prepare leaves it.
func FuzzEncodeRecord(f *testing.F) {
	f.Add(int64(1785240000), int64(123456789), 3600, "tools/call", "op-1", []byte(`7`), "a,b", true, "POST",
		"https://u:p@h/mcp?k=v", 200, "Authorization", "Bearer x", "Mcp-Method", "tools/call",
		[]byte(`{"a": 1}`), false, 1.5, "err", "note", false)
	f.Add(int64(0), int64(0), 0, "", "", []byte(nil), "", false, "", "", 0, "", "", "", "", []byte(nil), true, 0.0, "", "", true)
	f.Add(int64(-62135596800), int64(1), -45240, "\u2028", "\xff", []byte(`"\u0000"`), ",", true, "\x00",
		"", -7, "é", "\"", "é", "<>&", []byte(`[1e400]`), true, 1e-9, "Post \"http://x/?a=b\": no", "\t", false)
	wr := New(io.Discard, Options{})
	defer wr.Close()
	wn := New(io.Discard, Options{NoRedact: true})
	defer wn.Close()
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int, dir, op string, id []byte, rewrites string, hasHTTP bool,
		method, url string, status int, k1, v1, k2, v2 string, frame []byte, truncated bool, latency float64,
		errText, note string, noRedact bool) {
		r := Record{Time: time.Unix(sec, nsec).In(time.FixedZone("z", offset%(36*3600))), Dir: Dir(dir), Op: op, Method: method,
			ID: id, Frame: frame, Truncated: truncated, LatencyMs: latency, Error: errText, Note: note}
		if rewrites != "" {
			r.Rewrites = strings.Split(rewrites, ",")
		}
		if hasHTTP {
			r.HTTP = &HTTP{Method: method, URL: url, Status: status, Header: map[string]string{k1: v1, k2: v2}}
		}
		w := wr
		if noRedact {
			w = wn
		}
		w.prepare(&r)
		var e encoder
		got, err := e.encode(&r)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		stdErr := enc.Encode(r)
		if (err != nil) != (stdErr != nil) {
			t.Fatalf("encoder error %v, encoding/json error %v", err, stdErr)
		}
		if err == nil && !bytes.Equal(got, b.Bytes()) {
			t.Fatalf("\n got %s\nwant %s", got, b.Bytes())
		}
	})
}

// FuzzEncoder holds the spliced encoding to encoding/json for any frame
// that prepare lets through; and Emit's path (recordLine, which redacts a
// valid frame as it encodes it) to prepare's line, for any
// frame, and for a valid one marked FrameValid, with the default key rule
// and with one that matches more keys.
func FuzzEncoder(f *testing.F) {
	for _, s := range encodeFrames {
		f.Add([]byte(s), "x")
	}
	w := New(bytes.NewBuffer(nil), Options{})
	defer w.Close()
	// Writers with no goroutine, for recordLine alone.
	bare := func(keys ...string) *Writer {
		return &Writer{frameCap: DefaultFrameCap, secretHdr: map[string]bool{}, sensitive: func(k string) bool {
			return rewrite.SensitiveKey(k) || slices.Contains(keys, k)
		}}
	}
	lines := []*Writer{bare(), bare("a", "s", "k")}
	f.Fuzz(func(t *testing.T, frame []byte, s string) {
		r := Record{Time: time.Unix(1785240000, 1), Dir: ProxyToClient, Op: s, Frame: frame, Error: s, Note: s}
		orig := r
		w.prepare(&r)
		var e encoder
		if d := encodeDiff(t, &e, r); d != "" {
			t.Fatalf("frame %q:%s", frame, d)
		}
		for i, lw := range lines {
			for _, mark := range []bool{false, true} {
				if mark && !json.Valid(frame) {
					continue // FrameValid is a promise
				}
				checked, viaLine := orig, orig
				lw.prepare(&checked)
				want, err := e.encode(&checked)
				if err != nil {
					t.Fatal(err)
				}
				want = bytes.Clone(want) // the encoder reuses its line
				viaLine.FrameValid = mark
				line, _, err := lw.recordLine(&e, &viaLine)
				if err != nil || !bytes.Equal(line, want) {
					t.Fatalf("rule %d, frame %q (marked %v) through recordLine:\n got %s (%v)\nwant %s", i, frame, mark, line, err, want)
				}
			}
		}
	})
}

// FuzzFrameValid holds prepare's nesting check to json.Valid on what
// redaction lets through.
func FuzzFrameValid(f *testing.F) {
	for _, s := range encodeFrames {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)))
	f.Add([]byte(`{"a":"` + strings.Repeat("[", 10001) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		red := rewrite.Redact(b, rewrite.SensitiveKey)
		if got, want := !tooDeep(red), json.Valid(red); got != want {
			t.Fatalf("frame %q: nesting check says valid=%v, json.Valid %v", red, got, want)
		}
	})
}

func TestTooDeep(t *testing.T) {
	for n, want := range map[int]bool{1: false, 10000: false, 10001: true} {
		if got := tooDeep([]byte(strings.Repeat("[", n) + strings.Repeat("]", n))); got != want {
			t.Errorf("depth %d: tooDeep = %v", n, got)
		}
	}
}

// TestEncoderSession: a record's session is written after its dir, and
// left out when empty.
func TestEncoderSession(t *testing.T) {
	var e encoder
	ts := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	line, err := e.encode(&Record{Time: ts, Dir: ClientToProxy, Session: "s-7", Op: "op-1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ts":"2026-12-01T08:00:00Z","dir":"client->proxy","session":"s-7","op":"op-1"}` + "\n"; string(line) != want {
		t.Errorf("got %s, want %s", line, want)
	}
	line, _ = e.encode(&Record{Time: ts, Dir: ClientToProxy})
	if strings.Contains(string(line), "session") {
		t.Errorf("an empty session is written: %s", line)
	}
}

// TestMethodIDAsGjson: the one-pass methodID finds what gjson.GetBytes
// finds for "method" and "id", but in a response (a "result" or "error"
// member), where it stops at the id and finds no method after it.
func TestMethodIDAsGjson(t *testing.T) {
	for _, f := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":1,"method":"x"}}`,
		`{"jsonrpc":"2.0","result":{"method":"x","id":2},"id":"a\"b"}`,
		`{"method":"m","method":"n","id":1,"id":2}`,
		` {"params":[{"id":3}],"method":5} `,
		`{"meth\u006fd":"esc","\u0069d":[1, 2]}`,
		`[{"id":1,"method":"x"}]`, `"s"`, `{}`, ``, `{"id":null}`, `{"id":{"a":1},"method":true}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"result":{},"id":4}`, `{"error":{"code":1},"method":"m","id":5}`, `{"id":3,"result":[1],"method":"late"}`,
	} {
		r := Record{Frame: json.RawMessage(f), MethodIDFromFrame: true}
		if strings.HasSuffix(f, `"method":"late"}`) {
			methodID(&r, nil)
			if r.Method != "" || string(r.ID) != "3" {
				t.Errorf("%s: got method %q id %s, want none and 3", f, r.Method, r.ID)
			}
			continue
		}
		methodID(&r, nil)
		wantM := gjson.GetBytes([]byte(f), "method").String()
		var wantID string
		if id := gjson.GetBytes([]byte(f), "id"); id.Exists() {
			wantID = id.Raw
		}
		if r.Method != wantM || string(r.ID) != wantID {
			t.Errorf("%s: got method %q id %s, want %q %s", f, r.Method, r.ID, wantM, wantID)
		}
	}
}

// TestEncoderReusedAcrossHeaders: one encoder, as a Writer keeps between
// records, encodes each record's headers as its own, whatever the record
// before it had.
func TestEncoderReusedAcrossHeaders(t *testing.T) {
	ts := time.Date(2026, 12, 1, 8, 0, 0, 1, time.UTC)
	hs := []map[string]string{
		{"A": "1", "B": "2"}, {"A": "1", "B": "2"}, {"A": "1", "B": "3"}, {"A": "1", "C": "2"},
		{"A": "1"}, {"A": "1", "B": "2", "C": "3"}, {}, nil, {"A": "1", "B": "2", "C": "3"}, {"A": "", "B": "2", "C": "3"},
	}
	var e encoder
	for i, h := range hs {
		r := Record{Time: ts, Dir: ProxyToServer, HTTP: &HTTP{Method: "POST", Header: h}}
		if d := encodeDiff(t, &e, r); d != "" {
			t.Errorf("record %d:%s", i, d)
		}
		// The same headers as an http.Header, first values written, after
		// and before the map form.
		req := http.Header{}
		for k, v := range h {
			req[k] = []string{v, "not this"}
		}
		if i%3 == 0 {
			req["Empty"] = []string{}
		}
		viaReq := Record{Time: ts, Dir: ProxyToServer, HTTP: &HTTP{Method: "POST", Request: req}}
		got, err := e.encode(&viaReq)
		if err != nil {
			t.Fatal(err)
		}
		if want := encodeStd(t, r); !bytes.Equal(got, want) {
			t.Errorf("record %d as Request:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestEncoderReusedAcrossRewrites: one encoder writes each record's
// rewrites as encoding/json does, through more lists than it keeps, lists
// that share a prefix or differ in one name, names that need escaping, and
// a caller's list changed in place after its record was encoded.
func TestEncoderReusedAcrossRewrites(t *testing.T) {
	ts := time.Date(2026, 12, 1, 8, 0, 0, 1, time.UTC)
	mutable := []string{"id.remap", "meta.inject"}
	lists := [][]string{
		{"id.remap", "meta.inject"}, {"id.restore", "serverInfo.strip", "resultType.strip"}, {"id.remap", "meta.inject"},
		{"id.remap"}, {"id.remap", "meta.inject", "x"}, {"a\"b", "<&>"}, {"id.remap", "meta.injecT"}, {"p"}, {"q"},
		{"id.restore", "serverInfo.strip", "resultType.strip"}, mutable, {"", ""}, {""}, mutable,
	}
	var e encoder
	for i, rw := range lists {
		if d := encodeDiff(t, &e, Record{Time: ts, Dir: ProxyToServer, Rewrites: rw}); d != "" {
			t.Errorf("list %d %q:%s", i, rw, d)
		}
		mutable[1] = "meta.other" // the next time it is met, it is another list
	}
	// More lists in turn than it keeps: every record a miss, and still no
	// allocation once the encoder's buffers have grown.
	six := lists[:6]
	n := 0
	if a := testing.AllocsPerRun(100, func() {
		r := Record{Time: ts, Dir: ProxyToServer, Rewrites: six[n%len(six)]}
		n++
		if _, err := e.encode(&r); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocations per record cycling through %d lists of rewrites, want 0", a, len(six))
	}
}

// TestEncoderReusedAcrossTimes: one encoder writes each record's time as
// encoding/json does, whatever the time of the record before it.
func TestEncoderReusedAcrossTimes(t *testing.T) {
	z := time.FixedZone("z", 5*3600+30*60)
	base := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	var ts []time.Time
	for _, ns := range []int{0, 1, 10, 100000000, 123456789, 999999999, 500, 0} {
		ts = append(ts, base.Add(time.Duration(ns)))
	}
	ts = append(ts, base.In(z), base.Add(7).In(z), base.Add(7), base.Add(time.Second+7), base.Add(time.Second).Local(),
		time.Date(2026, 3, 29, 1, 59, 59, 5, time.UTC), time.Date(2026, 3, 29, 2, 0, 0, 5, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), base.Add(3), time.Time{}, time.Time{}.Add(9))
	if loc, err := time.LoadLocation("Europe/Berlin"); err == nil { // across a change of offset
		for _, s := range []int64{1774746000 - 1, 1774746000, 1774746000 + 1} {
			ts = append(ts, time.Unix(s, 42).In(loc))
		}
	}
	var e encoder
	for i, tm := range ts {
		r := Record{Time: tm, Dir: Proxy, Note: "n"}
		got, err := e.encode(&r)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if werr := enc.Encode(r); werr != nil || err != nil {
			if (werr == nil) != (err == nil) {
				t.Errorf("time %d (%v): error %v, encoding/json %v", i, tm, err, werr)
			}
			continue
		}
		if !bytes.Equal(got, b.Bytes()) {
			t.Errorf("time %d:\n got %s\nwant %s", i, got, b.Bytes())
		}
	}
}

// FuzzValidOrString holds validOrString to encoding/json: a record's id or
// frame that json.Valid accepts goes in as it is, any other as a string.
func FuzzValidOrString(f *testing.F) {
	for _, s := range []string{"206", `"a\"b"`, "null", "-1.5e3", "01", "1.", `{"a":[1,{}]}`, "[1,]", "\"\xff\"",
		" 7 ", "\"\t\"", strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := validOrString(bytes.Clone(b))
		var want []byte
		switch {
		case len(b) == 0:
		case json.Valid(b):
			want = b
		default:
			want, _ = json.Marshal(string(b))
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("validOrString(%q) = %s, encoding/json gives %s", b, got, want)
		}
	})
}
