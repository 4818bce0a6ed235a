package serve

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Path is the MCP endpoint's path.
const Path = "/mcp"

// Defaults.
const (
	DefaultIdleTimeout = 30 * time.Minute
	DefaultMaxSessions = 256
	// DefaultEventLogBytes keeps thousands of the GET stream's
	// notifications (some hundred bytes) and server requests (a few KiB)
	// for a reconnecting client, while DefaultMaxSessions sessions hold at
	// most DefaultMaxSessions × DefaultEventLogBytes.
	DefaultEventLogBytes = 1 << 20
	// RetryAfter is what a refused client is told to wait, in seconds.
	RetryAfter = 5
)

var retryAfter = strconv.Itoa(RetryAfter)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// Bridge is the template of every session's configuration; each
	// session's copy gets its SessionID, StateOwner and Logger.
	Bridge bridge.Config
	Logger *zap.Logger // the server's diagnostics, sessions' with a "session" field
	// ListenHost is accepted as the Host besides the loopback names;
	// AllowOrigins (scheme://host[:port]) as origins besides the loopback
	// ones, and their hosts as the Host.
	ListenHost   string
	AllowOrigins []string
	// Token, when set, is the bearer token every request to /mcp and
	// /metrics must carry (/healthz stays open, for balancers).
	Token string
	// ReadTimeout bounds the read of a request's body after its headers
	// (whose bound is the http.Server's), and MaxBodyMemory the bytes of
	// request bodies held at once across every connection: see conn.go.
	ReadTimeout   time.Duration
	MaxBodyMemory int64
	// IdleTimeout ends a session that has no HTTP request open for this
	// long; MaxSessions bounds the sessions (one more initialize gets 503
	// with Retry-After).
	IdleTimeout time.Duration
	MaxSessions int
	// EventLogBytes bounds each session's GET stream event log, kept for
	// Last-Event-ID (see eventLog).
	EventLogBytes int
	Version       string // the proxy's, in the health probe's clientInfo
	// SessionPrefix, when set, starts every session id ("PREFIX.<hex>"),
	// so that a balancer can route a session to the replica that made it.
	SessionPrefix string
}

// Server is the HTTP front: an http.Handler for /mcp, /healthz and
// /metrics, and the table of the sessions it runs.
type Server struct {
	cfg      Config
	log      *zap.Logger
	metrics  *metrics
	identity string // a hash of the token: the clients' identity
	access   access
	bodies   bodyMemory

	ctx    context.Context // the sessions' (cancelled by Close)
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per running session

	mu       sync.Mutex
	sessions map[string]*session
	closing  bool

	health  atomic.Pointer[health]
	probing atomic.Bool    // a health probe runs
	probes  sync.WaitGroup // those started for a failed initialize
	upIDs   atomic.Int64   // upstream ids, unique in the process
	// knownModern: a session found the upstream modern (link.Config.KnownModern)
	knownModern atomic.Bool
}

// health is the last verdict on the upstream, for /healthz.
type health struct {
	ok     bool
	class  string // what failed: "no answer", "server error", ...
	status int    // the upstream's HTTP status, 0 for none
}

func New(cfg Config) *Server {
	cfg.IdleTimeout = positive(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.MaxSessions = positive(cfg.MaxSessions, DefaultMaxSessions)
	cfg.EventLogBytes = positive(cfg.EventLogBytes, DefaultEventLogBytes)
	cfg.Logger = cmp.Or(cfg.Logger, zap.NewNop())
	cfg.Bridge.MaxMessageBytes = positive(cfg.Bridge.MaxMessageBytes, routing.DefaultMaxMessageBytes)
	cfg.Bridge.DiscoverTimeout = positive(cfg.Bridge.DiscoverTimeout, bridge.DefaultDiscoverTimeout)
	cfg.ReadTimeout = positive(cfg.ReadTimeout, DefaultReadTimeout)
	cfg.MaxBodyMemory = positive(cfg.MaxBodyMemory, DefaultBodyMemory(cfg.Bridge.MaxMessageBytes))
	s := &Server{cfg: cfg, log: cfg.Logger, metrics: newMetrics(), sessions: map[string]*session{}}
	s.bodies.max = cfg.MaxBodyMemory
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.access = newAccess(cfg.ListenHost, cfg.AllowOrigins, cfg.Token != "")
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		s.identity = "bearer-" + hex.EncodeToString(sum[:8])
	}
	s.health.Store(&health{class: "not checked yet"})
	return s
}

func positive[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// CheckUpstream looks at the upstream with the proxy's own server/discover
// (nothing of a client's), within the bridge's DiscoverTimeout, and
// records the verdict for /healthz; the error names the cause and the fix.
// Healthy is reached and answering as an MCP server of either era: a
// transport failure, a 5xx, a 401/403 or an answer that is not MCP is not,
// while a client's initialize refused for its own params says nothing.
func (s *Server) CheckUpstream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Bridge.DiscoverTimeout)
	defer cancel()
	// Its ids come from the counter the sessions share: no two requests of
	// the process carry the same id.
	p := &capabilities.Prober{Client: s.cfg.Bridge.Client, NextID: func() []byte { return strconv.AppendInt(nil, s.upIDs.Add(1), 10) }}
	info := rewrite.AppendString([]byte(`{"name":"mcp-tasks-proxy-serve","version":`), s.cfg.Version)
	info = append(info, '}')
	v := p.Probe(routing.Unattended(ctx), capabilities.Meta(capabilities.ClientCapabilities([]byte(`{}`)), info, ""))
	err := v.Err
	if v.Era == capabilities.Unknown && err == nil {
		err = errors.New(v.Reason)
	}
	if err == nil {
		s.health.Store(&health{ok: true})
		return nil
	}
	s.health.Store(&health{class: plainWords(v.Reason), status: v.Status})
	return err
}

// initFailed is told of a refused initialize: the upstream's refusal of
// that client's params, or a failure to reach it. The proxy's own probe
// tells which, in the background, one at a time.
func (s *Server) initFailed() {
	if s.cfg.Bridge.Client == nil || !s.probing.CompareAndSwap(false, true) {
		return
	}
	s.probes.Go(func() {
		defer s.probing.Store(false)
		if err := s.CheckUpstream(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("an initialize failed, and so did the proxy's own look at the upstream: /healthz answers 503", zap.Error(err))
		}
	})
}

// plainWords keeps a verdict's class to letters, digits, spaces, '-' and
// '/', at most 64 bytes: /healthz is open to anyone, and says only what
// the proxy's own words say.
func plainWords(s string) string {
	s = strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' || c == '-' || c == '/' {
			return c
		}
		return -1
	}, s)
	return cmp.Or(s[:min(len(s), 64)], "the check failed")
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
		// A browser page of an accepted origin may use the endpoint: its
		// requests with their MCP headers, and the session id in the answers.
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
		h.Set("Access-Control-Allow-Headers", "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id")
		h.Set("Access-Control-Max-Age", "600")
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
// with what failed in the proxy's own words (the class of failure and the
// upstream's status), as /healthz is open to anyone: never a client's
// data, never the upstream's text or URL.
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
	_, _ = w.Write([]byte("unhealthy: the upstream: " + h.class + " (" + capabilities.StatusText(h.status) + ")\n"))
}

var (
	errClosing = errors.New("the proxy is shutting down")
	errFull    = errors.New("too many sessions") // past MaxSessions
)

// newSession creates and starts a session, unless the server is closing
// or full.
// A stateless session serves one request of a 2026-07-28 client.
func (s *Server) newSession(stateless bool) (*session, error) {
	b := make([]byte, 16) // 128 random bits, in hex
	_, _ = rand.Read(b)   // never fails (crypto/rand)
	id := hex.EncodeToString(b)
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
	sess.stateless = stateless
	s.sessions[id] = sess
	s.metrics.sessions.Inc()
	s.wg.Go(sess.run)
	return sess, nil
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

func (s *Server) lookup(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// Shutdown refuses new sessions and ends every session's input, so that
// each answers the requests it has read, within its drain bound. It waits
// for them until ctx ends, then cancels what is left (their open requests
// get an error answer) and waits for that too.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, sess := range s.closeTable() {
		sess.end("the proxy is shutting down")
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.cancel()
	<-done // Serve returns promptly once cancelled
	s.probes.Wait()
	return err
}

// Close cancels every session at once; their open requests get an error
// answer.
func (s *Server) Close() {
	s.closeTable()
	s.cancel()
	s.wg.Wait()
	s.probes.Wait()
}

// closeTable refuses new sessions and empties the table, returning what
// it held.
func (s *Server) closeTable() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	live := make([]*session, 0, len(s.sessions))
	for id, sess := range s.sessions {
		live = append(live, sess)
		delete(s.sessions, id)
		s.metrics.sessions.Dec()
	}
	return live
}
