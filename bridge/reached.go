package bridge

// Reached says how the session reaches its server, as its last successful
// initialize chose: the era ("2026-07-28", bridged, or the 2025 version
// passed through) and the transport ("streamable-http" or "http+sse"); ""
// before. `mcp-tasks-proxy check` reports them, rather than work them out.
func (s *Session) Reached() (era, transport string) { return s.upstream().Reached() }
