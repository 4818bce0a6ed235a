// Command mcp-tasks-proxy lets a legacy MCP client (protocol 2025-11-25 over
// stdio) use a modern MCP server (protocol 2026-07-28 over Streamable HTTP).
// The client launches it as its stdio server:
//
//	mcp-tasks-proxy https://host/mcp
//
// This package owns flags, the logger, signals and wiring; the session lives
// in package bridge, serve mode's HTTP front in package serve. It is the
// only package that names flags (rewrite.SetHintText installs their names
// for the lower layers' messages). Each command's flags are one table
// (flags.go), from which its parser, --help and README table are built.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/safefile"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/trace"
)

// version and commit are set at link time by releases (-ldflags "-X
// main.version=v1.2.3 -X main.commit=…"); otherwise they come from the
// build information.
var version, commit = "", ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// exitGrace bounds the shutdown once stdin ends or a signal arrives.
const exitGrace = 5 * time.Second

// run is the whole command: a subcommand, or the proxy; it returns the exit
// status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	rewrite.SetHintText(flagHint) // lower layers' messages name settings by their flags
	if len(args) > 0 && commands[args[0]] != nil {
		return commands[args[0]](args[1:], stdin, stdout, stderr, getenv)
	}
	cfg, err := parseArgs(args, getenv)
	if err != nil {
		return fail(stderr, 2, "%v", err)
	}
	if cfg.helpOrVersion(helpText, stdout) {
		return 0
	}
	return runProxy(cfg, stdin, stdout, stderr, getenv)
}

// helpOrVersion prints the help, or the version line, when the command line
// asks for it.
func (c *config) helpOrVersion(help string, stdout io.Writer) bool {
	switch {
	case c.help:
		fmt.Fprint(stdout, help)
	case c.version:
		fmt.Fprintln(stdout, versionLine())
	default:
		return false
	}
	return true
}

// command runs a subcommand with the arguments after its name, and
// returns the exit status.
type command func(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int

// commands are the subcommands by name; subcommands, their names sorted.
var (
	commands    map[string]command
	subcommands []string
)

func init() { // not in the declaration: help runs the others
	commands = map[string]command{"help": helpCommand, "version": versionCommand, "completion": completionCommand,
		"trace": traceCommand, "rewrite": rewriteCommand, "auth": authCommand, "config": configCommand,
		"check": checkCommand, "serve": serveCommand}
	subcommands = slices.Sorted(maps.Keys(commands))
	verbs["help"] = subcommands
}

// runProxy runs the proxy under a parsed command line until stdin ends or a
// signal comes. A step that fails prints one line and gives the exit status.
func runProxy(cfg *config, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	sessCfg, client, closeBridge, code := startBridge(cfg, stdin, stderr, getenv, nil)
	defer closeBridge()
	if code != 0 {
		return code
	}
	logger := sessCfg.Logger
	if cfg.cpuProfile != "" {
		f, err := safefile.OpenWrite(cfg.cpuProfile, safefile.Truncate)
		if err == nil {
			if err = pprof.StartCPUProfile(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			return fail(stderr, 2, "--cpuprofile: %v", err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	gogc, memLimit := stdioGC(getenv)
	sess := bridge.New(sessCfg)
	logger.Info("mcp-tasks-proxy started", zap.String("version", versionString()), zap.String("url", client.URL()),
		zap.String("gogc", gogc), zap.String("gomemlimit", memLimit))
	if isTTY(stdin) && !cfg.silent {
		fmt.Fprintln(stderr, helloLine(cfg, client.URL()))
	}
	return serveStdio(ctx, sess, logger, stdin, stdout)
}

// startBridge starts what every session of the process shares: the log (the
// sessions' Logger), the demo server (--demo), the upstream client, and the
// sessions' configuration (trace included). auth, when set, makes the
// upstream client's Auth of the OAuth client (see newUpstream). done
// releases them, in reverse order.
func startBridge(cfg *config, stdin io.Reader, stderr io.Writer, getenv func(string) string, auth func(*oauth.Client) routing.Auth) (bcfg bridge.Config, client *routing.Client, done func(), code int) {
	var undo []func()
	done = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	logger, closeLog, code := startLog(cfg, stderr, getenv)
	if code != 0 {
		return bcfg, nil, done, code
	}
	undo = append(undo, closeLog)
	url := cfg.url
	if cfg.demo {
		demoURL, stopDemo, code := startDemoServer(cfg, logger, stderr)
		if code != 0 {
			return bcfg, nil, done, code
		}
		undo = append(undo, stopDemo)
		url = demoURL
	}
	client, closeClient, code := newUpstream(cfg, url, logger, stderr, auth)
	if code != 0 {
		return bcfg, nil, done, code
	}
	undo = append(undo, closeClient)
	bcfg, closeSession, code := sessionConfig(cfg, url, client, logger, stdin, stderr)
	if code != 0 {
		return bcfg, nil, done, code
	}
	undo = append(undo, closeSession)
	return bcfg, client, done, 0
}

// startLog opens the log (stderr, or --log-file); with --debug, it names
// the log file on stderr.
func startLog(cfg *config, stderr io.Writer, getenv func(string) string) (*zap.Logger, func(), int) {
	if cfg.debugDefault {
		if err := os.MkdirAll(filepath.Dir(cfg.logFile), 0o700); err != nil {
			return nil, nil, fail(stderr, 2, "--debug: %v; pass --log-file PATH as well", err)
		}
	}
	logger, closeLog, err := newLogger(cfg, stderr, colorOK(stderr, getenv))
	if err != nil {
		return nil, nil, fail(stderr, 2, "%v", err)
	}
	if cfg.debug {
		fmt.Fprintf(stderr, "mcp-tasks-proxy: debug log: %s\n", cfg.logFile)
	}
	return logger, closeLog, 0
}

// startDemoServer starts the demo server the --demo flags ask for.
func startDemoServer(cfg *config, logger *zap.Logger, stderr io.Writer) (string, func(), int) {
	var url string
	var stopDemo func()
	var err error
	switch ctx := context.Background(); {
	case cfg.demoLegacy:
		url, _, stopDemo, err = demo.StartLegacy(ctx)
	case cfg.demoOAuth:
		url, _, stopDemo, err = demo.StartWithOAuth(ctx, authserver.Config{}, nil)
	default:
		url, stopDemo, err = demo.Start(ctx)
	}
	if err != nil {
		logger.Error("cannot start the demo server", zap.Error(err))
		return "", nil, fail(stderr, 1, "cannot start the demo server: %v", err)
	}
	logger.Info("demo server started", zap.String("url", url), zap.Bool("oauth", cfg.demoOAuth))
	return url, stopDemo, 0
}

// newUpstream builds the upstream HTTP client for url, warning loudly of
// --insecure and of credentials over plain http. wrap, when set, makes the
// client's Auth of the OAuth client (nil when OAuth is off or unavailable):
// check's uses a stored sign-in only. The returned func closes the client.
func newUpstream(cfg *config, url string, logger *zap.Logger, stderr io.Writer, wrap func(*oauth.Client) routing.Auth) (*routing.Client, func(), int) {
	var caPEM []byte
	if cfg.caFile != "" {
		var err error
		if caPEM, err = os.ReadFile(cfg.caFile); err != nil {
			return nil, nil, fail(stderr, 2, "--ca-file: %v", err)
		}
	}
	if cfg.insecure {
		loud(stderr, logger, cfg, "--insecure: TLS certificates are NOT verified; anyone on the network path can read and change this traffic, credentials included")
	}
	if cred := plainHTTPCredential(cfg); cred != "" && cfg.allowHTTP {
		loud(stderr, logger, cfg, "--allow-http: "+cred+" is sent unencrypted over http:// to "+hostOf(cfg.url)+"; anyone on the network path can read it")
	}
	auth, closeAuth, code := newAuth(cfg, url, caPEM, logger, stderr)
	if code != 0 {
		return nil, nil, code
	}
	var routingAuth routing.Auth // nil, not a nil *oauth.Client, without OAuth
	if auth != nil {
		routingAuth = auth
	}
	if wrap != nil {
		routingAuth = wrap(auth)
	}
	up := cfg.up
	up.Auth, up.URL, up.RootCAs, up.Insecure = routingAuth, url, caPEM, cfg.insecure
	up.MaxIdleConnsPerHost = max(cfg.sess.MaxInFlight, routing.DefaultMaxIdleConnsPerHost) // one for every request in flight
	up.MaxMessageBytes, up.UserAgent = cfg.sess.MaxMessageBytes, "mcp-tasks-proxy/"+versionString()
	client, err := routing.New(up)
	if err != nil {
		closeAuth()
		return nil, nil, fail(stderr, 2, "%v", err)
	}
	return client, func() { client.CloseIdle(); closeAuth() }, 0
}

// sessionConfig is the sessions' configuration under the command line;
// the returned func flushes and closes the trace.
func sessionConfig(cfg *config, url string, client *routing.Client, logger *zap.Logger, stdin io.Reader, stderr io.Writer) (bridge.Config, func(), int) {
	statePath := cfg.stateFile
	if statePath == "" && !cfg.noState && !cfg.demo {
		var err error
		if statePath, err = bridge.DefaultStatePath(url); err != nil {
			logger.Warn("no user cache directory for the task state file; tasks are remembered only while this process runs (pass --state-file)", zap.Error(err))
		}
	}
	var observer bridge.Observer // the trace, with --trace; nil (not a nil *trace.Writer) without
	closeTW := func() {}
	if cfg.trace != "" {
		tw, err := trace.Open(cfg.trace, cfg.tr)
		if err != nil {
			return bridge.Config{}, nil, fail(stderr, 2, "--trace: %v", err)
		}
		observer = tw
		closeTW = func() { closeTrace(tw, logger) }
	}
	if cfg.tr.NoRedact {
		loud(stderr, logger, cfg, "--no-redact: secrets (tokens, passwords, API keys) will appear in logs and the trace")
	}
	b := cfg.sess
	b.Observer, b.Redact, b.Hints, b.NoRedact = observer, rewrite.SensitiveKeys(cfg.tr.RedactKeys), flagHint, cfg.tr.NoRedact
	b.Client, b.Logger, b.StatePath = client, logger, statePath
	b.Tasks = rewrite.TaskOptions{IsErrorFailed: cfg.taskIsError == "failed", TTLSeconds: cfg.legacyTTLUnit == "s"}
	b.OnInitialized = eraLine(isTTY(stdin) && !cfg.silent, stderr)
	return b, closeTW, 0
}

// flagHint names a setting an error message points at by its flag: the
// rewrite.Hint is the flag's name (TestHintsNameFlags holds each hint to a
// row of the flag table).
func flagHint(h rewrite.Hint) string { return "--" + string(h) }

// serveStdio runs the session on stdin and stdout until stdin ends, or a
// signal comes (then the session gets exitGrace to finish). stdin is read
// as the host handed it over, with blocking reads: a read still waiting
// ties up only its goroutine, which a cancelled session does not wait for,
// and main's os.Exit ends the process with that read in flight.
func serveStdio(ctx context.Context, sess *bridge.Session, logger *zap.Logger, stdin io.Reader, stdout io.Writer) int {
	done := make(chan error, 1)
	go func() { done <- sess.Run(ctx, stdin, stdout) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// A signal: Run is cancelling its work; give it the grace period.
		select {
		case err = <-done:
		case <-time.After(exitGrace):
			logger.Warn("shutdown took longer than the grace period; exiting anyway", zap.Duration("grace", exitGrace))
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		logger.Error("session ended with an error", zap.Error(err))
		return 1
	}
	logger.Info("mcp-tasks-proxy stopped")
	return 0
}

// newAuth builds the OAuth client for the upstream, or nil when an
// Authorization header turned OAuth off. It stays dormant until the server
// answers 401: an unprotected server sees no change. The returned func
// closes it; a non-zero int is the exit status of a failure.
func newAuth(cfg *config, url string, caPEM []byte, logger *zap.Logger, stderr io.Writer) (*oauth.Client, func(), int) {
	if cfg.oauthOff {
		if len(cfg.oauth.given) > 0 {
			loud(stderr, logger, cfg, "an Authorization header was given with --header or --header-file, so OAuth is off and "+strings.Join(cfg.oauth.given, ", ")+" has no effect")
		}
		return nil, func() {}, 0
	}
	cleanup := func() {}
	o := cfg.oauth
	if cfg.demoOAuth && o.StoreDir == "" {
		// The demo's server moves port every run: keep its tokens out of
		// the user's store.
		dir, err := os.MkdirTemp("", "mcp-tasks-proxy-demo-oauth-")
		if err != nil {
			return nil, nil, fail(stderr, 1, "cannot make a store for the demo sign-in: %v", err)
		}
		o.StoreDir = dir
		cleanup = func() { _ = os.RemoveAll(dir) }
	}
	hc, err := oauthHTTPClient(caPEM, cfg.insecure, cfg.up.ConnectTimeout)
	if err != nil {
		cleanup()
		return nil, nil, fail(stderr, 2, "--ca-file: %v", err)
	}
	out := &userLines{stderr: stderr}
	if cfg.logFile != "" {
		out.logger = logger
	}
	o.ServerURL, o.AllowHTTP, o.HTTPClient, o.Logger, o.Out = url, cfg.allowHTTP, hc, logger, out
	a, err := oauth.New(o.Config)
	if err != nil {
		cleanup()
		if len(cfg.oauth.given) == 0 && !cfg.demoOAuth {
			// Nobody asked for OAuth: a server without it must still work.
			loud(stderr, logger, cfg, fmt.Sprintf("OAuth sign-in is unavailable (%v); a server that asks for it will be refused", err))
			return nil, func() {}, 0
		}
		return nil, nil, fail(stderr, 1, "%v", err)
	}
	return a, func() { _ = a.Close(); cleanup() }, 0
}

// The stdio bridge's one static garbage-collector setting, made once at
// start. One session's live heap is small and it allocates for every frame,
// so at Go's default pace it collects often with calls in flight; a pace of
// stdioGOGC lets that small heap grow to (1 + stdioGOGC/100) times its size
// between collections, and a soft memory limit brings the default
// pace back as soon as a large result would take the heap past it. Each is
// set only when the environment does not set it (GOGC, GOMEMLIMIT), and
// serve, whose heap grows with its sessions, keeps Go's defaults. The
// figures that earn it are in BENCHMARKS.md.
const (
	stdioGOGC     = 400
	stdioMemLimit = 48 << 20
)

// stdioGC applies the stdio bridge's GC setting where the environment
// leaves it open, and returns the pace and limit in force.
func stdioGC(getenv func(string) string) (gogc, memLimit string) {
	gogc, memLimit = getenv("GOGC"), getenv("GOMEMLIMIT")
	if gogc == "" {
		debug.SetGCPercent(stdioGOGC)
		gogc = strconv.Itoa(stdioGOGC)
	}
	if memLimit == "" {
		debug.SetMemoryLimit(stdioMemLimit)
		memLimit = strconv.Itoa(stdioMemLimit>>20) + "MiB"
	}
	return gogc, memLimit
}

// traceFlushGrace bounds the final flush of the trace: a reader that stopped
// reading must not hold the exit past its 5 s budget.
const traceFlushGrace = time.Second

// closeTrace flushes the trace and reports what was lost.
func closeTrace(tw *trace.Writer, logger *zap.Logger) {
	var dropped int64
	var err error
	done := make(chan struct{})
	go func() {
		dropped, err = tw.Close()
		close(done)
	}()
	select {
	case <-done:
		if dropped > 0 || err != nil {
			logger.Warn("trace incomplete: records were dropped because the trace could not keep up, or writing failed", zap.Int64("dropped", dropped), zap.Error(err))
		}
	case <-time.After(traceFlushGrace):
		logger.Warn("trace incomplete: records were dropped because the trace's reader stopped reading", zap.Int64("dropped", tw.Dropped()), zap.Duration("waited", traceFlushGrace))
	}
}

// fail prints one line on stderr and returns the exit status code.
func fail(stderr io.Writer, code int, format string, args ...any) int {
	fmt.Fprintf(stderr, "mcp-tasks-proxy: "+format+"\n", args...)
	return code
}

// loud is a warning that always reaches stderr, even with --log-file.
func loud(stderr io.Writer, logger *zap.Logger, cfg *config, msg string) {
	logger.Warn(msg)
	if cfg.logFile != "" && !cfg.silent {
		fmt.Fprintf(stderr, "mcp-tasks-proxy: warning: %s\n", msg)
	}
}

// isTerminal reports whether v is a character device (colour output).
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newLogger builds the zap logger: stderr (or --log-file) only, never stdout.
func newLogger(cfg *config, stderr io.Writer, color bool) (*zap.Logger, func(), error) {
	level, _ := zapcore.ParseLevel(cfg.logLevel) // checked by checkChoices
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.TimeKey = "ts"
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if cfg.logFormat == "json" {
		enc = zapcore.NewJSONEncoder(encCfg)
	} else {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		if color && cfg.logFile == "" {
			encCfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(encCfg)
	}
	sink, closeFn := zapcore.Lock(zapcore.AddSync(stderr)), func() {}
	if cfg.logFile != "" {
		f, err := safefile.OpenWrite(cfg.logFile, safefile.Append)
		if err != nil {
			return nil, nil, usagef("--log-file: %v", err)
		}
		sink, closeFn = zapcore.Lock(f), func() { _ = f.Close() }
	}
	logger := zap.New(zapcore.NewCore(enc, sink, level))
	return logger, func() { _ = logger.Sync(); closeFn() }, nil
}

// versionLine is what --version prints.
func versionLine() string {
	return fmt.Sprintf("mcp-tasks-proxy %s (commit %s, %s, %s/%s)", versionString(), commitString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// commitString is the commit the binary was built from: set at link time
// by releases, else from the build's VCS stamp, else "unknown" (go install
// of a module version carries none).
func commitString() string {
	if commit != "" {
		return commit
	}
	rev, dirty := "unknown", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && s.Value != "":
				rev = s.Value[:min(len(s.Value), 12)]
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "-dirty"
			}
		}
	}
	if rev == "unknown" {
		return rev
	}
	return rev + dirty
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
