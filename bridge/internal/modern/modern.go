// Package modern is the 2026-07-28 bridge, the upstream a session starts
// with: it answers the legacy initialize from a server/discover probe (or
// starts the 2025 passthrough when the server speaks 2025), forwards each
// request with the _meta block and proxy-minted ids, runs MRTR rounds
// (asking the client for input), maps 2025 tasks onto the 2026 tasks
// extension with a registry of the client's tasks, maps list changes and
// resource subscriptions onto subscriptions/listen streams, and mirrors the
// x-mcp-header tool annotations into headers.
//
// What it must never do: change frame bytes except through package
// rewrite; make an HTTP request except through package routing; replay a
// tools/call whose bytes have left; send a client id upstream (upstream
// ids are minted); ask the client for what it did not declare it can give.
package modern

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// modern is the 2026-07-28 bridge: the client's requests are rewritten to
// the modern wire, with the _meta block, and answered from the server's
// results, MRTR rounds and tasks. Its parts share the server they talk to.
type modern struct {
	env    *link.Env
	srv    *server
	tasks  *taskBridge
	listen *listens
	tools  *toolAnnotations

	initMu sync.Mutex // one initialize (or first modern request) at a time
	// front (under initMu) serves the session once its client showed it
	// is modern (see modernClient): the relay, or the reverse bridge.
	front link.Upstream
}

// server is what the parts of the modern bridge share: the session's Env
// and what a successful initialize learned.
type server struct {
	env *link.Env
	// state is the initialize result (nil before: requests are refused as
	// not initialized), replaced whole when the log level changes its meta.
	state  atomic.Pointer[modernState]
	metaMu sync.Mutex // guards level and the replacing of state
	level  string     // logging/setLevel
}

type modernState struct {
	caps       []byte // the client's capabilities, mapped to 2026
	clientInfo []byte // the client's clientInfo
	legacyCaps []byte // the client's own capabilities
	serverCaps []byte // the server's 2026 capabilities, from discover
	hasTasks   bool   // the server declares the tasks extension
	// meta is the _meta block every request carries, the proxy's own too.
	meta rewrite.MetaBlock
}

// New is the modern bridge of a session: its upstream until an initialize
// finds a 2025 server.
func New(e *link.Env) link.Upstream {
	srv := &server{env: e}
	return &modern{env: e, srv: srv,
		tools:  &toolAnnotations{env: e, srv: srv, params: map[string][]protocol.ParamHeader{}},
		tasks:  &taskBridge{env: e, srv: srv, reg: openStore("", "", e.Cfg.StateOwner, e.Log), dispatched: map[[2]string]*inputKey{}, unanswered: map[string]bool{}},
		listen: &listens{env: e, srv: srv, want: map[string]*subEntry{}, changed: make(chan struct{}, 1), appliedCh: make(chan struct{})},
	}
}

// metaVersionPath is the gjson path, from params, of a request's 2026
// protocol version.
var metaVersionPath = "_meta." + gjson.Escape(protocol.MetaProtocolVersion)

func (s *server) ready() bool { return s.state.Load() != nil }

func (s *server) tasksEnabled() bool {
	st := s.state.Load()
	return st != nil && st.hasTasks
}

// Open opens the task state file, or keeps the registry in memory when
// there is none. A file that cannot be used moves the session to memory,
// said once (tasks/list would forget tasks on restart).
func (s *modern) Open() {
	if s.env.Cfg.StatePath != "" {
		s.tasks.reg = openStore(s.env.Cfg.StatePath, s.env.URL(), s.env.Cfg.StateOwner, s.env.Log)
	}
}

// Local answers what the method table says is answered as soon as it is
// read (ping, logging/setLevel), and refuses a request without the string
// param that names it (it is also what Mcp-Name carries).
func (s *modern) Local(f *rewrite.Frame) ([]byte, []string, bool) {
	id := []byte(f.ID.Raw)
	if protocol.LocalOf(f.Method) == protocol.LocalAnswer {
		if f.Method == "logging/setLevel" {
			return s.srv.setLevel(f, id), []string{"setLevel.local"}, true
		}
		return rewrite.ResultFrame(id, []byte(`{}`)), []string{"ping.local"}, true
	}
	if e, ok := rewrite.CheckNameParam(f); !ok {
		return s.env.ErrorFrame(id, e), nil, true
	}
	return nil, nil, false
}

func (s *modern) Request(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	local := protocol.LocalOf(f.Method)
	if local == protocol.LocalInitialize {
		return s.initialize(ctx, c, f)
	}
	if !s.srv.ready() {
		if f.Method == "server/discover" || protocol.IsModernVersion(f.Params.Get(metaVersionPath).String()) {
			return s.modernClient(ctx, c, f)
		}
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeInvalidRequest,
			fmt.Sprintf("the session is not initialized: send initialize and wait for its answer before %s", f.Method), nil))
	}
	switch local {
	case protocol.LocalTask:
		return s.tasks.taskMethod(ctx, c, f)
	case protocol.LocalSubscription:
		return link.FrameOnly(s.listen.subscription(ctx, c, f))
	}
	return s.forward(ctx, c, f)
}

// Notified forwards no client notification to a 2026-07-28 server (2026
// has none of them).
func (s *modern) Notified(f *rewrite.Frame, _ string, cancel func()) {
	switch f.Method {
	case "notifications/initialized":
		s.env.Debug("client initialized")
		// The 2025 client signals readiness here: the list-change stream
		// starts now, once: a 2025 server sends nothing but pings and
		// logs before it.
		if s.srv.ready() && s.listen.listening.CompareAndSwap(false, true) {
			s.listen.openListChanged()
		}
	case "notifications/cancelled":
		if cancel != nil {
			cancel() // closes the upstream stream, or drops it from the queue
		}
	default:
		s.env.Debug("client notification consumed", zap.String("method", f.Method))
	}
}

func (s *modern) Answered(f *rewrite.Frame, _ string) bool { return s.env.ClientAnswered(f) }

func (s *modern) Reached() (era, transport string) {
	if s.srv.ready() {
		return protocol.ModernVersion, "streamable-http"
	}
	return "", ""
}

func (s *modern) Barrier() <-chan struct{} { return nil }

func (s *modern) Close() {}
