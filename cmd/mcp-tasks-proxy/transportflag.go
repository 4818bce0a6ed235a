package main

import (
	"fmt"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
)

// transportFlag is --transport, with mcp-remote's values: which upstream
// transport to try first, Streamable HTTP or the old HTTP+SSE transport of
// MCP 2024-11-05, and whether to try the other one at all.
type transportFlag struct{ value string }

// String is the value for bridge.Config.Transport.
func (t *transportFlag) String() string { return t.value }

// Set validates the value: the usage error names the four choices.
func (t *transportFlag) Set(v string) error {
	switch v {
	case bridge.TransportHTTPFirst, bridge.TransportHTTPOnly, bridge.TransportSSEFirst, bridge.TransportSSEOnly:
		t.value = v
		return nil
	}
	return fmt.Errorf("use http-first (the default: Streamable HTTP, then the old HTTP+SSE transport when the server refuses the POST), http-only, sse-first or sse-only")
}
