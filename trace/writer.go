package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

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

const (
	// wakeSize is the buffered bytes at which Emit wakes the writer
	// goroutine before FlushInterval.
	wakeSize = 64 << 10
	// writeSize is the most the goroutine writes at once (but for one
	// longer line): four wake-ups' worth, so that the batch a wake-up
	// finds, a little over wakeSize, goes out in one write.
	writeSize = 4 * wakeSize
	// redacted replaces the value of a secret header.
	redacted = "[REDACTED]"
	// withheld stands in for a frame that is not valid JSON, whose secrets
	// cannot be found.
	withheld = `"[unparsable frame withheld]"`
)

// Options configures a Writer. The zero value is usable.
type Options struct {
	// FrameCap is the number of frame bytes kept per record (default
	// DefaultFrameCap). A longer frame is replaced by
	// {"truncated":true,"bytes":N,"head":"<first FrameCap bytes>"} and the
	// record is marked Truncated. The cut happens after redaction.
	FrameCap int
	// Buffer is the number of records buffered before dropping (default DefaultBuffer).
	Buffer int
	// BufferBytes bounds the memory of the buffered records, their JSONL
	// lines: a record that would take them past it is dropped and counted
	// (default DefaultBufferBytes); a record larger than BufferBytes on its own is always
	// dropped.
	BufferBytes int
	// FlushInterval is how long a record may wait in memory before it is
	// written out (default DefaultFlushInterval; sooner once wakeSize bytes
	// or a quarter of Buffer are buffered): what a crash may lose.
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

// Writer writes trace records as JSONL (see the package doc). A nil
// *Writer is valid and discards everything. The goroutine's timer is armed
// only when a line enters an empty buffer, so a sequential workload costs
// no wake-up and no write(2) per record.
type Writer struct {
	out       io.Writer
	closer    io.Closer // the file opened by Open; nil otherwise
	frameCap  int
	noRedact  bool
	sensitive func(key string) bool
	secretHdr map[string]bool // lower-case names of the user's secret headers (SecretHeaders)

	maxRecords, maxBytes int64 // Options.Buffer, Options.BufferBytes
	interval             time.Duration

	kick  chan struct{} // capacity 1: Emit wakes the goroutine early
	stop  chan struct{} // closed by Close
	done  chan struct{} // closed when the goroutine has flushed and ended
	timer *time.Timer

	mu     sync.Mutex // guards what follows, up to the atomics
	lines  []byte     // encoded lines not yet taken by the goroutine
	nLines int64      // records in lines
	kicked bool       // a wake-up was sent for lines
	shut   bool       // Close has begun: Emit discards
	// held and heldBytes count the records in memory: lines, and what the
	// goroutine has taken but not yet begun to write.
	held, heldBytes int64
	accepted        int64 // ever

	full     atomic.Bool // held or heldBytes is at its bound: Emit skips the work
	closed   atomic.Bool
	failed   atomic.Bool  // every later record is dropped
	dropped  atomic.Int64 // dropped records, including those lost to a write error
	finished atomic.Int64 // accepted records written out or lost to a write error

	err error // first write error, the goroutine's; read by Close after done

	closeOnce sync.Once
	closeErr  error
}

// Open starts a Writer on path: "-" writes to os.Stderr; a regular file is
// created or truncated with mode 0600 (an existing one is chmod-ed to 0600
// first); a device such as /dev/null is written as it is; a FIFO is opened
// on the first write. Through internal/safefile, a symbolic link at path
// and a file or FIFO of another user are refused. So is the process's
// standard output under any name (/dev/stdout, the file it was redirected
// to): it carries only frames.
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
	var f io.WriteCloser = &lazyFile{path: path}
	// Opening a FIFO blocks until a reader comes: the writer's own
	// goroutine opens it on the first write (lazyFile), never the caller.
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		if f, err = safefile.OpenWrite(path, safefile.Truncate); err != nil {
			return nil, err
		}
	}
	w := New(f, o)
	w.closer = f
	return w, nil
}

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
	o.FrameCap = positive(o.FrameCap, DefaultFrameCap)
	o.Buffer = positive(o.Buffer, DefaultBuffer)
	o.BufferBytes = positive(o.BufferBytes, DefaultBufferBytes)
	o.FlushInterval = positive(o.FlushInterval, DefaultFlushInterval)
	tw := &Writer{
		out:        w,
		frameCap:   o.FrameCap,
		noRedact:   o.NoRedact,
		sensitive:  rewrite.SensitiveKeys(o.RedactKeys),
		maxRecords: int64(o.Buffer),
		maxBytes:   int64(o.BufferBytes),
		interval:   o.FlushInterval,
		kick:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		timer:      time.NewTimer(time.Hour),
		secretHdr:  map[string]bool{},
	}
	tw.timer.Stop()
	for _, h := range o.SecretHeaders {
		tw.secretHdr[strings.ToLower(h)] = true
	}
	go tw.run()
	return tw
}

func positive[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
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

// Emit records r without blocking or I/O (see the package doc), keeping
// nothing of r; lines are written in the order Emit buffered them. When the buffer is full (Options.Buffer records or
// Options.BufferBytes bytes), after a write error, or for a record
// encoding/json cannot encode (a time outside years 0-9999, a latency that
// is not a finite number), the record is dropped and counted. Records
// emitted after Close, and all records of a nil Writer, are discarded.
func (w *Writer) Emit(r Record) {
	if w == nil || w.closed.Load() {
		return
	}
	if w.failed.Load() || w.full.Load() {
		w.dropped.Add(1) // full: skip the encoding
		return
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	w.redact(&r)
	w.buffer(encodeLine(&r))
}

// buffer appends an encoded line, or counts it dropped: when it does not
// fit, or could not be encoded (err).
func (w *Writer) buffer(line []byte, err error) {
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
		w.full.Store(w.held >= w.maxRecords || w.heldBytes >= w.maxBytes)
		// A quarter of either bound (or wakeSize) wakes the goroutine early.
		kick = !w.kicked && (int64(len(w.lines)) >= max(1, min(wakeSize, w.maxBytes/4)) || w.nLines >= max(1, w.maxRecords/4))
		w.kicked = w.kicked || kick
	}
	shut := w.shut
	w.mu.Unlock()
	if !accepted && !shut {
		w.dropped.Add(1)
	}
	if kick {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// maxDepth is encoding/json's nesting limit: a reader's json.Unmarshal
// refuses a line nested deeper.
const maxDepth = 10000

// encodeLine returns the line of r, redacted: its small members by
// encoding/json, HTML escaping off (a frame's <, > and & stay as they were
// sent), and its frame, already valid JSON, spliced in as the last member
// (encoding/json would validate and compact it once more). A frame that
// spans lines or has more brackets than maxDepth is compacted instead, and
// withheld when it nests deeper than a reader takes.
func encodeLine(r *Record) ([]byte, error) {
	frame := r.Frame
	r.Frame = nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil || len(frame) == 0 {
		return buf.Bytes(), err
	}
	buf.Truncate(buf.Len() - len("}\n"))
	buf.WriteString(`,"frame":`)
	switch {
	case bytes.IndexByte(frame, '\n') < 0 && bytes.IndexByte(frame, '\r') < 0 &&
		bytes.Count(frame, []byte{'{'})+bytes.Count(frame, []byte{'['}) <= maxDepth:
		buf.Write(frame)
	case json.Compact(&buf, frame) != nil: // leaves buf as it was
		buf.WriteString(withheld)
	}
	buf.WriteString("}\n")
	return buf.Bytes(), nil
}

// Close writes out what was buffered, stops the goroutine, closes the file
// opened by Open and returns the number of dropped records (including
// those lost to a write error) with the first error. It is idempotent.
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

// run writes out the buffer whenever it is woken, and a last time on Close.
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
// the count of those held as its write begins.
func (w *Writer) flush() {
	w.mu.Lock()
	batch := w.lines
	w.lines, w.nLines = nil, 0
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
		n := int64(bytes.Count(chunk, []byte{'\n'})) // a line's only newline ends it
		w.mu.Lock()
		w.held -= n
		w.heldBytes -= int64(len(chunk))
		w.full.Store(w.held >= w.maxRecords || w.heldBytes >= w.maxBytes)
		w.mu.Unlock()
		if w.err == nil {
			_, w.err = w.out.Write(chunk)
		}
		if w.err != nil { // lost: counted as dropped
			w.failed.Store(true)
			w.dropped.Add(n)
		}
		w.finished.Add(n)
	}
}

// redact redacts r and caps its frame, writing to nothing r points to.
func (w *Writer) redact(r *Record) {
	r.ID = validOrString(r.ID)
	var truncated bool
	r.Frame, truncated = w.frame(r.Frame)
	r.Truncated = r.Truncated || truncated
	if r.HTTP != nil {
		h := *r.HTTP
		h.Header = w.headers(h.Header)
		if h.URL != "" && !w.noRedact {
			h.URL = routing.Redact(h.URL)
		}
		r.HTTP = &h
	}
	if r.Error != "" && !w.noRedact {
		r.Error = urlPattern.ReplaceAllStringFunc(r.Error, routing.Redact)
	}
}

// headers returns a copy of h (nil for no headers) with the values of
// secret headers redacted: credential headers, those the user named
// secret, and names the key rule matches.
func (w *Writer) headers(h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	m := make(map[string]string, len(h))
	for k, v := range h {
		if !w.noRedact && (rewrite.CredentialHeader(k) || w.secretHdr[strings.ToLower(k)] || w.sensitive(k)) {
			v = redacted
		}
		m[k] = v
	}
	return m
}

// urlPattern finds URLs in error text, such as those *url.Error quotes.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// frame returns the redacted, capped form of f (nil for an empty frame)
// and whether it was cut. A frame that is not valid JSON is withheld when
// redacting, kept as a JSON string when not.
func (w *Writer) frame(f json.RawMessage) (json.RawMessage, bool) {
	f = rewrite.TrimFrame(f)
	if len(f) == 0 {
		return nil, false
	}
	n := len(f)
	switch {
	case w.noRedact:
	case n > w.frameCap:
		// Only the head is kept: redact that much (and one byte more, for
		// the cut below), not a copy of the whole frame.
		f, n = rewrite.RedactHead(f, w.sensitive, w.frameCap+1, false)
	case rewrite.Valid(f):
		f = rewrite.RedactValid(f, w.sensitive) // f itself when nothing is redacted
		n = len(f)
	default:
		return json.RawMessage(withheld), false
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
		return out, true
	}
	if w.noRedact {
		return validOrString(f), false
	}
	return f, false
}

// validOrString returns b when it is valid JSON, b as a JSON string
// otherwise, and nil when empty.
func validOrString(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}
