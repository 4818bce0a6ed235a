package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/demo/authserver"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/oauth"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
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
The proxy's flags that shape requests apply as they would in a host's entry:
--header, --header-file, --ca-file, --insecure, --allow-http, --connect-timeout,
--oauth-store (a stored sign-in is used; check never opens a browser), --protocol,
--transport (http-first, the default, tries the old HTTP+SSE transport when the
server refuses the POST; http-only never tries it; sse-first and sse-only try it
first).

Exit status: 0 when the proxy can use the server; 1 when it cannot (the reason
is printed); 2 on a usage error; 3 when the server wants a sign-in first (run
mcp-tasks-proxy auth login URL).
`

// Exit statuses of check.
const (
	checkUsable   = 0
	checkUnusable = 1
	checkSignIn   = 3
)

// checkReport is what check found. Its JSON form is for scripts; its
// field names are stable.
// initialized records what a 2025-era initialize result says: the
// version (the era), the server's info and capabilities, and tasks. It
// returns the capabilities.
func (r *checkReport) initialized(result gjson.Result) gjson.Result {
	if version := result.Get("protocolVersion").String(); version != "" {
		r.Era, r.Versions = version, []string{version}
	}
	if info := result.Get("serverInfo"); info.IsObject() {
		r.ServerInfo = json.RawMessage(info.Raw)
	}
	caps := result.Get("capabilities")
	if caps.IsObject() {
		r.Capabilities = json.RawMessage(caps.Raw)
	}
	r.Tasks = caps.Get("tasks").Exists()
	return caps
}

type checkReport struct {
	URL    string `json:"url"`
	Usable bool   `json:"usable"`
	// Reason says why the server is not usable, or is empty.
	Reason string `json:"reason,omitempty"`
	// Era is "2026-07-28", the 2025 (or 2024-11-05) version the server
	// negotiated, or "unknown".
	Era string `json:"era"`
	// Transport is "streamable-http", "http+sse" (the old HTTP+SSE
	// transport of MCP 2024-11-05, passed through; also when its endpoint
	// event names another origin, which is refused), "not-streamable-http"
	// (the POST was refused, and no HTTP+SSE event stream opened, or
	// --transport http-only kept check from trying one) or "" when nothing
	// answered.
	Transport    string          `json:"transport,omitempty"`
	Versions     []string        `json:"versions,omitempty"`
	ServerInfo   json.RawMessage `json:"serverInfo,omitempty"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	Extensions   []string        `json:"extensions,omitempty"`
	// Tasks: the server declares the tasks extension (2026) or the tasks
	// capability (2025).
	Tasks     bool         `json:"tasks"`
	Tools     *listCount   `json:"tools,omitempty"`
	Prompts   *listCount   `json:"prompts,omitempty"`
	Resources *listCount   `json:"resources,omitempty"`
	Filtered  []hiddenTool `json:"filteredTools,omitempty"`
	// Base64Names is "accepted", "refused" (the server answers -32020 to
	// the Base64 Mcp-Name form; the proxy then resends raw UTF-8), or
	// "unknown"; empty for a 2025 server, which reads no Mcp-Name.
	Base64Names string      `json:"base64Names,omitempty"`
	Auth        *authReport `json:"auth,omitempty"`
	// RoundTripMs is the first request's round trip, in milliseconds.
	RoundTripMs float64 `json:"roundTripMs,omitempty"`
	HTTPStatus  int     `json:"httpStatus,omitempty"`
	// Next is what to do next, when there is something.
	Next string `json:"next,omitempty"`
}

type listCount struct {
	Count int    `json:"count"`
	Error string `json:"error,omitempty"`
}

type hiddenTool struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

type authReport struct {
	// Required: the server answered 401 (or 403) without a usable token.
	Required bool `json:"required"`
	// SignedIn: a token for the server is in the store.
	SignedIn            bool     `json:"signedIn"`
	Challenge           string   `json:"challenge,omitempty"`
	ResourceMetadata    string   `json:"resourceMetadata,omitempty"`
	Resource            string   `json:"resource,omitempty"`
	AuthorizationServer string   `json:"authorizationServer,omitempty"`
	Scopes              []string `json:"scopes,omitempty"`
	DynamicRegistration bool     `json:"dynamicRegistration,omitempty"`
	StaticToken         bool     `json:"staticToken,omitempty"`
	DiscoveryError      string   `json:"discoveryError,omitempty"`
}

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
	newTableFlagSet("mcp-tasks-proxy check", checkFlagTable, &f) // the defaults
	proxyFS := newFlagSet(&config{})
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "json":
			f.json = true
			if hasValue {
				b, err := parseBoolFlag(name, value)
				if err != nil {
					return f, nil, err
				}
				f.json = b
			}
			continue
		case "h", "help":
			f.help = true
			continue
		case "timeout":
			if !hasValue {
				if i+1 >= len(args) {
					return f, nil, usagef("flag --timeout needs a value: seconds (30) or a duration (30s)")
				}
				i++
				value = args[i]
			}
			d, err := time.ParseDuration(value)
			if n, nerr := strconv.Atoi(value); nerr == nil {
				d, err = time.Duration(n)*time.Second, nil
			}
			if err != nil || d <= 0 {
				return f, nil, usagef("--timeout %q: give seconds (30) or a duration (30s, 2m)", value)
			}
			f.timeout = d
			continue
		}
		rest = append(rest, a)
		if fl := proxyFS.Lookup(name); fl != nil && !hasValue {
			if bf, ok := fl.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
				if i+1 < len(args) {
					i++
					rest = append(rest, args[i])
				}
			}
		}
	}
	return f, rest, nil
}

// checkCommand runs `mcp-tasks-proxy check`.
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
	if cfg.help {
		fmt.Fprint(stdout, checkHelpText)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	url := cfg.url
	if cfg.demo {
		var stopDemo func()
		switch {
		case cfg.demoLegacy:
			url, _, stopDemo, err = demo.StartLegacy(ctx)
		case cfg.demoOAuth:
			url, _, stopDemo, err = demo.StartWithOAuth(ctx, authserver.Config{}, nil)
		default:
			url, stopDemo, err = demo.Start(ctx)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcp-tasks-proxy: cannot start the demo server: %v\n", err)
			return 1
		}
		defer stopDemo()
	}
	var caPEM []byte
	if cfg.caFile != "" {
		if caPEM, err = os.ReadFile(cfg.caFile); err != nil {
			fmt.Fprintf(stderr, "mcp-tasks-proxy: --ca-file: %v\n", err)
			return 2
		}
	}
	ck := &checker{cfg: cfg, url: url, caPEM: caPEM}
	rep := ck.run(ctx)
	if f.json {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		writeCheckReport(stdout, rep, useColor(stdout, getenv))
	}
	switch {
	case rep.Usable:
		return checkUsable
	case rep.Auth != nil && rep.Auth.Required && rep.Auth.AuthorizationServer != "":
		return checkSignIn
	}
	return checkUnusable
}

// useColor: a terminal, and NO_COLOR unset (https://no-color.org).
func useColor(w io.Writer, getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && isTerminal(w)
}

// checker runs one check.
type checker struct {
	cfg      *config
	url      string
	caPEM    []byte
	client   *routing.Client
	oauth    *oauth.Client
	ids      atomic.Int64
	rep      checkReport
	oauthErr error // why the OAuth client is unavailable
	// session headers of a 2025 server.
	legacyHeader http.Header
	// sseErr is why --transport sse-first found no HTTP+SSE stream.
	sseErr error
}

func (c *checker) nextID() []byte { return strconv.AppendInt(nil, c.ids.Add(1), 10) }

func (c *checker) run(ctx context.Context) *checkReport {
	r := &c.rep
	r.URL, r.Era = routing.Redact(c.url), "unknown"
	if err := c.setup(); err != nil {
		r.Reason = err.Error()
		return r
	}
	defer c.client.CloseIdle()
	if c.oauth != nil {
		defer c.oauth.Close()
	}
	// --transport sse-first and sse-only try the HTTP+SSE transport first,
	// as the bridge does (sse-first not when --protocol modern asks for a
	// 2026 server).
	switch t := c.cfg.transport.value; {
	case t == bridge.TransportSSEOnly && c.cfg.protocol == bridge.ProtocolModern:
		r.Reason = "--transport sse-only reaches only old HTTP+SSE servers (MCP 2024-11-05), but --protocol modern demands a 2026-07-28 server; drop one of them"
		return r
	case t == bridge.TransportSSEOnly || t == bridge.TransportSSEFirst && c.cfg.protocol != bridge.ProtocolModern:
		err := c.sse(ctx)
		switch {
		case err == nil:
			return r
		case t == bridge.TransportSSEOnly || ctx.Err() != nil || isEndpointError(err):
			c.sseFailed(ctx, err, "")
			return r
		}
		c.sseErr = err
	}
	// The first request: server/discover, as the bridge's probe sends it.
	meta := c.meta()
	id := c.nextID()
	start := time.Now()
	resp, err := c.client.Post(routing.Unattended(ctx), capabilities.DiscoverBody(id, meta), nil)
	if err != nil {
		r.Reason = c.describeErr(err)
		return r
	}
	r.RoundTripMs = float64(time.Since(start).Microseconds()) / 1000
	r.HTTPStatus = resp.Status
	h := resp.Header
	resp.Close()
	if resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden {
		c.authReport(ctx, resp.Status, h)
		return r
	}
	if c.oauth != nil {
		if st, err := c.oauth.Status(); err == nil && st.SignedIn {
			r.Auth = &authReport{SignedIn: true}
		}
	}
	// The era, by the bridge's own prober.
	p := &capabilities.Prober{Client: c.client, NextID: c.nextID}
	v := p.Probe(routing.Unattended(ctx), meta)
	switch v.Era {
	case capabilities.Modern:
		r.Era, r.Transport = protocol.ModernVersion, "streamable-http"
		c.modern(ctx, v.Discover)
	case capabilities.Legacy:
		c.legacy(ctx)
	default:
		r.Reason = v.Err.Error()
		if v.Status == http.StatusUnauthorized || v.Status == http.StatusForbidden {
			c.authReport(ctx, v.Status, nil)
		}
	}
	return r
}

// setup builds the routing client, with the stored sign-in when there is one.
func (c *checker) setup() error {
	var auth routing.Auth
	if !c.cfg.oauthOff {
		hc, err := oauthHTTPClient(c.caPEM, c.cfg.insecure, c.cfg.connectTimeout)
		if err != nil {
			return err
		}
		cl, err := oauth.New(c.cfg.oauth.oauthConfig(c.url, c.cfg.allowHTTP, hc, nil, io.Discard))
		c.oauthErr = err
		if err == nil {
			c.oauth = cl
			if st, err := cl.Status(); err == nil && st.SignedIn {
				auth = cl
			}
		}
	}
	client, err := routing.New(routing.Config{
		Auth:           auth,
		URL:            c.url,
		RootCAs:        c.caPEM,
		Insecure:       c.cfg.insecure,
		Header:         c.cfg.header,
		ConnectTimeout: c.cfg.connectTimeout,
		UserAgent:      "mcp-tasks-proxy/" + versionString() + " (check)",
	})
	if err != nil {
		return err
	}
	c.client = client
	return nil
}

func (c *checker) meta() rewrite.MetaBlock {
	info := fmt.Appendf(nil, `{"name":"mcp-tasks-proxy-check","version":%q}`, versionString())
	return capabilities.Meta(capabilities.ClientCapabilities([]byte(`{}`)), info, "")
}

// describeErr is a transport failure, for the reason line.
func (c *checker) describeErr(err error) string {
	var te *routing.TransportError
	if errors.As(err, &te) {
		switch te.Kind {
		case routing.KindDial:
			return err.Error() + ": is the server running, and is the URL right?"
		case routing.KindTimeout:
			return err.Error() + ": the server did not answer in time"
		case routing.KindAuth:
			return err.Error()
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the check took longer than --timeout; the server did not answer in time"
	}
	return err.Error()
}

// authReport fills in what sign-in the server wants.
func (c *checker) authReport(ctx context.Context, status int, h http.Header) {
	r := &c.rep
	a := &authReport{Required: true}
	r.Auth = a
	if c.oauth != nil {
		if st, err := c.oauth.Status(); err == nil {
			a.SignedIn = st.SignedIn
		}
	}
	if h != nil {
		a.Challenge = strings.Join(h.Values("WWW-Authenticate"), ", ")
		if chs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate")); err == nil {
			for _, ch := range chs {
				if ch.Scheme == "bearer" {
					a.ResourceMetadata = ch.Params["resource_metadata"]
					if s := strings.Fields(ch.Params["scope"]); len(s) > 0 {
						a.Scopes = s
					}
				}
			}
		}
	}
	if c.cfg.oauthOff {
		a.StaticToken = true
		r.Reason = fmt.Sprintf("the server refused the Authorization header given with --header (HTTP %d): check the token", status)
		r.Next = "check the token passed with --header or --header-file"
		return
	}
	if c.oauth == nil {
		r.Reason = fmt.Sprintf("the server wants a sign-in (HTTP %d), and the OAuth client is unavailable: %v", status, c.oauthErr)
		return
	}
	d, err := c.oauth.Discover(ctx, h)
	switch {
	case err == nil:
		a.Resource, a.AuthorizationServer = d.Resource, d.Issuer
		if len(a.Scopes) == 0 {
			a.Scopes = d.Scopes
		}
		a.DynamicRegistration = d.RegistrationEndpoint != ""
	case oauth.IsNotOAuth(err):
		a.StaticToken = true
		a.DiscoveryError = err.Error()
		r.Reason = fmt.Sprintf("the server wants a token (HTTP %d) but publishes no OAuth metadata", status)
		r.Next = "pass its token with --header 'Authorization: Bearer ${TOKEN}'"
		return
	default:
		a.DiscoveryError = err.Error()
	}
	switch {
	case status == http.StatusForbidden:
		r.Reason = "the server refused the stored sign-in (HTTP 403): " + capabilities.ForbiddenHint(r.URL, h)
		r.Next = "mcp-tasks-proxy auth login " + r.URL
	case a.SignedIn:
		r.Reason = "the server refused the stored sign-in (HTTP 401), and it could not be refreshed"
		r.Next = "mcp-tasks-proxy auth login " + r.URL
	case a.AuthorizationServer != "":
		r.Reason = "the server wants an OAuth sign-in (HTTP 401)"
		r.Next = "mcp-tasks-proxy auth login " + r.URL
	default:
		r.Reason = fmt.Sprintf("the server wants a sign-in (HTTP %d), but its authorization server could not be found: %s", status, a.DiscoveryError)
	}
}

// post sends one request body and returns its answer.
func (c *checker) post(ctx context.Context, body, id []byte) ([]byte, int, error) {
	resp, err := c.client.Post(routing.Unattended(ctx), body, nil)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Close()
	msg, err := resp.Answer(id)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, resp.Status, err
	}
	if len(msg) == 0 {
		return nil, resp.Status, fmt.Errorf("no answer (HTTP %d)", resp.Status)
	}
	return msg, resp.Status, nil
}

// modernCall makes a 2026 request the way the bridge's internal calls do:
// a minted id and the _meta envelope.
func (c *checker) modernCall(ctx context.Context, method string, params []byte) ([]byte, error) {
	frame := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":0,"method":%q,"params":%s}`, method, params)
	f, err := rewrite.Parse(frame)
	if err != nil {
		return nil, err
	}
	id := c.nextID()
	body, err := rewrite.RequestUp(&f, rewrite.Up{ID: id, Meta: c.meta()})
	if err != nil {
		return nil, err
	}
	msg, _, err := c.post(ctx, body, id)
	return msg, err
}

func (c *checker) modern(ctx context.Context, discover []byte) {
	r := &c.rep
	d := gjson.ParseBytes(discover)
	for _, v := range d.Get("supportedVersions").Array() {
		r.Versions = append(r.Versions, v.String())
	}
	info := d.Get("_meta." + gjson.Escape(protocol.MetaServerInfo))
	if !info.IsObject() {
		info = d.Get("serverInfo")
	}
	if info.IsObject() {
		r.ServerInfo = json.RawMessage(info.Raw)
	}
	caps := d.Get("capabilities")
	if caps.IsObject() {
		r.Capabilities = json.RawMessage(caps.Raw)
	}
	caps.Get("extensions").ForEach(func(k, _ gjson.Result) bool {
		r.Extensions = append(r.Extensions, k.String())
		return true
	})
	_, r.Tasks = capabilities.ServerCapabilities([]byte(caps.Raw), true)
	call := func(ctx context.Context, method string, params []byte) ([]byte, error) {
		return c.modernCall(ctx, method, params)
	}
	r.Tools = c.list(ctx, call, caps, "tools", true)
	r.Prompts = c.list(ctx, call, caps, "prompts", false)
	r.Resources = c.list(ctx, call, caps, "resources", false)
	c.base64(ctx)
	r.Usable = true
}

// maxCheckPages bounds a list walk.
const maxCheckPages = 50

// list walks every page of kind/list and counts the items; for tools it
// runs the bridge's tools/list rewrite and reports the tools it removes.
func (c *checker) list(ctx context.Context, call func(context.Context, string, []byte) ([]byte, error), caps gjson.Result, kind string, tools bool) *listCount {
	if !caps.Get(kind).Exists() {
		return nil
	}
	lc := &listCount{}
	var cursor *string
	for range maxCheckPages {
		p := []byte(`{}`)
		if cursor != nil {
			p = append(rewrite.AppendString([]byte(`{"cursor":`), *cursor), '}')
		}
		msg, err := call(ctx, kind+"/list", p)
		if err != nil {
			lc.Error = c.describeErr(err)
			return lc
		}
		m, err := rewrite.Parse(msg)
		if err != nil || m.Kind != rewrite.KindResponse {
			lc.Error = "the answer is not a JSON-RPC response"
			return lc
		}
		if e := m.Error; e.Exists() {
			lc.Error = fmt.Sprintf("error %d: %s", e.Get("code").Int(), e.Get("message").String())
			return lc
		}
		lc.Count += len(m.Result.Get(kind).Array())
		if tools && c.rep.Era == protocol.ModernVersion {
			if d, err := rewrite.ResponseDown(&m, rewrite.Down{ID: []byte("0"), Method: "tools/list"}); err == nil {
				for _, rj := range d.Rejected {
					c.rep.Filtered = append(c.rep.Filtered, hiddenTool{Name: rj.Tool, Reason: rj.Reason})
				}
			}
		}
		next := m.Result.Get("nextCursor")
		if next.Type != gjson.String || (cursor != nil && next.Str == *cursor) {
			break
		}
		cursor = &next.Str
	}
	return lc
}

// base64Probe is a prompt name no server has, which needs the Base64 form.
const base64Probe = "mcp-tasks-proxy-check-ü"

// base64 sends prompts/get for a name that is not ASCII, so that Mcp-Name
// goes in the Base64 form: a -32020 (header mismatch) means the server does
// not decode it; anything else (usually "no such prompt") means it does.
func (c *checker) base64(ctx context.Context) {
	params := append(rewrite.AppendString([]byte(`{"name":`), base64Probe), '}')
	msg, err := c.modernCall(ctx, "prompts/get", params)
	switch {
	case err != nil:
		c.rep.Base64Names = "unknown"
	case gjson.GetBytes(msg, "error.code").Int() == protocol.CodeHeaderMismatch:
		c.rep.Base64Names = "refused"
	default:
		c.rep.Base64Names = "accepted"
	}
}

// legacy looks at a 2025 server: initialize, the lists, then the end of
// the session, as the passthrough does.
func (c *checker) legacy(ctx context.Context) {
	r := &c.rep
	r.Era = "2025"
	id := c.nextID()
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"mcp-tasks-proxy-check","version":%q}}}`,
		id, protocol.LegacyVersion, versionString())
	resp, err := c.client.Send(routing.Unattended(ctx), http.MethodPost, body, nil)
	if err != nil {
		r.Reason = c.describeErr(err)
		return
	}
	status, sid := resp.Status, resp.Header.Get("Mcp-Session-Id")
	msg, rerr := resp.Answer(id)
	resp.Close()
	res := gjson.ParseBytes(msg)
	if status >= 400 && status < 500 && !res.Get("result").Exists() {
		// A POST refused with 4xx is how old HTTP+SSE servers (2024-11-05)
		// show.
		c.refused(ctx, status)
		return
	}
	if rerr != nil && !errors.Is(rerr, io.EOF) || !res.Get("result").IsObject() {
		r.Reason = fmt.Sprintf("the server answered initialize with HTTP %d and no InitializeResult; check the URL", status)
		if e := res.Get("error"); e.Exists() {
			r.Reason = fmt.Sprintf("the server refused initialize: error %d: %s", e.Get("code").Int(), e.Get("message").String())
		}
		return
	}
	r.Transport = "streamable-http"
	caps := r.initialized(res.Get("result"))
	c.legacyHeader = http.Header{}
	if sid != "" {
		c.legacyHeader.Set("Mcp-Session-Id", sid)
	}
	if version != "" {
		c.legacyHeader.Set("MCP-Protocol-Version", version)
	}
	if resp, err := c.client.Send(routing.Unattended(ctx), http.MethodPost, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), c.legacyHeader); err == nil {
		resp.Close()
	}
	call := func(ctx context.Context, method string, params []byte) ([]byte, error) {
		id := c.nextID()
		body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
		resp, err := c.client.Send(routing.Unattended(ctx), http.MethodPost, body, c.legacyHeader)
		if err != nil {
			return nil, err
		}
		defer resp.Close()
		msg, err := resp.Answer(id)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(msg) == 0 {
			return nil, fmt.Errorf("no answer (HTTP %d)", resp.Status)
		}
		return msg, nil
	}
	r.Tools = c.list(ctx, call, caps, "tools", true)
	r.Prompts = c.list(ctx, call, caps, "prompts", false)
	r.Resources = c.list(ctx, call, caps, "resources", false)
	if sid != "" {
		if resp, err := c.client.Send(routing.Unattended(ctx), http.MethodDelete, nil, c.legacyHeader); err == nil {
			resp.Close()
		}
	}
	r.Usable = true
}

// refused follows a Streamable HTTP POST refused with a 4xx: the server may
// speak the old HTTP+SSE transport of MCP 2024-11-05, which check tries as
// the bridge does, unless --transport rules it out or has tried it already.
func (c *checker) refused(ctx context.Context, status int) {
	r := &c.rep
	r.Era = "unknown"
	why := fmt.Sprintf("not Streamable HTTP: the server refused POST with HTTP %d", status)
	switch c.cfg.transport.value {
	case bridge.TransportHTTPOnly:
		r.Transport = "not-streamable-http"
		r.Reason = why + "; it may be an old HTTP+SSE server (MCP 2024-11-05), which --transport http-only keeps check from trying"
		r.Next = "drop --transport http-only (or use --transport sse-only) to try the old HTTP+SSE transport"
		return
	case bridge.TransportSSEFirst:
		if c.sseErr != nil {
			c.sseFailed(ctx, c.sseErr, why+", and ")
			return
		}
	}
	if err := c.sse(ctx); err != nil {
		c.sseFailed(ctx, err, why+", and ")
	}
}

func isEndpointError(err error) bool {
	var ee *routing.EndpointError
	return errors.As(err, &ee)
}

// sseFailed reports that no HTTP+SSE stream opened; prefix says what was
// tried before.
func (c *checker) sseFailed(ctx context.Context, err error, prefix string) {
	r := &c.rep
	r.Era = "unknown"
	switch {
	case isEndpointError(err):
		r.Transport = "http+sse" // a stream opened, but its endpoint is refused
	case prefix != "":
		r.Transport = "not-streamable-http"
	}
	var nl *routing.NotLegacyError
	if errors.As(err, &nl) && (nl.Status == http.StatusUnauthorized || nl.Status == http.StatusForbidden) {
		r.HTTPStatus = nl.Status
		c.authReport(ctx, nl.Status, nil)
		return
	}
	r.Reason = prefix + c.describeErr(err)
	if c.cfg.transport.value == bridge.TransportSSEOnly && !isEndpointError(err) {
		r.Reason += "; --transport sse-only allows only the old HTTP+SSE transport (MCP 2024-11-05)"
		r.Next = "for a Streamable HTTP server drop --transport sse-only, or use --transport http-first"
	}
}

// sse looks at an old HTTP+SSE server (MCP 2024-11-05), as the bridge's
// passthrough reaches it: GET the event stream, read its endpoint, POST
// initialize, notifications/initialized and the lists there, and read each
// answer from the stream. The stream is closed at the end. err is why no
// stream with an endpoint event opened; anything later is in the report.
func (c *checker) sse(ctx context.Context) error {
	r := &c.rep
	sctx, cancel := context.WithCancel(routing.Unattended(ctx))
	defer cancel()
	wait := routing.DefaultEndpointWait
	if dl, ok := ctx.Deadline(); ok {
		wait = max(min(wait, time.Until(dl)), time.Millisecond)
	}
	st, err := c.client.OpenLegacy(sctx, wait)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	defer st.Close()
	r.Transport, r.HTTPStatus, r.Era = "http+sse", st.Status, "unknown"
	send := func(body []byte) error {
		resp, err := c.client.SendTo(sctx, st.Endpoint, body)
		if err != nil {
			return err
		}
		status := resp.Status
		resp.Close()
		if status < 200 || status > 299 {
			return fmt.Errorf("the message endpoint refused the POST with HTTP %d", status)
		}
		return nil
	}
	// call POSTs a request and reads the stream up to its answer; server
	// requests and notifications on the way are skipped.
	call := func(_ context.Context, method string, params []byte) ([]byte, error) {
		id := c.nextID()
		if err := send(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)); err != nil {
			return nil, err
		}
		for {
			msg, err := st.Next()
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("the HTTP+SSE event stream ended before the answer to %s: %w", method, err)
			}
			if ev := st.Event(); ev != "" && ev != "message" {
				continue
			}
			m, err := rewrite.Parse(rewrite.TrimFrame(msg))
			if err == nil && m.Kind == rewrite.KindResponse && m.ID.Raw == string(id) {
				return append([]byte(nil), m.Raw...), nil
			}
		}
	}
	params := fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"mcp-tasks-proxy-check","version":%q}}`,
		protocol.LegacyVersion, versionString())
	start := time.Now()
	msg, err := call(ctx, "initialize", params)
	if err != nil {
		r.Reason = "the HTTP+SSE server opened its event stream, but initialize failed: " + c.describeErr(err)
		return nil
	}
	r.RoundTripMs = float64(time.Since(start).Microseconds()) / 1000
	res := gjson.ParseBytes(msg)
	result := res.Get("result")
	if !result.IsObject() {
		r.Reason = "the HTTP+SSE server answered initialize with no InitializeResult"
		if e := res.Get("error"); e.Exists() {
			r.Reason = fmt.Sprintf("the HTTP+SSE server refused initialize: error %d: %s", e.Get("code").Int(), e.Get("message").String())
		}
		return nil
	}
	caps := r.initialized(result)
	_ = send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	r.Tools = c.list(ctx, call, caps, "tools", true)
	r.Prompts = c.list(ctx, call, caps, "prompts", false)
	r.Resources = c.list(ctx, call, caps, "resources", false)
	r.Usable = true
	return nil
}

// writeCheckReport prints the report for people: one aligned line per
// fact, the verdict first.
func writeCheckReport(w io.Writer, r *checkReport, color bool) {
	var lines reportLines
	lines.identity(r, color)
	lines.contents(r)
	lines.auth(r)
	if r.RoundTripMs > 0 {
		lines.add("round trip", fmt.Sprintf("%.1f ms", r.RoundTripMs))
	}
	if r.Next != "" {
		lines.add("next", r.Next)
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0]))
	}
	for _, l := range lines {
		fmt.Fprintf(w, "%-*s  %s\n", width+1, l[0]+":", l[1])
	}
}

// reportLines are the lines of a check report: a name and a value each.
type reportLines [][2]string

func (l *reportLines) add(k, v string) { *l = append(*l, [2]string{k, v}) }

// identity adds what the server is: the URL, the verdict (in colour on a
// terminal), the era, the transport, the versions, the server's info,
// capabilities and extensions, and tasks.
func (l *reportLines) identity(r *checkReport, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	verdict := paint("32", "usable")
	if !r.Usable {
		verdict = paint("31", "not usable") + ": " + r.Reason
	}
	l.add("server", r.URL)
	l.add("verdict", verdict)
	switch {
	case r.Era == protocol.ModernVersion:
		l.add("era", "2026-07-28 (modern): the proxy bridges it")
	case strings.HasPrefix(r.Era, "2025") || strings.HasPrefix(r.Era, "2024"):
		l.add("era", r.Era+" (2025 era): the proxy passes it through")
	case r.Transport == "not-streamable-http":
		l.add("era", "unknown")
	}
	switch r.Transport {
	case "streamable-http":
		l.add("transport", "Streamable HTTP")
	case "http+sse":
		l.add("transport", "HTTP+SSE (MCP 2024-11-05 transport): passed through")
	case "not-streamable-http":
		l.add("transport", "not Streamable HTTP (the POST was refused)")
	}
	if len(r.Versions) > 0 {
		l.add("versions", strings.Join(r.Versions, ", "))
	}
	if len(r.ServerInfo) > 0 {
		info := gjson.ParseBytes(r.ServerInfo)
		s := info.Get("name").String() + " " + info.Get("version").String()
		if t := info.Get("title").String(); t != "" {
			s += " (" + t + ")"
		}
		l.add("server info", strings.TrimSpace(s))
	}
	if len(r.Capabilities) > 0 {
		var names []string
		gjson.ParseBytes(r.Capabilities).ForEach(func(k, _ gjson.Result) bool {
			if k.Str != "extensions" {
				names = append(names, k.Str)
			}
			return true
		})
		l.add("capabilities", orNone(strings.Join(names, ", ")))
	}
	if r.Era == protocol.ModernVersion {
		l.add("extensions", orNone(strings.Join(r.Extensions, ", ")))
	}
	if r.Usable {
		tasks := "no: tools/call runs without tasks"
		if r.Tasks {
			tasks = "yes"
		}
		l.add("tasks", tasks)
	}
}

// contents adds what the server offers: tools, prompts and resources, the
// tools the proxy hides, and whether it takes Base64 names.
func (l *reportLines) contents(r *checkReport) {
	for _, list := range []struct {
		name string
		lc   *listCount
	}{{"tools", r.Tools}, {"prompts", r.Prompts}, {"resources", r.Resources}} {
		switch {
		case list.lc == nil && r.Usable:
			l.add(list.name, "not offered")
		case list.lc == nil:
		case list.lc.Error != "":
			l.add(list.name, fmt.Sprintf("%d (listing failed: %s)", list.lc.Count, list.lc.Error))
		case list.name == "tools" && len(r.Filtered) > 0:
			l.add(list.name, fmt.Sprintf("%d (%d hidden by the proxy, below)", list.lc.Count, len(r.Filtered)))
		default:
			l.add(list.name, strconv.Itoa(list.lc.Count))
		}
	}
	for _, t := range r.Filtered {
		l.add("hidden tool", t.Name+": "+t.Reason)
	}
	switch r.Base64Names {
	case "accepted":
		l.add("Base64 names", "accepted")
	case "refused":
		l.add("Base64 names", "refused (-32020): the proxy resends such requests with raw UTF-8 names")
	case "unknown":
		l.add("Base64 names", "unknown (the probe got no answer)")
	}
}

// auth adds the sign-in the server wants, if any.
func (l *reportLines) auth(r *checkReport) {
	if a := r.Auth; a != nil {
		switch {
		case !a.Required && a.SignedIn:
			l.add("auth", "signed in (a stored OAuth token was used)")
		case a.StaticToken:
			l.add("auth", "a static token (no OAuth metadata)")
		default:
			l.add("auth", "OAuth required")
		}
		if a.ResourceMetadata != "" {
			l.add("resource metadata", a.ResourceMetadata)
		}
		if a.Resource != "" {
			l.add("resource", a.Resource)
		}
		if a.AuthorizationServer != "" {
			s := a.AuthorizationServer
			if a.DynamicRegistration {
				s += " (dynamic client registration)"
			}
			l.add("auth server", s)
		}
		if len(a.Scopes) > 0 {
			l.add("scopes", strings.Join(a.Scopes, " "))
		}
	} else if r.Usable {
		l.add("auth", "none needed")
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
