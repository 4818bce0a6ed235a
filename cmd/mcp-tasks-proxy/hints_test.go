package main

import (
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// Every setting an error message points at is named by a flag the proxy
// has: renaming a flag without its hint fails here.
func TestHintsNameFlags(t *testing.T) {
	names := map[string]bool{}
	for _, f := range proxyFlags {
		names["--"+f.Name] = true
	}
	for _, h := range rewrite.Hints() {
		if !names[flagHint(h)] {
			t.Errorf("hint %q is rendered as %s, which is not a flag of the proxy", h, flagHint(h))
		}
	}
}
