package main

import (
	"fmt"
	"io"
	"os"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// traceHelp is the command's --help; its flags come from their table.
var traceHelp = traceHelpIntro + helpFlags(plainFlagGroups, docs(helpOnlyFlags)) + traceHelpOutro

const traceHelpIntro = `mcp-tasks-proxy trace reads a frame trace written with --trace FILE: every
frame on every hop, one JSON record a line.

Usage:
  mcp-tasks-proxy trace view  [FILE|-]   a timeline, grouped by request (op)
  mcp-tasks-proxy trace stats [FILE|-]   counts, latency p50/p99 and errors by method

FILE - (or no FILE) reads the trace from stdin.

`

const traceHelpOutro = `
Examples:
  mcp-tasks-proxy --trace /tmp/mcp.trace https://mcp.example.com/mcp
  mcp-tasks-proxy trace view /tmp/mcp.trace
  mcp-tasks-proxy trace stats /tmp/mcp.trace
  mcp-tasks-proxy --demo --trace - < frames.jsonl 2>&1 >/dev/null | mcp-tasks-proxy trace view -

The timeline is coloured on a terminal, unless NO_COLOR is set.
`

// traceCommand runs `mcp-tasks-proxy trace view|stats [FILE|-]`.
func traceCommand(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	verb := ""
	if len(args) > 0 && (args[0] == "view" || args[0] == "stats") {
		verb, args = args[0], args[1:]
	}
	var opts helpOnly
	fs := newTableFlagSet("mcp-tasks-proxy trace", helpOnlyFlags, &opts)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return fail(stderr, 2, "trace: %s", flagProblem(err, fs, "mcp-tasks-proxy trace --help"))
	}
	switch {
	case opts.help:
		fmt.Fprint(stdout, traceHelp)
		return 0
	case verb == "" && len(files) > 0:
		return fail(stderr, 2, "trace: %s: unknown command; use view or stats (mcp-tasks-proxy trace --help)", files[0])
	case verb == "":
		return fail(stderr, 2, "trace: say what to do: mcp-tasks-proxy trace view FILE | mcp-tasks-proxy trace stats FILE (--help)")
	case len(files) > 1:
		return fail(stderr, 2, "trace: %s: give one trace file, or - for stdin", verb)
	}
	in := stdin
	if len(files) == 1 && files[0] != "-" {
		f, err := os.Open(files[0])
		if err != nil {
			return fail(stderr, 1, "%v", err)
		}
		defer f.Close()
		in = f
	}
	if verb == "view" {
		err = trace.View(stdout, in, colorOK(stdout, getenv))
	} else {
		err = trace.Stats(stdout, in)
	}
	if err != nil {
		return fail(stderr, 1, "trace %s: %v", verb, err)
	}
	return 0
}
