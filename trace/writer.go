package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Defaults of Options.
const (
	DefaultFrameCap = 64 << 10
	DefaultBuffer   = 4096
)

// redacted replaces the value of a secret header.
const redacted = "[REDACTED]"

// Options configures a Writer. The zero value is usable.
type Options struct {
	// FrameCap is the number of frame bytes kept per record (default 64
	// KiB). A longer frame is replaced by
	// {"truncated":true,"bytes":N,"head":"<first FrameCap bytes>"} and the
	// record is marked Truncated. The cut happens after redaction.
	FrameCap int
	// Buffer is the number of records queued before dropping (default 4096).
	Buffer int
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

// Writer writes trace records as JSONL from one goroutine. A nil *Writer is
// valid and discards everything, so callers can hold a nil writer when
// tracing is off.
type Writer struct {
	ch        chan Record
	done      chan struct{}
	out       *bufio.Writer
	closer    io.Closer // the file opened by Open; nil otherwise
	frameCap  int
	noRedact  bool
	sensitive func(key string) bool
	secretHdr map[string]bool // lower-case header names

	mu      sync.RWMutex // held for reading by Emit's send, for writing by Close
	closed  atomic.Bool
	dropped atomic.Int64

	err       error // first write error; owned by the goroutine until done
	closeOnce sync.Once
	closeErr  error
}

// Open starts a Writer on path: "-" writes to os.Stderr; anything else is
// created or truncated with mode 0600 (an existing file is chmod-ed to 0600).
func Open(path string, o Options) (*Writer, error) {
	if path == "-" {
		return New(os.Stderr, o), nil
	}
	if st, err := os.Stat(path); err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		// Opening a FIFO blocks until a reader comes: the writer's own
		// goroutine opens it on the first write, never the caller.
		lf := &lazyFile{path: path}
		w := New(lf, o)
		w.closer = lf
		return w, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
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
		f, err := os.OpenFile(l.path, os.O_WRONLY, 0)
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
	tw := &Writer{
		ch:        make(chan Record, o.Buffer),
		done:      make(chan struct{}),
		out:       bufio.NewWriterSize(w, 64<<10),
		frameCap:  o.FrameCap,
		noRedact:  o.NoRedact,
		sensitive: rewrite.SensitiveKey,
		secretHdr: map[string]bool{
			"authorization":       true,
			"proxy-authorization": true,
			"cookie":              true,
			"set-cookie":          true,
		},
	}
	for _, h := range o.SecretHeaders {
		tw.secretHdr[strings.ToLower(h)] = true
	}
	if len(o.RedactKeys) > 0 {
		extra := make(map[string]bool, len(o.RedactKeys))
		for _, k := range o.RedactKeys {
			extra[strings.ToLower(k)] = true
		}
		tw.sensitive = func(key string) bool {
			return rewrite.SensitiveKey(key) || extra[strings.ToLower(key)]
		}
	}
	go tw.run()
	return tw
}

// Dropped is the number of records dropped so far, plus those still
// queued (which a stalled reader will never get).
func (w *Writer) Dropped() int64 {
	if w == nil {
		return 0
	}
	return w.dropped.Load() + int64(len(w.ch))
}

// Enabled reports whether records are written: false for a nil Writer.
func (w *Writer) Enabled() bool { return w != nil }

// Emit queues r without blocking. On the caller's goroutine it copies what
// the record references, redacts it and caps the frame (CPU only, no I/O);
// when the buffer is full the record is dropped and counted. Records
// emitted after Close, and all records of a nil Writer, are discarded.
func (w *Writer) Emit(r Record) {
	if w == nil || w.closed.Load() {
		return
	}
	if len(w.ch) == cap(w.ch) { // full: skip the redaction work
		w.dropped.Add(1)
		return
	}
	w.prepare(&r)
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed.Load() {
		return
	}
	select {
	case w.ch <- r:
	default:
		w.dropped.Add(1)
	}
}

// Close flushes what was queued, stops the goroutine, closes the file
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
		close(w.ch)
		w.mu.Unlock()
		<-w.done
		w.closeErr = w.err
		if w.closer != nil {
			if err := w.closer.Close(); w.closeErr == nil {
				w.closeErr = err
			}
		}
	})
	return w.dropped.Load(), w.closeErr
}

// run writes queued records, flushing whenever the queue is empty. After a
// write error it keeps draining, counting the records as dropped, so Emit
// never blocks. Records buffered but not flushed when the error struck are
// counted as dropped too.
func (w *Writer) run() {
	defer close(w.done)
	var e encoder
	unflushed := int64(0) // records in w.out since the last successful flush
	fail := func(err error) {
		w.err = err
		w.dropped.Add(unflushed)
		unflushed = 0
	}
	for r := range w.ch {
		if w.err != nil {
			w.dropped.Add(1)
			continue
		}
		line, err := e.encode(r)
		if err != nil { // cannot happen after prepare; never write half a line
			w.dropped.Add(1)
			continue
		}
		unflushed++
		if _, err := w.out.Write(line); err != nil {
			fail(err)
			continue
		}
		if len(w.ch) == 0 {
			if err := w.out.Flush(); err != nil {
				fail(err)
				continue
			}
			unflushed = 0
		}
	}
	if w.err == nil {
		if err := w.out.Flush(); err != nil {
			fail(err)
		}
	}
}

// encoder makes the JSONL line of a record. encoding/json would validate
// and compact the frame, a RawMessage, with its byte-at-a-time scanner:
// most of the cost of a record. The frame is valid JSON after prepare, so
// the encoder encodes the record around a one-byte placeholder and splices
// the frame in, compacted by a loop that copies strings whole. The line is
// byte for byte what encoding/json writes (SetEscapeHTML(false)).
type encoder struct {
	buf  bytes.Buffer
	enc  *json.Encoder
	line []byte
}

// framePlaceholder stands in for the frame. Only booleans, numbers and
// strings follow "frame" in a Record, and a quote inside a string is
// escaped, so the last `"frame":0` in the line is the placeholder.
var (
	framePlaceholder = json.RawMessage("0")
	frameMember      = []byte(`"frame":0`)
)

func (e *encoder) encode(r Record) ([]byte, error) {
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	frame := r.Frame
	if len(frame) > 0 {
		r.Frame = framePlaceholder
	}
	e.buf.Reset()
	if err := e.enc.Encode(r); err != nil {
		return nil, err
	}
	b := e.buf.Bytes()
	if len(frame) == 0 {
		return b, nil
	}
	k := bytes.LastIndex(b, frameMember)
	if k < 0 {
		return nil, errors.New("trace: frame placeholder not found")
	}
	k += len(frameMember) - 1
	e.line = append(e.line[:0], b[:k]...)
	e.line = appendCompact(e.line, frame)
	e.line = append(e.line, b[k+1:]...)
	return e.line, nil
}

// appendCompact appends valid JSON src without the whitespace outside its
// strings, as json.Compact does.
func appendCompact(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			end := stringEnd(src, i)
			dst = append(dst, src[i:end]...)
			i = end
		default:
			dst = append(dst, c)
			i++
		}
	}
	return dst
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

// prepare makes r independent of the caller's memory, redacts it and caps
// its frame.
func (w *Writer) prepare(r *Record) {
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.ID = validOrString(r.ID)
	r.Rewrites = slices.Clone(r.Rewrites)
	if r.HTTP != nil {
		h := *r.HTTP
		h.Header = maps.Clone(h.Header)
		if !w.noRedact {
			if h.URL != "" {
				h.URL = routing.Redact(h.URL)
			}
			for k := range h.Header {
				if w.secretHdr[strings.ToLower(k)] || w.sensitive(k) {
					h.Header[k] = redacted
				}
			}
		}
		r.HTTP = &h
	}
	if r.Error != "" && !w.noRedact {
		r.Error = urlPattern.ReplaceAllStringFunc(r.Error, routing.Redact)
	}
	r.Frame = w.frame(r.Frame, &r.Truncated)
}

// urlPattern finds URLs in error text, such as those *url.Error quotes.
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// frame returns the redacted, capped copy of f, always valid JSON (or nil
// for an empty frame).
func (w *Writer) frame(f json.RawMessage, truncated *bool) json.RawMessage {
	f = rewrite.TrimFrame(f)
	if len(f) == 0 {
		return nil
	}
	if !w.noRedact {
		f = rewrite.Redact(f, w.sensitive) // a copy; invalid JSON is withheld
	}
	if len(f) > w.frameCap {
		cut := w.frameCap
		for cut > 0 && !utf8.RuneStart(f[cut]) {
			cut--
		}
		out, _ := json.Marshal(struct {
			Truncated bool   `json:"truncated"`
			Bytes     int    `json:"bytes"`
			Head      string `json:"head"`
		}{true, len(f), string(f[:cut])})
		*truncated = true
		return out
	}
	if w.noRedact {
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
// it (and the writer goroutine could not encode the record).
const maxDepth = 10000

// tooDeep reports whether valid JSON f nests objects and arrays deeper
// than encoding/json accepts.
func tooDeep(f []byte) bool {
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

// validOrString returns a copy of b when it is valid JSON, b as a JSON
// string otherwise, and nil when empty.
func validOrString(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return bytes.Clone(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}
