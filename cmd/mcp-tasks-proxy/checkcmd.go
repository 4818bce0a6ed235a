package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/check"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// checkHelpText is the command's --help; its flags come from their table.
var checkHelpText = checkHelpIntro + helpFlags(plainFlagGroups, docs(checkFlagTable)) + checkHelpOutro

const checkHelpIntro = `mcp-tasks-proxy check looks at an MCP server from the shell, without a client:
its era and transport (Streamable HTTP, or the old HTTP+SSE transport of MCP
2024-11-05, which the proxy passes through), versions, identity, capabilities and extensions, how
many tools, prompts and resources it has (and any tool the proxy would hide),
whether it takes Base64-encoded Mcp-Name headers, what sign-in it wants, what
a 2025-11-25 client and a 2026-07-28 client each get through the proxy, and
the round-trip time.

Usage:
  mcp-tasks-proxy check [flags] [proxy flags] URL

Examples:
  mcp-tasks-proxy check https://mcp.example.com/mcp
  mcp-tasks-proxy check --json https://mcp.example.com/mcp | jq .usable
  mcp-tasks-proxy check --header 'Authorization: Bearer ${MCP_TOKEN}' https://mcp.example.com/mcp
  mcp-tasks-proxy check --demo          # the embedded demo server

`

const checkHelpOutro = `
check runs the proxy's own session, in process, and drives it as a client
would, so the proxy's flags apply as in a host's entry: --header,
--oauth-store (a stored sign-in is used; check never opens a browser),
--protocol, --transport, --ignore-tool, --trace and the rest.

Exit status: 0 when the proxy can use the server; 1 when it cannot (the reason
is printed); 2 on a usage error; 3 when the server wants a sign-in first (run
mcp-tasks-proxy auth login URL).
`

// checkConfig is the parsed command line of check.
type checkConfig struct {
	config
	json    bool
	timeout time.Duration
}

// checkFlagSet is check's parser: its own flags, then the proxy's (but
// --help, which is check's).
func checkFlagSet(c *checkConfig) *flag.FlagSet {
	proxy := slices.DeleteFunc(sharedAll(proxyFlags, func(c *checkConfig) *config { return &c.config }),
		func(s flagSpec[checkConfig]) bool { return s.Name == "help" })
	return newTableFlagSet("mcp-tasks-proxy check", append(slices.Clone(checkFlagTable), proxy...), c)
}

// checkCommand runs `mcp-tasks-proxy check`: the session the proxy would
// run, built as the proxy builds it, driven by package check.
func checkCommand(args []string, _ io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &checkConfig{}
	if err := c.parse(checkFlagSet(c), args, getenv, "mcp-tasks-proxy --help"); err != nil {
		return fail(stderr, 2, "check: %v", err)
	}
	if c.helpOrVersion(checkHelpText, stdout) {
		return 0
	}
	cfg := &c.config
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var auth *check.Auth
	bcfg, _, done, code := startBridge(cfg, nil, stderr, getenv, func(o *oauth.Client) routing.Auth {
		auth = check.NewAuth(o)
		return auth
	})
	defer done()
	if code != 0 {
		return code
	}
	bcfg.Logger = zap.NewNop() // the log had the set-up's warnings; the report says what the session found
	rep := check.Run(ctx, check.Config{Bridge: bcfg, Auth: auth, StaticToken: cfg.oauthOff, Version: versionString(), TimeoutText: "--timeout"})
	if c.json {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		rep.Write(stdout, colorOK(stdout, getenv))
	}
	return rep.ExitCode()
}
