package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// cleanCases are frames and whether they are clean (Record.FrameClean):
// valid, compact, with no key to redact, under the cap.
var cleanCases = []struct {
	frame string
	clean bool
}{
	{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a b\n"}]}}`, true},
	{`{"jsonrpc":"2.0","id":"x","method":"m","params":{"_meta":{"progressToken":3}}}`, true},
	{`  {"jsonrpc":"2.0","id":1,"result":{}}` + "\r\n", true}, // the line's own ends are trimmed
	{`{"jsonrpc":"2.0", "id":1,"result":{}}`, false},          // whitespace
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\n}}", false},
	{`{"jsonrpc":"2.0","id":1,"result":{"password":"p"}}`, false}, // a key to redact
	{`{"jsonrpc":"2.0","id":1,"result":[{"deep":{"apiKey":1}}]}`, false},
	{`{"jsonrpc":"2.0","id":1,"result":`, false},                                                // invalid
	{`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", DefaultFrameCap) + `"}`, false}, // over the cap
}

// TestEmitReportsCleanFrames: Emit reports a frame clean exactly when it
// is, whether the emitter marked it FrameValid or not; Check agrees, and a
// writer that does not redact reports nothing.
func TestEmitReportsCleanFrames(t *testing.T) {
	buf := &syncBuf{t: t}
	w := New(buf, Options{})
	raw := New(buf, Options{NoRedact: true})
	for _, c := range cleanCases {
		for _, valid := range []bool{false, true} {
			if valid && !json.Valid([]byte(c.frame)) {
				continue // FrameValid promises valid JSON
			}
			r := Record{Dir: ServerToProxy, Frame: json.RawMessage(c.frame), FrameValid: valid, MethodIDFromFrame: true}
			if got := w.Emit(r); got != c.clean {
				t.Errorf("Emit(%.60q, marked valid %v) = %v, want %v", c.frame, valid, got, c.clean)
			}
			if raw.Emit(r) {
				t.Errorf("a writer that does not redact reported %.60q clean", c.frame)
			}
		}
		f := rewrite.TrimFrame([]byte(c.frame))
		wantValid := json.Valid(f) && len(f) <= DefaultFrameCap // over the cap: not checked
		if valid, clean := w.Check(f); valid != wantValid || clean != c.clean {
			t.Errorf("Check(%.60q) = %v, %v, want %v, %v", c.frame, valid, clean, wantValid, c.clean)
		}
		if valid, clean := raw.Check(f); valid || clean {
			t.Errorf("a writer that does not redact checked %.60q", c.frame)
		}
	}
	var none *Writer
	if valid, clean := none.Check([]byte(`{}`)); valid || clean || none.Emit(Record{Frame: json.RawMessage(`{}`)}) {
		t.Error("a nil writer or one that does not redact reported a frame clean")
	}
	for _, tw := range []*Writer{w, raw} {
		if _, err := tw.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFrameCleanRecordsMatchScannedOnes: a record emitted FrameClean is
// the line its scan would make, byte for byte; and a frame claimed clean
// over the cap, where the claim is not heeded, is still redacted.
func TestFrameCleanRecordsMatchScannedOnes(t *testing.T) {
	w := bareWriter()
	var e encoder
	ts := time.Now()
	for _, rec := range echoCall() {
		rec.Time = ts
		want, clean, err := w.recordLine(&e, &rec)
		if err != nil || !clean {
			t.Fatalf("%s: clean %v, %v", rec.Frame, clean, err)
		}
		want = bytes.Clone(want)
		rec.FrameClean = true
		got, _, err := w.recordLine(&e, &rec)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("FrameClean record:\n got %s (%v)\nwant %s", got, err, want)
		}
	}
	big := Record{Time: ts, Frame: json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{"password":"hunter2","pad":"` + strings.Repeat("x", DefaultFrameCap) + `"}}`),
		FrameValid: true, FrameClean: true}
	line, _, err := w.recordLine(&e, &big)
	if err != nil || bytes.Contains(line, []byte("hunter2")) || !bytes.Contains(line, []byte(`"truncated":true`)) {
		t.Errorf("a large frame wrongly claimed clean: %v\n%.300s", err, line)
	}
}

// TestVerifyCatchesWrongCleanClaims: with VerifyEnv set, a frame emitted
// FrameClean that is not clean panics, naming why; clean ones are counted.
func TestVerifyCatchesWrongCleanClaims(t *testing.T) {
	t.Setenv(VerifyEnv, "1")
	buf := &syncBuf{t: t}
	w := New(buf, Options{})
	defer w.Close()
	for _, c := range cleanCases {
		if len(c.frame) > DefaultFrameCap {
			continue // not heeded over the cap, so not checked
		}
		before := w.Verified()
		got := fmt.Sprint(catch(func() {
			w.Emit(Record{Frame: json.RawMessage(c.frame), FrameValid: true, FrameClean: true})
		}))
		switch {
		case c.clean && (got != "<nil>" || w.Verified() != before+1):
			t.Errorf("clean %.60q: panic %s, %d verified", c.frame, got, w.Verified()-before)
		case !c.clean && !strings.Contains(got, "a frame emitted as clean is not"):
			t.Errorf("%.60q wrongly claimed clean: panic %s", c.frame, got)
		}
	}
}

func catch(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
