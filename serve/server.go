package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Path is the MCP endpoint's path.
const Path = "/mcp"

// Defaults.
const (
	DefaultIdleTimeout  = 30 * time.Minute
	DefaultMaxSessions  = 256
	DefaultReplayEvents = 1024
	// RetryAfter is what a client refused for the session bound is told
	// to wait, in seconds.
	RetryAfter = 5
)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Bridge is the template of every session's configuration (the
	// upstream client, the trace, the bounds and policies). Each session
	// gets its own copy with SessionID, StateOwner and Logger set.
	Bridge bridge.Config
	// Logger receives the server's diagnostics; each session logs with a
	// "session" field. Default: no logs.
	Logger *zap.Logger
	// ListenHost is the host the server listens on: a Host header naming
	// it is accepted besides the loopback names.
	ListenHost string
	// AllowOrigins are the origins (scheme://host[:port]) accepted besides
	// the loopback ones; their hosts are accepted as Host too.
	AllowOrigins []string
	// Token, when set, is the bearer token every request to /mcp and
	// /metrics must carry (/healthz stays open, for balancers).
	Token string
	// ReadTimeout bounds the read of a request's body: it must have
	// arrived whole within this long of the headers, or the request gets
	// 408 and its connection is closed (see conn.go). Default
	// DefaultReadTimeout (1m). The headers' bound is the http.Server's.
	ReadTimeout time.Duration
	// MaxBodyMemory bounds the bytes of request bodies held at once, read
	// or being read, across every connection; a body that would take more
	// gets 503 with Retry-After. Default BodyMemoryMessages times
	// Bridge.MaxMessageBytes.
	MaxBodyMemory int64
	// IdleTimeout ends a session that has no HTTP request open for this
	// long. Default 30m.
	IdleTimeout time.Duration
	// MaxSessions bounds the sessions; one more initialize gets 503 with
	// Retry-After. Default 256.
	MaxSessions int
	// ReplayEvents bounds the GET stream's replay buffer (Last-Event-ID),
	// in events. Default 1024.
	ReplayEvents int
	// SessionPrefix, when set, starts every session id ("PREFIX.<hex>"),
	// so that a balancer can route a session to the replica that made it
	// by its prefix.
	SessionPrefix string
}

// Server is the HTTP front: an http.Handler for /mcp, /healthz and
// /metrics, and the table of the sessions it runs. Create it with New;
// Shutdown ends every session.
type Server struct {
	cfg      Config
	log      *zap.Logger
	metrics  *metrics
	identity string // a hash of the token: the clients' identity
	access   access
	bodies   bodyMemory // the request bodies' budget (conn.go)

	ctx    context.Context // the sessions' (cancelled by Close)
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per running session

	mu       sync.Mutex
	sessions map[string]*session
	closing  bool

	health atomic.Pointer[health]
	upIDs  atomic.Int64 // upstream ids, unique in the process
}

// health is the last verdict on the upstream.
type health struct {
	ok     bool
	reason string
}

// New prepares a server.
func New(cfg Config) *Server {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.ReplayEvents <= 0 {
		cfg.ReplayEvents = DefaultReplayEvents
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Bridge.MaxMessageBytes <= 0 {
		cfg.Bridge.MaxMessageBytes = routing.DefaultMaxMessageBytes
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.MaxBodyMemory <= 0 {
		cfg.MaxBodyMemory = DefaultBodyMemory(cfg.Bridge.MaxMessageBytes)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, metrics: newMetrics(), sessions: map[string]*session{}}
	s.bodies.max = cfg.MaxBodyMemory
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.access = newAccess(cfg.ListenHost, cfg.AllowOrigins, cfg.Token != "")
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		s.identity = "bearer-" + hex.EncodeToString(sum[:8])
	}
	s.health.Store(&health{reason: "the upstream has not been probed yet"})
	return s
}

// NextUpstreamID mints an upstream request id from the counter the
// sessions share, for the front's own requests (the health probe), so that
// no two requests of the process carry the same id.
func (s *Server) NextUpstreamID() []byte {
	return strconv.AppendInt(nil, s.upIDs.Add(1), 10)
}

// SetHealth records the outcome of the latest look at the upstream (a
// server/discover probe, or an initialize answered): nil is healthy.
func (s *Server) SetHealth(err error) {
	if err == nil {
		s.health.Store(&health{ok: true})
		return
	}
	s.health.Store(&health{reason: err.Error()})
}

// ServeHTTP routes /mcp, /healthz and /metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer s.bound(w, r).end(w) // the connection's bounds (conn.go)
	switch r.URL.Path {
	case "/healthz":
		s.healthz(w)
		return
	case Path, "/metrics":
	default:
		http.NotFound(w, r)
		return
	}
	if reason := s.access.check(r); reason != "" {
		s.log.Warn("request refused", zap.String("reason", reason), zap.String("origin", r.Header.Get("Origin")), zap.String("host", r.Host))
		s.metrics.refused.WithLabelValues("forbidden").Inc()
		httpError(w, http.StatusForbidden, reason)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		cors(w.Header(), origin)
		if r.Method == http.MethodOptions { // a preflight carries no token
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if s.cfg.Token != "" && !bearerMatches(r.Header.Get("Authorization"), s.cfg.Token) {
		s.metrics.refused.WithLabelValues("unauthorized").Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-tasks-proxy"`)
		httpError(w, http.StatusUnauthorized, "Unauthorized: send Authorization: Bearer with the token of the proxy's "+rewrite.HintAuthTokenFile.String())
		return
	}
	if r.URL.Path == "/metrics" {
		s.metrics.handler.ServeHTTP(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.get(w, r)
	case http.MethodDelete:
		s.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "Method not allowed: use POST, GET or DELETE")
	}
}

// healthz answers 200 while the upstream's last look succeeded, else 503
// with the reason.
func (s *Server) healthz(w http.ResponseWriter) {
	h := s.health.Load()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if h.ok {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte(h.reason + "\n"))
}

// errClosing refuses a session while the server shuts down.
var errClosing = errors.New("the proxy is shutting down")

// errFull refuses a session past MaxSessions.
var errFull = errors.New("too many sessions")

// newSession creates and starts a session, unless the server is closing
// or full.
func (s *Server) newSession() (*session, error) {
	id := newSessionID()
	if s.cfg.SessionPrefix != "" {
		id = s.cfg.SessionPrefix + "." + id
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return nil, errClosing
	case len(s.sessions) >= s.cfg.MaxSessions:
		return nil, errFull
	}
	sess := newSession(s, id)
	s.sessions[id] = sess
	s.metrics.sessions.Inc()
	s.wg.Add(1)
	go sess.run()
	return sess, nil
}

// lookup is the live session with this id, or nil.
func (s *Server) lookup(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// forget takes a session out of the table (ended: DELETE, idle, its end);
// it reports whether it was there.
func (s *Server) forget(sess *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[sess.id] != sess {
		return false
	}
	delete(s.sessions, sess.id)
	s.metrics.sessions.Dec()
	return true
}

// Sessions is the number of live sessions.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Shutdown refuses new sessions and ends the input of every session, so
// that each answers (or errors) the requests it has read, within its
// drain bound, and ends. It waits for them until ctx ends; then it
// cancels what is left (their open requests get an error answer) and
// waits for that too.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	live := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		live = append(live, sess)
	}
	s.mu.Unlock()
	for _, sess := range live {
		s.forget(sess)
		sess.end("the proxy is shutting down")
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
	}
	s.cancel()
	<-done // Serve returns promptly once cancelled
	return ctx.Err()
}

// Close cancels every session at once; their open requests get an error
// answer.
func (s *Server) Close() {
	s.mu.Lock()
	s.closing = true
	for id := range s.sessions {
		delete(s.sessions, id)
		s.metrics.sessions.Dec()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// newSessionID is 128 random bits in hex.
func newSessionID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

// versionOK checks MCP-Protocol-Version on a request after initialize:
// absent (2025-03-26 clients), or one of the 2025 versions.
func versionOK(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return v == "" || slices.Contains(protocol.LegacyVersions, v)
}

// retryAfter is the Retry-After value.
var retryAfter = strconv.Itoa(RetryAfter)

// cors lets a browser page of an accepted origin use the endpoint: its
// requests with their MCP headers, and the session id in the answers.
func cors(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id")
	h.Set("Access-Control-Max-Age", "600")
}
