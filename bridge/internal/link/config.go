// Package link is what the session core (package bridge) and its two
// upstream modes (packages modern and passthrough) share: the settings,
// the Upstream interface with its Call and Outcome, and the session's
// services in one Env passed by pointer (logs, the routing client, the way
// to the client and the proxy's own requests to it, the background group,
// upstream id minting, the Observer's hops), with the error answers and
// retry policy both modes use.
//
// What it must never do: speak either era's protocol (what is 2026 lives in
// modern, what is 2025 in passthrough; link only logs the era a verdict
// names), read or write the client's connection (frames go to the core's
// writer through Env.Out), or import the packages above it.
package link

import (
	"net/http"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Config configures a Session. Zero values take the documented defaults.
type Config struct {
	// Client is the upstream HTTP client (required).
	Client *routing.Client
	// Logger receives diagnostics; never stdout. Default: no logs.
	Logger *zap.Logger
	// MaxInFlight bounds concurrently forwarded requests. Default bridge.DefaultMaxInFlight.
	MaxInFlight int
	// MaxQueued bounds the requests read but waiting for an in-flight
	// slot; one more is refused at once. Default 16 per slot, at least
	// 1024. Their bytes are bounded by MaxMessageBytes.
	MaxQueued int
	// MaxMessageBytes bounds one stdin line. Default
	// routing.DefaultMaxMessageBytes.
	MaxMessageBytes int
	// DiscoverTimeout bounds the server/discover probe. Default
	// bridge.DefaultDiscoverTimeout.
	DiscoverTimeout time.Duration
	// Tasks holds the task mapping choices (--task-iserror,
	// --legacy-ttl-unit).
	Tasks rewrite.TaskOptions
	// StatePath is the task registry's state file; "" keeps the registry
	// in memory (--no-state).
	StatePath string
	// MaxRounds bounds MRTR rounds per request. Default bridge.DefaultMaxRounds.
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
	// long; every message (progress, logs) restarts it. Default bridge.DefaultIdleTimeout.
	IdleTimeout time.Duration
	// RequestTimeout is the hard maximum of one request, 0 for none,
	// counted from when it was read: its upstream exchanges and the waits
	// for the client's answers to what the server asked (MRTR, and a
	// task's input requests) included. Default bridge.DefaultRequestTimeout. Following a task is
	// governed by the task instead (each poll has its own bound).
	RequestTimeout time.Duration
	// PollTimeout bounds each tasks/get and tasks/update the proxy makes of
	// its own (following a task, waiting in tasks/result, the client's
	// tasks/get): a poll that gets no answer in time is given up and made
	// again under the retry rules (both are safe to repeat). Default bridge.DefaultPollTimeout
	// (--poll-timeout); never longer than IdleTimeout.
	PollTimeout time.Duration
	// Protocol forces the upstream era (--protocol): ProtocolAuto (the
	// default) probes the server, ProtocolModern bridges to 2026-07-28 and
	// refuses a legacy server, ProtocolLegacy passes 2025 through without
	// probing.
	Protocol string
	// ClientEra is the --client-era choice: ClientEraAuto (the default)
	// serves each client in the era its first request shows,
	// ClientEraLegacy serves 2025-11-25 clients only (a server/discover is
	// refused, so that a client of both eras falls back to initialize),
	// ClientEraModern serves 2026-07-28 clients only.
	ClientEra string
	// KnownModern, when set, is shared by the sessions of one process
	// (serve): set once a probe found the server modern, so that a 2026
	// client's request in a later session is relayed without a probe of
	// its own. Nil: each session probes.
	KnownModern *atomic.Bool
	// Stateless: the session serves one request of a 2026-07-28 client
	// (serve): what needs a session across requests, the reverse bridge to
	// a 2025 server, is refused with an error that says so.
	Stateless bool
	// DrainTimeout is how long, once stdin ends, the requests already read
	// (in flight or waiting for a slot) may take to be answered before the
	// session ends (--drain-timeout). A request still unanswered then gets
	// an error naming the bound. 0 drains nothing: end of input cancels
	// the work in flight at once. A signal (ctx) never drains.
	DrainTimeout time.Duration
	// IgnoreTools are glob patterns of tool names hidden from the client
	// (--ignore-tool): tools/list answers leave them out and a tools/call
	// of one is refused. Only * is special: it stands for any run of
	// characters; the whole name matches, ignoring case.
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
	// client's bearer identity (a hash) and the session id.
	StateOwner string
	// Hints names the settings that error messages point at (see
	// rewrite.Hint): the command layer names its flags. Nil names them
	// neutrally ("the request-timeout setting").
	Hints rewrite.HintText
	// Transport is the --transport choice (TransportHTTPFirst, the default):
	// when to try the 2024-11-05 HTTP+SSE transport.
	Transport string
}

// The --protocol choices.
const (
	ProtocolAuto   = "auto"
	ProtocolModern = "modern"
	ProtocolLegacy = "legacy"
)

// The --client-era choices.
const (
	ClientEraAuto   = "auto"
	ClientEraLegacy = "legacy"
	ClientEraModern = "modern"
)

// The --transport choices (mcp-remote's values): which upstream transport
// is tried first, and whether the other one is tried at all.
const (
	// TransportHTTPFirst (the default): Streamable HTTP, and the 2024-11-05
	// HTTP+SSE transport when the server refuses the initialize POST with
	// 400, 404 or 405 and no JSON-RPC message.
	TransportHTTPFirst = "http-first"
	// TransportHTTPOnly: Streamable HTTP only.
	TransportHTTPOnly = "http-only"
	// TransportSSEFirst: HTTP+SSE, and Streamable HTTP when the GET does not
	// open an event stream with an endpoint event.
	TransportSSEFirst = "sse-first"
	// TransportSSEOnly: HTTP+SSE only.
	TransportSSEOnly = "sse-only"
)

// An Observer sees a session's traffic at its hops: the frame trace
// (--trace) is one. The session calls it on its own goroutines (the reader,
// the writer, the workers), concurrently: each method must be quick, must
// not block, and must not keep the bytes, slices or header it is given past
// its return (they are the session's, and change). A session without one
// (Config.Observer nil) pays a nil check per hop.
//
// session is Config.SessionID. op links a client request to everything it
// causes: its upstream exchanges (the discover probe, MRTR retries, task
// polls), the frames sent while it runs, the client's answers to what the
// proxy asked for it, its cancel and its answer. rewrites names what the
// proxy changed in a frame, such as "id.remap" or "meta.inject".
type Observer interface {
	// FromClient is a frame read from the client, before it is parsed.
	FromClient(session, op string, frame []byte)
	// ToClient is a frame as it is written to the client.
	ToClient(session, op string, frame []byte, rewrites []string)
	// ToServer is a request as it leaves for the server (each time it is
	// sent): its HTTP method, the URL, its headers (before the Authorization
	// the auth hook adds) and its body (nil for GET and DELETE).
	ToServer(session, op string, rewrites []string, method, url string, h http.Header, body []byte)
	// FromServer is what comes back: err for a failure before any status;
	// each message read (the first with the status, later ones with 0);
	// or, for an answer closed without a message read, the status alone.
	// latency is the time since the request left.
	FromServer(session, op string, status int, msg []byte, latency time.Duration, err error)
	// Note is an event of the proxy itself, such as the upstream era
	// verdict.
	Note(session, op, note string)
}

// Out is one frame for the client, tagged with what it belongs to.
type Out struct {
	// Frame is the complete JSON-RPC message, without framing.
	Frame []byte
	// Op is the trace's op id of the client request the frame belongs to
	// ("" for none).
	Op string
	// Stream is the In.Stream of that request: set on its answer and on
	// everything sent while it runs (progress, logs, the proxy's own
	// requests to the client). Frames that belong to no request (list
	// changes, resource updates, the server's own requests outside a
	// request, answers to unparseable input) carry the Stream of the
	// message that caused them, or nil.
	Stream any
	// Final marks the one answer to the request, or its end without one
	// (Frame nil).
	Final bool
	// Rewrites names what the proxy changed in Frame, for the Observer.
	Rewrites []string
}
