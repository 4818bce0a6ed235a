package main

import (
	"bytes"
	"fmt"
	"strings"
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
	for _, f := range serveOwnFlags {
		names["--"+f.Name] = true
	}
	for _, h := range rewrite.Hints() {
		if !names[flagHint(h)] {
			t.Errorf("hint %q is rendered as %s, which is not a flag of the proxy or of serve", h, flagHint(h))
		}
	}
}

// Lower layers name settings by Hint; once the command runs, a Go error of
// theirs formatted with %v names the flag, and the neutral words are gone.
func TestHintTextNamesFlagsInErrors(t *testing.T) {
	t.Cleanup(func() { rewrite.SetHintText(nil) })
	rewrite.SetHintText(nil)
	if got := fmt.Sprintf("pass %v", rewrite.HintOAuthStore); got != "pass the oauth-store setting" {
		t.Fatalf("neutral text: %q", got)
	}
	var stdout, stderr bytes.Buffer
	run([]string{"version"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if got := fmt.Sprintf("pass %v", rewrite.HintOAuthStore); got != "pass --oauth-store" {
		t.Fatalf("after run: %q, want the flag", got)
	}
}
