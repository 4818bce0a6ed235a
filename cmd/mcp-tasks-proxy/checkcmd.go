package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/check"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// checkHelpText is the command's --help; its flags come from their table
// (flags.go).
var checkHelpText = checkHelpIntro + helpFlags(plainFlagGroups, docs(checkFlagTable)) + checkHelpOutro

const checkHelpIntro = `mcp-tasks-proxy check looks at an MCP server from the shell, without a client:
its era and transport (Streamable HTTP, or the old HTTP+SSE transport of MCP
2024-11-05, which the proxy passes through), versions, identity, capabilities and extensions, how
many tools, prompts and resources it has (and any tool the proxy would hide),
whether it takes Base64-encoded Mcp-Name headers, what sign-in it wants, and
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

// checkFlags are check's own flags; the rest go to parseArgs.
type checkFlags struct {
	json    bool
	timeout time.Duration
	help    bool
}

// splitCheckArgs takes check's own flags out of args. A proxy flag's value
// is never mistaken for one of them.
func splitCheckArgs(args []string) (checkFlags, []string, error) {
	var f checkFlags
	own, proxyFS := newTableFlagSet("mcp-tasks-proxy check", checkFlagTable, &f), newFlagSet(&config{})
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return f, append(rest, args[i:]...), nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := own.Lookup(name)
		switch {
		case !strings.HasPrefix(a, "-") || a == "-":
		case fl != nil && !hasValue && !isBool(fl):
			if i++; i >= len(args) {
				return f, nil, usagef("flag --%s needs a value", name)
			}
			value, hasValue = args[i], true
			fallthrough
		case fl != nil:
			if !hasValue {
				value = "true"
			}
			if err := fl.Value.Set(value); err != nil {
				if isBool(fl) {
					err = errors.New("use true or false")
				}
				return f, nil, usagef("--%s %q: %v", name, value, err)
			}
			continue
		case !hasValue && proxyFS.Lookup(name) != nil && !isBool(proxyFS.Lookup(name)) && i+1 < len(args):
			rest, i = append(rest, a), i+1 // its value, whatever it looks like
			a = args[i]
		}
		rest = append(rest, a)
	}
	return f, rest, nil
}

// checkCommand runs `mcp-tasks-proxy check`: the session the proxy would
// run, built as the proxy builds it, driven by package check.
func checkCommand(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	f, rest, err := splitCheckArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-tasks-proxy: %v\n", err)
		return 2
	}
	if f.help {
		fmt.Fprint(stdout, checkHelpText)
		return 0
	}
	cfg, err := parseArgs(rest, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-tasks-proxy: check: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	logger, closeLog, code := startLog(cfg, stderr, getenv) // the set-up's warnings (--insecure, OAuth unavailable)
	if code != 0 {
		return code
	}
	defer closeLog()
	var auth *check.Auth
	bcfg, _, done, code := startBridge(cfg, logger, nil, stderr, func(o *oauth.Client) routing.Auth {
		auth = check.NewAuth(o)
		return auth
	})
	defer done()
	if code != 0 {
		return code
	}
	bcfg.Logger = zap.NewNop() // the report says what the session found
	rep := check.Run(ctx, check.Config{Bridge: bcfg, Auth: auth, StaticToken: cfg.oauthOff, Version: versionString(), TimeoutText: "--timeout"})
	if f.json {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		rep.Write(stdout, useColor(stdout, getenv))
	}
	return rep.ExitCode()
}

// useColor: a terminal, and NO_COLOR unset (https://no-color.org).
func useColor(w io.Writer, getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && isTerminal(w)
}
