package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/serve"
)

// serveConfig is the parsed command line of `serve`: every proxy flag, for
// the sessions, and serve's own.
type serveConfig struct {
	config
	srv           serve.Config // what serve's flags set; Token is read from authTokenFile
	listen        string
	authTokenFile string
	maxBodyMemory int // 0: serve.DefaultBodyMemory of --max-message-size
}

// DefaultListen is --listen's default.
const DefaultListen = "127.0.0.1:8931"

// sessionPrefix is what --session-id-prefix takes: visible ASCII that needs
// no escaping in a header or a balancer rule.
var sessionPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]{0,32}$`)

const groupServe = "serve"

var serveFlagGroups = append([]flagGroup{{Key: groupServe, Title: "Serve (the HTTP endpoint):"},
	{Key: "", Title: "Upstream, logs and sessions (the proxy's flags):"}}, proxyFlagGroups[1:]...)

// serveOwnFlags are serve's own rows; serveFlags adds the proxy's.
var serveOwnFlags = []flagSpec[serveConfig]{
	{flagDoc{Name: "listen", Arg: "ADDR", Group: groupServe,
		Help: "where the endpoint listens, HOST:PORT; port 0 takes a free one (default 127.0.0.1:8931); an address beyond loopback needs --auth-token-file",
		Doc:  "where the endpoint (`/mcp`) listens, `HOST:PORT`; port `0` takes a free one, which the `listening on` line names; an address beyond loopback needs `--auth-token-file`"},
		stringFlag(func(c *serveConfig) *string { return &c.listen }, DefaultListen)},
	{flagDoc{Name: "allow-origin", Arg: "ORIGIN", Group: groupServe,
		Help: "also accept requests from this browser origin (scheme://host[:port]), and its host in the Host header; repeatable; loopback origins are always accepted, others get 403",
		Doc:  "also accept requests from this browser origin (`scheme://host[:port]`), and its host in the `Host` header; repeatable. Loopback origins are always accepted; any other `Origin` gets 403 (DNS-rebinding protection)"},
		valueFlag(func(c *serveConfig) flag.Value { return (*stringList)(&c.srv.AllowOrigins) })},
	{flagDoc{Name: "auth-token-file", Arg: "PATH", Group: groupServe, Path: true,
		Help: "every request must carry Authorization: Bearer TOKEN, the first line of PATH, or get 401 (/healthz stays open); required to listen beyond loopback",
		Doc:  "every request must carry `Authorization: Bearer TOKEN`, with the first line of the file as TOKEN, or get 401 (`/healthz` stays open, for balancers); required to listen beyond loopback"},
		stringFlag(func(c *serveConfig) *string { return &c.authTokenFile }, "")},
	{flagDoc{Name: "read-timeout", Arg: "D", Group: groupServe,
		Help: "a client must send a request's headers within D, then its body within D, or the connection is closed (a late body gets 408); raise it for large messages over a slow link (default 1m)",
		Doc:  "a client must send a request's headers within D, then its body within D, or its connection is closed (a body that is late gets 408 first); before and after `--auth-token-file`'s check. Raise it for large messages over a slow link. An idle keep-alive connection is closed after 2m; SSE answers are not bounded by it"},
		durationFlag(func(c *serveConfig) *time.Duration { return &c.srv.ReadTimeout }, serve.DefaultReadTimeout, false)},
	{flagDoc{Name: "max-body-memory", Arg: "SIZE", Group: groupServe, Default: "4 × --max-message-size",
		Help: "most memory the request bodies in progress may hold at once, across every client; a body that would take more gets 503 with Retry-After (default 4 × --max-message-size, 512MiB)",
		Doc:  "the most memory the request bodies in progress may hold at once, across every client (a body's memory grows with the bytes that arrive, whatever its `Content-Length` says); a body that would take more gets 503 with `Retry-After`. At least `--max-message-size`"},
		func(fs *flag.FlagSet, name string, c *serveConfig) { fs.Var(byteSize{&c.maxBodyMemory}, name, "") }},
	{flagDoc{Name: "session-idle-timeout", Arg: "D", Group: groupServe,
		Help: "end a client session that has no request open for D (default 30m)",
		Doc:  "end a client session that has had no HTTP request open for D; its client gets 404 and initializes again"},
		durationFlag(func(c *serveConfig) *time.Duration { return &c.srv.IdleTimeout }, serve.DefaultIdleTimeout, false)},
	{flagDoc{Name: "max-sessions", Arg: "N", Group: groupServe,
		Help: "most client sessions at once; one more initialize gets 503 with Retry-After (default 256)",
		Doc:  "the most client sessions at once; one more `initialize` gets 503 with `Retry-After`"},
		intFlag(func(c *serveConfig) *int { return &c.srv.MaxSessions }, serve.DefaultMaxSessions)},
	{flagDoc{Name: "session-id-prefix", Arg: "NAME", Group: groupServe,
		Help: "start every Mcp-Session-Id with NAME. (letters, digits, - and _), so that a balancer can route each session to the replica that made it",
		Doc:  "start every `Mcp-Session-Id` with `NAME.` (letters, digits, `-` and `_`), so that a balancer can send each session to the replica that made it (see [Serve mode](#serve-mode))"},
		stringFlag(func(c *serveConfig) *string { return &c.srv.SessionPrefix }, "")},
	{flagDoc{Name: "event-log-bytes", Arg: "SIZE", Group: groupServe,
		Help: "what each session keeps of its GET stream for a client that resumes it with Last-Event-ID (default 1MiB); past it the oldest events are dropped",
		Doc:  "what each session keeps of its GET stream for a client that resumes it with `Last-Event-ID` (`512KiB`, `4MiB`); past it the oldest events are dropped, and a resume from before them gets what was kept, after an SSE comment saying so"},
		func(fs *flag.FlagSet, name string, c *serveConfig) {
			c.srv.EventLogBytes = serve.DefaultEventLogBytes
			fs.Var(byteSize{&c.srv.EventLogBytes}, name, "")
		}},
}

// serveFlags is serve's flag table: its own rows, then the proxy's, whose
// words about stdin are said of a session here.
var serveFlags = append(append([]flagSpec[serveConfig]{}, serveOwnFlags...),
	reword(sharedAll(proxyFlags, func(c *serveConfig) *config { return &c.config }), map[string][2]string{
		"max-in-flight": {"concurrent forwarded requests per session; more wait in a queue (default 64)",
			"how many requests of one session may run upstream at once; beyond that, up to 1024 (or 16 per slot) wait in a queue, and one more is refused with an error"},
		"max-message-size": {"largest message from a client or from the server (default 128MiB); a larger POST gets 413",
			"the largest message from a client (a larger POST gets 413) or from the server (`64KiB`, `2MiB` and so on)"},
		"drain-timeout": {"when a session ends (DELETE, idleness, shutdown), answer the requests it has read for at most D, then give those left an error; 0 cancels them at once (default 3s: a shutdown stays within 5 s)",
			"when a session ends (DELETE, idleness, SIGTERM), answer the requests it has read for at most D, then give those left an error naming the flag; `0` cancels them at once"},
	})...)

// reword gives rows of a shared table words (help, doc) of their own.
func reword[T any](rows []flagSpec[T], words map[string][2]string) []flagSpec[T] {
	for i, r := range rows {
		if w, ok := words[r.Name]; ok {
			rows[i].Help, rows[i].Doc = w[0], w[1]
		}
	}
	return rows
}

// serveFlagSet is serve's parser (also read by completion).
func serveFlagSet(c *serveConfig) *flag.FlagSet {
	return newTableFlagSet("mcp-tasks-proxy serve", serveFlags, c)
}

// serveHelpText is serve's --help; its flags come from their table.
var serveHelpText = serveHelpIntro + helpFlags(serveFlagGroups, docs(serveFlags)) + "\n" + serveHelpOutro

const serveHelpIntro = `mcp-tasks-proxy serve is the bridge as an HTTP server: a 2025-11-25 Streamable
HTTP endpoint at /mcp, so that clients that reach their MCP servers over HTTP
(v1 SDK clients, LangChain, the OpenAI Agents SDK) can use a 2026-07-28 server
too. Each client session (Mcp-Session-Id) is one bridged session, with
everything the stdio mode does: tasks, MRTR, subscriptions, passthrough of a
2025 server, the trace.

Usage:
  mcp-tasks-proxy serve [flags] URL
  mcp-tasks-proxy serve [flags] --url URL
  mcp-tasks-proxy serve --demo

Examples:
  # On this machine: clients connect to http://127.0.0.1:8931/mcp
  mcp-tasks-proxy serve https://mcp.example.com/mcp

  # Try it with the embedded demo server, on a free port
  mcp-tasks-proxy serve --demo --listen 127.0.0.1:0

  # For other machines (behind a balancer): a token is required
  mcp-tasks-proxy serve --listen 0.0.0.0:8931 --auth-token-file /run/secrets/mcp-token \
    --header 'Authorization: Bearer ${UPSTREAM_TOKEN}' https://mcp.example.com/mcp

  # A browser app on another origin
  mcp-tasks-proxy serve --allow-origin https://app.example.com https://mcp.example.com/mcp

`

const serveHelpOutro = `Once listening it prints one line on stderr: listening on http://HOST:PORT/mcp.
stdout stays empty. GET /healthz answers 200 while the upstream is reached and
answers as an MCP server (the proxy's own discover at start, and again after
an initialize fails; an initialize that succeeds), else 503 saying what failed;
GET /metrics is in Prometheus format. SIGINT or SIGTERM stops accepting, answers or errors every request in
flight within 5 s, and exits 0.
Exit status: 0 after a signal; 1 when it cannot listen or serve; 2 on a usage error.
`

// serveCommand runs `mcp-tasks-proxy serve`.
func serveCommand(args []string, _ io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	c, err := parseServeArgs(args, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-tasks-proxy serve: %v\n", err)
		return 2
	}
	if c.helpOrVersion(serveHelpText, stdout) {
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return runServe(ctx, c, stderr, getenv)
}

// parseServeArgs reads serve's command line.
func parseServeArgs(args []string, getenv func(string) string) (*serveConfig, error) {
	c := &serveConfig{}
	if err := c.config.parse(serveFlagSet(c), args, getenv, "mcp-tasks-proxy serve --help"); err != nil {
		return nil, err
	}
	if c.help || c.version {
		return c, nil
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// check checks serve's own flags, reads the token, and refuses a listen
// address beyond loopback without one.
func (c *serveConfig) check() error {
	host, _, err := net.SplitHostPort(c.listen)
	if err != nil {
		return usagef("--listen %q: use HOST:PORT, such as 127.0.0.1:8931, or 0.0.0.0:8931 for every interface", c.listen)
	}
	if c.srv.MaxSessions < 1 {
		return usagef("--max-sessions must be at least 1")
	}
	if c.srv.IdleTimeout <= 0 {
		return usagef("--session-idle-timeout must be a positive duration such as 30m")
	}
	switch {
	case c.maxBodyMemory == 0:
		c.maxBodyMemory = int(min(serve.DefaultBodyMemory(c.sess.MaxMessageBytes), math.MaxInt))
	case c.maxBodyMemory < c.sess.MaxMessageBytes:
		return usagef("--max-body-memory (%d bytes) is less than --max-message-size (%d bytes): a message that large could never be read; raise --max-body-memory or lower --max-message-size",
			c.maxBodyMemory, c.sess.MaxMessageBytes)
	}
	if !sessionPrefix.MatchString(c.srv.SessionPrefix) {
		return usagef("--session-id-prefix %q: use 1 to 32 letters, digits, - or _", c.srv.SessionPrefix)
	}
	for _, o := range c.srv.AllowOrigins {
		if _, _, ok := serve.NormalizeOrigin(o); !ok {
			return usagef("--allow-origin %q: use an origin, scheme://host[:port], such as https://app.example.com", o)
		}
	}
	if c.authTokenFile != "" {
		b, err := os.ReadFile(c.authTokenFile)
		if err != nil {
			return usagef("--auth-token-file: %v", err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		c.srv.Token = strings.TrimSpace(first)
		if c.srv.Token == "" {
			return usagef("--auth-token-file %s: its first line is empty; put the token there", c.authTokenFile)
		}
	}
	if c.srv.Token == "" && !serve.IsLoopbackListen(c.listen) {
		return usagef("--listen %s binds %s, beyond this machine: pass --auth-token-file FILE so that only clients with the token get in, or listen on 127.0.0.1", c.listen, cmp.Or(host, "every interface"))
	}
	return nil
}

// runServe runs the HTTP front until ctx ends (a signal), and returns the
// exit status.
func runServe(ctx context.Context, c *serveConfig, stderr io.Writer, getenv func(string) string) int {
	bcfg, client, closeBridge, code := startBridge(&c.config, nil, stderr, getenv, nil)
	defer closeBridge()
	if code != 0 {
		return code
	}
	logger := bcfg.Logger
	bcfg.OnInitialized = nil // no era line: stderr is the server's
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-tasks-proxy serve: --listen %s: %v\n", c.listen, err)
		return 1
	}
	// A loopback name is resolved by the system, which may send it beyond
	// this machine: without a token, what was bound must be loopback.
	if tcp, ok := ln.Addr().(*net.TCPAddr); c.srv.Token == "" && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		fmt.Fprintf(stderr, "mcp-tasks-proxy serve: --listen %s bound %s, which is not loopback: pass --auth-token-file FILE, or listen on 127.0.0.1\n", c.listen, ln.Addr())
		return 2
	}
	c.srv.Bridge, c.srv.Logger, c.srv.Version, c.srv.MaxBodyMemory = bcfg, logger, versionString(), int64(c.maxBodyMemory)
	c.srv.ListenHost, _, _ = net.SplitHostPort(c.listen)
	srv := serve.New(c.srv)
	// No ReadTimeout: srv bounds each body itself, so that a refusal does
	// not wait for a body (serve/conn.go).
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: c.srv.ReadTimeout, IdleTimeout: serve.ConnIdleTimeout, ErrorLog: zap.NewStdLog(logger)}
	logger.Info("mcp-tasks-proxy serve started", zap.String("version", versionString()), zap.String("url", client.URL()), zap.String("listen", ln.Addr().String()))
	fmt.Fprintf(stderr, "listening on http://%s%s\n", ln.Addr().String(), serve.Path)
	probed := make(chan struct{})
	go func() { // after the line: its warning follows it
		defer close(probed)
		if err := srv.CheckUpstream(ctx); err != nil {
			logger.Warn("the upstream's discover probe failed; /healthz answers 503 until an initialize succeeds", zap.Error(err))
		}
	}()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		logger.Error("serving failed", zap.Error(err))
		fmt.Fprintf(stderr, "mcp-tasks-proxy serve: %v\n", err)
		srv.Close()
		return 1
	case <-ctx.Done():
	}
	stopServing(hs, srv, logger)
	<-probed // ended with ctx
	return 0
}

// serveShutdownBound keeps the exit within exitGrace, with room for the
// trace and the log to be flushed.
const serveShutdownBound = exitGrace - 500*time.Millisecond

// stopServing stops accepting, ends every session's input so that each
// answers or errors what it has read, and waits for that, within
// serveShutdownBound.
func stopServing(hs *http.Server, srv *serve.Server, logger *zap.Logger) {
	logger.Info("signal: shutting down", zap.Int("sessions", srv.Sessions()))
	ctx, cancel := context.WithTimeout(context.Background(), serveShutdownBound)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- hs.Shutdown(ctx) }()
	if err := srv.Shutdown(ctx); err != nil {
		logger.Warn("sessions were still draining at the shutdown bound; their requests were answered with an error", zap.Duration("bound", serveShutdownBound))
	}
	if err := <-stopped; err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = hs.Close()
	}
	logger.Info("mcp-tasks-proxy serve stopped")
}
