package link

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Env is what every part of a session shares, whatever the era: its
// settings, logs and Observer, the upstream HTTP client, the way to the
// client (Emit, Send, and the requests the proxy asks it), id minting and
// the session's background goroutines. The core and both upstream modes
// hold the same *Env.
type Env struct {
	Cfg    Config
	Log    *zap.Logger
	Client *routing.Client
	Ctx    context.Context // the session's; cancelled when it ends (set by the core's Serve)

	Out chan Out // frames for the core's writer
	// Streams holds the In.Stream of each request in flight, by op, so
	// that what is sent while it runs reaches the same stream. A front
	// without streams (stdio) never fills it.
	Streams sync.Map
	BG      Group // listen streams, the passthrough poster and GET stream

	// Sleep and Now are the listen loops' clock: Sleep and time.Now, but
	// for tests, which set them before the session runs.
	Sleep func(ctx context.Context, d time.Duration) bool
	Now   func() time.Time

	asks  sync.Map      // the proxy's requests to the client (*PendingAsk), by raw id
	askID atomic.Int64  // their ids
	upID  *atomic.Int64 // proxy-owned upstream ids (Config.UpstreamIDs, or the session's own)
	opID  atomic.Int64  // trace op ids
}

// NewEnv prepares the services of a session of cfg, whose defaults are set.
func NewEnv(cfg Config) *Env {
	return &Env{Cfg: cfg, Log: cfg.Logger, Client: cfg.Client, Ctx: context.Background(), Out: make(chan Out, 256),
		Sleep: Sleep, Now: time.Now, upID: cmp.Or(cfg.UpstreamIDs, new(atomic.Int64))}
}

// URL is the upstream URL, secrets redacted.
func (e *Env) URL() string { return e.Client.URL() }

// ErrorFrame renders a proxy-made error for the client, its hints named by
// Config.Hints.
func (e *Env) ErrorFrame(id []byte, err rewrite.Error) []byte { return err.Frame(id, e.Cfg.Hints) }

// Hint names a setting in a message, as Config.Hints does.
func (e *Env) Hint(h rewrite.Hint) string { return h.Text(e.Cfg.Hints) }

// Send queues a frame sent while the request with this op runs (or for no
// request, op ""): the Observer is told its op and rewrites, and a front
// with streams gets it on that request's stream while it is in flight.
func (e *Env) Send(frame []byte, op string, rewrites []string) {
	stream, _ := e.Streams.Load(op)
	e.Emit(Out{Frame: frame, Op: op, Stream: stream, Rewrites: rewrites})
}

// Emit queues a frame for the writer. Once the session is ending, a sender
// that would block gives up: the client has gone or stopped reading.
func (e *Env) Emit(of Out) {
	select {
	case e.Out <- of:
	case <-e.Ctx.Done():
	}
}

// NextUpstreamID mints a proxy-owned upstream id: MRTR retries, polls and
// listens need ids of their own.
func (e *Env) NextUpstreamID() []byte { return strconv.AppendInt(nil, e.upID.Add(1), 10) }

func (e *Env) NextOp() string { return "op-" + strconv.FormatInt(e.opID.Add(1), 10) }

func (e *Env) Warn(msg string, fields ...zap.Field)  { e.logAt(zapcore.WarnLevel, msg, fields) }
func (e *Env) Info(msg string, fields ...zap.Field)  { e.logAt(zapcore.InfoLevel, msg, fields) }
func (e *Env) Debug(msg string, fields ...zap.Field) { e.logAt(zapcore.DebugLevel, msg, fields) }

func (e *Env) logAt(lvl zapcore.Level, msg string, fields []zap.Field) {
	if ce := e.Log.Check(lvl, msg); ce != nil {
		ce.Write(fields...)
	}
}

// debugFrameCap bounds frame copies in logs.
const debugFrameCap = 4 << 10

// LogFrame is a frame as logs may show it: secrets redacted (by default
// token, secret, password, api key and authorization keys, at any depth),
// and cut to debugFrameCap bytes.
func (e *Env) LogFrame(b []byte) []byte {
	if e.Cfg.Redact != nil {
		b = rewrite.Redact(b, e.Cfg.Redact)
	}
	if len(b) <= debugFrameCap {
		return b
	}
	return append(b[:debugFrameCap:debugFrameCap], "…(truncated)"...)
}

// Verdict logs the upstream era once per initialize (or first request of a
// 2026-07-28 client), at info, and tells the Observer.
func (e *Env) Verdict(op, era, reason string) {
	e.VerdictMode(op, era, "", reason)
}

// VerdictMode is Verdict with the mode said (default: the one a 2025
// client's session takes for era).
func (e *Env) VerdictMode(op, era, mode, reason string) {
	switch {
	case mode != "":
	case era == capabilities.Legacy.String():
		mode = "passthrough (2025 on both sides)"
	case era == capabilities.LegacySSE.String():
		mode = "passthrough over the HTTP+SSE transport (2024-11-05)"
	default:
		mode = "bridge to 2026-07-28"
	}
	e.Info("upstream era detected", zap.String("era", era), zap.String("mode", mode), zap.String("url", e.URL()), zap.String("reason", reason))
	if o := e.Cfg.Observer; o != nil {
		o.Note(e.Cfg.SessionID, op, "era: "+era+" ("+reason+"); mode: "+mode)
	}
}

// Group runs a session's background goroutines; it is safe to start one
// from any goroutine until the session closes it.
type Group struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	closed bool
}

func (g *Group) Start(fn func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Go(fn)
	return true
}

// Close stops new goroutines and waits for the running ones, which end
// with the session's context.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

type hopKey struct{}

// hop is what a context tells the Observer of the exchanges made under it:
// their op, and what the proxy changed in their requests.
type hop struct {
	op       string
	rewrites []string
}

// WithOp carries an op id to the proxy's own upstream requests.
func WithOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, hopKey{}, hop{op: op})
}

func hopOf(ctx context.Context) hop {
	h, _ := ctx.Value(hopKey{}).(hop)
	return h
}

func OpOf(ctx context.Context) string { return hopOf(ctx).op }

// Observed is ctx with rw, for the Observer, as what the proxy changed in
// the requests made under it, and op as their op (ctx's own when ""). With
// no Observer it is ctx itself.
func (e *Env) Observed(ctx context.Context, op string, rw []string) context.Context {
	if e.Cfg.Observer == nil {
		return ctx
	}
	if op == "" {
		op = OpOf(ctx)
	}
	return context.WithValue(ctx, hopKey{}, hop{op: op, rewrites: rw})
}

// UpstreamHops is the session's routing.Observer while it has an Observer:
// every HTTP exchange with the server is told to it on the two server
// hops, under the op and with the rewrites its context carries (WithOp,
// Observed). No call site reports an exchange by hand.
type UpstreamHops struct{ E *Env }

func (u UpstreamHops) Request(ctx context.Context, method, url string, h http.Header, body []byte) {
	x := hopOf(ctx)
	u.E.Cfg.Observer.ToServer(u.E.Cfg.SessionID, x.op, x.rewrites, method, url, h, body)
}

func (u UpstreamHops) Answer(ctx context.Context, status int, msg []byte, since time.Time, err error) {
	u.E.Cfg.Observer.FromServer(u.E.Cfg.SessionID, OpOf(ctx), status, msg, time.Since(since), err)
}

// The rewrites of the proxy's own requests and of passthrough, for the
// Observer.
var (
	RwForward   = []string{"id.remap", "meta.inject"}
	RwOwn       = []string{"id.mint", "meta.inject"}
	RwAsk       = []string{"input.ask"}
	RwPass      = []string{"passthrough"}
	RwPassSSE   = []string{"passthrough", "sse"}
	RwResume    = []string{"stream.resume"}
	RwSSEStream = []string{"sse"}
)

// Sleep waits d, or until ctx ends (false).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Clone is a copy of b that the caller keeps; nil when b is empty.
func Clone(b []byte) []byte { return append([]byte(nil), b...) }
