package main

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// isTTY reports whether the proxy's input is a terminal: a person started
// it, not a client. A variable so that tests can stand in for a terminal.
var isTTY = func(r io.Reader) bool { return isTerminal(r) }

// helloLine is the one line on stderr when a person starts the proxy from a
// terminal: what this is, the upstream, and how to type frames. stdout
// stays protocol-only.
func helloLine(cfg *config, url string) string {
	upstream := routing.Redact(url)
	if cfg.demo {
		upstream = "the embedded demo server at " + upstream
	}
	eof := "Ctrl-D"
	if runtime.GOOS == "windows" {
		eof = "Ctrl-Z then Enter"
	}
	return fmt.Sprintf("mcp-tasks-proxy %s: a stdio MCP server (2025-11-25) bridging to %s; the server's era is detected at initialize. Type one JSON-RPC message a line; end with %s (requests already sent are answered first).",
		versionString(), upstream, eof)
}

// eraLine, on a terminal, says on stderr which era initialize found, once
// per era: the greeting could not know it yet.
func eraLine(terminal bool, stderr io.Writer) func(string) {
	if !terminal {
		return nil
	}
	var mu sync.Mutex
	said := ""
	return func(era string) {
		mu.Lock()
		defer mu.Unlock()
		if era == said {
			return
		}
		said = era
		if era == "2026-07-28" {
			fmt.Fprintln(stderr, "mcp-tasks-proxy: the server speaks 2026-07-28: bridging")
		} else {
			fmt.Fprintf(stderr, "mcp-tasks-proxy: the server speaks %s: passing it through\n", era)
		}
	}
}

// colorOK reports whether output to w may be coloured: w is a terminal,
// NO_COLOR is unset or empty (no-color.org), and TERM is not dumb.
func colorOK(w io.Writer, getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb" && isTerminal(w)
}
