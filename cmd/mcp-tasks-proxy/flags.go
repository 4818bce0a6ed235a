package main

import (
	"flag"
	"net/http"
	"slices"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// The flag tables of the proxy and its subcommands (flagtable.go says how
// they are used and how to add a flag). Each table's order is its --help
// order and its README order.

// Groups of the proxy's --help flag list.
const (
	groupTasks   = "tasks"
	groupOAuth   = "oauth"
	groupActions = "actions"
)

var proxyFlagGroups = []flagGroup{
	{Key: "", Title: "Flags:"},
	{Key: groupTasks, Title: "Tasks:"},
	{Key: groupOAuth, Title: "OAuth (a server that answers 401 asks for a sign-in; nothing happens before that):",
		After: "An Authorization header (--header, --header-file) turns OAuth off."},
	{Key: groupActions},
}

// proxyFlags is the proxy's flag table.
var proxyFlags = []flagSpec[config]{
	{flagDoc{Name: "url", Arg: "URL", Env: envURL,
		Help: "server endpoint (or the first argument, or $" + envURL + ")",
		Doc:  "the server's endpoint; you can also give it as the first argument or in `$" + envURL + "`"},
		stringFlag(func(c *config) *string { return &c.url }, "")},
	{flagDoc{Name: "header", Arg: "'Name: value'",
		Help: "extra HTTP header on every upstream request; repeatable; ${VAR} in the value is read from the environment; an Authorization header turns OAuth off",
		Doc:  "an extra HTTP header on every upstream request; repeatable; the space after the colon is optional; `${VAR}` is expanded. An `Authorization` header turns OAuth off"},
		func(fs *flag.FlagSet, name string, c *config) {
			c.up.Header = http.Header{}
			c.headers = headerList{h: c.up.Header, secrets: &c.tr.SecretHeaders}
			fs.Var(&c.headers, name, "")
		}},
	{flagDoc{Name: "header-file", Arg: "PATH", Path: true,
		Help: "more headers, one 'Name: value' a line (keeps secrets out of ps)",
		Doc:  "more headers, one `Name: value` a line; blank lines and lines starting with `#` are skipped; `${VAR}` is expanded. Keeps secrets out of the process list, and its values are always redacted. An `Authorization` header in it turns OAuth off"},
		stringFlag(func(c *config) *string { return &c.headerFile }, "")},
	{flagDoc{Name: "trace", Arg: "FILE", Default: "off", Path: true,
		Help: "write a JSONL frame trace (one record per frame per hop) to FILE, or to stderr with -; view it with: mcp-tasks-proxy trace view FILE",
		Doc:  "write a JSONL frame trace (one record per frame per hop) to FILE, or to stderr with `-`; read it with `mcp-tasks-proxy trace view FILE` (see [The frame trace](#the-frame-trace))"},
		stringFlag(func(c *config) *string { return &c.trace }, "")},
	{flagDoc{Name: "redact-key", Arg: "NAME",
		Help: "also redact this JSON key in logs and the trace; repeatable",
		Doc:  "also redact this JSON key in logs and the trace; repeatable (see [Redaction](#redaction))"},
		valueFlag(func(c *config) flag.Value { return (*stringList)(&c.tr.RedactKeys) })},
	{flagDoc{Name: "no-redact",
		Help: "show secrets in logs and the trace (dangerous; logged loudly)",
		Doc:  "show secrets in logs and the trace; logged loudly"},
		boolFlag(func(c *config) *bool { return &c.tr.NoRedact })},
	{flagDoc{Name: "ca-file", Arg: "PATH", Default: "system roots", Path: true,
		Help: "PEM certificates to trust besides the system roots"},
		stringFlag(func(c *config) *string { return &c.caFile }, "")},
	{flagDoc{Name: "insecure",
		Help: "skip TLS certificate verification (dangerous; logged loudly)",
		Doc:  "skip TLS certificate verification; logged loudly"},
		boolFlag(func(c *config) *bool { return &c.insecure })},
	{flagDoc{Name: "allow-http",
		Help: "send credentials (--header, --header-file, user:password in the URL) over plain http:// to a host other than this machine (dangerous; logged loudly); without it that is refused",
		Doc:  "send credentials (`Authorization` and other secret-looking headers, `${VAR}` and `--header-file` values, `user:password@` in the URL) over plain `http://` to a host other than this machine; without it that is refused at start-up (exit 2). Logged loudly"},
		boolFlag(func(c *config) *bool { return &c.allowHTTP })},
	{flagDoc{Name: "protocol", Arg: "ERA",
		Help: "the server's era: auto (default: probe with server/discover at initialize), modern (2026-07-28 only; a 2025 server is an error) or legacy (pass 2025 through, no probe)",
		Doc:  "the server's era: `auto` probes at `initialize` (see [Two modes](docs/protocol.md#two-modes)); `modern` accepts only a 2026-07-28 server and answers a 2025 one with a clear error; `legacy` passes 2025 through without probing"},
		stringFlag(func(c *config) *string { return &c.sess.Protocol }, bridge.ProtocolAuto)},
	{flagDoc{Name: "client-era", Arg: "ERA",
		Help: "the client's era: auto (default: a client that opens with server/discover is served 2026-07-28, one that opens with initialize 2025-11-25), legacy (2025 clients only: server/discover is refused, so a client of both eras falls back) or modern (2026 clients only)",
		Doc:  "the client's era: `auto` serves each client in the era its first request shows (`server/discover` or a 2026 `_meta` version: 2026-07-28, relayed to a 2026 server as it is; `initialize`: 2025-11-25, bridged); `legacy` serves 2025 clients only, and refuses `server/discover` so that a client of both eras falls back to `initialize`; `modern` serves 2026 clients only (see [Clients of both eras](docs/protocol.md#clients-of-both-eras))"},
		stringFlag(func(c *config) *string { return &c.sess.ClientEra }, bridge.ClientEraAuto)},
	{flagDoc{Name: "transport", Arg: "MODE",
		Help: "http-first (default: Streamable HTTP, then the old HTTP+SSE transport of 2024-11-05 when the POST is refused), http-only, sse-first or sse-only (mcp-remote's values)",
		Doc:  "which upstream transport to try (mcp-remote's values): `http-first` uses Streamable HTTP and falls back to the old HTTP+SSE transport (MCP 2024-11-05) when the server refuses the POST with 400, 404 or 405; `http-only` never tries HTTP+SSE; `sse-first` opens the HTTP+SSE event stream first and falls back to Streamable HTTP when the GET brings no `endpoint` event; `sse-only` never tries Streamable HTTP (see [Old HTTP+SSE servers](docs/protocol.md#old-httpsse-servers-mcp-2024-11-05))"},
		stringFlag(func(c *config) *string { return &c.sess.Transport }, bridge.TransportHTTPFirst)},
	{flagDoc{Name: "demo", NotInEntry: true,
		Help: "start the embedded 2026-07-28 demo server and bridge to it",
		Doc:  "start the embedded 2026-07-28 demo server on a free loopback port and bridge to it"},
		boolFlag(func(c *config) *bool { return &c.demo })},
	{flagDoc{Name: "demo-legacy", NotInEntry: true,
		Help: "start an embedded 2025 demo server (passthrough mode)",
		Doc:  "start an embedded 2025 demo server instead (go-sdk, stateful sessions) and pass it through"},
		boolFlag(func(c *config) *bool { return &c.demoLegacy })},
	{flagDoc{Name: "demo-oauth", NotInEntry: true,
		Help: "with --demo: put the demo server behind an embedded OAuth authorization server (auto-consent), to watch a sign-in",
		Doc:  "with `--demo`: put the demo server behind an embedded OAuth authorization server that consents at once, to watch a sign-in"},
		boolFlag(func(c *config) *bool { return &c.demoOAuth })},
	{flagDoc{Name: "log-level", Arg: "LEVEL",
		Help: "debug, info, warn or error (default warn: stderr stays quiet)",
		Doc:  "`debug`, `info` (one line per request), `warn` or `error`"},
		stringFlag(func(c *config) *string { return &c.logLevel }, "warn")},
	{flagDoc{Name: "log-format", Arg: "FORMAT",
		Help: "console or json (default console)",
		Doc:  "`console` for people, `json` for machines"},
		stringFlag(func(c *config) *string { return &c.logFormat }, "console")},
	{flagDoc{Name: "log-file", Arg: "PATH", Default: "stderr", Path: true,
		Help: "write logs to PATH instead of stderr",
		Doc:  "write logs to a file instead of stderr"},
		stringFlag(func(c *config) *string { return &c.logFile }, "")},
	{flagDoc{Name: "debug",
		Help: "write debug logs (every frame, redacted) to --log-file, or to debug.log in the user cache dir's mcp-tasks-proxy folder; the file is named on stderr at start",
		Doc:  "debug logs (every frame, redacted) to `--log-file`, or to `debug.log` in the user cache dir's `mcp-tasks-proxy` folder; the path is printed on stderr at start"},
		boolFlag(func(c *config) *bool { return &c.debug })},
	{flagDoc{Name: "silent",
		Help: "only errors on stderr (no warnings, no greeting); the OAuth sign-in address is still shown",
		Doc:  "only errors on stderr: no warnings, no greeting; an OAuth sign-in address is still shown"},
		boolFlag(func(c *config) *bool { return &c.silent })},
	{flagDoc{Name: "max-in-flight", Arg: "N",
		Help: "concurrent forwarded requests; stdin waits beyond it (default 64)",
		Doc:  "how many requests may run upstream at once; beyond that, up to 1024 (or 16 per slot, if that is more) wait in a queue, and one more is refused with an error; stdin is always read (see [Invariants](docs/reliability.md#invariants-you-can-rely-on))"},
		intFlag(func(c *config) *int { return &c.sess.MaxInFlight }, bridge.DefaultMaxInFlight)},
	{flagDoc{Name: "max-message-size", Arg: "SIZE",
		Help: "largest message on stdin or from the server (default 128MiB)",
		Doc:  "the largest message on stdin or from the server (`64KiB`, `2MiB` and so on)"},
		func(fs *flag.FlagSet, name string, c *config) {
			c.sess.MaxMessageBytes = routing.DefaultMaxMessageBytes
			fs.Var(byteSize{&c.sess.MaxMessageBytes}, name, "")
		}},
	{flagDoc{Name: "connect-timeout", Arg: "D",
		Note: "Durations (D) are seconds (10) or a number with a unit (10s, 2m, 1h30m).",
		Help: "dial and TLS handshake timeout (default 10s)",
		Doc:  "dial and TLS handshake timeout"},
		durationFlag(func(c *config) *time.Duration { return &c.up.ConnectTimeout }, routing.DefaultConnectTimeout, false)},
	{flagDoc{Name: "discover-timeout", Arg: "D",
		Help: "server/discover probe timeout at initialize (default 30s)",
		Doc:  "timeout for the `server/discover` probe at `initialize`"},
		durationFlag(func(c *config) *time.Duration { return &c.sess.DiscoverTimeout }, bridge.DefaultDiscoverTimeout, false)},
	{flagDoc{Name: "response-header-timeout", Arg: "D",
		Help: "give up when the server has not started answering after D (default 10m)",
		Doc:  "give up when the server has not started answering after D; a server that answers a long call as plain JSON sends its headers only at the end"},
		durationFlag(func(c *config) *time.Duration { return &c.up.ResponseHeaderTimeout }, routing.DefaultResponseHeaderTimeout, false)},
	{flagDoc{Name: "idle-timeout", Arg: "D",
		Help: "give up on a request when the server sends nothing for D; progress and log messages restart it (default 10m)",
		Doc:  "give up on a request whose server sends nothing for D; progress restarts it"},
		durationFlag(func(c *config) *time.Duration { return &c.sess.IdleTimeout }, bridge.DefaultIdleTimeout, false)},
	{flagDoc{Name: "request-timeout", Arg: "D",
		Help: "hard maximum for one request, 0 for none (default 2h); task polling is governed by the task, not by these",
		Doc:  "hard maximum for one request, from when it is read, waits for the client's answers included; `0` for none"},
		durationFlag(func(c *config) *time.Duration { return &c.sess.RequestTimeout }, bridge.DefaultRequestTimeout, true)},
	{flagDoc{Name: "max-mrtr-rounds", Arg: "N",
		Help: "rounds of client input a request may need (default 16)",
		Doc:  "rounds of client input one request may need"},
		intFlag(func(c *config) *int { return &c.sess.MaxRounds }, bridge.DefaultMaxRounds)},
	{flagDoc{Name: "max-subscriptions", Arg: "N",
		Help: "resources a client may subscribe to at once (resources/subscribe); one more gets an error until it unsubscribes from one (default 256)",
		Doc:  "how many resources one client session may subscribe to at once (`resources/subscribe`, distinct URIs); they share one upstream `subscriptions/listen` stream, and one more subscribe gets an error naming this flag until the client unsubscribes from one"},
		intFlag(func(c *config) *int { return &c.sess.MaxSubscriptions }, bridge.DefaultMaxSubscriptions)},
	{flagDoc{Name: "drain-timeout", Arg: "D",
		Help: "when stdin ends, answer the requests already read for at most D, then give those left an error and exit; 0 cancels them at once (default 3s: the exit stays within 5 s)",
		Doc:  "when stdin ends, answer the requests already read (running or queued) for at most D, then give those left an error naming the flag and exit; `0` cancels them at once"},
		durationFlag(func(c *config) *time.Duration { return &c.sess.DrainTimeout }, DefaultDrainTimeout, true)},
	{flagDoc{Name: "ignore-tool", Arg: "PATTERN",
		Help: "hide the tools whose name matches PATTERN from tools/list, and refuse tools/call of them; * matches any run of characters, case is ignored (as mcp-remote); repeatable",
		Doc:  "hide tools whose name matches from `tools/list` and refuse `tools/call` of them (-32602); `*` matches any run of characters, case is ignored (as mcp-remote); repeatable"},
		valueFlag(func(c *config) flag.Value { return (*stringList)(&c.sess.IgnoreTools) })},
	{flagDoc{Name: "cpuprofile", Arg: "FILE", Path: true, NotInEntry: true,
		Help: "write a Go CPU profile of the whole run to FILE, for performance reports (go tool pprof FILE)",
		Doc:  "write a Go CPU profile of the whole run to FILE, for performance reports (`go tool pprof FILE`)"},
		stringFlag(func(c *config) *string { return &c.cpuProfile }, "")},

	{flagDoc{Name: "task-iserror", Arg: "MODE", Group: groupTasks,
		Help: "how a task whose tool result has isError:true looks to the client: completed (default; the client reads the error text with tasks/result) or failed (the literal 2025 reading)",
		Doc:  "how a task whose tool result has `isError: true` looks: `completed` or `failed` (see [Policies](docs/policies.md#tasks))"},
		stringFlag(func(c *config) *string { return &c.taskIsError }, "completed")},
	{flagDoc{Name: "legacy-ttl-unit", Arg: "UNIT", Group: groupTasks,
		Help: "unit of the client's task ttl: ms (default, 2025-11-25) or s (clients built on the early draft that used seconds)",
		Doc:  "the unit of the client's task `ttl`: `ms`, or `s` for early-draft clients"},
		stringFlag(func(c *config) *string { return &c.legacyTTLUnit }, "ms")},
	{flagDoc{Name: "poll-timeout", Arg: "D", Group: groupTasks,
		Help: "give up on one tasks/get or tasks/update the proxy makes of its own after D, and make it again (both are safe to repeat); a task's whole wait is not bounded by this (default 10s, at most --idle-timeout)",
		Doc:  "bound of one `tasks/get` or `tasks/update` the proxy makes of its own (following a task, `tasks/result`, the client's `tasks/get`); one that hangs is given up and made again under the retry rules; at most `--idle-timeout`"},
		durationFlag(func(c *config) *time.Duration { return &c.sess.PollTimeout }, bridge.DefaultPollTimeout, false)},
	{flagDoc{Name: "state-file", Arg: "PATH", Group: groupTasks, Default: "user cache dir", Path: true,
		Help: "task registry for tasks/list and tasks/result across restarts (default: the user cache dir, one file per upstream URL; in memory with --demo)",
		Doc:  "the task registry file, one per upstream URL; in memory with `--demo` (see [The state file](docs/protocol.md#the-state-file))"},
		stringFlag(func(c *config) *string { return &c.stateFile }, "")},
	{flagDoc{Name: "no-state", Group: groupTasks,
		Help: "keep the task registry in memory only"},
		boolFlag(func(c *config) *bool { return &c.noState })},

	{flagDoc{Name: "oauth-store", Arg: "DIR", Group: groupOAuth, Default: "user config dir", Path: true,
		Help: "where tokens are kept, one 0600 file per server in a 0700 directory (default: the user config dir, mcp-tasks-proxy/oauth)",
		Doc:  "where OAuth tokens are kept: one file per server, mode 0600, in a directory of mode 0700 (`~/.config/mcp-tasks-proxy/oauth` on Linux)"},
		stringFlag(func(c *config) *string { return &c.oauth.StoreDir }, "")},
	{flagDoc{Name: "oauth-browser", Arg: "CMD", Group: groupOAuth, Default: "`$BROWSER`, then the platform's opener",
		Help: "open the sign-in page with CMD URL (default: $BROWSER, then the platform's opener); the URL is printed on stderr too",
		Doc:  "the command that opens the sign-in page, run with the URL as its last argument (split on spaces, no shell)"},
		stringFlag(func(c *config) *string { return &c.oauth.Browser }, "")},
	{flagDoc{Name: "oauth-no-browser", Group: groupOAuth,
		Help: "only print the sign-in URL on stderr, and wait for the sign-in",
		Doc:  "only print the sign-in address on stderr, and wait for the sign-in all the same"},
		boolFlag(func(c *config) *bool { return &c.oauth.NoBrowser })},
	{flagDoc{Name: "auth-timeout", Arg: "D", Group: groupOAuth,
		Help: "how long a sign-in may take: seconds (120) or a duration (default 2m); then waiting requests get an error naming mcp-tasks-proxy auth login URL",
		Doc:  "how long a sign-in may take: bare seconds (`30`, as mcp-remote) or a duration (`90s`, `5m`)"},
		func(fs *flag.FlagSet, name string, c *config) {
			c.oauth.AuthTimeout = oauth.DefaultAuthTimeout
			fs.Var(duration{d: &c.oauth.AuthTimeout, form: errSecondsForm}, name, "")
		}},
	{flagDoc{Name: "oauth-callback-port", Arg: "N", Group: groupOAuth, Default: "derived",
		Help: "port the browser comes back to (default: derived from the URL, stable across runs; the next one when taken)",
		Doc:  "the port the browser comes back to; by default one derived from the server URL (stable across runs), moving on when it is taken"},
		intFlag(func(c *config) *int { return &c.oauth.CallbackPort }, 0)},
	{flagDoc{Name: "oauth-callback-host", Arg: "HOST", Group: groupOAuth,
		Help: "host the browser comes back to: 127.0.0.1 (default), localhost or ::1; the callback listens on loopback only",
		Doc:  "the host the browser comes back to: `127.0.0.1`, `localhost` or `::1`; anything else is refused (exit 2)"},
		stringFlag(func(c *config) *string { return &c.oauth.CallbackHost }, "127.0.0.1")},
	{flagDoc{Name: "host", Arg: "HOST", Group: groupOAuth,
		Help: "mcp-remote's name for --oauth-callback-host",
		Doc:  "mcp-remote's name for `--oauth-callback-host`"},
		func(fs *flag.FlagSet, name string, c *config) {
			fs.Func(name, "", func(v string) error { c.oauth.CallbackHost = v; return nil })
		}},
	{flagDoc{Arg: "URL PORT", Group: groupOAuth,
		Help: "mcp-remote's callback port after the URL: as --oauth-callback-port PORT",
		Doc:  "mcp-remote's callback port after the URL; the same as `--oauth-callback-port PORT`"},
		nil},
	{flagDoc{Name: "static-oauth-client-info", Arg: "JSON|@FILE", Group: groupOAuth,
		Help: `a pre-registered client: {"client_id": "...", "client_secret": "..."}; otherwise the proxy registers itself`,
		Doc:  "a pre-registered client: `{\"client_id\": \"…\", \"client_secret\": \"…\"}` (`token_endpoint_auth_method` and `issuer` optional)"},
		stringFlag(func(c *config) *string { return &c.oauth.clientInfo }, "")},
	{flagDoc{Name: "static-oauth-client-metadata", Arg: "JSON|@FILE", Group: groupOAuth,
		Help: `client metadata merged into the dynamic registration (e.g. {"client_name": "..."})`,
		Doc:  "client metadata merged into the dynamic registration (e.g. `{\"client_name\": \"…\"}`)"},
		stringFlag(func(c *config) *string { return &c.oauth.clientMetadata }, "")},
	{flagDoc{Name: "oauth-client-metadata-url", Arg: "URL", Group: groupOAuth,
		Help: "an https URL of the client's metadata document, used as client_id where the authorization server supports it",
		Doc:  "an `https://` URL of a Client ID Metadata Document, used as `client_id` where the authorization server supports it"},
		stringFlag(func(c *config) *string { return &c.oauth.ClientMetadataURL }, "")},
	{flagDoc{Name: "resource", Arg: "URL", Group: groupOAuth, Default: "the server's",
		Help: "the resource (RFC 8707) to ask tokens for (default: the server's own, from its metadata)",
		Doc:  "the resource (RFC 8707) to ask tokens for"},
		stringFlag(func(c *config) *string { return &c.oauth.Resource }, "")},
	{flagDoc{Name: "oauth-scope", Arg: "SCOPES", Group: groupOAuth, Default: "the server's",
		Help: "the scopes to ask for, space separated (default: what the server asks for)",
		Doc:  "the scopes to ask for, space separated"},
		stringFlag(func(c *config) *string { return &c.oauth.Scope }, "")},

	{flagDoc{Name: "version", Group: groupActions, Action: true, NotInEntry: true,
		Help: "print the version and exit",
		Doc:  "print the version, the commit and the Go version, and exit"},
		boolFlag(func(c *config) *bool { return &c.version })},
	{flagDoc{Name: "help", Aliases: []string{"h"}, Group: groupActions, Action: true,
		Help: "print this help and exit",
		Doc:  "print the help and exit"},
		boolFlag(func(c *config) *bool { return &c.help })},
}

// isOAuthFlag reports whether the proxy's flag name only matters when OAuth
// is on: the flags of the OAuth group, but --host, which is named last.
func isOAuthFlag(name string) bool {
	i := slices.IndexFunc(proxyFlags, func(s flagSpec[config]) bool { return s.Name == name })
	return i >= 0 && proxyFlags[i].Group == groupOAuth && name != "host"
}

// authConfig is the parsed command line of `auth`: some of the proxy's
// flags, and its own.
type authConfig struct {
	config
	verb  string
	paste bool // --no-browser
	json  bool
}

var authFlagGroups = []flagGroup{
	{Key: "", Title: "Flags (give the same --oauth-store, client and resource flags as the proxy uses):"},
}

// authFlags is auth's flag table.
var authFlags = []flagSpec[authConfig]{
	proxyFlag("url", "the server, instead of the argument (or $"+envURL+")", "the server, instead of the argument or `$"+envURL+"`"),
	{flagDoc{Name: "no-browser",
		Help: "login: print the sign-in address and read the address the browser was sent to from stdin (no listener; headless use)",
		Doc:  "`login`: print the sign-in address and read the address the browser was sent to from stdin (no listener; headless use)"},
		boolFlag(func(c *authConfig) *bool { return &c.paste })},
	{flagDoc{Name: "json",
		Help: "status: print a JSON object",
		Doc:  "`status`: print a JSON object"},
		boolFlag(func(c *authConfig) *bool { return &c.json })},
	proxyFlag("oauth-store", "the token store (default: the user config dir, mcp-tasks-proxy/oauth)", "the token store"),
	proxyFlag("oauth-browser", "login: open the sign-in page with CMD URL", "`login`: open the sign-in page with CMD URL"),
	proxyFlag("oauth-no-browser", "login: print the address instead of opening a browser, and wait for the browser to come back to the loopback callback",
		"`login`: print the address instead of opening a browser, and wait for the browser to come back to the loopback callback"),
	proxyFlag("auth-timeout", "how long the sign-in may take: seconds (120) or a duration (default 2m)",
		"how long the sign-in may take: seconds (`120`) or a duration"),
	proxyFlag("oauth-callback-port", "login: the callback's port (default: derived from the URL)", "`login`: the callback's port"),
	proxyFlag("oauth-callback-host", "login: 127.0.0.1 (default), localhost or ::1", "`login`: `127.0.0.1`, `localhost` or `::1`"),
	proxyFlag("static-oauth-client-info", "a pre-registered client", ""),
	proxyFlag("static-oauth-client-metadata", "metadata for the dynamic registration", ""),
	proxyFlag("oauth-client-metadata-url", "the client's metadata document", ""),
	proxyFlag("resource", "the resource (RFC 8707) to ask tokens for", ""),
	proxyFlag("oauth-scope", "the scopes to ask for, space separated", ""),
	proxyFlag("ca-file", "", ""),
	proxyFlag("insecure", "skip TLS certificate verification (dangerous)", "skip TLS certificate verification"),
	proxyFlag("allow-http", "allow plain http:// to a host other than this machine", "allow plain `http://` to a host other than this machine"),
	proxyFlag("help", "", ""),
}

// proxyFlag is the proxy's flag name for auth, whose config holds the
// proxy's: the same parser and words, unless help or doc is given (help
// alone also stands for the README). It is listed in auth's one --help
// section.
func proxyFlag(name, help, doc string) flagSpec[authConfig] {
	i := slices.IndexFunc(proxyFlags, func(s flagSpec[config]) bool { return s.Name == name })
	s := sharedAll(proxyFlags[i:i+1], func(a *authConfig) *config { return &a.config })[0] // i is -1, and this panics, for a name the proxy has not
	s.Group = ""
	if help != "" {
		s.Help, s.Doc = help, doc
	}
	if doc != "" {
		s.Doc = doc
	}
	return s
}

// checkFlagTable is check's own flags; checkFlagSet adds the proxy's.
var checkFlagTable = []flagSpec[checkConfig]{
	{flagDoc{Name: "json",
		Help: "print one JSON object, for scripts"},
		boolFlag(func(c *checkConfig) *bool { return &c.json })},
	{flagDoc{Name: "timeout", Arg: "D",
		Help: "bound for the whole check: seconds (30) or a duration (default 30s)",
		Doc:  "bound for the whole check: seconds (`30`) or a duration"},
		durationFlag(func(c *checkConfig) *time.Duration { return &c.timeout }, 30*time.Second, false)},
	helpFlag[checkConfig](func(c *checkConfig) *bool { return &c.help }),
}

// configFlagTable is config's own flags; its flagSet adds the proxy's.
var configFlagTable = []flagSpec[configCmd]{
	{flagDoc{Name: "name", Arg: "NAME", Default: "from the URL's host",
		Help: "the server's name in the host (default: from the URL's host)",
		Doc:  "the server's name in the host"},
		stringFlag(func(c *configCmd) *string { return &c.name }, "")},
	{flagDoc{Name: "npx",
		Help: "launch with 'npx -y mcp-tasks-proxy' instead of this binary's absolute path",
		Doc:  "launch with `npx -y mcp-tasks-proxy` instead of this binary's absolute path"},
		boolFlag(func(c *configCmd) *bool { return &c.npx })},
	{flagDoc{Name: "write",
		Help: "merge the entry into the host's file: a backup is made first, the rest of the file is kept, and the file changed is named"},
		boolFlag(func(c *configCmd) *bool { return &c.write })},
	{flagDoc{Name: "workspace",
		Help: "cursor, vscode: the project's file in the current directory instead of the user's",
		Doc:  "`cursor`, `vscode`: the project's file in the current directory instead of the user's"},
		boolFlag(func(c *configCmd) *bool { return &c.workspace })},
	{flagDoc{Name: "file", Arg: "PATH", Default: "the host's",
		Help: "the file to write instead of the host's default",
		Doc:  "the file `--write` writes instead of the host's default"},
		stringFlag(func(c *configCmd) *string { return &c.file }, "")},
	helpFlag[configCmd](func(c *configCmd) *bool { return &c.help }),
}

// helpOnly is the command line of the commands whose only flag is --help.
type helpOnly struct{ help bool }

// helpOnlyFlags is the table of trace, completion and version.
var helpOnlyFlags = []flagSpec[helpOnly]{
	helpFlag[helpOnly](func(c *helpOnly) *bool { return &c.help }),
}

// helpFlag is --help, -h of a subcommand.
func helpFlag[T any](p func(*T) *bool) flagSpec[T] {
	return flagSpec[T]{flagDoc{Name: "help", Aliases: []string{"h"}, Action: true,
		Help: "print this help and exit",
		Doc:  "print the help and exit"},
		boolFlag(p)}
}

// plainFlagGroups is the one "Flags:" section of a subcommand's --help.
var plainFlagGroups = []flagGroup{{Key: "", Title: "Flags:"}}
