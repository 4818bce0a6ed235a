// Package check looks at an MCP server as the proxy would use it, for
// `mcp-tasks-proxy check`. It runs a real bridge session in process, over
// an in-memory connection (as serve runs one over HTTP), sends what a
// 2025-11-25 client sends at the start of a session (initialize,
// notifications/initialized, tools/list, prompts/list, resources/list and,
// for a 2026-07-28 server, a prompts/get whose name needs the Base64 form
// of Mcp-Name), and reports from the answers: the era and transport the
// session chose (bridge.Session.Reached), what the server said of itself
// (its answers as they came over HTTP, seen by a routing.Observer), the
// counts, the tools the proxy hides, and what sign-in the server wants.
//
// It never opens a browser: the session runs unattended, and its Auth uses
// a stored sign-in only.
package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Config is what a check runs.
type Config struct {
	// Bridge is the session's configuration, as the proxy would run it
	// against the server; its Client's Auth is Auth. The check keeps tasks
	// in memory and reports the era itself (StatePath and OnInitialized
	// are not used).
	Bridge bridge.Config
	// Auth is the Client's Auth (NewAuth).
	Auth *Auth
	// StaticToken: OAuth is off, since an Authorization header was given.
	StaticToken bool
	// Version is the proxy's version, in the initialize's clientInfo.
	Version string
	// TimeoutText names the check's time bound for the reason when it
	// runs out ("--timeout").
	TimeoutText string
}

// endBound bounds the end of the session once the report is made: the
// passthrough's DELETE of its upstream session has a bound of its own
// within it.
const endBound = 3 * time.Second

// Run checks the server and returns the report. ctx bounds the check.
func Run(ctx context.Context, cfg Config) *Report {
	c := &checker{cfg: cfg, rep: &Report{URL: cfg.Bridge.Client.URL(), Era: "unknown"}, wire: newWire(), listed: map[string]bool{}}
	bcfg := cfg.Bridge
	bcfg.StatePath, bcfg.OnInitialized = "", nil // a check leaves no file, and says the era itself
	sess := bridge.New(bcfg)
	cl := start(routing.Unattended(routing.WithObserver(ctx, c.wire)), sess)
	defer cl.end(endBound)
	c.run(ctx, cl, sess)
	return c.rep
}

// checker is one check.
type checker struct {
	cfg    Config
	rep    *Report
	wire   *wire
	listed map[string]bool // the tools the client was shown
}

// run drives the session: the handshake, then the lists.
func (c *checker) run(ctx context.Context, cl *client, sess *bridge.Session) {
	r := c.rep
	params := fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"mcp-tasks-proxy-check","version":%q}}`,
		protocol.LegacyVersion, c.cfg.Version)
	init, err := cl.call(ctx, "initialize", params)
	w := c.wire.snapshot()
	r.HTTPStatus, r.RoundTripMs = w.status, float64(w.rtt.Microseconds())/1000
	if err != nil {
		r.Reason = c.describeErr(err)
		return
	}
	if e := init.Get("error"); e.Exists() {
		c.failed(ctx, e, w)
		return
	}
	r.Era, r.Transport = sess.Reached()
	result := init.Get("result")
	c.identity(result, w.discover)
	if err := cl.send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		r.Reason = c.describeErr(err)
		return
	}
	caps := result.Get("capabilities")
	r.Tools = c.list(ctx, cl, caps, "tools")
	r.Prompts = c.list(ctx, cl, caps, "prompts")
	r.Resources = c.list(ctx, cl, caps, "resources")
	c.hidden(c.wire.snapshot().toolPages)
	if r.Era == protocol.ModernVersion {
		c.base64(ctx, cl)
	}
	if c.cfg.Auth.signedIn() {
		r.Auth = &AuthReport{SignedIn: true}
	}
	r.Usable = true
}

// identity records what the server says of itself: its info and, for a
// 2026-07-28 server, its versions, capabilities and extensions as its
// DiscoverResult gives them; for a 2025 one, its InitializeResult's.
func (c *checker) identity(result, discover gjson.Result) {
	r := c.rep
	if info := result.Get("serverInfo"); info.IsObject() {
		r.ServerInfo = json.RawMessage(info.Raw)
	}
	r.Tasks = result.Get("capabilities.tasks").Exists()
	caps := result.Get("capabilities")
	r.Versions = []string{r.Era}
	if r.Era == protocol.ModernVersion {
		caps, r.Versions = discover.Get("capabilities"), nil
		for _, v := range discover.Get("supportedVersions").Array() {
			r.Versions = append(r.Versions, v.String())
		}
		caps.Get("extensions").ForEach(func(k, _ gjson.Result) bool {
			r.Extensions = append(r.Extensions, k.String())
			return true
		})
	}
	if caps.IsObject() {
		r.Capabilities = json.RawMessage(caps.Raw)
	}
}

// maxPages bounds a list walk.
const maxPages = 50

// list walks every page of kind/list, as a client does, and counts the
// items; nil when the server does not offer kind.
func (c *checker) list(ctx context.Context, cl *client, caps gjson.Result, kind string) *ListCount {
	if !caps.Get(kind).Exists() {
		return nil
	}
	lc := &ListCount{}
	cursor := ""
	for page := 0; page < maxPages; page++ {
		params := []byte(`{}`)
		if page > 0 {
			params = append(rewrite.AppendString([]byte(`{"cursor":`), cursor), '}')
		}
		ans, err := cl.call(ctx, kind+"/list", params)
		if err != nil {
			lc.Error = c.describeErr(err)
			return lc
		}
		if e := ans.Get("error"); e.Exists() {
			lc.Error = fmt.Sprintf("error %d: %s", e.Get("code").Int(), e.Get("message").String())
			return lc
		}
		items := ans.Get("result." + kind).Array()
		lc.Count += len(items)
		if kind == "tools" {
			for _, t := range items {
				c.listed[t.Get("name").String()] = true
			}
		}
		next := ans.Get("result.nextCursor")
		if next.Type != gjson.String || (page > 0 && next.Str == cursor) {
			break
		}
		cursor = next.Str
	}
	return lc
}

// hidden records the tools the server listed that the client was not
// shown, and why: an annotation the proxy refuses (2026-07-28), or a
// pattern of the ignore-tool setting. They count in the tools.
func (c *checker) hidden(pages [][]byte) {
	r := c.rep
	if r.Tools == nil {
		return
	}
	seen := map[string]bool{}
	for _, page := range pages {
		m, err := rewrite.Parse(page)
		if err != nil {
			continue
		}
		why := map[string]string{}
		if r.Era == protocol.ModernVersion {
			if d, err := rewrite.ResponseDown(&m, rewrite.Down{ID: []byte("0"), Method: "tools/list"}); err == nil {
				for _, rj := range d.Rejected {
					why[rj.Tool] = rj.Reason
				}
			}
		}
		for _, t := range m.Result.Get("tools").Array() {
			name := t.Get("name").String()
			if c.listed[name] || seen[name] {
				continue
			}
			seen[name] = true
			reason := why[name]
			if reason == "" {
				reason = "its name matches " + rewrite.HintIgnoreTool.String()
			}
			r.Filtered = append(r.Filtered, HiddenTool{Name: name, Reason: reason})
		}
	}
	r.Tools.Count += len(r.Filtered)
}

// base64Probe is a prompt name no server has, which needs the Base64 form.
const base64Probe = "mcp-tasks-proxy-check-ü"

// base64 sends prompts/get for a name that is not ASCII, so that Mcp-Name
// goes in the Base64 form: a -32020 (header mismatch) from the server means
// it does not decode it (the session then resends the raw name); any other
// answer (usually "no such prompt") means it does.
func (c *checker) base64(ctx context.Context, cl *client) {
	params := append(rewrite.AppendString([]byte(`{"name":`), base64Probe), '}')
	_, _ = cl.call(ctx, "prompts/get", params)
	switch c.wire.snapshot().probe {
	case "refused", "accepted":
		c.rep.Base64Names = c.wire.snapshot().probe
	default:
		c.rep.Base64Names = "unknown"
	}
}

// describeErr is why the session gave no answer, for the reason line.
func (c *checker) describeErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "the check took longer than " + c.cfg.TimeoutText + "; the server did not answer in time"
	}
	return err.Error()
}

// failed records why the session's initialize failed: the sign-in the
// server wants, when it refused one; else the session's own words, with the
// transport its error's data names and what to try next.
func (c *checker) failed(ctx context.Context, e gjson.Result, w seen) {
	r := c.rep
	if w.refused != 0 {
		r.HTTPStatus = w.refused
		c.signIn(ctx, w.refused)
		return
	}
	msg := strings.TrimPrefix(e.Get("message").String(), "cannot initialize: ")
	r.Reason = strings.TrimSuffix(msg, "; the next initialize will try again")
	b := c.cfg.Bridge
	switch e.Get("data.cause").String() {
	case "not streamable http":
		r.Transport = "not-streamable-http"
		if b.Transport == bridge.TransportHTTPOnly {
			r.Next = fmt.Sprintf("drop %v http-only (or use %[1]v sse-only) to try the old HTTP+SSE transport", rewrite.HintTransport)
		}
	case "endpoint origin":
		r.Transport = "http+sse" // a stream opened, but its endpoint is refused
	default:
		if b.Transport == bridge.TransportSSEOnly && b.Protocol != bridge.ProtocolModern {
			r.Next = fmt.Sprintf("for a Streamable HTTP server drop %v sse-only, or use %[1]v http-first", rewrite.HintTransport)
		}
	}
}
