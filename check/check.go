// Package check looks at an MCP server as the proxy would use it, for
// `mcp-tasks-proxy check`. It runs the proxy's bridge session in process,
// over an in-memory Conn (as serve runs one over HTTP), sends what a
// 2025-11-25 client sends (initialize, notifications/initialized, the
// lists and, to a 2026-07-28 server, a prompts/get whose name needs the
// Base64 form of Mcp-Name), and reports from the answers: the era and
// transport the session chose (bridge.Session.Reached), what the server
// said over HTTP (a routing.Observer sees it), and the sign-in it wants.
// A second session opens as a 2026-07-28 client does (server/discover,
// tools/list), to say what such a client gets. It never opens a browser:
// the sessions run unattended.
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
	// Bridge is the session's configuration, as the proxy would run it;
	// its Client's Auth is Auth. Tasks stay in memory (StatePath is not
	// used), and the report says the era (OnInitialized is not called).
	Bridge bridge.Config
	Auth   *Auth
	// StaticToken: OAuth is off, since an Authorization header was given.
	StaticToken bool
	// Version goes in the initialize's clientInfo; TimeoutText names the
	// check's time bound ("--timeout") when it runs out.
	Version, TimeoutText string
}

// endBound bounds the session's end once the report is made (the DELETE
// of a 2025 session has a shorter bound of its own).
const endBound = 3 * time.Second

// Run checks the server within ctx and returns the report.
func Run(ctx context.Context, cfg Config) *Report {
	c := &checker{cfg: cfg, rep: &Report{URL: cfg.Bridge.Client.URL(), Era: "unknown"}, wire: &wire{methods: map[string]string{}}, shown: map[string]bool{}}
	bcfg := cfg.Bridge
	bcfg.StatePath, bcfg.OnInitialized = "", nil
	sess := bridge.New(bcfg)
	cl := &client{in: make(chan []byte), out: make(chan []byte), inEnd: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		_ = sess.Serve(routing.Unattended(routing.WithObserver(ctx, c.wire)), cl)
	}()
	c.run(ctx, cl, sess)
	cl.end(endBound)
	c.rep.Clients = []ClientEra{c.legacyClient(), c.modernClient(ctx, bcfg)}
	return c.rep
}

// legacyClient is what a 2025-11-25 client gets: the session above.
func (c *checker) legacyClient() ClientEra {
	r := c.rep
	ce := ClientEra{Client: protocol.LegacyVersion}
	switch {
	case !r.Usable:
		ce.Error = r.Reason
	case r.Era == protocol.ModernVersion:
		ce.Gets = "the 2026-07-28 server, bridged to 2025-11-25"
	default:
		ce.Gets = "the " + r.Era + " server, passed through"
	}
	return ce
}

// modernClient runs a second session as a 2026-07-28 client would open it
// (server/discover, then tools/list) and says what that client gets.
func (c *checker) modernClient(ctx context.Context, bcfg bridge.Config) ClientEra {
	ce := ClientEra{Client: protocol.ModernVersion}
	sess := bridge.New(bcfg)
	cl := &client{in: make(chan []byte), out: make(chan []byte), inEnd: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(cl.done)
		_ = sess.Serve(routing.Unattended(ctx), cl)
	}()
	defer cl.end(endBound)
	meta := fmt.Appendf(nil, `{"_meta":{%q:%q,%q:{"name":"mcp-tasks-proxy-check","version":%q},%q:{}}}`,
		protocol.MetaProtocolVersion, protocol.ModernVersion, protocol.MetaClientInfo, c.cfg.Version, protocol.MetaClientCapabilities)
	for _, method := range []string{"server/discover", "tools/list"} {
		ans, err := cl.call(ctx, method, meta)
		switch {
		case err != nil:
			ce.Error = c.describeErr(err)
			return ce
		case ans.Get("error").Exists():
			ce.Error = fmt.Sprintf("%s: error %d: %s", method, ans.Get("error.code").Int(), ans.Get("error.message").String())
			return ce
		}
	}
	switch era, _ := sess.Reached(); {
	case era == protocol.ModernVersion:
		ce.Gets = "the 2026-07-28 server, relayed as it is"
	case era != "":
		ce.Gets = "the " + era + " server, served in 2026-07-28 by the reverse bridge"
	}
	return ce
}

// checker is one check.
type checker struct {
	cfg   Config
	rep   *Report
	wire  *wire
	shown map[string]bool // the tools the session listed to the client
}

func (c *checker) run(ctx context.Context, cl *client, sess *bridge.Session) {
	r := c.rep
	init, err := cl.call(ctx, "initialize", fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"mcp-tasks-proxy-check","version":%q}}`,
		protocol.LegacyVersion, c.cfg.Version))
	w := c.wire.snapshot()
	r.HTTPStatus, r.RoundTripMs = w.status, float64(w.rtt.Microseconds())/1000
	if err == nil && init.Get("error").Exists() {
		c.failed(ctx, init.Get("error"), w)
		return
	}
	if err == nil {
		err = cl.send(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}
	if err != nil {
		r.Reason = c.describeErr(err)
		return
	}
	r.Era, r.Transport = sess.Reached()
	result := init.Get("result")
	c.identity(result, w.discover)
	caps := result.Get("capabilities")
	r.Tools, r.Prompts, r.Resources = c.list(ctx, cl, caps, "tools"), c.list(ctx, cl, caps, "prompts"), c.list(ctx, cl, caps, "resources")
	c.hidden(c.wire.snapshot().toolPages)
	if r.Era == protocol.ModernVersion {
		c.base64(ctx, cl)
	}
	if c.cfg.Auth.signedIn() {
		r.Auth = &AuthReport{SignedIn: true}
	}
	r.Usable = true
}

// identity records what the server says of itself: its info, and its
// versions, capabilities and extensions as its DiscoverResult gives them
// (2026-07-28) or its InitializeResult (2025).
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
	cursor := "" // the JSON string of the last page's nextCursor
	for page := range maxPages {
		params := []byte(`{}`)
		if page > 0 {
			params = []byte(`{"cursor":` + cursor + `}`)
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
		for _, item := range ans.Get("result." + kind).Array() {
			lc.Count++
			c.shown[kind+"/"+item.Get("name").String()] = true
		}
		next := ans.Get("result.nextCursor")
		if next.Type != gjson.String || next.Raw == cursor {
			break
		}
		cursor = next.Raw
	}
	return lc
}

// hidden records the tools the server listed that the session did not
// show its client, and why: an annotation the proxy refuses, or the
// ignore-tool setting. The tools' count includes them.
func (c *checker) hidden(pages [][]byte) {
	r := c.rep
	for _, page := range pages {
		m, err := rewrite.Parse(page)
		if err != nil || r.Tools == nil {
			return
		}
		why := map[string]string{}
		if d, err := rewrite.ResponseDown(&m, rewrite.Down{ID: []byte("0"), Method: "tools/list"}); err == nil && r.Era == protocol.ModernVersion {
			for _, rj := range d.Rejected {
				why[rj.Tool] = rj.Reason
			}
		}
		for _, t := range m.Result.Get("tools").Array() {
			if name := t.Get("name").String(); !c.shown["tools/"+name] {
				c.shown["tools/"+name] = true // once
				reason, ok := why[name]
				if !ok {
					reason = "its name matches " + rewrite.HintIgnoreTool.String()
				}
				r.Filtered = append(r.Filtered, HiddenTool{Name: name, Reason: reason})
				r.Tools.Count++
			}
		}
	}
}

// base64Probe is a prompt name no server has, which needs the Base64 form.
const base64Probe = "mcp-tasks-proxy-check-ü"

// base64 sends prompts/get for a name that is not ASCII, so that Mcp-Name
// goes in the Base64 form: a -32020 (header mismatch) from the server means
// it does not decode it (the session then resends the raw name); any other
// answer (usually "no such prompt") means it does.
func (c *checker) base64(ctx context.Context, cl *client) {
	_, _ = cl.call(ctx, "prompts/get", []byte(`{"name":"`+base64Probe+`"}`))
	c.rep.Base64Names = c.wire.snapshot().probe
	if c.rep.Base64Names != "accepted" && c.rep.Base64Names != "refused" {
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
// server wants, when it refused one; else the session's own words, the
// transport its error's data names, and what to try next.
func (c *checker) failed(ctx context.Context, e gjson.Result, w seen) {
	r, b := c.rep, c.cfg.Bridge
	if w.refused != 0 {
		r.HTTPStatus = w.refused
		c.signIn(ctx, w.refused)
		return
	}
	r.Reason = strings.TrimSuffix(strings.TrimPrefix(e.Get("message").String(), "cannot initialize: "), "; the next initialize will try again")
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
