package main

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// envURL names the environment variable that can carry the upstream URL.
const envURL = "MCP_TASKS_PROXY_URL"

// config is the parsed command line. Each flag's documentation is in its
// table (flags.go), which binds it to its field here.
type config struct {
	url                 string
	headers             headerList // the --header flags, into up.Header, with --header-file's
	headerFile          string
	demo, demoLegacy    bool
	demoOAuth           bool
	logLevel, logFormat string
	logFile             string
	taskIsError         string
	legacyTTLUnit       string
	stateFile           string
	noState             bool
	trace               string
	caFile              string
	insecure, allowHTTP bool
	cpuProfile          string
	oauth               oauthFlags
	debug, silent       bool
	version, help       bool
	// up, sess and tr are the upstream client's, the sessions' and the
	// trace's configurations as the flags set them; the rest is set at
	// start (tr.SecretHeaders: the headers from ${VAR} or --header-file,
	// never shown).
	up   routing.Config
	sess bridge.Config
	tr   trace.Options
	// oauthOff: an Authorization header given with --header or
	// --header-file turns OAuth off.
	oauthOff bool
	// debugDefault: --debug chose the log file itself.
	debugDefault bool
	// callbackPort is the callback port given after the URL, as
	// mcp-remote takes it (0: none).
	callbackPort int
}

// DefaultDrainTimeout is --drain-timeout's default: short enough that the
// process still exits within exitGrace of the end of input
// (docs/reliability.md, clean exit), long enough for a piped tools/call to be answered.
const DefaultDrainTimeout = 3 * time.Second

// usageError is a command-line mistake: one line on stderr, exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// headerList collects repeated --header flags.
type headerList struct {
	h       http.Header
	secrets *[]string // names whose values came from ${VAR}
	n       int       // --header flags seen
	err     error     // the first malformed one
}

// stringList collects a repeated string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func (l *headerList) String() string { return "" }

// Set takes one --header. A malformed one is kept in l.err, not returned:
// the flag package would quote the whole argument in its message, and the
// value is often a secret.
func (l *headerList) Set(v string) error {
	l.n++
	name, value, err := parseHeader(v, fmt.Sprintf("--header #%d", l.n), os.LookupEnv)
	if err != nil {
		if l.err == nil {
			l.err = usageError{err.Error()}
		}
		return nil
	}
	l.h.Add(name, value)
	if strings.Contains(v, "${") && l.secrets != nil {
		*l.secrets = append(*l.secrets, name)
	}
	return nil
}

// notShown ends the messages about a header whose text is not quoted.
const notShown = "write it as 'Name: value' (its text is not shown, as it may hold a secret)"

// parseHeader reads 'Name: value' (the space is optional). ${VAR} in the
// value is replaced by the environment variable VAR, so secrets can stay out
// of client configuration files. Its error names the header by where (which
// flag, which line) and by its name when that parsed, never by its text: a
// token pasted without its name, or without a colon, is a secret.
func parseHeader(v, where string, lookup func(string) (string, bool)) (string, string, error) {
	name, value, ok := strings.Cut(v, ":")
	name = strings.TrimSpace(name)
	switch {
	case !ok:
		return "", "", fmt.Errorf("%s: there is no colon; %s", where, notShown)
	case name == "":
		return "", "", fmt.Errorf("%s: there is no name before the colon; %s", where, notShown)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return "", "", fmt.Errorf("%s: the name before the colon has %s as character %d, which HTTP header names cannot hold (letters, digits and !#$%%&'*+-.^_`|~); %s",
				where, describeByte(name[i]), i+1, notShown)
		}
	}
	value, missing := expandVars(strings.TrimSpace(value), lookup)
	if missing != "" {
		return "", "", fmt.Errorf("%s (%s): ${%s} is not set in the environment", where, name, missing)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return "", "", fmt.Errorf("%s (%s): the value must not contain CR, LF or NUL", where, name)
	}
	return name, value, nil
}

// describeByte names a byte that is not allowed in a header name without
// showing more of the text around it.
func describeByte(c byte) string {
	switch {
	case c == ' ':
		return "a space"
	case c == '\t':
		return "a tab"
	case c < 0x20 || c == 0x7f:
		return "a control character"
	case c >= 0x80:
		return "a non-ASCII character"
	}
	return fmt.Sprintf("the character %q", rune(c))
}

// readHeaderFile adds the headers of a file: one 'Name: value' a line;
// blank lines and lines starting with # are skipped; ${VAR} is expanded.
// An error names the line by its number, never by its text.
func readHeaderFile(path string, h http.Header) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var names []string
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, err := parseHeader(line, fmt.Sprintf("line %d", i+1), os.LookupEnv)
		if err != nil {
			return nil, err
		}
		h.Add(name, value)
		names = append(names, name)
	}
	return names, nil
}

var varUse = regexp.MustCompile(`\$\{[^}]*\}`)

// expandVars replaces each ${NAME} with the environment variable NAME. Any
// other '$' is literal, so values like "pa$$word" pass unchanged. It returns
// the first variable that is not set.
func expandVars(v string, lookup func(string) (string, bool)) (out, missing string) {
	out = varUse.ReplaceAllStringFunc(v, func(ref string) string {
		val, ok := lookup(ref[2 : len(ref)-1])
		if !ok && missing == "" {
			missing = ref[2 : len(ref)-1]
		}
		return val
	})
	return out, missing
}

// byteSize is a size flag that takes 1048576, 1MiB, 64KiB or 2GiB.
type byteSize struct{ n *int }

func (b byteSize) String() string {
	if b.n == nil {
		return ""
	}
	return strconv.Itoa(*b.n)
}

func (b byteSize) Set(v string) error {
	mult := 1
	s := strings.TrimSpace(v)
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n <= 0 || n > math.MaxInt/mult {
		return fmt.Errorf("size %q must be a positive number of bytes, optionally with KiB, MiB or GiB", v)
	}
	*b.n = n * mult
	return nil
}

// newFlagSet is the proxy's parser, writing into c.
func newFlagSet(c *config) *flag.FlagSet {
	return newTableFlagSet("mcp-tasks-proxy", proxyFlags, c)
}

// parseArgs reads the command line. Flags may come before or after the URL.
// The checks run in a fixed order, so that the first mistake is the one
// named.
func parseArgs(args []string, getenv func(string) string) (*config, error) {
	c := &config{}
	if err := c.parse(newFlagSet(c), args, getenv, "mcp-tasks-proxy --help"); err != nil {
		return nil, err
	}
	return c, nil
}

// parse reads the command line with fs, a parser that writes into c (the
// proxy's, or a subcommand's that holds the proxy's flags), and checks it.
// helpCmd is named in the message of an unknown flag. With --help or
// --version nothing is checked.
func (c *config) parse(fs *flag.FlagSet, args []string, getenv func(string) string, helpCmd string) error {
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return usagef("%s", flagProblem(err, fs, helpCmd))
	}
	if c.help || c.version {
		return nil
	}
	if c.headers.err != nil {
		return c.headers.err
	}
	for _, check := range []func() error{func() error { return c.takeURL(positional, getenv) }, c.checkChoices,
		func() error { return c.checkOAuthAndCredentials(fs) }, c.checkBounds} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// parseInterspersed parses args with fs, flags before, between and after
// the positional arguments, which it returns.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// takeURL sets the upstream URL from the arguments (with mcp-remote's
// callback port after it), --url, the demo flags or the environment.
func (c *config) takeURL(positional []string, getenv func(string) string) error {
	switch n := len(positional); {
	case n == 2 && isPort(positional[1]), n == 1 && c.url != "" && isPort(positional[0]):
		// mcp-remote's callback port after the URL.
		c.callbackPort, _ = strconv.Atoi(positional[n-1])
		positional = positional[:n-1]
	}
	switch len(positional) {
	case 0:
	case 1:
		if c.url != "" && c.url != positional[0] {
			return usagef("the URL is given twice (%s and --url %s); give it once", routing.Redact(positional[0]), routing.Redact(c.url))
		}
		c.url = positional[0]
	default:
		return usagef("unexpected argument %s: give one upstream URL", routing.Redact(positional[1]))
	}
	if c.demo && c.demoLegacy {
		return usagef("--demo and --demo-legacy each start a demo server; pass one")
	}
	if c.demoOAuth && c.demoLegacy {
		return usagef("--demo-oauth protects the 2026-07-28 demo server; use it with --demo, not --demo-legacy")
	}
	c.demo = c.demo || c.demoLegacy || c.demoOAuth
	if c.url == "" && !c.demo {
		c.url = getenv(envURL)
	}
	switch {
	case c.demo && c.url != "":
		return usagef("--demo starts its own server; drop the URL %s, or drop --demo", routing.Redact(c.url))
	case !c.demo && c.url == "":
		return usagef("no upstream URL: pass it as an argument (mcp-tasks-proxy https://host/mcp), with --url, or in %s; or try --demo", envURL)
	}
	if c.url != "" {
		if _, err := routing.New(routing.Config{URL: c.url}); err != nil {
			return usagef("%v", err)
		}
	}
	return nil
}

// checkChoices checks the flags that take one of a few values, and the
// pairs that contradict each other.
func (c *config) checkChoices() error {
	for _, ch := range []struct {
		value, problem string
		allowed        []string
	}{
		{c.sess.Protocol, "--protocol %q: use auto (detect the server's era), modern (2026-07-28 only) or legacy (2025 passthrough)",
			[]string{bridge.ProtocolAuto, bridge.ProtocolModern, bridge.ProtocolLegacy}},
		{c.sess.ClientEra, "--client-era %q: use auto (serve each client in its own era), legacy (2025-11-25 clients only) or modern (2026-07-28 clients only)",
			[]string{bridge.ClientEraAuto, bridge.ClientEraLegacy, bridge.ClientEraModern}},
		{c.sess.Transport, "--transport %q: use http-first (the default: Streamable HTTP, then the old HTTP+SSE transport when the server refuses the POST), http-only, sse-first or sse-only",
			[]string{bridge.TransportHTTPFirst, bridge.TransportHTTPOnly, bridge.TransportSSEFirst, bridge.TransportSSEOnly}},
		{c.logLevel, "--log-level %q: use debug, info, warn or error", []string{"debug", "info", "warn", "error"}},
		{c.logFormat, "--log-format %q: use console or json", []string{"console", "json"}},
		{c.taskIsError, "--task-iserror %q: use completed or failed", []string{"completed", "failed"}},
		{c.legacyTTLUnit, "--legacy-ttl-unit %q: use ms or s", []string{"ms", "s"}},
	} {
		if !slices.Contains(ch.allowed, ch.value) {
			return usagef(ch.problem, ch.value)
		}
	}
	if c.noState && c.stateFile != "" {
		return usagef("--no-state and --state-file contradict each other; pass one")
	}
	return nil
}

// checkOAuthAndCredentials checks the headers, mcp-remote's flags and the
// OAuth flags, and where the credentials may go.
func (c *config) checkOAuthAndCredentials(fs *flag.FlagSet) error {
	if c.headerFile != "" {
		names, err := readHeaderFile(c.headerFile, c.up.Header)
		if err != nil {
			return usagef("--header-file %s: %v", c.headerFile, err)
		}
		c.tr.SecretHeaders = append(c.tr.SecretHeaders, names...)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		set[f.Name] = true
		if isOAuthFlag(f.Name) {
			c.oauth.given = append(c.oauth.given, "--"+f.Name)
		}
	})
	if err := c.mcpRemoteFlags(set); err != nil {
		return err
	}
	if err := c.oauth.check(); err != nil {
		return err
	}
	if set["host"] {
		c.oauth.given = append(c.oauth.given, "--host")
	}
	if c.callbackPort != 0 {
		c.oauth.given = append(c.oauth.given, "the callback port "+strconv.Itoa(c.callbackPort))
	}
	if c.up.Header.Get("Authorization") != "" {
		if c.demoOAuth {
			return usagef("--demo-oauth shows the OAuth sign-in, which an Authorization header turns off; drop the header")
		}
		c.oauthOff = true
	}
	if cred := plainHTTPCredential(c); cred != "" && !c.allowHTTP {
		return usagef("%s would be sent unencrypted over http:// to %s, which is not this machine; use an https:// URL, or pass --allow-http to insist",
			cred, hostOf(c.url))
	}
	return nil
}

// checkBounds checks the numbers and the timeouts.
func (c *config) checkBounds() error {
	for _, b := range []struct {
		bad     bool
		problem string
	}{
		{c.sess.MaxInFlight < 1, "--max-in-flight must be at least 1"},
		{c.up.ResponseHeaderTimeout <= 0, "--response-header-timeout must be a positive duration such as 10m"},
		{c.sess.MaxRounds < 1, "--max-mrtr-rounds must be at least 1"},
		{c.sess.MaxSubscriptions < 1, "--max-subscriptions must be at least 1"},
		{c.sess.IdleTimeout <= 0 || c.sess.RequestTimeout < 0, "--idle-timeout must be a positive duration such as 10m; --request-timeout a duration, or 0 for none"},
		{c.up.ConnectTimeout <= 0 || c.sess.DiscoverTimeout <= 0 || c.sess.PollTimeout <= 0, "timeouts must be positive durations such as 10s or 2m"},
	} {
		if b.bad {
			return usageError{b.problem}
		}
	}
	return nil
}

// plainHTTPCredential describes the credential the proxy would send in
// clear text to another host (docs/reliability.md, Security), naming it,
// never its value; "" when the URL is https:// or loopback, or nothing
// secret goes with it. Credentials are secret-looking headers, values from
// ${VAR} or --header-file, URL userinfo, and secret-looking query names.
func plainHTTPCredential(c *config) string {
	u, err := url.Parse(c.url)
	if err != nil || !strings.EqualFold(u.Scheme, "http") || isLoopback(u.Hostname()) {
		return ""
	}
	if u.User != nil {
		return "the user name and password in the URL"
	}
	for _, name := range slices.Sorted(maps.Keys(c.up.Header)) {
		if secretHeader(name) {
			return "the --header " + name
		}
	}
	for _, name := range c.tr.SecretHeaders {
		if c.up.Header.Get(name) != "" {
			return "the header " + name + " (from ${VAR} or --header-file)"
		}
	}
	for k := range u.Query() {
		if rewrite.SensitiveKey(k) {
			return "the URL's query parameter " + k
		}
	}
	return ""
}

// isLoopback reports whether host names this machine: localhost,
// 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOf is the host (and port) of a URL, for messages.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid URL>"
	}
	return u.Host
}

// isPort reports whether s is a TCP port number, 1-65535.
func isPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == s
}

// mcpRemoteFlags checks mcp-remote's flags against ours; set holds the
// flags given.
func (c *config) mcpRemoteFlags(set map[string]bool) error {
	if c.callbackPort != 0 {
		if set["oauth-callback-port"] && c.oauth.CallbackPort != c.callbackPort {
			return usagef("the callback port is given twice (%d after the URL, and --oauth-callback-port %d); give it once", c.callbackPort, c.oauth.CallbackPort)
		}
		c.oauth.CallbackPort = c.callbackPort
	}
	if set["host"] && set["oauth-callback-host"] {
		return usagef("--host is mcp-remote's name for --oauth-callback-host; give one")
	}
	switch {
	case c.debug && c.silent:
		return usagef("--debug and --silent contradict each other; pass one")
	case c.debug && set["log-level"] && c.logLevel != "debug":
		return usagef("--debug writes debug logs, and --log-level %s asks for less; pass one", c.logLevel)
	case c.silent && set["log-level"] && c.logLevel != "error":
		return usagef("--silent keeps stderr to errors, and --log-level %s asks for more; pass one", c.logLevel)
	case c.debug:
		c.logLevel = "debug"
		if c.logFile == "" {
			path, err := debugLogPath()
			if err != nil {
				return usagef("--debug: no user cache directory for the debug log (%v); pass --log-file PATH as well", err)
			}
			c.logFile, c.debugDefault = path, true
		}
	case c.silent:
		c.logLevel = "error"
	}
	for _, p := range c.sess.IgnoreTools {
		if strings.TrimSpace(p) == "" {
			return usagef("--ignore-tool needs a tool name or a pattern such as 'delete*'")
		}
	}
	return nil
}

// debugLogPath is where --debug writes without --log-file: debug.log in
// the user cache directory's mcp-tasks-proxy folder.
func debugLogPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcp-tasks-proxy", "debug.log"), nil
}

// helpText is the proxy's --help; its flags come from their table.
var helpText = helpIntro + helpFlags(proxyFlagGroups, docs(proxyFlags)) + "\n" + helpOutro

const helpIntro = `mcp-tasks-proxy bridges a legacy MCP client (protocol 2025-11-25, stdio) to a
modern MCP server (protocol 2026-07-28, Streamable HTTP). The client launches it
as its stdio server; it forwards every request to the server over HTTP and
rewrites frames in flight, so neither side sees the gap. A server that still
speaks 2025 is detected at initialize and passed through unchanged. A client
that already speaks 2026-07-28 (it opens with server/discover) gets the 2026
server as it is, over stdio.

Usage:
  mcp-tasks-proxy [flags] URL
  mcp-tasks-proxy [flags] --url URL
  MCP_TASKS_PROXY_URL=URL mcp-tasks-proxy [flags]
  mcp-tasks-proxy --demo
  mcp-tasks-proxy trace view FILE     a trace as a timeline, grouped by request
  mcp-tasks-proxy trace stats FILE    counts, latency p50/p99 and errors by method
  mcp-tasks-proxy rewrite --up|--down what the bridge does to frames, offline (--help)
  mcp-tasks-proxy auth login|status|logout URL   OAuth sign-in from a terminal (--help)
  mcp-tasks-proxy check URL           look at a server before wiring it in (--help)
  mcp-tasks-proxy config HOST URL     the entry for a host's config file, or --write it (--help)
  mcp-tasks-proxy serve [flags] URL   a 2025 Streamable HTTP endpoint for HTTP clients (--help)
  mcp-tasks-proxy completion bash|zsh|fish      a shell completion script
  mcp-tasks-proxy help [COMMAND]      this help, or a command's
  mcp-tasks-proxy version             the version, as --version

Examples:
  # Bridge to a modern server
  mcp-tasks-proxy https://mcp.example.com/mcp

  # A server that needs OAuth: the browser opens for the sign-in at the first
  # request; the tokens are stored and refreshed for the next runs
  mcp-tasks-proxy https://mcp.example.com/mcp
  mcp-tasks-proxy auth login --no-browser https://mcp.example.com/mcp   # headless

  # With a bearer token kept in the environment (${VAR} is expanded; OAuth off)
  mcp-tasks-proxy --header 'Authorization: Bearer ${MCP_TOKEN}' https://mcp.example.com/mcp

  # Try it without a server: an embedded demo server on loopback
  mcp-tasks-proxy --demo
  mcp-tasks-proxy --demo-legacy       # a 2025 server: passthrough mode
  mcp-tasks-proxy --demo --demo-oauth # behind a local OAuth server: watch a sign-in

  # Insist on a 2026-07-28 server (a 2025 server gets a clear error)
  mcp-tasks-proxy --protocol modern https://mcp.example.com/mcp

  # Record every frame on every hop, then read the timeline
  mcp-tasks-proxy --trace /tmp/mcp.trace https://mcp.example.com/mcp
  mcp-tasks-proxy trace view /tmp/mcp.trace

  # See one log line per request, as JSON, in a file
  mcp-tasks-proxy --log-level info --log-format json --log-file /tmp/mcp-proxy.log https://mcp.example.com/mcp

  # From a terminal: type one JSON-RPC message a line, end with Ctrl-D; the
  # answers of the requests read are printed before the exit
  { echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}'
    echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'
  } | mcp-tasks-proxy --demo

  # mcp-remote's command line works too: callback port after the URL,
  # --host, --debug, --silent, --ignore-tool
  mcp-tasks-proxy https://mcp.example.com/mcp 9696 --ignore-tool 'delete*' --debug

`

const helpOutro = `stdout carries only JSON-RPC lines; logs go to stderr or --log-file. Started from
a terminal, one greeting line goes to stderr. NO_COLOR turns colours off.
Exit status: 0 on a normal end (stdin closed, SIGINT, SIGTERM, SIGHUP); 2 on a usage error.
`
