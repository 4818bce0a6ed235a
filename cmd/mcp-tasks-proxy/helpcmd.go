package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// helpCommand runs `mcp-tasks-proxy help [COMMAND]`.
func helpCommand(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, helpText)
		return 0
	case len(args) > 1 && args[0] == "trace":
		args = args[:1] // help trace view: trace's help covers its verbs
	case len(args) > 1 && args[0] == "auth":
		args = args[:2]
	case len(args) > 1:
		return fail(stderr, 2, "help: give one command (mcp-tasks-proxy help %s)", args[0])
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, helpText)
		return 0
	case "version":
		fmt.Fprintln(stdout, "mcp-tasks-proxy version (or --version) prints the version, the commit, the Go version and the platform, on one line.")
		return 0
	}
	if !slices.Contains(subcommands, args[0]) {
		return fail(stderr, 2, "help %s: unknown command; the commands are %s", args[0], strings.Join(subcommands, ", "))
	}
	return run(append(args, "--help"), stdin, stdout, stderr, getenv)
}

// versionCommand runs `mcp-tasks-proxy version`, as --version.
func versionCommand(args []string, _ io.Reader, stdout, stderr io.Writer, _ func(string) string) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "--help":
			fmt.Fprintln(stdout, "Usage: mcp-tasks-proxy version\n\nPrints the version, the commit, the Go version and the platform, on one line (as --version).")
			return 0
		}
		return fail(stderr, 2, "version takes no arguments (%s)", args[0])
	}
	fmt.Fprintln(stdout, versionLine())
	return 0
}
