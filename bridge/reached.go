package bridge

import "github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"

// Reached says how the session reaches its server, as its last successful
// initialize chose: the era ("2026-07-28", bridged, or the 2025 version
// passed through) and the transport ("streamable-http" or "http+sse"); ""
// before. `mcp-tasks-proxy check` reports them, rather than work them out.
func (s *Session) Reached() (era, transport string) {
	switch u := s.upstream().(type) {
	case *passthrough:
		return u.sess.Version(), u.car.name()
	case *modern:
		if u.ready() {
			return protocol.ModernVersion, (&streamable{}).name()
		}
	}
	return "", ""
}
