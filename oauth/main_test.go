package oauth

import (
	"os"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// TestMain installs flag names as the command layer does, so that messages
// are checked as users read them.
func TestMain(m *testing.M) {
	rewrite.SetHintText(func(h rewrite.Hint) string { return "--" + string(h) })
	os.Exit(m.Run())
}
