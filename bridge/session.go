// Package bridge runs one legacy (2025-11-25) MCP client session against an
// upstream server of either era.
//
// It has three parts, with an interface between each:
//
//	Conn (stdio; an HTTP front) ◀──▶ Session: the core ──▶ upstream, chosen at initialize:
//	                                  reader, lanes,       modern  the 2026-07-28 bridge: discover,
//	                                  workers, writer,             _meta, MRTR, listen, tasks
//	                                  in-flight map        legacy  passthrough of 2025 (Streamable
//	                                                               HTTP, or HTTP+SSE for 2024-11-05)
//
//	conn ─▶ reader ─┬─ local answers (cancels, bad input, the client's answers,
//	                │  and what the upstream answers at once: ping, setLevel)
//	                └─ pending ─▶ workers ─▶ upstream.request ─▶ outcome
//	conn ◀─ writer (the only goroutine that writes to the Conn) ◀─ answers
//
// The core (Session) owns the reader, the bounded queue and workers, the
// map from the client's request ids to their work, cancellation, the drain
// at the end of input, and the one writer. It knows no era and makes no
// HTTP request: each message goes to the session's upstream, and each
// request comes back as a typed outcome (its answer, the rewrites applied,
// what runs after it, and for an initialize the upstream every later
// message takes). What every part shares (settings, logs, the Observer, the
// upstream client, the way to the client and the proxy's own requests to
// it) is one env.
//
// What it must never do: write anything but complete frames to the Conn,
// or write from any goroutine but the writer; change frame bytes except
// through package rewrite; make an HTTP request except through package
// routing; wait on the queue while reading (the client's answers, cancels,
// pings and the end of input are always read); answer a request id twice
// (every request gets exactly one answer unless the client cancelled it);
// replay a tools/call whose bytes have left; send a client id upstream
// (upstream ids are minted here).
package bridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Config configures a Session. Zero values take the documented defaults.
type Config struct {
	// Client is the upstream HTTP client (required).
	Client *routing.Client
	// Logger receives diagnostics; never stdout. Default: no logs.
	Logger *zap.Logger
	// MaxInFlight bounds concurrently forwarded requests. Default 64.
	MaxInFlight int
	// MaxQueued bounds the requests read but waiting for an in-flight
	// slot; one more is refused at once. Default 16 per slot, at least
	// 1024. Their bytes are bounded by MaxMessageBytes.
	MaxQueued int
	// MaxMessageBytes bounds one stdin line. Default 128 MiB.
	MaxMessageBytes int
	// DiscoverTimeout bounds the server/discover probe. Default 30s.
	DiscoverTimeout time.Duration
	// Tasks holds the task mapping choices (--task-iserror,
	// --legacy-ttl-unit).
	Tasks rewrite.TaskOptions
	// StatePath is the task registry's state file; "" keeps the registry
	// in memory (--no-state).
	StatePath string
	// MaxRounds bounds MRTR rounds per request. Default 16.
	MaxRounds int
	// MaxSubscriptions bounds the resource subscriptions (distinct URIs)
	// a session holds; one more resources/subscribe is refused with an
	// error naming the bound. Default DefaultMaxSubscriptions.
	MaxSubscriptions int
	// Observer is told of every frame and exchange of the session at its
	// hops (see Observer): the frame trace (--trace, a *trace.Writer) is
	// one. nil for none.
	Observer Observer
	// Redact names the JSON keys whose values logs never show. Default
	// rewrite.SensitiveKey; NoRedact turns it off (--no-redact).
	Redact   func(key string) bool
	NoRedact bool
	// IdleTimeout ends an upstream exchange that sends nothing for this
	// long; every message (progress, logs) restarts it. Default 10m.
	IdleTimeout time.Duration
	// RequestTimeout is the hard maximum of one request, 0 for none,
	// counted from when it was read: its upstream exchanges and the waits
	// for the client's answers to what the server asked (MRTR, and a
	// task's input requests) included. Default 2h. Following a task is
	// governed by the task instead (each poll has its own bound).
	RequestTimeout time.Duration
	// PollTimeout bounds each tasks/get and tasks/update the proxy makes of
	// its own (following a task, waiting in tasks/result, the client's
	// tasks/get): a poll that gets no answer in time is given up and made
	// again under the retry rules (both are safe to repeat). Default 10s
	// (--poll-timeout); never longer than IdleTimeout.
	PollTimeout time.Duration
	// Protocol forces the upstream era (--protocol): ProtocolAuto (the
	// default) probes the server, ProtocolModern bridges to 2026-07-28 and
	// refuses a legacy server, ProtocolLegacy passes 2025 through without
	// probing.
	Protocol string
	// DrainTimeout is how long, once stdin ends, the requests already read
	// (in flight or waiting for a slot) may take to be answered before the
	// session ends (--drain-timeout). A request still unanswered then gets
	// an error naming the bound. 0 drains nothing: end of input cancels
	// the work in flight at once. A signal (ctx) never drains.
	DrainTimeout time.Duration
	// IgnoreTools are glob patterns of tool names hidden from the client
	// (--ignore-tool): tools/list answers leave them out and a tools/call
	// of one is refused. See MatchTool.
	IgnoreTools []string
	// OnInitialized, when set, is called after each successful initialize
	// with the era found: "2026-07-28" (bridged) or the 2025 version the
	// server answered with (passed through). It runs on a worker: keep it
	// short.
	OnInitialized func(era string)
	// SessionID names the session to the Observer, when a process serves
	// several (give Logger the same name as a field).
	SessionID string
	// UpstreamIDs, when set, mints the upstream request ids, shared by the
	// sessions of one process so that no two of them send the same id
	// (their exchanges are told apart in the trace and in the upstream's
	// logs). Nil: the session counts its own from 1.
	UpstreamIDs *atomic.Int64
	// StateOwner scopes the task registry, as "IDENTITY/SESSION":
	// tasks/list shows the tasks recorded under the whole owner, and a task
	// is read, followed or cancelled by id under the same IDENTITY (so a
	// client re-reads its tasks by id from a new session); a task recorded
	// under another identity is not found. Stdio sessions leave it empty
	// and see the tasks recorded without an owner; serve mode sets the
	// client's bearer identity (a hash) and the session id. See
	// ownedRegistry.
	StateOwner string
	// Hints names the settings that error messages point at (see
	// rewrite.Hint): the command layer names its flags. Nil names them
	// neutrally ("the request-timeout setting").
	Hints rewrite.HintText
	// Transport is the --transport choice (TransportHTTPFirst, the default;
	// see ssecarrier.go): when to try the 2024-11-05 HTTP+SSE transport.
	Transport string
}

// The --protocol choices.
const (
	ProtocolAuto   = "auto"
	ProtocolModern = "modern"
	ProtocolLegacy = "legacy"
)

// Defaults.
const (
	DefaultMaxInFlight     = 64
	DefaultDiscoverTimeout = 30 * time.Second
	DefaultMaxRounds       = 16
	DefaultIdleTimeout     = 10 * time.Minute
	DefaultRequestTimeout  = 2 * time.Hour
)

// Session is one legacy client session: the core that reads the client's
// messages, runs its requests on bounded workers and writes their answers.
// It knows no era: each request goes to the session's upstream, which the
// first initialize chooses (see upstream). Create it with New and call Run
// or Serve once.
type Session struct {
	*env

	queue   *pending      // the in-flight slots, and the requests waiting for one
	stopped chan struct{} // closed when every answer has been queued

	// up is where requests go: the modern bridge until an initialize finds
	// a 2025 server, then the passthrough that initialize started.
	up atomic.Pointer[upstreamBox]

	mu       sync.Mutex
	inflight map[string]*call // by the client's raw id
	// initWait (under mu) is closed when the initialize requests read and
	// not answered yet (initPending) drop to zero. A request read behind
	// an unanswered initialize (piped input) waits for it.
	initWait    chan struct{}
	initPending atomic.Int32
	// drainWait (under mu) is closed once the input ended and every
	// request read has been answered (nil until the end of input).
	drainWait chan struct{}
	draining  atomic.Bool // drain has started (set before drainWait)
}

// call is one client request that needs an in-flight slot.
type call struct {
	f         rewrite.Frame // the request
	id        []byte        // the client's raw id
	method    string
	op        string    // the op id the Observer is told
	stream    any       // the In.Stream it came from
	start     time.Time // when the request was read
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled atomic.Bool // the client sent notifications/cancelled
	// answered is claimed by whoever delivers the one answer: the request's
	// own finish, or the drain's bound at the end of input.
	answered atomic.Bool
	// progressToken is the raw _meta.progressToken, if any.
	progressToken []byte
	// task is the raw params.task of a task-augmented tools/call.
	task gjson.Result
	// barrier, when set, is closed once the client messages read before
	// this request have been POSTed (passthrough keeps the client's order).
	barrier <-chan struct{}
	// lastProgress is the last progress value sent to the client.
	lastProgress float64
	progressSeen bool
}

// requestedTTL is the ttl the client asked for in params.task, in ms, held
// to rewrite.MaxTTL.
func (c *call) requestedTTL(seconds bool) (int64, bool) {
	return rewrite.TTLMillis(c.task.Get("ttl"), seconds)
}

// New prepares a session.
func New(cfg Config) *Session {
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = routing.DefaultMaxMessageBytes
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = max(minQueued, queuedPerSlot*cfg.MaxInFlight)
	}
	if cfg.DiscoverTimeout <= 0 {
		cfg.DiscoverTimeout = DefaultDiscoverTimeout
	}
	if cfg.MaxRounds <= 0 {
		cfg.MaxRounds = DefaultMaxRounds
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.RequestTimeout < 0 {
		cfg.RequestTimeout = 0
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	cfg.PollTimeout = min(cfg.PollTimeout, cfg.IdleTimeout)
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Protocol == "" {
		cfg.Protocol = ProtocolAuto
	}
	switch {
	case cfg.NoRedact:
		cfg.Redact = nil
	case cfg.Redact == nil:
		cfg.Redact = rewrite.SensitiveKey
	}
	if cfg.UpstreamIDs == nil {
		cfg.UpstreamIDs = new(atomic.Int64)
	}
	e := &env{cfg: cfg, log: cfg.Logger, client: cfg.Client, out: make(chan outFrame, 256), asks: asks{m: map[string]*pendingAsk{}}, upID: cfg.UpstreamIDs}
	s := &Session{
		env:      e,
		queue:    newPending(cfg.MaxInFlight, cfg.MaxQueued, cfg.MaxMessageBytes),
		stopped:  make(chan struct{}),
		inflight: make(map[string]*call),
	}
	s.up.Store(&upstreamBox{newModern(e)})
	return s
}

// Run serves the session over stdio: NDJSON lines from in, frames to out.
// It is Serve with a Stdio Conn.
func (s *Session) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	conn := NewStdio(in, out, s.cfg.MaxMessageBytes)
	defer conn.Close()
	return s.Serve(ctx, conn)
}

// Serve serves the session over conn until its input ends or ctx is
// cancelled. At the end of input it first answers the requests already
// read, for at most Config.DrainTimeout (see drain). Then it cancels
// in-flight work, waits for it, flushes conn and returns. It returns nil on
// a normal end (end of input or cancellation).
//
// The reader reads conn, answers what is local (ping, logging/setLevel,
// cancellations, the client's answers to the proxy's own requests) at once,
// and hands each request to a worker, or to the bounded queue when every
// in-flight slot is taken (see pending): a cancel, a ping, an answer or the
// end of input behind saturating requests is read at once. The writer is
// the only goroutine that writes to conn.
func (s *Session) Serve(ctx context.Context, conn Conn) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if s.cfg.Observer != nil {
		// Every HTTP exchange of the session is reported by the client.
		ctx = routing.WithObserver(ctx, upstreamHops{s.env})
	}
	s.ctx = ctx
	s.upstream().open()
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
	s.bg.close()
	s.upstream().close()
	close(s.stopped)
	werr := <-writerDone
	if err == nil || errors.Is(err, io.EOF) {
		err = werr
	}
	return err
}

// work runs c, then the requests that queued meanwhile, then each request
// handed to it, until the session ends.
func (s *Session) work(c *call) {
	defer s.queue.workers.Done()
	for {
		for ; c != nil; c = s.queue.next() {
			if c.ctx.Err() != nil { // cancelled while queued
				s.finish(c, nil, nil)
				continue
			}
			s.run(c)
		}
		select {
		case c = <-s.queue.idle:
		case <-s.ctx.Done():
			return
		}
	}
}

// run runs one request on its upstream and delivers its answer.
func (s *Session) run(c *call) {
	f := &c.f
	defer c.cancel()
	var out outcome
	switch {
	case f.Method != "initialize" && !s.awaitInit(c.ctx):
		// The session ended while an initialize read before it ran.
	case f.Method == "tools/call" && s.ignoredCall(f):
		out = frameOnly(s.refuseIgnored(c, f))
	default:
		out = s.upstream().request(c.ctx, c, f)
	}
	if out.next != nil {
		// Before the answer goes out, so that every later client message
		// takes the new upstream.
		s.up.Store(&upstreamBox{out.next})
	}
	switch f.Method {
	case "tools/list":
		out.frame = s.hideIgnored(out.frame)
	case "initialize":
		if out.era != "" && s.cfg.OnInitialized != nil {
			s.cfg.OnInitialized(out.era)
		}
	}
	s.finish(c, out.frame, out.rewrites)
	if out.after != nil && out.frame != nil && !c.cancelled.Load() {
		out.after()
	}
}

// read is the input loop: one message at a time.
func (s *Session) read(ctx context.Context, conn Conn) error {
	for {
		in, err := conn.Read()
		switch tooLarge := asTooLarge(err); {
		case tooLarge != nil:
			s.warn("message over the size limit discarded", zap.Int("limit", tooLarge.Limit))
			s.emit(outFrame{Out: Out{Stream: tooLarge.Stream, Final: true, Frame: s.errorFrame(nil, rewrite.Errorf(protocol.CodeInvalidRequest, nil,
				"message larger than %d bytes discarded; raise %s", tooLarge.Limit, rewrite.HintMaxMessageSize))}})
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
	if ce := s.log.Check(zapcore.DebugLevel, "frame from client"); ce != nil {
		ce.Write(zap.ByteString("frame", s.logFrame(line)), zap.String("method", f.Method))
	}
	// Every record a request causes carries its op: the request and its
	// answer, the client's answers to what the proxy asked for it, and
	// the client's cancel of it.
	var op string
	var named *call // the request a cancel names
	switch {
	case f.Kind == rewrite.KindRequest:
		op = s.nextOp()
	case err != nil:
	case f.Kind == rewrite.KindResponse:
		op = s.askOp(f.ID.Raw) // an answer belongs to the op that asked
	case f.Method == "notifications/cancelled":
		if named = s.inflightCall(f.Params.Get("requestId").Raw); named != nil {
			op = named.op
		}
	}
	if o := s.cfg.Observer; o != nil {
		o.FromClient(s.cfg.SessionID, op, line)
	}
	if err != nil {
		var id []byte
		if f.Kind == rewrite.KindRequest || f.ID.Exists() {
			id = []byte(f.ID.Raw)
		}
		s.warn("invalid message from client", zap.Error(err), zap.ByteString("frame", s.logFrame(line)))
		if f.Kind != rewrite.KindNotification { // notifications are never answered
			s.reply(rewrite.ErrorFrame(id, rewrite.Code(err), invalidMessage(err), nil), op, stream, nil)
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
		up.notified(&n, op, cancel)
		return true
	case rewrite.KindResponse:
		r := f
		if !up.answered(&r, op) {
			s.warn("response from client for an unknown request id ignored", zap.String("id", r.ID.Raw))
		}
		return true
	}
	// A request: the call holds it from here on.
	c := &call{f: f, id: []byte(f.ID.Raw), method: f.Method, op: op, stream: stream}
	if up.local(&c.f, op, stream) {
		return true
	}
	return s.enqueue(ctx, c, up.barrier())
}

// enqueue registers a request and starts it, or queues it for an in-flight
// slot. It returns false when the session is over.
func (s *Session) enqueue(ctx context.Context, c *call, barrier <-chan struct{}) bool {
	if !s.register(ctx, c) {
		s.reply(rewrite.ErrorFrame(c.id, protocol.CodeInvalidRequest,
			"a request with this id is already in flight; ids must be unique among pending requests", nil), c.op, c.stream, nil)
		return true
	}
	c.barrier = barrier
	if ctx.Err() != nil {
		c.cancel()
		return false
	}
	switch a, n, size := s.queue.admit(c); a {
	case admitSpawn:
		go s.work(c)
	case admitHandOff: // to a worker between requests, about to take it
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
func (s *Session) refuseQueued(c *call, n, size int) {
	c.cancel()
	s.warn("request refused: too many requests waiting for an in-flight slot", zap.ByteString("id", c.id), zap.String("method", c.method), zap.Int("waiting", n), zap.Int("waitingBytes", size))
	raise := "raise " + s.hint(rewrite.HintMaxInFlight)
	if n < s.queue.maxCalls { // the bytes bound, not the count
		raise = fmt.Sprintf("raise %s, which also bounds the bytes of the waiting requests (%d)", s.hint(rewrite.HintMaxMessageSize), s.cfg.MaxMessageBytes)
	}
	frame := rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
		fmt.Sprintf("the proxy refused %s: %d requests (%d bytes) are already waiting for one of the %d in-flight slots; wait for answers before sending more (or %s)", c.method, n, size, s.cfg.MaxInFlight, raise),
		fmt.Appendf(nil, `{"waiting":%d,"waitingBytes":%d,"maxInFlight":%d}`, n, size, s.cfg.MaxInFlight))
	s.finish(c, frame, nil)
}

func invalidMessage(err error) string {
	switch {
	case errors.Is(err, rewrite.ErrParse):
		return "Parse error: the line is not valid JSON; send one JSON-RPC message per line"
	case errors.Is(err, rewrite.ErrParams):
		return "Invalid params: " + err.Error()
	}
	return "Invalid Request: " + err.Error()
}

// inflightCall is the request in flight under the client's raw id, or nil.
func (s *Session) inflightCall(id string) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight[id]
}

// register records a request as in flight under the client's id, from the
// moment it is read, so that a cancel finds it even while it is queued.
func (s *Session) register(ctx context.Context, c *call) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &c.f
	if _, dup := s.inflight[f.ID.Raw]; dup {
		return false
	}
	c.start = time.Now()
	if tok := f.Params.Get("_meta.progressToken"); tok.Exists() {
		c.progressToken = []byte(tok.Raw)
	}
	if f.Method == "tools/call" {
		c.task = f.Params.Get("task")
	}
	c.ctx, c.cancel = context.WithCancel(withOp(ctx, c.op))
	s.inflight[f.ID.Raw] = c
	s.streams.add(c.op, c.stream)
	if f.Method == "initialize" && s.initPending.Add(1) == 1 {
		s.initWait = make(chan struct{})
	}
	return true
}

// finish delivers a request's one answer, unless the client cancelled it or
// the session is ending.
func (s *Session) finish(c *call, frame []byte, rewrites []string) {
	defer func() {
		// Only once the answer is queued may the drain end the session:
		// told before, Run could stop the writer and drop it. Outside a
		// drain this costs one atomic load, not a second lock per request
		// (drain sets the flag before it looks at what is in flight).
		if s.draining.Load() {
			s.mu.Lock()
			s.drainedLocked()
			s.mu.Unlock()
		}
	}()
	if c.method == "initialize" {
		defer s.initFinished() // after its answer is queued
	}
	s.mu.Lock()
	delete(s.inflight, string(c.id))
	s.mu.Unlock()
	s.streams.drop(c.op)
	if !c.answered.CompareAndSwap(false, true) {
		return // the drain's bound answered it at the end of input
	}
	s.logRequest(c.op, c.method, c.id, c.start, frame, c.cancelled.Load())
	if s.ctx.Err() != nil {
		return // shutting down: the client has gone
	}
	if c.cancelled.Load() || frame == nil {
		if c.stream != nil {
			s.reply(nil, c.op, c.stream, nil) // ended without an answer
		}
		return
	}
	s.emit(outFrame{Out: Out{Frame: frame, Op: c.op, Stream: c.stream, Final: true}, rewrites: rewrites})
}

// awaitInit waits for the initialize requests read before this request to
// be answered, so that piped input (initialize, then a call, without
// waiting) works as a client that waits would. It reports false when ctx
// ended first. A client that waits for initialize's answer never waits
// here.
func (s *Session) awaitInit(ctx context.Context) bool {
	if s.initPending.Load() == 0 {
		return true
	}
	s.mu.Lock()
	ch := s.initWait
	s.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// initFinished notes that an initialize was answered (or refused).
func (s *Session) initFinished() {
	s.mu.Lock()
	if s.initPending.Add(-1) == 0 && s.initWait != nil {
		close(s.initWait)
		s.initWait = nil
	}
	s.mu.Unlock()
}

// cancelled marks c, the request a notifications/cancelled names by id, as
// cancelled and returns what ends it, or nil when no such request is in
// flight (c nil; an initialize is never cancelled).
func (s *Session) cancelled(c *call, id string) func() {
	if c == nil || c.method == "initialize" {
		s.debug("cancel for an unknown or finished request ignored", zap.String("requestId", id))
		return nil
	}
	c.cancelled.Store(true)
	s.info("request cancelled by the client", zap.String("id", id), zap.String("method", c.method))
	return func() { s.cancelCall(c) }
}

// cancelCall ends a request the client cancelled (c.cancelled is set): its
// context is cancelled, which closes its upstream stream, and a request
// still waiting for a slot leaves the queue at once, so that cancelled
// requests never fill the queue and get new ones refused.
func (s *Session) cancelCall(c *call) {
	c.cancel()
	if s.queue.remove(c) {
		s.finish(c, nil, nil) // no answer: the client cancelled it
	}
}

// sendOp queues a frame sent while the request with this op runs (or for
// no request, op ""): the Observer is told its op and rewrites, and a front
// with streams gets it on that request's stream while it is in flight.
func (s *env) sendOp(frame []byte, op string, rewrites []string) {
	s.emit(outFrame{Out: Out{Frame: frame, Op: op, Stream: s.streams.of(op)}, rewrites: rewrites})
}

// reply queues a request's one answer (nil: its end without one).
func (s *env) reply(frame []byte, op string, stream any, rewrites []string) {
	s.emit(outFrame{Out: Out{Frame: frame, Op: op, Stream: stream, Final: true}, rewrites: rewrites})
}

// emit queues a frame for the writer. Once the session is ending, a sender
// that would block gives up: the client has gone or stopped reading.
func (s *env) emit(of outFrame) {
	select {
	case s.out <- of:
	case <-s.ctx.Done():
	}
}

// write is the only code that writes to the Conn. It flushes whenever the
// queue runs dry, so a burst costs one write. It ends when the session has
// stopped and every queued frame is written.
func (s *Session) write(conn Conn) error {
	var failed error
	for {
		var of outFrame
		select {
		case of = <-s.out:
		case <-s.stopped:
			select {
			case of = <-s.out:
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
			if o := s.cfg.Observer; o != nil {
				o.ToClient(s.cfg.SessionID, of.Op, of.Frame, of.rewrites)
			}
			if ce := s.log.Check(zapcore.DebugLevel, "frame to client"); ce != nil {
				ce.Write(zap.ByteString("frame", s.logFrame(of.Frame)))
			}
		}
		err := conn.Write(of.Out)
		if err == nil && len(s.out) == 0 {
			err = conn.Flush()
		}
		if err != nil {
			failed = err
			s.log.Error("writing to the client failed; frames are dropped", zap.Error(err))
		}
	}
}

// logRequest writes the one info line of a client request.
func (s *env) logRequest(op, method string, id []byte, start time.Time, frame []byte, cancelled bool) {
	ce := s.log.Check(zapcore.InfoLevel, "request")
	if ce == nil {
		return
	}
	outcome := "result"
	switch {
	case cancelled:
		outcome = "cancelled"
	case frame == nil:
		outcome = "no answer (session ending)"
	case gjson.GetBytes(frame, "error").Exists():
		outcome = "error " + gjson.GetBytes(frame, "error.code").Raw
	}
	ce.Write(zap.String("dir", "client->proxy->client"), zap.String("op", op), zap.String("method", method), zap.ByteString("id", id),
		zap.String("outcome", outcome), zap.Duration("latency", time.Since(start)), zap.Int("bytesOut", len(frame)))
}

// nextUpstreamID mints a proxy-owned upstream id: MRTR retries, polls and
// listens need ids of their own.
func (s *env) nextUpstreamID() []byte {
	return strconv.AppendInt(nil, s.upID.Add(1), 10)
}

func (s *env) warn(msg string, fields ...zap.Field) {
	if ce := s.log.Check(zapcore.WarnLevel, msg); ce != nil {
		ce.Write(fields...)
	}
}

func (s *env) info(msg string, fields ...zap.Field) {
	if ce := s.log.Check(zapcore.InfoLevel, msg); ce != nil {
		ce.Write(fields...)
	}
}

func (s *env) debug(msg string, fields ...zap.Field) {
	if ce := s.log.Check(zapcore.DebugLevel, msg); ce != nil {
		ce.Write(fields...)
	}
}

// debugFrameCap bounds frame copies in logs.
const debugFrameCap = 4 << 10

// logFrame is a frame as logs may show it: secrets redacted (by default
// token, secret, password, api key and authorization keys, at any depth),
// and cut to debugFrameCap bytes.
func (s *env) logFrame(b []byte) []byte {
	if s.cfg.Redact == nil {
		return capBytes(b)
	}
	return capBytes(rewrite.Redact(b, s.cfg.Redact))
}

func capBytes(b []byte) []byte {
	if len(b) <= debugFrameCap {
		return b
	}
	out := make([]byte, 0, debugFrameCap+32)
	out = append(out, b[:debugFrameCap]...)
	return append(out, "…(truncated)"...)
}
