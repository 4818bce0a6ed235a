package bridge

import (
	"context"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// env is what every part of a session shares, whatever the era: its
// settings, logs and Observer, the upstream HTTP client, the way to the client
// (emit, and the requests the proxy asks it), id minting and the session's
// background goroutines. The core and both upstream modes hold the same
// env; nothing in it depends on the era.
type env struct {
	cfg    Config
	log    *zap.Logger
	client *routing.Client
	ctx    context.Context // the session's; cancelled when it ends (set by Serve)

	out     chan outFrame // frames for the writer goroutine
	streams streams       // the In.Stream of each request in flight, by op
	asks    asks          // the proxy's requests to the client, by id
	bg      group         // listen streams, the passthrough poster and GET stream

	upID *atomic.Int64 // proxy-owned upstream ids (Config.UpstreamIDs, or the session's own)
	opID atomic.Int64  // trace op ids
}

// errorFrame renders a proxy-made error for the client, its hints named by
// Config.Hints.
func (s *env) errorFrame(id []byte, e rewrite.Error) []byte { return e.Frame(id, s.cfg.Hints) }

// hint names a setting in a message, as Config.Hints does.
func (s *env) hint(h rewrite.Hint) string { return h.Text(s.cfg.Hints) }

// asks are the proxy's requests to the client awaiting an answer.
type asks struct {
	mu   sync.Mutex
	m    map[string]*pendingAsk // by the raw id
	next atomic.Int64
}

// group runs a session's background goroutines; it is safe to start one
// from any goroutine until the session closes it.
type group struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	closed bool
}

// start runs fn in a tracked goroutine, unless the group has closed.
func (g *group) start(fn func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		fn()
	}()
	return true
}

// close stops new goroutines and waits for the running ones, which end
// with the session's context.
func (g *group) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}
