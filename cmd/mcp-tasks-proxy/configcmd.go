package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/hostconfig"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// configHelpText is the command's --help; its flags come from their table.
var configHelpText = configHelpIntro + helpFlags(plainFlagGroups, docs(configFlagTable)) + configHelpOutro

const configHelpIntro = `mcp-tasks-proxy config prints the entry that makes a host (an MCP client
application) launch this proxy for a server, or merges it into the host's
configuration file with --write.

Usage:
  mcp-tasks-proxy config HOST URL [flags] [proxy flags]

Hosts:
  claude-desktop   claude_desktop_config.json, "mcpServers"
  claude-code      prints the 'claude mcp add' line to run (Claude Code keeps its own file)
  cursor           ~/.cursor/mcp.json (--workspace: .cursor/mcp.json), "mcpServers"
  vscode           the user mcp.json (--workspace: .vscode/mcp.json), "servers"
  windsurf         ~/.codeium/windsurf/mcp_config.json, "mcpServers"
  zed              Zed's settings.json, "context_servers"

Examples:
  # Print the Claude Desktop entry for a server
  mcp-tasks-proxy config claude-desktop https://mcp.example.com/mcp

  # Add it to Claude Desktop's file (a backup is made first), named "example"
  mcp-tasks-proxy config claude-desktop https://mcp.example.com/mcp --name example --write

  # A token kept out of the file: the entry keeps ${EXAMPLE_TOKEN} and an env block
  mcp-tasks-proxy config cursor https://mcp.example.com/mcp --header 'Authorization: Bearer ${EXAMPLE_TOKEN}'

  # Launch through npx instead of this binary's path
  mcp-tasks-proxy config vscode https://mcp.example.com/mcp --npx --write --workspace

  # Claude Code: run the printed line
  mcp-tasks-proxy config claude-code https://mcp.example.com/mcp

`

const configHelpOutro = `
Every other flag (--header, --header-file, --protocol, --log-file, ...) is a
proxy flag: it is checked, and passed to the proxy in the entry. Relative paths
are made absolute, since hosts start the proxy in a directory of their own.
A --header value keeps its ${VAR} references; the entry gets an env block for
them. A header whose literal value looks like a secret is never printed nor
written: the entry reads it from a variable instead, which you then set.

Exit status: 0 on success; 1 when the file cannot be read or written; 2 on a
usage error.
`

// configCmd is the parsed command line of `config`.
type configCmd struct {
	host, url, name, file       string
	npx, write, workspace, help bool
	// proxyArgs are the proxy flags, as they go into the entry (the URL
	// last, not included).
	proxyArgs []string
	// vars are the ${VAR} names the header values use, in order.
	vars []string
	// notes go to stderr: warnings and what to do next.
	notes []string
}

var (
	varRef     = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	notEnvChar = regexp.MustCompile(`[^A-Z0-9]`)
)

// parseConfigArgs reads `config HOST URL [flags]`. getwd makes relative
// paths absolute.
func parseConfigArgs(args []string, getenv func(string) string, getwd func() (string, error)) (*configCmd, error) {
	c := &configCmd{}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" || a == "-help" || a == "help" && len(args) == 1 {
			c.help = true
			return c, nil
		}
	}
	fs := c.flagSet(getwd)
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, usagef("%s", flagProblem(err, fs, "mcp-tasks-proxy config --help"))
	}
	var notInEntry string
	fs.Visit(func(f *flag.Flag) {
		if a, ok := f.Value.(*entryArg); ok && a.doc.NotInEntry && notInEntry == "" {
			notInEntry = f.Name
		}
	})
	if notInEntry != "" {
		return nil, usagef("--%s makes no sense in a host's entry", notInEntry)
	}
	if err := c.takeHostURL(positional); err != nil {
		return nil, err
	}
	if err := c.checkOptions(getwd); err != nil {
		return nil, err
	}
	c.secureHeaders()
	// The proxy's own checks, with each ${VAR} standing in for a value the
	// host will supply: this machine need not have it set.
	check := slices.Clone(c.proxyArgs)
	for i := range check {
		check[i] = varRef.ReplaceAllString(check[i], "x")
	}
	if _, err := parseArgs(append(check, c.url), func(string) string { return "" }); err != nil {
		return nil, err
	}
	c.name = cmp.Or(c.name, defaultServerName(c.url))
	if strings.TrimSpace(c.name) == "" || strings.ContainsAny(c.name, "\x00\r\n") {
		return nil, usagef("--name %q: give a name without control characters", c.name)
	}
	return c, nil
}

// flagSet is config's parser: its own flags, and the proxy's, each checked
// by the proxy's parser and kept in order for the entry (entryArg).
func (c *configCmd) flagSet(getwd func() (string, error)) *flag.FlagSet {
	fs := newTableFlagSet("mcp-tasks-proxy config", configFlagTable, c)
	proxyFS := newFlagSet(&config{})
	for _, s := range proxyFlags {
		for _, n := range s.names() {
			switch f := proxyFS.Lookup(n); {
			case fs.Lookup(n) != nil:
			case n == "url":
				fs.StringVar(&c.url, n, "", f.Usage)
			default:
				fs.Var(&entryArg{Value: f.Value, name: n, doc: s.flagDoc, c: c, getwd: getwd}, n, f.Usage)
			}
		}
	}
	return fs
}

// entryArg is a proxy flag given to config: its value is checked, and it
// goes into the entry's arguments, a path made absolute.
type entryArg struct {
	flag.Value
	name  string
	doc   flagDoc
	c     *configCmd
	getwd func() (string, error)
}

func (a *entryArg) IsBoolFlag() bool { return isBool(a.Value) }

func (a *entryArg) Set(v string) error {
	if err := a.Value.Set(v); err != nil {
		return err
	}
	switch {
	case a.IsBoolFlag() && v == "true":
		a.c.proxyArgs = append(a.c.proxyArgs, "--"+a.name)
		return nil
	case a.IsBoolFlag():
		a.c.proxyArgs = append(a.c.proxyArgs, "--"+a.name+"="+v)
		return nil
	case a.doc.Path && v != "-" && v != "":
		var err error
		if v, err = absPath(v, a.getwd); err != nil {
			return err
		}
	}
	a.c.proxyArgs = append(a.c.proxyArgs, "--"+a.name, v)
	return nil
}

// takeHostURL sets the host and the URL from the arguments (or --url).
func (c *configCmd) takeHostURL(positional []string) error {
	if len(positional) == 0 {
		return usagef("config needs a host: %s (mcp-tasks-proxy config --help)", strings.Join(hostconfig.Hosts, ", "))
	}
	c.host = positional[0]
	if !slices.Contains(hostconfig.Hosts, c.host) {
		return usagef("config: unknown host %q; use %s", c.host, strings.Join(hostconfig.Hosts, ", "))
	}
	switch len(positional) {
	case 1:
		if c.url == "" {
			return usagef("config %s needs the server's URL: mcp-tasks-proxy config %s https://host/mcp", c.host, c.host)
		}
	case 2:
		if c.url != "" && c.url != positional[1] {
			return usagef("the URL is given twice; give it once")
		}
		c.url = positional[1]
	default:
		return usagef("unexpected argument %s: give one host and one URL", routing.Redact(positional[2]))
	}
	return nil
}

// checkOptions checks config's own flags against the host.
func (c *configCmd) checkOptions(getwd func() (string, error)) error {
	if c.workspace && !hostconfig.HasWorkspace(c.host) {
		return usagef("--workspace is for cursor and vscode, which have a project file")
	}
	if c.host == "claude-code" && (c.write || c.file != "") {
		return usagef("claude-code keeps its own configuration: run the line config prints instead of --write")
	}
	if c.file != "" {
		if !c.write {
			return usagef("--file is where --write writes; pass --write too")
		}
		var err error
		c.file, err = absPath(c.file, getwd)
		return err
	}
	return nil
}

// absPath is p made absolute, as a host's entry needs: hosts start the
// proxy in a directory of their own.
func absPath(p string, getwd func() (string, error)) (string, error) {
	if filepath.IsAbs(p) {
		return p, nil
	}
	wd, err := getwd()
	if err != nil {
		return "", fmt.Errorf("cannot make the path %s absolute: %v", p, err)
	}
	return filepath.Join(wd, p), nil
}

// secureHeaders collects the ${VAR} names of the header values, and turns
// a header whose literal value looks secret into a ${VAR} reference.
func (c *configCmd) secureHeaders() {
	for i := 0; i+1 < len(c.proxyArgs); i++ {
		if c.proxyArgs[i] != "--header" {
			continue
		}
		i++
		v := c.proxyArgs[i]
		hname, hval, ok := strings.Cut(v, ":")
		hname = strings.TrimSpace(hname)
		if !ok || hname == "" {
			continue // parseArgs reports it, without the text
		}
		if m := varRef.FindAllStringSubmatch(v, -1); m != nil {
			for _, g := range m {
				c.addVar(g[1])
			}
			continue
		}
		if !secretHeader(hname) {
			continue
		}
		vn := envName(cmp.Or(c.name, defaultServerName(c.url)), hname)
		hval = strings.TrimSpace(hval)
		ref := "${" + vn + "}"
		if scheme, _, found := strings.Cut(hval, " "); found && (strings.EqualFold(scheme, "Bearer") || strings.EqualFold(scheme, "Basic") || strings.EqualFold(scheme, "Token")) {
			ref = scheme + " " + ref
		}
		c.proxyArgs[i] = hname + ": " + ref
		c.addVar(vn)
		c.notes = append(c.notes, fmt.Sprintf("the value of --header %s looks like a secret, and a configuration file is no place for it: the entry reads it from ${%s} instead (the value you gave is not printed nor written)", hname, vn))
	}
}

func (c *configCmd) addVar(name string) {
	if !slices.Contains(c.vars, name) {
		c.vars = append(c.vars, name)
	}
}

// secretHeader reports whether a header's value is a credential.
func secretHeader(name string) bool {
	return rewrite.CredentialHeader(name) || rewrite.SensitiveKey(name)
}

// envName is the variable a literal secret header moves to:
// EXAMPLE_TOKEN for Authorization, EXAMPLE_X_API_KEY for X-Api-Key.
func envName(server, header string) string {
	up := func(s string) string { return strings.Trim(notEnvChar.ReplaceAllString(strings.ToUpper(s), "_"), "_") }
	prefix := up(server)
	if prefix == "" || prefix[0] >= '0' && prefix[0] <= '9' {
		prefix = "MCP_" + prefix
	}
	suffix := up(header)
	if strings.EqualFold(header, "Authorization") {
		suffix = "TOKEN"
	}
	return prefix + "_" + suffix
}

// defaultServerName derives an entry name from the URL's host:
// mcp.example.com becomes "example", localhost:8080 "localhost-8080".
func defaultServerName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "mcp-server"
	}
	host := strings.ToLower(u.Hostname())
	if isLoopback(host) {
		if p := u.Port(); p != "" {
			return "localhost-" + p
		}
		return "localhost"
	}
	labels := strings.Split(host, ".")
	if len(labels) > 1 && (labels[0] == "mcp" || labels[0] == "www" || labels[0] == "api") {
		labels = labels[1:]
	}
	if len(labels) > 1 {
		labels = labels[:len(labels)-1] // the top-level domain says nothing
	}
	return strings.Join(labels, "-")
}

// executable is the running binary's path (a variable for tests).
var executable = func() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return filepath.Abs(p)
}

// entry launches this binary (or npx) with the proxy's arguments.
func (c *configCmd) entry() (hostconfig.Entry, error) {
	e := hostconfig.Entry{Host: c.host, Name: c.name, Command: "npx", Args: append(slices.Clone(c.proxyArgs), c.url), Vars: c.vars}
	if c.npx {
		e.Args = append([]string{"-y", "mcp-tasks-proxy"}, e.Args...)
		return e, nil
	}
	exe, err := executable()
	if err != nil {
		return e, fmt.Errorf("cannot find this binary's path (%v); pass --npx", err)
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		c.notes = append(c.notes, "this binary is a temporary build (go run): the entry points at a file that will be gone; install it (go install, npm, Homebrew) and run config again, or pass --npx")
	}
	e.Command = exe
	return e, nil
}

// configCommand runs `mcp-tasks-proxy config`.
func configCommand(args []string, _ io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c, err := parseConfigArgs(args, getenv, os.Getwd)
	if err != nil {
		if errors.As(err, new(usageError)) {
			return fail(stderr, 2, "%v", err)
		}
		return fail(stderr, 1, "%v", err)
	}
	if c.help {
		fmt.Fprint(stdout, configHelpText)
		return 0
	}
	code := c.run(stdout, stderr)
	for _, n := range c.notes {
		fmt.Fprintf(stderr, "mcp-tasks-proxy: note: %s\n", n)
	}
	return code
}

func (c *configCmd) run(stdout, stderr io.Writer) int {
	e, err := c.entry()
	if err != nil {
		return fail(stderr, 1, "%v", err)
	}
	switch {
	case c.host == "claude-code":
		fmt.Fprintln(stdout, e.ClaudeCode())
		if len(c.vars) > 0 {
			c.notes = append(c.notes, fmt.Sprintf("set %s in this shell before running the line: Claude Code stores the value it reads", strings.Join(c.vars, ", ")))
		}
		return 0
	case !c.write:
		stdout.Write(e.Snippet())
		c.note(e.VarNote(""))
		return 0
	}
	home, _ := os.UserHomeDir()
	configDir, _ := os.UserConfigDir()
	wd, _ := os.Getwd()
	path := cmp.Or(c.file, hostconfig.File(c.host, runtime.GOOS, home, configDir, wd, c.workspace))
	if path == "" || (home == "" && configDir == "") {
		return fail(stderr, 1, "cannot tell where %s keeps its configuration on this machine; pass --file PATH", c.host)
	}
	backup, changed, replaced, err := e.Write(path, time.Now())
	switch {
	case errors.Is(err, hostconfig.ErrJSONC):
		fmt.Fprintf(stderr, "mcp-tasks-proxy: %s %v, which rewriting it would lose; it is left as it was. Add this under %q by hand:\n%s", path, err, hostconfig.Key(c.host), e.Snippet())
		return 1
	case err != nil:
		return fail(stderr, 1, "%s: %v; it is left as it was", path, err)
	case !changed:
		fmt.Fprintf(stdout, "%s already has the server %q as given; nothing changed\n", path, c.name)
	case replaced:
		fmt.Fprintf(stdout, "replaced the server %q in %s (backup: %s)\n", c.name, path, backup)
	case backup != "":
		fmt.Fprintf(stdout, "added the server %q to %s (backup: %s)\n", c.name, path, backup)
	default:
		fmt.Fprintf(stdout, "created %s with the server %q\n", path, c.name)
	}
	c.note(e.VarNote(path))
	if changed {
		c.note("restart " + c.host + " (or reload its MCP servers) to start the proxy")
	}
	return 0
}

// note adds a note for stderr; "" adds none.
func (c *configCmd) note(n string) {
	if n != "" {
		c.notes = append(c.notes, n)
	}
}
