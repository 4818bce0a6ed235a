// Package bridge runs one legacy (2025-11-25) MCP session over stdio against
// a modern (2026-07-28) Streamable HTTP server.
//
// A Session owns the stdio framing, the single stdout writer, the map from
// the client's request ids to in-flight upstream work, the locally answered
// handshake (initialize, ping, logging/setLevel), and dispatch. Frame bytes
// are changed only through package rewrite; HTTP goes through package
// routing; era detection and capability mapping come from capabilities.
//
//	stdin ─▶ reader ─┬─ local answers (ping, setLevel, cancels, bad input,
//	                 │  the client's answers to the proxy's own requests)
//	                 └─ pending ─▶ starter ─▶ worker goroutines
//	                                        (initialize, or forward ─▶ routing)
//	stdout ◀─ writer (the only goroutine that touches stdout) ◀─ answers
//
// Invariants kept here: stdout carries only complete JSON-RPC lines; every
// request id gets exactly one answer unless the client cancelled it;
// upstream ids are minted by the proxy; in-flight work is bounded, and the
// reader never waits for it: requests beyond the bound wait in a bounded
// queue, and one over that queue's bounds is refused at once, so stdin is
// always read.
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
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
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
	// Trace receives the frame trace (--trace); nil for none.
	Trace *trace.Writer
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

// Session is one legacy client session. Create it with New and call Run once.
type Session struct {
	cfg    Config
	log    *zap.Logger
	client *routing.Client

	out     chan outFrame // frames for the writer goroutine
	queue   *pending      // requests read but not started yet (bounded)
	sem     chan struct{} // in-flight bound
	stopped chan struct{} // closed when every answer has been queued
	wg      sync.WaitGroup
	ctx     context.Context // cancelled when the session ends
	upID    atomic.Int64
	initMu  sync.Mutex // serializes initialize
	meta    atomic.Pointer[rewrite.MetaBlock]

	mu         sync.Mutex
	inflight   map[string]*call                  // by the client's raw id
	ready      bool                              // initialize succeeded
	caps       []byte                            // mapped client capabilities
	clientInfo []byte                            // the client's clientInfo
	level      string                            // logging/setLevel
	params     map[string][]protocol.ParamHeader // x-mcp-header annotations by tool
	listed     bool                              // params reflect a tools/list
	legacyCaps []byte                            // the client's own capabilities
	tasks      bool                              // the server declares the tasks extension
	asks       map[string]*pendingAsk            // proxy requests to the client, by id
	dispatched map[string]map[string]*inputKey   // task input keys, by task id

	serverCaps []byte // the server's 2026 capabilities, from discover
	listening  bool   // the list-change stream was started

	reg    registry // the tasks the client created through the proxy
	listen listens  // subscriptions/listen streams
	askID  atomic.Int64
	opID   atomic.Int64

	fetchMu  sync.Mutex // one lazy tools/list fetch at a time
	fetched  int        // lazy fetches made (under mu)
	fetchErr error      // the last one's failure (under mu)

	rawHeadersNoted sync.Once // the first raw UTF-8 header retry is logged

	// initPending counts the initialize requests read and not answered
	// yet; initWait (under mu) is closed when it drops to zero. A request
	// read behind an unanswered initialize (piped input) waits for it.
	initPending atomic.Int32
	initWait    chan struct{}

	// drainWait is closed once stdin ended and every request read has
	// been answered (under mu; nil until the end of input).
	drainWait chan struct{}
	draining  atomic.Bool // drain has started (set before drainWait)

	// pass is set once a legacy server accepted the client's initialize:
	// from then on every message takes the passthrough path.
	pass atomic.Pointer[passthrough]
}

// call is one client request that needs an in-flight slot.
type call struct {
	id        []byte // the client's raw id
	method    string
	op        string    // the trace's op id
	start     time.Time // when the request was read
	rewrites  []string  // what the answer's rewrite changed, for the trace
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
	// after runs once the answer is queued (e.g. input requests that must
	// follow a tasks/get answer).
	after func()
	// input is an InputRequiredResult waiting for the client's answers;
	// retry holds the params members of the next MRTR retry.
	input, retry []byte
	// barrier, when set, is closed once the client messages read before
	// this request have been POSTed (passthrough keeps the client's order).
	barrier <-chan struct{}
	// sentBase64 is set when the server refused the headers with -32020
	// and they carried a value in the Base64 form; rawHeaders, once the
	// request is retried with raw UTF-8 values instead (for good).
	sentBase64, rawHeaders bool
	// lastProgress is the last progress value sent to the client.
	lastProgress float64
	progressSeen bool
}

// requestedTTL is the ttl the client asked for in params.task, in ms, held
// to rewrite.MaxTTL.
func (c *call) requestedTTL(seconds bool) (int64, bool) {
	return rewrite.TTLMillis(c.task.Get("ttl"), seconds)
}

// job is a request waiting for a slot.
type job struct {
	c *call
	f rewrite.Frame
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
	return &Session{
		cfg:        cfg,
		log:        cfg.Logger,
		client:     cfg.Client,
		out:        make(chan outFrame, 256),
		queue:      newPending(cfg.MaxQueued, cfg.MaxMessageBytes),
		sem:        make(chan struct{}, cfg.MaxInFlight),
		stopped:    make(chan struct{}),
		inflight:   make(map[string]*call),
		params:     make(map[string][]protocol.ParamHeader),
		asks:       make(map[string]*pendingAsk),
		dispatched: make(map[string]map[string]*inputKey),
		reg:        newMemRegistry(),
		listen:     listens{byURI: map[string]*listener{}},
	}
}

// Run serves the session until stdin ends or ctx is cancelled. At the end
// of input it first answers the requests already read, for at most
// Config.DrainTimeout (see drain). Then it cancels in-flight work, waits
// for it, flushes stdout and returns. It returns nil on a normal end (EOF
// or cancellation).
//
// Three goroutines cooperate: the reader parses stdin, answers what is local
// (ping, logging/setLevel, cancellations, the client's answers to the
// proxy's own requests) at once and queues requests; the starter takes
// queued requests as in-flight slots free up and hands each to a worker
// goroutine; the writer owns stdout. The reader never waits on the queue:
// whatever is queued, a cancel, a ping, an answer or the end of input that
// arrives behind saturating requests is read and handled at once. The queue
// is bounded (MaxQueued requests, and MaxMessageBytes of frames); a request
// over that bound is refused with an error instead of being held.
func (s *Session) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx = ctx
	s.openRegistry()
	writerDone := make(chan error, 1)
	go func() { writerDone <- s.write(out) }()
	starterDone := make(chan struct{})
	go func() { defer close(starterDone); s.start(ctx) }()

	readerDone := make(chan error, 1)
	go func() { readerDone <- s.read(ctx, in) }()

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
	<-starterDone
	s.wg.Wait()
	s.listen.close()
	if p := s.pass.Load(); p != nil {
		p.end()
	}
	close(s.stopped)
	werr := <-writerDone
	if err == nil || errors.Is(err, io.EOF) {
		err = werr
	}
	return err
}

// start runs queued requests as in-flight slots free up. Requests run on
// worker goroutines that stay for the next request (at most MaxInFlight of
// them): a fresh goroutine per request would grow a new stack every time,
// and on the echo path that stack growth was an eighth of the proxy's CPU.
func (s *Session) start(ctx context.Context) {
	work := make(chan job) // to an idle worker
	workers := 0
	for {
		// A slot first, then the oldest request: one taken before its slot
		// would be held outside the queue's bounds.
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		j, ok := s.queue.pop()
		for !ok {
			select {
			case <-s.queue.wake:
				j, ok = s.queue.pop()
			case <-ctx.Done():
				<-s.sem
				return
			}
		}
		if j.c.ctx.Err() != nil { // cancelled while queued
			<-s.sem
			s.finish(j.c, nil)
			continue
		}
		select {
		case work <- j:
			continue
		default:
		}
		if workers < s.cfg.MaxInFlight {
			workers++
			s.wg.Add(1)
			go s.worker(ctx, j, work)
			continue
		}
		// Every worker exists and this job holds a slot, so one of them is
		// between requests and about to take it.
		select {
		case work <- j:
		case <-ctx.Done():
			<-s.sem
			return
		}
	}
}

// worker runs j, then each job handed to it, until the session ends.
func (s *Session) worker(ctx context.Context, j job, work <-chan job) {
	defer s.wg.Done()
	for {
		s.run(j)
		<-s.sem
		select {
		case j = <-work:
		case <-ctx.Done():
			return
		}
	}
}

// run forwards one request and delivers its answer.
func (s *Session) run(j job) {
	defer j.c.cancel()
	var frame []byte
	switch {
	case j.f.Method != "initialize" && !s.awaitInit(j.c.ctx):
		// The session ended while an initialize read before it ran.
	case j.f.Method == "tools/call" && s.ignoredCall(&j.f):
		frame = s.refuseIgnored(j.c, &j.f)
	case s.pass.Load() != nil:
		frame = s.passRequest(j.c.ctx, j.c, &j.f)
	case j.f.Method == "initialize":
		frame = s.initialize(j.c.ctx, j.c, &j.f)
	case isTaskMethod(j.f.Method):
		frame = s.taskMethod(j.c.ctx, j.c, &j.f)
	case j.f.Method == "resources/subscribe" || j.f.Method == "resources/unsubscribe":
		frame = s.subscription(j.c.ctx, j.c, &j.f)
	default:
		frame = s.forward(j.c.ctx, j.c, &j.f)
	}
	switch j.f.Method {
	case "tools/list":
		frame = s.hideIgnored(frame)
	case "initialize":
		s.initialized(frame)
	}
	s.finish(j.c, frame)
	if j.c.after != nil && frame != nil && !j.c.cancelled.Load() {
		j.c.after()
	}
}

// read is the stdin loop: one line, one message.
func (s *Session) read(ctx context.Context, in io.Reader) error {
	lr := newLineReader(in, s.cfg.MaxMessageBytes)
	for {
		line, err := lr.next()
		switch {
		case errors.Is(err, errLineTooLong):
			s.warn("stdin line over the size limit discarded", zap.Int("limit", s.cfg.MaxMessageBytes))
			s.send(rewrite.ErrorFrame(nil, protocol.CodeInvalidRequest,
				fmt.Sprintf("message larger than %d bytes discarded; raise --max-message-size", s.cfg.MaxMessageBytes), nil))
			continue
		case err != nil:
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("reading stdin: %w", err)
		}
		line = rewrite.TrimFrame(line)
		if len(line) == 0 {
			continue
		}
		if !s.dispatch(ctx, line) {
			return nil
		}
	}
}

// dispatch handles one message. It returns false when the session is over.
func (s *Session) dispatch(ctx context.Context, line []byte) bool {
	f, err := rewrite.Parse(line)
	if ce := s.log.Check(zapcore.DebugLevel, "frame from client"); ce != nil {
		ce.Write(zap.ByteString("frame", s.logFrame(line)), zap.String("method", f.Method))
	}
	// Every record a request causes carries its op: the request and its
	// answer, the client's answers to what the proxy asked for it, and
	// the client's cancel of it.
	var op string
	switch {
	case f.Kind == rewrite.KindRequest:
		op = s.nextOp()
	case err != nil:
	case f.Kind == rewrite.KindResponse:
		op = s.askOp(f.ID.Raw) // an answer belongs to the op that asked
	case f.Method == "notifications/cancelled":
		op = s.inflightOp(f.Params.Get("requestId").Raw)
	}
	s.traceFrame(trace.ClientToProxy, op, line, nil)
	if err != nil {
		var id []byte
		if f.Kind == rewrite.KindRequest || f.ID.Exists() {
			id = []byte(f.ID.Raw)
		}
		s.warn("invalid message from client", zap.Error(err), zap.ByteString("frame", s.logFrame(line)))
		if f.Kind != rewrite.KindNotification { // notifications are never answered
			s.sendOp(rewrite.ErrorFrame(id, rewrite.Code(err), invalidMessage(err), nil), op, nil)
		}
		return true
	}
	pass := s.pass.Load()
	switch {
	case f.Kind == rewrite.KindNotification && pass != nil:
		s.passNotification(pass, &f, op)
		return true
	case f.Kind == rewrite.KindNotification:
		s.notification(&f)
		return true
	case f.Kind == rewrite.KindResponse && pass != nil:
		s.passAnswer(pass, &f, op)
		return true
	case f.Kind == rewrite.KindResponse:
		if !s.clientAnswered(&f) {
			s.warn("response from client for an unknown request id ignored", zap.String("id", f.ID.Raw))
		}
		return true
	case pass != nil:
		// passthrough: every request goes to the server, after the client
		// messages it wrote before (notifications/initialized above all).
		return s.enqueue(ctx, &f, op, pass.barrier())
	}
	// A request.
	switch f.Method {
	case "ping":
		frame := rewrite.ResultFrame([]byte(f.ID.Raw), []byte(`{}`))
		s.logRequest(op, f.Method, []byte(f.ID.Raw), time.Now(), frame, false)
		s.sendOp(frame, op, []string{"ping.local"})
		return true
	case "logging/setLevel":
		s.setLevel(&f, op)
		s.logRequest(op, f.Method, []byte(f.ID.Raw), time.Now(), []byte(`{}`), false)
		return true
	}
	if p := requiredParam(f.Method); p != "" && f.Params.Get(p).Type != gjson.String {
		s.sendOp(rewrite.ErrorFrame([]byte(f.ID.Raw), protocol.CodeInvalidParams,
			fmt.Sprintf("Invalid params: %s needs params.%s, a string", f.Method, p), nil), op, nil)
		return true
	}
	return s.enqueue(ctx, &f, op, nil)
}

// enqueue registers a request and queues it for an in-flight slot. It
// returns false when the session is over.
func (s *Session) enqueue(ctx context.Context, f *rewrite.Frame, op string, barrier <-chan struct{}) bool {
	c, ok := s.register(ctx, f, op)
	if !ok {
		s.sendOp(rewrite.ErrorFrame([]byte(f.ID.Raw), protocol.CodeInvalidRequest,
			"a request with this id is already in flight; ids must be unique among pending requests", nil), op, nil)
		return true
	}
	c.barrier = barrier
	if ctx.Err() != nil {
		c.cancel()
		return false
	}
	if ok, n, size := s.queue.push(job{c: c, f: *f}); !ok {
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
	if c.method == "initialize" {
		defer s.initFinished()
	}
	s.mu.Lock()
	delete(s.inflight, string(c.id))
	s.drainedLocked()
	s.mu.Unlock()
	c.cancel()
	s.warn("request refused: too many requests waiting for an in-flight slot", zap.ByteString("id", c.id), zap.String("method", c.method), zap.Int("waiting", n), zap.Int("waitingBytes", size))
	raise := "raise --max-in-flight"
	if n < s.queue.maxJobs { // the bytes bound, not the count
		raise = fmt.Sprintf("raise --max-message-size, which also bounds the bytes of the waiting requests (%d)", s.cfg.MaxMessageBytes)
	}
	frame := rewrite.ErrorFrame(c.id, protocol.CodeInternalError,
		fmt.Sprintf("the proxy refused %s: %d requests (%d bytes) are already waiting for one of the %d in-flight slots; wait for answers before sending more (or %s)", c.method, n, size, s.cfg.MaxInFlight, raise),
		fmt.Appendf(nil, `{"waiting":%d,"waitingBytes":%d,"maxInFlight":%d}`, n, size, s.cfg.MaxInFlight))
	s.logRequest(c.op, c.method, c.id, c.start, frame, false)
	s.sendOp(frame, c.op, nil)
}

func isTaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel":
		return true
	}
	return false
}

// openRegistry opens the task state file, or keeps the registry in memory
// when there is none. A file that cannot be used moves the session to
// memory, said once (tasks/list would forget tasks on restart).
func (s *Session) openRegistry() {
	if s.cfg.StatePath == "" {
		return
	}
	s.reg = openStateRegistry(s.cfg.StatePath, s.client.URL(), s.log)
}

// requiredParam names the string parameter a method cannot do without; it
// is also what the Mcp-Name header carries, so it is checked before sending.
func requiredParam(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
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

// inflightOp is the op of the request in flight under the client's raw id.
func (s *Session) inflightOp(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.inflight[id]; c != nil {
		return c.op
	}
	return ""
}

// register records a request as in flight under the client's id, from the
// moment it is read, so that a cancel finds it even while it is queued.
func (s *Session) register(ctx context.Context, f *rewrite.Frame, op string) (*call, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.inflight[f.ID.Raw]; dup {
		return nil, false
	}
	c := &call{id: []byte(f.ID.Raw), method: f.Method, op: op, start: time.Now()}
	if tok := f.Params.Get("_meta.progressToken"); tok.Exists() {
		c.progressToken = []byte(tok.Raw)
	}
	if f.Method == "tools/call" {
		c.task = f.Params.Get("task")
	}
	c.ctx, c.cancel = context.WithCancel(withOp(ctx, op))
	s.inflight[f.ID.Raw] = c
	if f.Method == "initialize" && s.initPending.Add(1) == 1 {
		s.initWait = make(chan struct{})
	}
	return c, true
}

// finish delivers a request's one answer, unless the client cancelled it or
// the session is ending.
func (s *Session) finish(c *call, frame []byte) {
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
	if !c.answered.CompareAndSwap(false, true) {
		return // the drain's bound answered it at the end of input
	}
	s.logRequest(c.op, c.method, c.id, c.start, frame, c.cancelled.Load())
	if c.cancelled.Load() || frame == nil {
		return
	}
	if s.ctx.Err() != nil {
		return // shutting down: the client has gone
	}
	s.sendOp(frame, c.op, c.rewrites)
}

// initialized tells Config.OnInitialized the era an initialize found.
func (s *Session) initialized(frame []byte) {
	if s.cfg.OnInitialized == nil || frame == nil {
		return
	}
	v := gjson.GetBytes(frame, "result.protocolVersion")
	if !v.Exists() {
		return // refused: no era to tell
	}
	era := "2026-07-28"
	if s.pass.Load() != nil {
		era = v.Str
	}
	s.cfg.OnInitialized(era)
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

// notification handles a client notification; none is forwarded upstream in
// 2026-07-28 (eras.md §5.2).
func (s *Session) notification(f *rewrite.Frame) {
	switch f.Method {
	case "notifications/initialized":
		s.debug("client initialized")
		// The 2025 client signals readiness here: the list-change stream
		// starts now (eras.md §3.1 POLICY), once.
		s.mu.Lock()
		start := s.ready && !s.listening
		s.listening = s.listening || start
		s.mu.Unlock()
		if start {
			s.openListChanged()
		}
	case "notifications/cancelled":
		id := f.Params.Get("requestId")
		s.mu.Lock()
		c := s.inflight[id.Raw]
		s.mu.Unlock()
		if c == nil || c.method == "initialize" {
			s.debug("cancel for an unknown or finished request ignored", zap.String("requestId", id.Raw))
			return
		}
		c.cancelled.Store(true)
		s.cancelCall(c) // closes the upstream stream, or drops it from the queue
		s.info("request cancelled by the client", zap.String("id", id.Raw), zap.String("method", c.method))
	default:
		s.debug("client notification consumed", zap.String("method", f.Method))
	}
}

// cancelCall ends a request the client cancelled (c.cancelled is set): its
// context is cancelled, which closes its upstream stream, and a request
// still waiting for a slot leaves the queue at once, so that cancelled
// requests never fill the queue and get new ones refused.
func (s *Session) cancelCall(c *call) {
	c.cancel()
	if s.queue.remove(c) {
		s.finish(c, nil) // no answer: the client cancelled it
	}
}

// send queues a frame for stdout. Once the session is ending, a sender that
// would block gives up: the client has gone or stopped reading.
func (s *Session) send(frame []byte) { s.sendOp(frame, "", nil) }

// sendOp is send with the op and the rewrites the trace records.
func (s *Session) sendOp(frame []byte, op string, rewrites []string) {
	select {
	case s.out <- outFrame{b: frame, op: op, rewrites: rewrites}:
	case <-s.ctx.Done():
	}
}

// write is the only code that touches stdout. It flushes whenever the queue
// runs dry, so a burst costs one write. It ends when the session has stopped
// and every queued frame is written.
func (s *Session) write(w io.Writer) error {
	bw := newFlusher(w)
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
					failed = bw.flush()
				}
				return failed
			}
		}
		if failed != nil {
			continue // keep draining so senders never block
		}
		frame := of.b
		s.traceFrame(trace.ProxyToClient, of.op, frame, of.rewrites)
		if ce := s.log.Check(zapcore.DebugLevel, "frame to client"); ce != nil {
			ce.Write(zap.ByteString("frame", s.logFrame(frame)))
		}
		if err := bw.writeLine(frame, len(s.out) == 0); err != nil {
			failed = err
			s.log.Error("writing to stdout failed; frames are dropped", zap.Error(err))
		}
	}
}

// logRequest writes the one info line of a client request.
func (s *Session) logRequest(op, method string, id []byte, start time.Time, frame []byte, cancelled bool) {
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

// nextUpstreamID mints a proxy-owned upstream id (eras.md §18).
func (s *Session) nextUpstreamID() []byte {
	return strconv.AppendInt(nil, s.upID.Add(1), 10)
}

func (s *Session) warn(msg string, fields ...zap.Field) {
	if ce := s.log.Check(zapcore.WarnLevel, msg); ce != nil {
		ce.Write(fields...)
	}
}

func (s *Session) info(msg string, fields ...zap.Field) {
	if ce := s.log.Check(zapcore.InfoLevel, msg); ce != nil {
		ce.Write(fields...)
	}
}

func (s *Session) debug(msg string, fields ...zap.Field) {
	if ce := s.log.Check(zapcore.DebugLevel, msg); ce != nil {
		ce.Write(fields...)
	}
}

// debugFrameCap bounds frame copies in logs.
const debugFrameCap = 4 << 10

// logFrame is a frame as logs may show it: secrets redacted (by default
// token, secret, password, api key and authorization keys, at any depth),
// and cut to debugFrameCap bytes.
func (s *Session) logFrame(b []byte) []byte {
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
