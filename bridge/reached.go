package bridge

import "github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"

// Reached says how the session reaches its server, as its last successful
// initialize chose: era is "2026-07-28" (bridged) or the 2025 version the
// server answered with (passed through), transport is "streamable-http" or
// "http+sse" (the 2024-11-05 transport, passed through). Both are "" before
// an initialize succeeded. It is for a caller that reports on the server
// (`mcp-tasks-proxy check`), so that the report says what the session did
// rather than working it out again.
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
