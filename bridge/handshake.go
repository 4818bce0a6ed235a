package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// initialize answers the legacy handshake locally from a server/discover
// probe. A failed probe is not cached: the next initialize
// probes again, and the process keeps serving.
func (s *handshake) initialize(ctx context.Context, c *call, f *rewrite.Frame) outcome {
	id := []byte(f.ID.Raw)
	p := f.Params
	if !p.IsObject() {
		return frameOnly(rewrite.ErrorFrame(id, protocol.CodeInvalidParams,
			"Invalid params: initialize needs params with protocolVersion, capabilities and clientInfo", nil))
	}
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if out, done := s.sseFirst(ctx, c, f); done {
		return out
	}
	if s.cfg.Protocol == ProtocolLegacy {
		s.verdict(opOf(ctx), "legacy", "forced by "+rewrite.HintProtocol.String()+" legacy; no probe")
		return s.passInit(ctx, c, f)
	}
	st := &modernState{
		caps:       capabilities.ClientCapabilities([]byte(p.Get("capabilities").Raw)),
		legacyCaps: []byte(p.Get("capabilities").Raw),
	}
	if ci := p.Get("clientInfo"); ci.IsObject() {
		st.clientInfo = []byte(ci.Raw)
	}
	s.metaMu.Lock()
	meta := capabilities.Meta(st.caps, st.clientInfo, s.level)
	s.metaMu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, s.cfg.DiscoverTimeout)
	defer cancel()
	prober := s.prober()
	v := prober.Probe(s.observed(pctx, "", rwOwn), meta)
	if ctx.Err() != nil {
		return outcome{} // the session is ending
	}
	url := s.client.URL()
	switch {
	case v.Era == capabilities.Modern:
		s.verdict(opOf(ctx), "modern", v.Reason)
	case v.Era == capabilities.Legacy && s.cfg.Protocol == ProtocolModern:
		s.warn("upstream era detected", zap.String("era", "legacy"), zap.String("url", url), zap.String("reason", v.Reason))
		return frameOnly(s.errorFrame(id, rewrite.Errorf(protocol.CodeInternalError, errorData(url, v.Status, "upstreamEra", "legacy"),
			"the upstream server at %s speaks MCP 2025 (%s), but %s modern demands a 2026-07-28 server; drop %[3]s modern (or use %[3]s auto) to pass the 2025 protocol through", url, v.Reason, rewrite.HintProtocol)))
	case v.Era == capabilities.Legacy:
		s.verdict(opOf(ctx), "legacy", v.Reason)
		return s.passInit(ctx, c, f)
	case capabilities.IsAuthError(v.Err):
		// The sign-in did not complete: the hook's text names the server
		// and the way out.
		s.warn("server/discover probe not authorized", zap.String("url", url), zap.Error(v.Err))
		return frameOnly(rewrite.ErrorFrame(id, protocol.CodeInternalError,
			fmt.Sprintf("cannot initialize: %v; the next initialize will try again", v.Err), errorData(url, 0, "cause", "auth")))
	default:
		s.warn("server/discover probe failed", zap.String("url", url), zap.Int("httpStatus", v.Status), zap.Error(v.Err))
		return frameOnly(rewrite.ErrorFrame(id, protocol.CodeInternalError,
			fmt.Sprintf("cannot initialize: %v (%s); the next initialize will try again", v.Err, capabilities.StatusText(v.Status)),
			errorData(url, v.Status, "", "")))
	}

	res := capabilities.InitializeResult(v.Discover, capabilities.InitializeOptions{
		RequestedVersion: p.Get("protocolVersion").String(),
		UpstreamURL:      url,
		Tasks:            true,
		Subscriptions:    true,
	})
	st.serverCaps = []byte(gjson.GetBytes(v.Discover, "capabilities").Raw)
	_, st.hasTasks = capabilities.ServerCapabilities(st.serverCaps, false)
	s.metaMu.Lock()
	s.state.Store(st)
	m := capabilities.Meta(st.caps, st.clientInfo, s.level) // the level may have changed during the probe
	s.meta.Store(&m)
	s.metaMu.Unlock()
	return outcome{frame: rewrite.ResultFrame(id, res), era: protocol.ModernVersion}
}

// sseFirst tries the HTTP+SSE transport before Streamable HTTP under
// --transport sse-first and sse-only. done is false when Streamable HTTP
// is to be tried: the default, or sse-first against a server whose GET
// opened no event stream with an endpoint event.
func (s *handshake) sseFirst(ctx context.Context, c *call, f *rewrite.Frame) (out outcome, done bool) {
	only := s.cfg.Transport == TransportSSEOnly
	if !only && (s.cfg.Transport != TransportSSEFirst || s.cfg.Protocol == ProtocolModern) {
		return outcome{}, false // --protocol modern: a 2024-11-05 server is not wanted first
	}
	url := s.client.URL()
	if only && s.cfg.Protocol == ProtocolModern {
		return frameOnly(s.errorFrame(c.id, rewrite.Errorf(protocol.CodeInvalidRequest, errorData(url, 0, "", ""),
			"%s sse-only reaches only old HTTP+SSE servers (MCP 2024-11-05), but %s modern demands a 2026-07-28 server; drop one of them", rewrite.HintTransport, rewrite.HintProtocol))), true
	}
	out, err := s.sseInit(ctx, c, f)
	switch {
	case err == nil:
		return out, true
	case ctx.Err() != nil:
		return outcome{}, true
	case only || isEndpointError(err) || capabilities.IsAuthError(err):
		s.warn("no HTTP+SSE stream", zap.String("url", url), zap.Error(err))
		data := errorData(url, 0, "transport", "sse")
		if isEndpointError(err) {
			data = errorData(url, 0, "cause", "endpoint origin")
		}
		e := rewrite.Errorf(protocol.CodeInternalError, data, "cannot initialize: %s; the next initialize will try again", err)
		if only && !isEndpointError(err) {
			e = rewrite.Errorf(protocol.CodeInternalError, data, "cannot initialize: %s; %s sse-only allows only the old HTTP+SSE transport (MCP 2024-11-05): for a Streamable HTTP server drop it, or use %[2]s http-first", err, rewrite.HintTransport)
		}
		return frameOnly(s.errorFrame(c.id, e)), true
	}
	s.info("no HTTP+SSE stream; trying Streamable HTTP", zap.Error(err))
	return outcome{}, false
}

func isEndpointError(err error) bool {
	var ee *routing.EndpointError
	return errors.As(err, &ee)
}

// verdict logs the upstream era once per initialize, at info, and tells
// the Observer.
func (s *handshake) verdict(op, era, reason string) {
	mode := "bridge to 2026-07-28"
	switch era {
	case capabilities.Legacy.String():
		mode = "passthrough (2025 on both sides)"
	case capabilities.LegacySSE.String():
		mode = "passthrough over the HTTP+SSE transport (2024-11-05)"
	}
	s.info("upstream era detected", zap.String("era", era), zap.String("mode", mode), zap.String("url", s.client.URL()), zap.String("reason", reason))
	s.note(op, "era: "+era+" ("+reason+"); mode: "+mode)
}

// logLevels are the log levels, the same in both eras.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel answers logging/setLevel locally and remembers the level; it rides
// every later upstream request as _meta logLevel, since 2026 has no
// logging/setLevel.
func (s *modern) setLevel(f *rewrite.Frame, id []byte) []byte {
	lv := f.Params.Get("level")
	valid := false
	for _, l := range logLevels {
		if lv.Type == gjson.String && lv.Str == l {
			valid = true
		}
	}
	if !valid {
		return rewrite.ErrorFrame(id, protocol.CodeInvalidParams,
			fmt.Sprintf("Invalid params: unknown log level %s; use one of debug, info, notice, warning, error, critical, alert, emergency", lv.Raw), nil)
	}
	s.metaMu.Lock()
	s.level = lv.Str
	if st := s.state.Load(); st != nil {
		m := capabilities.Meta(st.caps, st.clientInfo, s.level)
		s.meta.Store(&m)
	}
	s.metaMu.Unlock()
	return rewrite.ResultFrame(id, []byte(`{}`))
}

// errorData builds error.data for proxy-made errors: the upstream URL
// (secrets redacted), the HTTP status when there was one, and one extra
// string member.
func errorData(url string, status int, key, value string) []byte {
	b := []byte(`{"url":`)
	b = rewrite.AppendString(b, url)
	if status != 0 {
		b = fmt.Appendf(b, `,"httpStatus":%d`, status)
	}
	if key != "" {
		b = append(b, ',')
		b = rewrite.AppendString(b, key)
		b = append(b, ':')
		b = rewrite.AppendString(b, value)
	}
	return append(b, '}')
}
