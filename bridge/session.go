// Package bridge runs one legacy (2025-11-25) MCP client session against an
// upstream server of either era. It is the session core:
//
//	Conn (stdio; an HTTP front) ◀──▶ Session: the core ──▶ link.Upstream, chosen at initialize:
//	                                  reader, queue,       modern              the 2026-07-28 bridge
//	                                  workers, writer,     passthrough         2025 passed through (Streamable
//	                                  in-flight map, drain                     HTTP, or HTTP+SSE for 2024-11-05)
//
//	conn ─▶ reader ─┬─ local answers (cancels, bad input, the client's answers,
//	                │  and what the upstream answers at once: ping, setLevel)
//	                └─ pending ─▶ workers ─▶ Upstream.Request ─▶ Outcome
//	conn ◀─ writer (the only goroutine that writes to the Conn) ◀─ answers
//
// The core owns the reader, the bounded queue and workers, the map from
// the client's request ids to their work, cancellation, the drain at the
// end of input, and the one writer. It knows no era and makes no HTTP
// request: each message goes to the session's upstream, and each request
// comes back as a typed outcome (its answer, the rewrites applied, what
// runs after it, and for an initialize the upstream every later message
// takes). The modes (bridge/internal/modern, bridge/internal/passthrough)
// are not API; what the core and the modes share is one link.Env.
//
// What it must never do: write anything but complete frames to the Conn,
// or write from any goroutine but the writer; know an era (what is 2026 or
// 2025 is the modes'); wait on the queue while reading (the client's
// answers, cancels, pings and the end of input are always read); answer a
// request id twice (every request gets exactly one answer unless the
// client cancelled it).
package bridge

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/modern"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Config configures a Session (see link.Config for its fields).
type Config = link.Config

// An Observer sees a session's traffic at its hops (see link.Observer).
type Observer = link.Observer

// Out is one frame for the client, tagged with what it belongs to (see
// link.Out).
type Out = link.Out

// The --protocol choices.
const (
	ProtocolAuto   = link.ProtocolAuto
	ProtocolModern = link.ProtocolModern
	ProtocolLegacy = link.ProtocolLegacy
)

// The --client-era choices (see link.Config.ClientEra).
const (
	ClientEraAuto   = link.ClientEraAuto
	ClientEraLegacy = link.ClientEraLegacy
	ClientEraModern = link.ClientEraModern
)

// The --transport choices (see link.TransportHTTPFirst).
const (
	TransportHTTPFirst = link.TransportHTTPFirst
	TransportHTTPOnly  = link.TransportHTTPOnly
	TransportSSEFirst  = link.TransportSSEFirst
	TransportSSEOnly   = link.TransportSSEOnly
)

// Defaults.
const (
	DefaultMaxInFlight     = 64
	DefaultDiscoverTimeout = 30 * time.Second
	DefaultMaxRounds       = 16
	DefaultIdleTimeout     = 10 * time.Minute
	DefaultRequestTimeout  = 2 * time.Hour
	// DefaultPollTimeout: a healthy server answers a poll in milliseconds;
	// the bound is several of rewrite.DefaultPollInterval, and room for a
	// slow network.
	DefaultPollTimeout = 10 * time.Second
	// DefaultMaxSubscriptions: each costs its URI in memory and in the
	// shared stream's filter; 256 is far more than a client watches.
	DefaultMaxSubscriptions = 256
)

// Session is one legacy client session (see the package doc). Create it
// with New and call Run or Serve once.
type Session struct {
	env *link.Env

	queue   *pending      // the in-flight slots, and the requests waiting for one
	stopped chan struct{} // closed when every answer has been queued

	// up is where requests go: the modern bridge until an initialize finds
	// a 2025 server, then the passthrough that initialize started.
	up atomic.Pointer[upstreamBox]

	mu       sync.Mutex
	inflight map[string]*link.Call // by the client's raw id
	// initWait (under mu) is closed when the initialize requests read and
	// not answered yet (initPending) drop to zero. A request read behind
	// an unanswered initialize (piped input) waits for it, so that piped
	// input works as a client that waits would.
	initWait    chan struct{}
	initPending int
	// drainWait (under mu) is closed once the input ended and every
	// request read has been answered (nil until the end of input).
	drainWait chan struct{}
	draining  atomic.Bool // drain has started (set before drainWait)
	// finishing counts the finish calls under way: one has taken its
	// request out of the in-flight map but may not have queued its answer,
	// so the drain may not end yet.
	finishing atomic.Int32

	ignore []*regexp.Regexp // Config.IgnoreTools, compiled
}

type upstreamBox struct{ link.Upstream }

func (s *Session) upstream() link.Upstream { return s.up.Load().Upstream }

// Reached says how the session reaches its server, as its last successful
// initialize chose: the era ("2026-07-28", bridged, or the 2025 version
// passed through) and the transport ("streamable-http" or "http+sse"); ""
// before. `mcp-tasks-proxy check` reports them, rather than work them out.
func (s *Session) Reached() (era, transport string) { return s.upstream().Reached() }

// New prepares a session.
func New(cfg Config) *Session {
	orDefault(&cfg.MaxInFlight, DefaultMaxInFlight)
	orDefault(&cfg.MaxMessageBytes, routing.DefaultMaxMessageBytes)
	orDefault(&cfg.MaxQueued, max(minQueued, queuedPerSlot*cfg.MaxInFlight))
	orDefault(&cfg.DiscoverTimeout, DefaultDiscoverTimeout)
	orDefault(&cfg.MaxRounds, DefaultMaxRounds)
	orDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	orDefault(&cfg.PollTimeout, DefaultPollTimeout)
	orDefault(&cfg.MaxSubscriptions, DefaultMaxSubscriptions)
	cfg.RequestTimeout = max(cfg.RequestTimeout, 0)
	cfg.PollTimeout = min(cfg.PollTimeout, cfg.IdleTimeout)
	cfg.Logger = cmp.Or(cfg.Logger, zap.NewNop())
	cfg.Protocol = cmp.Or(cfg.Protocol, ProtocolAuto)
	cfg.ClientEra = cmp.Or(cfg.ClientEra, ClientEraAuto)
	switch {
	case cfg.NoRedact:
		cfg.Redact = nil
	case cfg.Redact == nil:
		cfg.Redact = rewrite.SensitiveKey
	}
	e := link.NewEnv(cfg)
	s := &Session{
		env:      e,
		queue:    &pending{idle: make(chan *link.Call), maxRunning: cfg.MaxInFlight, maxCalls: cfg.MaxQueued, maxBytes: cfg.MaxMessageBytes},
		stopped:  make(chan struct{}),
		inflight: make(map[string]*link.Call),
	}
	for _, p := range cfg.IgnoreTools {
		s.ignore = append(s.ignore, toolPattern(p))
	}
	s.up.Store(&upstreamBox{modern.New(e)})
	return s
}

// orDefault sets a setting that is not positive to its default.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Run serves the session over stdio: NDJSON lines from in, frames to out.
func (s *Session) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	conn := NewStdio(in, out, s.env.Cfg.MaxMessageBytes)
	defer conn.Close()
	return s.Serve(ctx, conn)
}

// Serve serves the session over conn until its input ends or ctx is
// cancelled. At the end of input it first answers the requests already
// read, for at most Config.DrainTimeout (see drain). Then it cancels
// in-flight work, waits for it, flushes conn and returns. It returns nil on
// a normal end (end of input or cancellation).
func (s *Session) Serve(ctx context.Context, conn Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.env.Cfg.Observer != nil {
		// Every HTTP exchange of the session is reported by the client.
		ctx = routing.WithObserver(ctx, link.UpstreamHops{E: s.env})
	}
	s.env.Ctx = ctx
	s.upstream().Open()
	writerDone := make(chan error, 1)
	go func() { writerDone <- s.write(conn) }()
	readerDone := make(chan error, 1)
	go func() { readerDone <- s.read(ctx, conn) }()

	var err error
	select {
	case err = <-readerDone:
		if err == nil {
			s.drain(ctx)
		}
	case <-ctx.Done():
	}
	// Stop everything in flight; answers that race the cancel are dropped.
	cancel()
	s.queue.close()
	s.env.BG.Close()
	s.upstream().Close()
	close(s.stopped)
	werr := <-writerDone
	if err == nil || errors.Is(err, io.EOF) {
		err = werr
	}
	return err
}

// work runs c, then the requests that queued meanwhile, while there are
// any.
func (s *Session) work(c *link.Call) {
	defer s.queue.workers.Done()
	for {
		for ; c != nil; c = s.queue.next() {
			// Cancelled while queued (in passthrough its context ends only
			// once the cancel is POSTed, so the mark decides), or the
			// session ended: its cancel reaches each request's context in
			// turn, not at once.
			if c.Cancelled.Load() || c.Ctx.Err() != nil || s.env.Ctx.Err() != nil {
				s.finish(c, nil, nil)
				continue
			}
			s.run(c)
		}
		select {
		case c = <-s.queue.idle: // the reader hands this worker the next request
		case <-s.env.Ctx.Done():
			return
		}
	}
}

func (s *Session) run(c *link.Call) {
	f := &c.F
	defer c.Cancel()
	var out link.Outcome
	if follow(c.Ctx, c.InitWait, c.Barrier) { // else c's context ended first
		if out.Frame = s.refuseIgnored(c, f); out.Frame == nil {
			out = s.upstream().Request(c.Ctx, c, f)
		}
	}
	if out.Next != nil {
		// Before the answer goes out, so that every later client message
		// takes the new upstream.
		s.up.Store(&upstreamBox{out.Next})
	}
	switch f.Method {
	case "tools/list":
		out.Frame = s.hideIgnored(out.Frame)
	case "initialize":
		if out.Era != "" && s.env.Cfg.OnInitialized != nil {
			s.env.Cfg.OnInitialized(out.Era)
		}
	}
	s.finish(c, out.Frame, out.Rewrites)
	if out.After != nil && out.Frame != nil && !c.Cancelled.Load() {
		out.After()
	}
}

func (s *Session) read(ctx context.Context, conn Conn) error {
	for {
		in, err := conn.Read()
		switch tooLarge, isTooLarge := errors.AsType[*TooLargeError](err); {
		case isTooLarge:
			s.env.Warn("message over the size limit discarded", zap.Int("limit", tooLarge.Limit))
			s.reply(s.env.ErrorFrame(nil, rewrite.Errorf(protocol.CodeInvalidRequest, nil,
				"message larger than %d bytes discarded; raise %s", tooLarge.Limit, rewrite.HintMaxMessageSize)), "", tooLarge.Stream, nil)
			continue
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("reading the client's input: %w", err)
		}
		line := rewrite.TrimFrame(in.Frame)
		if len(line) == 0 {
			continue
		}
		if !s.dispatch(ctx, line, in.Stream) {
			return nil
		}
	}
}

// dispatch handles one message. It returns false when the session is over.
func (s *Session) dispatch(ctx context.Context, line []byte, stream any) bool {
	f, err := rewrite.Parse(line)
	if ce := s.env.Log.Check(zapcore.DebugLevel, "frame from client"); ce != nil {
		ce.Write(zap.ByteString("frame", s.env.LogFrame(line)), zap.String("method", f.Method))
	}
	// Every record a request causes carries its op: the request and its
	// answer, the client's answers to what the proxy asked for it, and
	// the client's cancel of it.
	var op string
	var named *link.Call // the request a cancel names
	switch {
	case f.Kind == rewrite.KindRequest:
		op = s.env.NextOp()
	case err != nil:
	case f.Kind == rewrite.KindResponse:
		op = s.env.AskOp(f.ID.Raw) // an answer belongs to the op that asked
	case f.Method == "notifications/cancelled":
		s.mu.Lock()
		named = s.inflight[f.Params.Get("requestId").Raw]
		s.mu.Unlock()
		if named != nil {
			op = named.Op
		}
	}
	if o := s.env.Cfg.Observer; o != nil {
		o.FromClient(s.env.Cfg.SessionID, op, line)
	}
	if err != nil {
		var id []byte
		if f.Kind == rewrite.KindRequest || f.ID.Exists() {
			id = []byte(f.ID.Raw)
		}
		s.env.Warn("invalid message from client", zap.Error(err), zap.ByteString("frame", s.env.LogFrame(line)))
		if f.Kind != rewrite.KindNotification { // notifications are never answered
			s.reply(rewrite.ErrorFrame(id, rewrite.Code(err), link.InvalidMessage(err), nil), op, stream, nil)
		}
		return true
	}
	up := s.upstream()
	switch f.Kind {
	case rewrite.KindNotification:
		n := f // its own copy, so that f stays on the stack on the request path
		var cancel func()
		if n.Method == "notifications/cancelled" {
			cancel = s.cancelled(named, n.Params.Get("requestId").Raw)
		}
		up.Notified(&n, op, cancel)
		return true
	case rewrite.KindResponse:
		r := f
		if !up.Answered(&r, op) {
			s.env.Warn("response from client for an unknown request id ignored", zap.String("id", r.ID.Raw))
		}
		return true
	}
	// A request: the call holds it from here on.
	c := &link.Call{F: f, ID: []byte(f.ID.Raw), Method: f.Method, Op: op, Stream: stream}
	if frame, rw, ok := up.Local(&c.F); ok {
		s.logRequest(op, f.Method, c.ID, time.Now(), frame, false)
		s.reply(frame, op, stream, rw)
		return true
	}
	c.Barrier = up.Barrier()
	return s.enqueue(ctx, c)
}

// enqueue registers a request and starts it, or queues it for an in-flight
// slot. It returns false when the session is over.
func (s *Session) enqueue(ctx context.Context, c *link.Call) bool {
	if !s.register(ctx, c) {
		s.reply(rewrite.ErrorFrame(c.ID, protocol.CodeInvalidRequest,
			"a request with this id is already in flight; ids must be unique among pending requests", nil), c.Op, c.Stream, nil)
		return true
	}
	if ctx.Err() != nil {
		c.Cancel()
		return false
	}
	switch a, n, size := s.queue.admit(c); a {
	case admitSpawn:
		go s.work(c)
	case admitHandOff: // a worker between requests is about to take it
		select {
		case s.queue.idle <- c:
		case <-ctx.Done():
		}
	case admitRefused:
		s.refuseQueued(c, n, size)
	}
	return true
}

// The default bound of the requests waiting for an in-flight slot: 16 per
// slot, and at least 1024 (the default with --max-in-flight 64).
const (
	queuedPerSlot = 16
	minQueued     = 1024
)

// refuseQueued answers a request the full queue cannot take. The reader
// never waits for room, so that the client's answers, cancels and pings
// behind it are still read. n requests of size bytes were waiting.
func (s *Session) refuseQueued(c *link.Call, n, size int) {
	c.Cancel()
	s.env.Warn("request refused: too many requests waiting for an in-flight slot", zap.ByteString("id", c.ID), zap.String("method", c.Method), zap.Int("waiting", n), zap.Int("waitingBytes", size))
	raise := "raise " + s.env.Hint(rewrite.HintMaxInFlight)
	if n < s.queue.maxCalls { // the bytes bound, not the count
		raise = fmt.Sprintf("raise %s, which also bounds the bytes of the waiting requests (%d)", s.env.Hint(rewrite.HintMaxMessageSize), s.env.Cfg.MaxMessageBytes)
	}
	frame := rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("the proxy refused %s: %d requests (%d bytes) are already waiting for one of the %d in-flight slots; wait for answers before sending more (or %s)", c.Method, n, size, s.env.Cfg.MaxInFlight, raise),
		fmt.Appendf(nil, `{"waiting":%d,"waitingBytes":%d,"maxInFlight":%d}`, n, size, s.env.Cfg.MaxInFlight))
	s.finish(c, frame, nil)
}

// register records a request as in flight under the client's id, from the
// moment it is read, so that a cancel finds it even while it is queued.
func (s *Session) register(ctx context.Context, c *link.Call) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &c.F
	if _, dup := s.inflight[f.ID.Raw]; dup {
		return false
	}
	c.Start = time.Now()
	if tok := f.Params.Get("_meta.progressToken"); tok.Exists() {
		c.ProgressToken = []byte(tok.Raw)
	}
	if f.Method == "tools/call" {
		c.Task = f.Params.Get("task")
	}
	c.Ctx, c.Cancel = context.WithCancel(link.WithOp(ctx, c.Op))
	s.inflight[f.ID.Raw] = c
	if c.Stream != nil {
		s.env.Streams.Store(c.Op, c.Stream)
	}
	if f.Method != "initialize" {
		c.InitWait = s.initWait
	} else if s.initPending++; s.initPending == 1 {
		s.initWait = make(chan struct{})
	}
	return true
}

// finish delivers a request's one answer, unless the client cancelled it or
// the session is ending.
func (s *Session) finish(c *link.Call, frame []byte, rewrites []string) {
	s.finishing.Add(1)
	defer func() {
		s.finishing.Add(-1)
		// Only once the answer is queued may the requests read behind an
		// initialize go, and the drain end the session: told before, Run
		// could stop the writer and drop it. Outside a drain this costs
		// one atomic load, not a second lock per request (drain sets the
		// flag before it looks at what is in flight).
		if c.Method != "initialize" && !s.draining.Load() {
			return
		}
		s.mu.Lock()
		if c.Method == "initialize" {
			if s.initPending--; s.initPending == 0 {
				close(s.initWait)
				s.initWait = nil
			}
		}
		s.drainedLocked()
		s.mu.Unlock()
	}()
	s.mu.Lock()
	delete(s.inflight, string(c.ID))
	s.mu.Unlock()
	s.env.Streams.Delete(c.Op)
	if !c.Answered.CompareAndSwap(false, true) {
		return // the drain's bound answered it at the end of input
	}
	s.logRequest(c.Op, c.Method, c.ID, c.Start, frame, c.Cancelled.Load())
	if s.env.Ctx.Err() != nil {
		return // shutting down: the client has gone
	}
	if c.Cancelled.Load() || frame == nil {
		if c.Stream != nil {
			s.reply(nil, c.Op, c.Stream, nil) // ended without an answer
		}
		return
	}
	s.reply(frame, c.Op, c.Stream, rewrites)
}

// follow waits for the gates a request must pass before it leaves (nil
// ones are open), and reports false when ctx ended first.
func follow(ctx context.Context, gates ...<-chan struct{}) bool {
	for _, g := range gates {
		if g == nil {
			continue
		}
		select {
		case <-g:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// cancelled marks c, the request a notifications/cancelled names by id, as
// cancelled and returns what ends it, or nil when no such request is in
// flight (c nil; an initialize is never cancelled).
func (s *Session) cancelled(c *link.Call, id string) func() {
	if c == nil || c.Method == "initialize" {
		s.env.Debug("cancel for an unknown or finished request ignored", zap.String("requestId", id))
		return nil
	}
	c.Cancelled.Store(true)
	s.env.Info("request cancelled by the client", zap.String("id", id), zap.String("method", c.Method))
	// Its context's end closes its upstream stream; a request still
	// waiting for a slot leaves the queue at once, so that cancelled
	// requests never fill it and get new ones refused.
	return func() {
		c.Cancel()
		if s.queue.remove(c) {
			s.finish(c, nil, nil) // no answer: the client cancelled it
		}
	}
}

// reply queues a request's one answer (nil: its end without one).
func (s *Session) reply(frame []byte, op string, stream any, rewrites []string) {
	s.env.Emit(Out{Frame: frame, Op: op, Stream: stream, Final: true, Rewrites: rewrites})
}

// write is the only code that writes to the Conn. It flushes whenever the
// queue runs dry, so a burst costs one write. It ends when the session has
// stopped and every queued frame is written.
func (s *Session) write(conn Conn) error {
	var failed error
	for {
		var of Out
		select {
		case of = <-s.env.Out:
		case <-s.stopped:
			select {
			case of = <-s.env.Out:
			default:
				if failed == nil {
					failed = conn.Flush()
				}
				return failed
			}
		}
		if failed != nil {
			continue // keep draining so senders never block
		}
		if of.Frame != nil {
			if o := s.env.Cfg.Observer; o != nil {
				o.ToClient(s.env.Cfg.SessionID, of.Op, of.Frame, of.Rewrites)
			}
			if ce := s.env.Log.Check(zapcore.DebugLevel, "frame to client"); ce != nil {
				ce.Write(zap.ByteString("frame", s.env.LogFrame(of.Frame)))
			}
		}
		err := conn.Write(of)
		if err == nil && len(s.env.Out) == 0 {
			err = conn.Flush()
		}
		if err != nil {
			failed = err
			s.env.Log.Error("writing to the client failed; frames are dropped", zap.Error(err))
		}
	}
}

func (s *Session) logRequest(op, method string, id []byte, start time.Time, frame []byte, cancelled bool) {
	ce := s.env.Log.Check(zapcore.InfoLevel, "request")
	if ce == nil {
		return
	}
	what := "result"
	switch {
	case cancelled:
		what = "cancelled"
	case frame == nil:
		what = "no answer (session ending)"
	case gjson.GetBytes(frame, "error").Exists():
		what = "error " + gjson.GetBytes(frame, "error.code").Raw
	}
	ce.Write(zap.String("dir", "client->proxy->client"), zap.String("op", op), zap.String("method", method), zap.ByteString("id", id),
		zap.String("outcome", what), zap.Duration("latency", time.Since(start)), zap.Int("bytesOut", len(frame)))
}

// DefaultStatePath is the state file for an upstream URL: under the user's
// cache directory, named by a hash of the URL.
func DefaultStatePath(upstream string) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(upstream))
	return filepath.Join(dir, "mcp-tasks-proxy", "tasks-"+hex.EncodeToString(sum[:8])+".json"), nil
}
