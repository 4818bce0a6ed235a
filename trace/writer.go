package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/safefile"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Defaults of Options.
const (
	DefaultFrameCap      = 64 << 10
	DefaultBuffer        = 4096
	DefaultBufferBytes   = 8 << 20
	DefaultFlushInterval = 100 * time.Millisecond
)

// wakeSize is the buffered bytes at which Emit wakes the writer goroutine
// before FlushInterval.
const wakeSize = 64 << 10

// writeSize is the most the writer goroutine writes at once (but for one
// longer line): four wake-ups' worth, so that the batch a wake-up finds, a
// little over wakeSize, goes out in one write, whose records are counted
// already.
const writeSize = 4 * wakeSize

// redacted replaces the value of a secret header.
const redacted = "[REDACTED]"

// Options configures a Writer. The zero value is usable.
type Options struct {
	// FrameCap is the number of frame bytes kept per record (default 64
	// KiB). A longer frame is replaced by
	// {"truncated":true,"bytes":N,"head":"<first FrameCap bytes>"} and the
	// record is marked Truncated. The cut happens after redaction.
	FrameCap int
	// Buffer is the number of records buffered before dropping (default 4096).
	Buffer int
	// BufferBytes bounds the memory of the buffered records, their JSONL
	// lines: a record that would take them past it is dropped and counted
	// (default 8 MiB); a record larger than BufferBytes on its own is always
	// dropped.
	BufferBytes int
	// FlushInterval is how long a record may wait in memory before the
	// writer goroutine writes it out (default 100 ms). The goroutine also
	// writes as soon as 64 KiB or a quarter of Buffer is buffered, and on
	// Close; it never wakes while nothing is buffered. A crash loses at most
	// the records of the last FlushInterval (and whatever a stalled reader
	// has not taken).
	FlushInterval time.Duration
	// SecretHeaders names headers whose values are always redacted, in
	// addition to Authorization, Proxy-Authorization, Cookie and Set-Cookie
	// (case-insensitive).
	SecretHeaders []string
	// RedactKeys names extra JSON keys to redact (exact, case-insensitive),
	// in addition to rewrite.SensitiveKey.
	RedactKeys []string
	// NoRedact turns redaction off.
	NoRedact bool
}

// Writer writes trace records as JSONL. A nil *Writer is valid and
// discards everything, so callers can hold a nil writer when tracing is off.
//
// Emit redacts and encodes the record's line on the caller's goroutine,
// while the frame is still in the caller's hands and in its cache, and
// appends the line to a buffer under a mutex held for the copy: nothing of
// the caller's is kept, so nothing is copied but the line. The writer's
// goroutine only writes the buffer out, in writes of whole lines: it is
// woken by a timer FlushInterval after a line arrives in an empty buffer,
// by Emit once 64 KiB (or a quarter of Buffer records) is buffered, and by
// Close. So a sequential workload costs no wake-up and no write(2) per
// record.
type Writer struct {
	out       io.Writer
	closer    io.Closer // the file opened by Open; nil otherwise
	frameCap  int
	noRedact  bool
	sensitive func(key string) bool
	verify    bool            // VerifyEnv is set: FrameClean frames are checked
	verified  atomic.Int64    // how many were
	secretHdr map[string]bool // lower-case names of the user's secret headers (SecretHeaders)

	maxRecords  int64 // Options.Buffer
	maxBytes    int64 // Options.BufferBytes
	kickRecords int   // buffered records that wake the goroutine early
	kickBytes   int   // buffered bytes that wake the goroutine early
	interval    time.Duration

	kick  chan struct{} // capacity 1: Emit wakes the goroutine early
	stop  chan struct{} // closed by Close
	done  chan struct{} // closed when the goroutine has flushed and ended
	timer *time.Timer   // armed by Emit when a line enters an empty buffer

	// encoders holds the encoders not in use; each remembers its own
	// redactions. A sync.Pool keeps them per thread and takes no lock (a
	// collection may let idle ones go: their memos are then made again).
	encoders sync.Pool

	// Emit takes mu once a record, and changes nothing else shared but
	// what it guards: the atomics below change at Close, when something is
	// dropped or a write fails, when the buffer fills or drains, and once
	// a write.
	mu     sync.Mutex // guards what follows, up to the atomics
	lines  []byte     // encoded lines not yet taken by the goroutine, in Emit order
	nLines int64      // records in lines
	kicked bool       // a wake-up was sent for lines
	shut   bool       // Close has begun: Emit discards
	// held and heldBytes count the records in memory: lines, and what the
	// goroutine has taken but not yet begun to write.
	held, heldBytes int64
	accepted        int64 // records accepted, ever

	full     atomic.Bool // held or heldBytes is at its bound: Emit skips the work of a record that cannot fit
	closed   atomic.Bool
	failed   atomic.Bool  // a write failed: every later record is dropped
	dropped  atomic.Int64 // dropped records, including those lost to a write error
	finished atomic.Int64 // accepted records written out or lost to a write error

	// Owned by the goroutine.
	spare []byte // the previous batch, reused as the next lines
	err   error  // first write error; read by Close after done

	closeOnce sync.Once
	closeErr  error
}

// Open starts a Writer on path: "-" writes to os.Stderr; a regular file is
// created or truncated with mode 0600 (an existing one is chmod-ed to
// 0600 first); a device such as /dev/null is written as it is, its mode
// untouched; a FIFO is opened on the first write. It opens path with
// internal/safefile: a symbolic link at path, and a file or FIFO of
// another user, are refused. It refuses the process's
// standard output, whatever its name (/dev/stdout, /proc/self/fd/1, the
// file it was redirected to), which carries only frames: a file there
// would be truncated, and records would go among the frames.
func Open(path string, o Options) (*Writer, error) {
	if path == "-" {
		return New(os.Stderr, o), nil
	}
	// Stat follows links, to find stdout under any name (/dev/stdout is
	// one) and say so; any other link is then refused.
	st, err := os.Stat(path)
	if err == nil {
		if out, oerr := os.Stdout.Stat(); oerr == nil && os.SameFile(st, out) {
			return nil, fmt.Errorf("%s is this process's standard output, which carries only frames: trace to a file, or to stderr with -", path)
		}
	}
	if err := safefile.Check(path); err != nil {
		return nil, err
	}
	if err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		// Opening a FIFO blocks until a reader comes: the writer's own
		// goroutine opens it on the first write, never the caller.
		lf := &lazyFile{path: path}
		w := New(lf, o)
		w.closer = lf
		return w, nil
	}
	f, err := safefile.OpenWrite(path, safefile.Truncate)
	if err != nil {
		return nil, err
	}
	w := New(f, o)
	w.closer = f
	return w, nil
}

// lazyFile opens its file on the first write.
type lazyFile struct {
	path string
	f    *os.File
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil {
		f, err := safefile.OpenWrite(l.path, safefile.Append)
		if err != nil {
			return 0, err
		}
		l.f = f
	}
	return l.f.Write(p)
}

func (l *lazyFile) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// New starts a Writer on w. Close flushes but does not close w.
func New(w io.Writer, o Options) *Writer {
	if o.FrameCap <= 0 {
		o.FrameCap = DefaultFrameCap
	}
	if o.Buffer <= 0 {
		o.Buffer = DefaultBuffer
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = DefaultBufferBytes
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	tw := &Writer{
		out:         w,
		frameCap:    o.FrameCap,
		noRedact:    o.NoRedact,
		sensitive:   rewrite.SensitiveKeys(o.RedactKeys),
		maxRecords:  int64(o.Buffer),
		maxBytes:    int64(o.BufferBytes),
		kickRecords: max(1, o.Buffer/4),
		kickBytes:   max(1, min(wakeSize, o.BufferBytes/4)),
		interval:    o.FlushInterval,
		kick:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		timer:       time.NewTimer(time.Hour),
		secretHdr:   map[string]bool{},
		verify:      os.Getenv(VerifyEnv) != "",
	}
	tw.timer.Stop()
	for _, h := range o.SecretHeaders {
		tw.secretHdr[strings.ToLower(h)] = true
	}
	go tw.run()
	return tw
}

// Dropped is the number of records dropped so far, plus those accepted
// but not yet written out (which a stalled reader will never get).
func (w *Writer) Dropped() int64 {
	if w == nil {
		return 0
	}
	finished := w.finished.Load() // first: it never passes accepted
	w.mu.Lock()
	accepted := w.accepted
	w.mu.Unlock()
	return w.dropped.Load() + accepted - finished
}

// Enabled reports whether records are written: false for a nil Writer.
func (w *Writer) Enabled() bool { return w != nil }

// Emit records r without blocking: on the caller's goroutine it reads the
// method and id from the frame (when asked), redacts the record, caps its
// frame and encodes its line; then it appends the line to the buffer. CPU
// only, no I/O, and no wake-up of the writer goroutine but once per 64 KiB
// (or a quarter of Options.Buffer) buffered. Emit keeps nothing of r: the
// caller may reuse its memory as soon as Emit returns. When the buffer is
// full (Options.Buffer records or Options.BufferBytes bytes), or after a
// write error, the record is dropped and counted. Lines are written in the
// order Emit buffered them. Records emitted after Close, and all records
// of a nil Writer, are discarded.
//
// Emit reports whether it found r's frame clean, as Record.FrameClean
// describes (never when the record was not encoded, or the writer does
// not redact): a frame made from it by edits that insert only clean parts
// may then be emitted FrameClean and copied without a scan.
func (w *Writer) Emit(r Record) (clean bool) {
	return w.emit(r, nil)
}

// EmitHTTP is Emit of r with h as its HTTP member. h is copied into the
// encoder's own memory, so the caller's HTTP, taken by value, costs no
// allocation, where a Record's HTTP pointer always does: the encoder, which
// outlives the call, keeps some of a record's members from one record to
// the next (the time's location, the header names), and escape analysis
// does not tell one member from another, so everything a Record points to
// escapes to the heap.
func (w *Writer) EmitHTTP(r Record, h HTTP) (clean bool) {
	return w.emit(r, &h)
}

// emit is Emit, with the record's HTTP member in h when h is not nil: h is
// only read, never kept.
func (w *Writer) emit(r Record, h *HTTP) (clean bool) {
	if w == nil || w.closed.Load() {
		return false
	}
	if w.failed.Load() || w.full.Load() {
		w.dropped.Add(1) // full: skip the encoding
		return false
	}
	e := w.encoder()
	clean = w.emitWith(e, r, h)
	w.encoders.Put(e) // its line is copied: free for the next record
	return clean
}

// emitWith is emit's work on a record the writer takes, with the encoder e.
func (w *Writer) emitWith(e *encoder, r Record, h *HTTP) (clean bool) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	if h != nil {
		e.http = *h
		r.HTTP = &e.http // finish redacts it where it lies
	}
	line, clean, err := w.recordLine(e, &r)
	w.mu.Lock()
	accepted := err == nil && !w.shut && w.held < w.maxRecords && w.heldBytes+int64(len(line)) <= w.maxBytes
	kick := false
	if accepted {
		if len(w.lines) == 0 {
			w.timer.Reset(w.interval)
		}
		w.lines = append(w.lines, line...)
		w.nLines++
		w.held++
		w.heldBytes += int64(len(line))
		w.accepted++
		if w.held >= w.maxRecords || w.heldBytes >= w.maxBytes {
			w.full.Store(true)
		}
		kick = !w.kicked && (len(w.lines) >= w.kickBytes || w.nLines >= int64(w.kickRecords))
		w.kicked = w.kicked || kick
	}
	shut := w.shut
	w.mu.Unlock()
	if !accepted && !shut {
		w.dropped.Add(1) // full, or a record no JSON can hold (errUnencodable)
	}
	if kick {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return clean
}

// Check reports whether frame is valid JSON, and whether it is clean, as
// Record.FrameClean describes, by w's rule: a caller that is about to
// parse and trace a frame it received checks it here once, parses it
// without validating it again (rewrite.ParseValid) and emits it
// FrameClean when it is clean; a part that edits insert into frames found
// clean is checked here once too. It is safe for concurrent use. It
// answers false, false for a nil Writer, one that does not redact, and a
// frame over the cap (whose trace record holds only its head): such frames
// are validated and traced as usual.
func (w *Writer) Check(frame []byte) (valid, clean bool) {
	if !w.checks(frame) {
		return false, false
	}
	e := w.encoder() // for its memo of the rule's verdicts
	valid, clean = w.checkWith(e, frame)
	w.encoders.Put(e)
	return valid, clean
}

// checks says whether Check looks at frame at all.
func (w *Writer) checks(frame []byte) bool {
	return w != nil && !w.noRedact && len(frame) > 0 && len(frame) <= w.frameCap
}

// checkWith is Check's work, for a frame it looks at, with a given encoder
// (its memo of verdicts).
func (w *Writer) checkWith(e *encoder, frame []byte) (valid, clean bool) {
	valid, dirty, spaced := rewrite.ValidKeys(frame, e.cache.keyMemo(w))
	return valid, valid && !dirty && !spaced
}

// encoder takes an idle encoder, or makes one.
func (w *Writer) encoder() *encoder {
	if e, ok := w.encoders.Get().(*encoder); ok {
		return e
	}
	return new(encoder)
}

// Close writes out what was buffered, stops the goroutine, closes the file
// opened by Open and returns the number of dropped records (including
// records lost to a write error) with the first error. It is idempotent;
// a nil Writer returns 0, nil.
func (w *Writer) Close() (dropped int64, err error) {
	if w == nil {
		return 0, nil
	}
	w.closeOnce.Do(func() {
		w.closed.Store(true)
		w.mu.Lock()
		w.shut = true
		w.mu.Unlock()
		close(w.stop)
		<-w.done
		w.timer.Stop()
		w.closeErr = w.err
		if w.closer != nil {
			if err := w.closer.Close(); w.closeErr == nil {
				w.closeErr = err
			}
		}
	})
	return w.dropped.Load(), w.closeErr
}

// run writes out the buffer whenever it is woken: by the timer, by Emit
// when enough is buffered, and a last time on Close (after which Emit
// buffers nothing).
func (w *Writer) run() {
	defer close(w.done)
	for {
		select {
		case <-w.kick:
		case <-w.timer.C:
		case <-w.stop:
			w.flush()
			return
		}
		w.flush()
	}
}

// flush takes the buffer and writes it out in writes of whole lines, each
// of at most writeSize bytes (or one longer line). A chunk's records leave
// the count of those held as its write begins. After a write error it
// counts the records as dropped instead.
func (w *Writer) flush() {
	w.mu.Lock()
	batch, records := w.lines, w.nLines
	w.lines, w.nLines = w.spare[:0], 0
	w.kicked = false
	w.mu.Unlock()
	for rest := batch; len(rest) > 0; {
		chunk := rest
		if len(chunk) > writeSize {
			end := bytes.LastIndexByte(chunk[:writeSize], '\n')
			if end < 0 { // a line longer than writeSize goes alone
				end = bytes.IndexByte(chunk, '\n')
			}
			chunk = chunk[:end+1]
		}
		rest = rest[len(chunk):]
		n := records // the last chunk's
		if len(rest) > 0 {
			n = int64(bytes.Count(chunk, newline)) // a line's only newline ends it
		}
		records -= n
		w.mu.Lock()
		w.held -= n
		w.heldBytes -= int64(len(chunk))
		if w.held < w.maxRecords && w.heldBytes < w.maxBytes && w.full.Load() {
			w.full.Store(false)
		}
		w.mu.Unlock()
		if w.err != nil {
			w.lose(n)
			continue
		}
		if _, err := w.out.Write(chunk); err != nil {
			w.err = err
			w.failed.Store(true)
			w.lose(n)
			continue
		}
		w.finished.Add(n)
	}
	if cap(batch) > writeSize { // after a burst
		batch = nil
	}
	w.spare = batch[:0]
}

var newline = []byte{'\n'}

// lose counts n accepted records as dropped.
func (w *Writer) lose(n int64) {
	w.dropped.Add(n)
	w.finished.Add(n)
}

// recordLine finishes r and encodes its line, which is the encoder's until
// its next record. A valid frame under the cap is redacted as it is
// encoded, in one pass, unless it has a key to redact: then it is redacted
// first, as any other. A frame whose validity finish checked had its keys
// tested in that pass: when none is to be redacted it is copied in as it
// is (compacted when it has whitespace).
func (w *Writer) recordLine(e *encoder, r *Record) (line []byte, clean bool, err error) {
	e.w = w
	if w.noRedact {
		e.w = nil
	}
	switch w.finish(r, e, true) {
	case frameDone, frameSpaced:
		line, err = e.encode(r)
		return line, false, err
	case frameClean:
		e.asIs = true
		line, err = e.encode(r)
		e.asIs = false
		return line, err == nil, err
	}
	if line, err := e.encodeClean(r, e.cache.keyMemo(w)); line != nil || err != nil {
		return line, err == nil && !e.compacted, err
	}
	r.Frame = w.frame(r.Frame, true, &r.Truncated, e.cache.keyRule(w))
	line, err = e.encode(r)
	return line, false, err
}

// VerifyEnv, when set in the environment of a process, makes its trace
// writers check every frame emitted as Record.FrameClean, and panic on one
// that is not: the tests set it, so that a wrong claim by the bridge fails
// them instead of leaking a secret into a trace.
const VerifyEnv = "MCP_TASKS_PROXY_TRACE_VERIFY"

// verifyClean panics when f, emitted as FrameClean, is not clean.
func (w *Writer) verifyClean(f []byte, c *redactCache) {
	valid, dirty, spaced := rewrite.ValidKeys(f, c.keyMemo(w))
	if !valid || dirty || spaced {
		panic(fmt.Sprintf("trace: a frame emitted as clean is not (valid %v, a key to redact %v, whitespace %v): %.200s", valid, dirty, spaced, f))
	}
	w.verified.Add(1)
}

// Verified reports how many frames emitted as Record.FrameClean w checked
// and found clean (only while VerifyEnv is set): the tests read it to know
// that the claims they meant to check were made.
func (w *Writer) Verified() int64 { return w.verified.Load() }

// What finish left to do with a record's frame.
const (
	frameDone   = iota // redacted and capped
	frameScan          // valid and under the cap: its keys are to be tested as it is encoded
	frameClean         // valid, under the cap, no key to redact and no whitespace: copied as it is
	frameSpaced        // as frameClean, but with whitespace to compact
)

// encoder makes the JSONL line of a record, byte for byte what
// encoding/json writes (SetEscapeHTML(false)). It appends the fields of a
// Record itself, in the struct's order and with its omitempty rules. What
// it cannot write, encoding/json cannot either: a time outside years
// 0–9999 or with a zone hour over 23 (the same check of the time package
// fails both), a NaN or infinite latency. Such a record is an error
// (errUnencodable), as encoding/json's would be.
//
// encoding/json would validate and compact the frame, a RawMessage, with
// its byte-at-a-time scanner: most of the cost of a record. The frame is
// valid JSON after prepare, so it is spliced in, compacted by a loop that
// copies strings whole.
type encoder struct {
	// w is the Writer whose rules the record's headers are redacted by,
	// as they are encoded (nil: they were redacted before, by prepare).
	// cache remembers redactions from one record to the next; http is the
	// record's HTTP member as redacted, so that the caller's stays as it is.
	w      *Writer
	cache  redactCache
	http   HTTP
	method methodMemo

	// memo, while encodeClean runs, has the key rule the frame is tested
	// by; dirty, that a key matched it.
	memo  *rewrite.KeyMemo
	dirty bool
	// compacted, after encodeClean, says the frame had whitespace to take
	// out.
	compacted bool
	// asIs, while recordLine encodes a frameClean record, says its frame
	// goes in as it is.
	asIs bool

	line []byte
	// The last lists of rewrites encoded (appendRewrites).
	rewrites     [4]rewritesJSON
	nextRewrites int
	// The last headers encoded: their names sorted, their values, their
	// JSON object, and the Writer whose rules redacted it.
	keys, values []string
	header       []byte
	headerRules  *Writer
	// The last record's time: its second and location, and its text up
	// to the seconds (none yet when tsSet is false) and from the zone on.
	tsSec  int64
	tsLoc  *time.Location
	tsSet  bool
	tsHead [timeHead]byte
	tsZone []byte
}

// rewritesJSON is a list of rewrites and its JSON array.
type rewritesJSON struct {
	names []string
	json  []byte
}

// errUnencodable is the error of a record encoding/json cannot encode.
var errUnencodable = errors.New("trace: a record's time is outside years 0-9999, or its latency is not a finite number")

func (e *encoder) encode(r *Record) ([]byte, error) {
	line, ok := e.appendRecord(e.line[:0], r)
	if !ok {
		return nil, errUnencodable
	}
	e.line = line
	return line, nil
}

// encodeClean is encode for a record whose valid frame is not redacted
// yet: the frame is copied in as it is compacted, and each of its keys
// tested by sensitive on the way. It returns a nil line (and no error) when
// a key is to be redacted, or the record needs encoding/json: the caller
// then redacts the frame and encodes it the usual way.
func (e *encoder) encodeClean(r *Record, keys *rewrite.KeyMemo) ([]byte, error) {
	e.memo, e.compacted = keys, false
	line, ok := e.appendRecord(e.line[:0], r)
	e.memo = nil
	if !ok || e.dirty {
		e.dirty = false
		return nil, nil
	}
	e.line = line
	return line, nil
}

// appendRecord appends the line of r to dst, or reports false when r
// cannot be encoded. The members come in
// the struct's order, with its omitempty rules.
func (e *encoder) appendRecord(dst []byte, r *Record) ([]byte, bool) {
	if math.IsNaN(r.LatencyMs) || math.IsInf(r.LatencyMs, 0) {
		return dst, false
	}
	dst = append(dst, `{"ts":"`...)
	dst, ok := e.appendTime(dst, r.Time)
	if !ok {
		return dst, false
	}
	dst = append(dst, `","dir":`...)
	dst = appendDir(dst, r.Dir)
	dst = appendMember(dst, `,"session":`, r.Session)
	dst = appendMember(dst, `,"op":`, r.Op)
	dst = appendMember(dst, `,"method":`, r.Method)
	if len(r.ID) > 0 {
		dst = append(dst, `,"id":`...)
		dst = appendCompact(dst, r.ID)
	}
	if len(r.Rewrites) > 0 {
		dst = append(dst, `,"rewrites":`...)
		dst = e.appendRewrites(dst, r.Rewrites)
	}
	if r.HTTP != nil {
		dst = e.appendHTTP(dst, r.HTTP)
	}
	if len(r.Frame) > 0 {
		dst = append(dst, `,"frame":`...)
		if e.asIs {
			dst = append(dst, r.Frame...)
		} else if e.memo == nil {
			dst = appendCompact(dst, r.Frame)
		} else {
			n := len(dst)
			if dst, e.dirty = rewrite.AppendCompact(dst, r.Frame, e.memo); e.dirty {
				return dst, true // encodeClean gives up on the line
			}
			e.compacted = len(dst)-n != len(r.Frame)
		}
	}
	if r.Truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	if r.LatencyMs != 0 {
		dst = append(dst, `,"latencyMs":`...)
		dst = appendFloat(dst, r.LatencyMs)
	}
	dst = appendMember(dst, `,"error":`, r.Error)
	dst = appendMember(dst, `,"note":`, r.Note)
	return append(dst, "}\n"...), true
}

// timeHead is the length of a time's text up to its seconds: a year of
// four digits (Time.AppendText fails on others).
const timeHead = len("2006-01-02T15:04:05")

// appendTime appends what Time.MarshalJSON quotes: t in RFC 3339 with
// nanoseconds, or reports false when t is out of its range. Records come
// many a second: the text up to the seconds and the zone's are those of
// the last record when its second and location were t's (a zone's offset
// changes on a whole second), and only the fraction is formatted.
func (e *encoder) appendTime(dst []byte, t time.Time) ([]byte, bool) {
	sec, loc := t.Unix(), t.Location()
	if e.tsSet && sec == e.tsSec && loc == e.tsLoc {
		dst = append(dst, e.tsHead[:]...) // a fixed size: copied without a call
		dst = appendFraction(dst, t.Nanosecond())
		if len(e.tsZone) == 1 { // "Z"
			return append(dst, e.tsZone[0]), true
		}
		return append(dst, e.tsZone...), true
	}
	start := len(dst)
	dst, err := t.AppendText(dst)
	if err != nil {
		return dst, false
	}
	text := dst[start:]
	zone := timeHead
	if len(text) > timeHead && text[timeHead] == '.' {
		zone++
		for zone < len(text) && text[zone] >= '0' && text[zone] <= '9' {
			zone++
		}
	}
	e.tsSec, e.tsLoc = sec, loc
	copy(e.tsHead[:], text[:timeHead])
	e.tsZone = append(e.tsZone[:0], text[zone:]...)
	e.tsSet = true
	return dst, true
}

// appendDir appends d as a JSON string: the hops' own names are written
// as they are, any other is escaped.
func appendDir(dst []byte, d Dir) []byte {
	switch d {
	case ClientToProxy, ProxyToServer, ServerToProxy, ProxyToClient, Proxy:
		return append(append(append(dst, '"'), d...), '"')
	}
	return rewrite.AppendString(dst, string(d))
}

// digitPairs holds the two digits of 0 to 99, in turn.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendFraction appends ns as RFC 3339 with nanoseconds does: a dot and
// nine digits without their trailing zeros, nothing for zero. The digits
// are made in place, two at a time, in unsigned arithmetic.
func appendFraction(dst []byte, ns int) []byte {
	if ns == 0 {
		return dst
	}
	n := len(dst)
	dst = slices.Grow(dst, 10)[:n+10]
	b := (*[10]byte)(dst[n:])
	b[0] = '.'
	u := uint32(ns)
	for i := 8; i > 1; i -= 2 { // from the last
		q := u / 100
		d := (u - q*100) * 2
		b[i], b[i+1] = digitPairs[d], digitPairs[d+1]
		u = q
	}
	b[1] = byte('0' + u)
	k := 10
	for b[k-1] == '0' {
		k--
	}
	return dst[:n+k]
}

// appendMember appends an omitempty string member: key (with its comma and
// colon) and v, when v is not empty.
func appendMember(dst []byte, key, v string) []byte {
	if v == "" {
		return dst
	}
	return rewrite.AppendString(append(dst, key...), v)
}

// appendRewrites appends the JSON array of rw. A session's records name a
// few lists of rewrites over and over (an echo call's, two): the arrays of
// the last four are kept, with their names to know them by. The names are
// kept as strings, whose bytes never change, so keeping them copies no
// bytes and allocates nothing once the lists are known.
func (e *encoder) appendRewrites(dst []byte, rw []string) []byte {
	for i := range e.rewrites {
		if m := &e.rewrites[i]; len(m.json) > 0 && slices.Equal(m.names, rw) {
			return append(dst, m.json...)
		}
	}
	start := len(dst)
	dst = append(dst, '[')
	for i, s := range rw {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = rewrite.AppendString(dst, s)
	}
	dst = append(dst, ']')
	m := &e.rewrites[e.nextRewrites]
	e.nextRewrites = (e.nextRewrites + 1) % len(e.rewrites)
	m.names = m.names[:0]
	m.names = append(m.names, rw...) // the strings, not the caller's slice, which may change
	m.json = append(m.json[:0], dst[start:]...)
	return dst
}

// appendHTTP appends the "http" member of a record.
func (e *encoder) appendHTTP(dst []byte, h *HTTP) []byte {
	dst = append(dst, `,"http":{`...)
	n := len(dst)
	dst = appendMember(dst, `,"method":`, h.Method)
	dst = appendMember(dst, `,"url":`, h.URL)
	if h.Status != 0 {
		dst = append(dst, `,"status":`...)
		dst = strconv.AppendInt(dst, int64(h.Status), 10)
	}
	dst = e.appendHeader(dst, h)
	if len(dst) > n { // drop the first member's comma
		dst = append(dst[:n], dst[n+1:]...)
	}
	return append(dst, '}')
}

// appendHeader appends the "header" member of a record, when it has a
// header to write (a name in Header, or one with a value in Request): its
// names sorted and secret values redacted by e.w's rules. The headers of a
// session's POSTs repeat from one to the next: when they are those of the
// last record, its object is appended again.
func (e *encoder) appendHeader(dst []byte, h *HTTP) []byte {
	n := len(h.Header)
	if h.Header == nil {
		n = len(h.Request)
	}
	if n == 0 {
		return dst
	}
	if n == len(e.keys) && len(e.header) > 0 && e.headerRules == e.w && e.sameHeader(h) {
		return append(append(dst, `,"header":`...), e.header...)
	}
	e.keys, e.values, e.header = e.keys[:0], e.values[:0], e.header[:0]
	if h.Header != nil {
		for k := range h.Header {
			e.keys = append(e.keys, k)
		}
	} else {
		for k, v := range h.Request {
			if len(v) > 0 {
				e.keys = append(e.keys, k)
			}
		}
	}
	if len(e.keys) == 0 {
		return dst
	}
	slices.Sort(e.keys)
	dst = append(dst, `,"header":`...)
	start := len(dst)
	dst = append(dst, '{')
	for i, k := range e.keys {
		v := headerValue(h, k)
		e.values = append(e.values, v)
		if e.w != nil && e.cache.secretHeader(e.w, k) {
			v = redacted
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = rewrite.AppendString(dst, k)
		dst = append(dst, ':')
		dst = rewrite.AppendString(dst, v)
	}
	dst = append(dst, '}')
	e.header, e.headerRules = append(e.header, dst[start:]...), e.w
	return dst
}

// headerValue is the value of header k of h: Header's, or Request's first.
func headerValue(h *HTTP, k string) string {
	if h.Header != nil {
		return h.Header[k]
	}
	if v := h.Request[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// sameHeader reports whether h holds the last headers encoded, given that
// it has as many names.
func (e *encoder) sameHeader(h *HTTP) bool {
	for i, k := range e.keys {
		if h.Header != nil {
			if v, ok := h.Header[k]; !ok || v != e.values[i] {
				return false
			}
		} else if v := h.Request[k]; len(v) == 0 || v[0] != e.values[i] {
			return false
		}
	}
	return true
}

// appendFloat appends a finite f as encoding/json does: like %g, with the
// exponent from 1e21 and below 1e-6, not padded to two digits.
func appendFloat(dst []byte, f float64) []byte {
	if m := f * 1000; f > 0 && m < 1e15 && m == math.Trunc(m) && float64(int64(m))/1000 == f {
		return appendMillis(dst, int64(m))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendMillis appends n/1000 in decimal, without trailing zeros: what
// strconv formats, shortest, for the float64 nearest to n/1000 (a latency in
// whole microseconds, in milliseconds). Below 1e15 two decimals of at most
// 15 digits never round to the same float64, so that decimal is the
// shortest that reads back as it.
func appendMillis(dst []byte, n int64) []byte {
	dst = strconv.AppendInt(dst, n/1000, 10)
	frac := n % 1000
	if frac == 0 {
		return dst
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	k := 3
	for digits[k-1] == '0' {
		k--
	}
	return append(append(dst, '.'), digits[:k]...)
}

// appendCompact appends valid JSON src without the whitespace outside its
// strings.
func appendCompact(dst, src []byte) []byte {
	out, _ := rewrite.AppendCompact(dst, src, nil)
	return out
}

// stringEnd returns the offset just past the string literal at src[i].
func stringEnd(src []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(src[j:], '"')
		if k < 0 {
			return len(src)
		}
		j += k
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for b := j - 1; b > i && src[b] == '\\'; b-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// methodID fills Method and ID from the frame when the record asks for it:
// the first "method" and "id" members of its top-level object. One pass
// reads the members in order and stops once it has both (a request names
// both first), or the id and a "result" or "error" member: a response names
// no method, and its result, the bulk of a large frame, is not read. The id
// stays in the frame, which is read before Emit returns. m, when not nil,
// remembers the last method read.
func methodID(r *Record, m *methodMemo) {
	if !r.MethodIDFromFrame {
		return
	}
	r.MethodIDFromFrame = false
	r.Method = ""
	method, id := rewrite.MethodID(r.Frame)
	if method != nil {
		r.Method = m.name(method)
	}
	if id != nil {
		r.ID = id
	}
}

// methodMemo remembers the last method read from a frame and its name: a
// request's records name its method twice running (on the client's hop and
// the server's), and a session's requests mostly one method.
type methodMemo struct {
	raw  []byte
	last string
}

// name is methodName(raw), remembered; a nil m remembers nothing.
func (m *methodMemo) name(raw []byte) string {
	if m == nil {
		return methodName(raw)
	}
	if m.last == "" || !bytes.Equal(raw, m.raw) {
		m.raw, m.last = append(m.raw[:0], raw...), methodName(raw)
	}
	return m.last
}

// methodName unquotes the raw JSON string of a method. A method of the
// protocol's table, written without escapes, is the table's own string; any
// other is a copy.
func methodName(raw []byte) string {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if m, ok := protocol.Lookup(string(raw[1 : n-1])); ok {
			return m.Name
		}
	}
	return gjson.ParseBytes(raw).String()
}

// finish reads the method and id (when asked), redacts r and caps its
// frame, without writing to anything r points to: a member it changes is
// the record's own copy (its HTTP member is e's). e, when not nil,
// remembers redactions from one record to the next. With deferFrame, a
// valid frame under the cap is left to the encoder (frameScan when marked
// FrameValid; frameClean or frameSpaced when finish checked it and found
// no key to redact); otherwise it is done here (frameDone).
func (w *Writer) finish(r *Record, e *encoder, deferFrame bool) (state int) {
	var c *redactCache
	var h *HTTP
	if e != nil {
		c, h = &e.cache, &e.http
	}
	fromFrame := r.MethodIDFromFrame
	var m *methodMemo
	if e != nil {
		m = &e.method
	}
	methodID(r, m)
	state = frameDone
	if deferFrame && !w.noRedact {
		// Redaction only lengthens a frame by the values it replaces, and
		// there are none when no key is to be redacted.
		f := rewrite.TrimFrame(r.Frame)
		if len(f) > 0 && len(f) <= w.frameCap && !tooDeep(f) {
			if r.FrameClean {
				if w.verify {
					w.verifyClean(f, c)
				}
				r.Frame, r.FrameValid, state = f, true, frameClean
			} else if r.FrameValid {
				r.Frame, state = f, frameScan
			} else if valid, dirty, spaced := rewrite.ValidKeys(f, c.keyMemo(w)); valid {
				r.Frame, r.FrameValid = f, true
				switch {
				case dirty: // redacted below
				case spaced:
					state = frameSpaced
				default:
					state = frameClean
				}
			}
		}
	}
	if !fromFrame || !r.FrameValid { // a member of a valid frame is valid JSON
		r.ID = validOrString(r.ID)
	} else if len(r.ID) == 0 {
		r.ID = nil
	}
	if r.HTTP != nil && (!w.noRedact || e == nil) {
		if h == nil {
			h = new(HTTP)
		}
		*h = *r.HTTP
		r.HTTP = h
		if h.URL != "" && !w.noRedact {
			h.URL = c.url(h.URL)
		}
		if e == nil { // else the encoder redacts the headers as it writes them
			h.Header, h.Request = headerMap(h, w), nil
		}
	}
	if r.Error != "" && !w.noRedact {
		r.Error = urlPattern.ReplaceAllStringFunc(r.Error, routing.Redact)
	}
	if state == frameDone {
		r.Frame = w.frame(r.Frame, r.FrameValid, &r.Truncated, c.keyRule(w))
	}
	return state
}

// redactCache remembers, for one encoder, the redacted form of the
// last URL (a session sends to one URL) and which header names are secret.
// A nil cache remembers nothing.
type redactCache struct {
	rawURL, redactedURL string
	secret              map[string]bool
	// keys remembers the key rule's verdicts on the JSON keys seen.
	keys  *rewrite.KeyMemo
	owner *Writer // whose rule and secret headers these are
}

// keyRule returns w's key rule, remembering its verdicts in c (a nil c
// returns the rule itself). The verdicts of another Writer's rule are
// forgotten first.
func (c *redactCache) keyRule(w *Writer) func(key string) bool {
	if c == nil {
		return w.sensitive
	}
	return c.keyMemo(w).Func()
}

// keyMemo is keyRule as a KeyMemo, for the scans of package rewrite that
// read a key's fingerprint in place (a nil c makes a new one).
func (c *redactCache) keyMemo(w *Writer) *rewrite.KeyMemo {
	if c == nil {
		return rewrite.NewKeyMemo(w.sensitive)
	}
	if c.owner != w {
		*c = redactCache{owner: w, keys: rewrite.NewKeyMemo(w.sensitive)}
	}
	return c.keys
}

func (c *redactCache) url(raw string) string {
	if c == nil {
		return routing.Redact(raw)
	}
	if raw != c.rawURL || c.redactedURL == "" {
		c.rawURL, c.redactedURL = raw, routing.Redact(raw)
	}
	return c.redactedURL
}

// secretHeader reports whether the value of header k is redacted.
func (c *redactCache) secretHeader(w *Writer, k string) bool {
	if c == nil {
		return w.secretHeader(k)
	}
	c.keyRule(w) // another Writer's verdicts are forgotten
	secret, ok := c.secret[k]
	if !ok {
		if c.secret == nil || len(c.secret) >= 1024 {
			c.secret = map[string]bool{}
		}
		secret = w.secretHeader(k)
		c.secret[k] = secret
	}
	return secret
}

// headerMap returns h's headers as one value per name, in a map of its
// own, redacted by w's rules (none for a nil w).
func headerMap(h *HTTP, w *Writer) map[string]string {
	if h.Header == nil && h.Request == nil {
		return nil
	}
	m := make(map[string]string, max(len(h.Header), len(h.Request)))
	if h.Header != nil {
		maps.Copy(m, h.Header)
	} else {
		for k, v := range h.Request {
			if len(v) > 0 {
				m[k] = v[0]
			}
		}
	}
	if w != nil && !w.noRedact {
		for k := range m {
			if w.secretHeader(k) {
				m[k] = redacted
			}
		}
	}
	return m
}

// secretHeader reports whether the value of header k is redacted: a
// credential header, one the user named secret, or a name the key rule
// matches.
func (w *Writer) secretHeader(k string) bool {
	return rewrite.CredentialHeader(k) || w.secretHdr[strings.ToLower(k)] || w.sensitive(k)
}

// urlPattern finds URLs in error text, such as those *url.Error quotes.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// frame returns the redacted, capped copy of f, always valid JSON (or nil
// for an empty frame). valid is Record.FrameValid.
func (w *Writer) frame(f json.RawMessage, valid bool, truncated *bool, sensitive func(key string) bool) json.RawMessage {
	f = rewrite.TrimFrame(f)
	if len(f) == 0 {
		return nil
	}
	n := len(f)
	switch {
	case w.noRedact:
	case len(f) > w.frameCap:
		// Only the head is kept: redact that much (and one byte more, for
		// the cut below), not a copy of the whole frame.
		f, n = rewrite.RedactHead(f, sensitive, w.frameCap+1, valid)
	case valid:
		f = rewrite.RedactValid(f, sensitive) // f itself when nothing is redacted: the record owns it
		n = len(f)
	default:
		f = rewrite.Redact(f, sensitive) // a copy; invalid JSON is withheld
		n = len(f)
	}
	if n > w.frameCap {
		cut := w.frameCap
		for cut > 0 && !utf8.RuneStart(f[cut]) {
			cut--
		}
		out, _ := json.Marshal(struct {
			Truncated bool   `json:"truncated"`
			Bytes     int    `json:"bytes"`
			Head      string `json:"head"`
		}{true, n, string(f[:cut])})
		*truncated = true
		return out
	}
	if w.noRedact && !valid {
		return validOrString(f)
	}
	// Redact let through only JSON in gjson's grammar, which encoding/json
	// shares but for its nesting limit; json.Valid would scan the frame
	// once more, a byte at a time, to find that out.
	if tooDeep(f) {
		return json.RawMessage(`"[unparsable frame withheld]"`)
	}
	return f
}

// maxDepth is encoding/json's nesting limit: a deeper value is not valid to
// it (and the encoder could not encode the record).
const maxDepth = 10000

// tooDeep reports whether valid JSON f nests objects and arrays deeper
// than encoding/json accepts.
func tooDeep(f []byte) bool {
	if len(f) <= 2*maxDepth {
		return false // deeper takes more than maxDepth openers and as many closers
	}
	depth := 0
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '"':
			i = stringEnd(f, i) - 1
		case '{', '[':
			if depth++; depth > maxDepth {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// validOrString returns b, which the record owns, when it is valid JSON, b
// as a JSON string otherwise, and nil when empty. Valid is what
// encoding/json calls valid (FuzzValidOrString): rewrite.Valid's grammar
// within json's nesting limit. It runs on most records' ids, where
// json.Valid's setup cost more than the id's scan.
func validOrString(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if rewrite.Valid(b) && !tooDeep(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}
