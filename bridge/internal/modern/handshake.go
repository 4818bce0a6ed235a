package modern

import (
	"context"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/passthrough"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// initialize answers the legacy handshake: from a server/discover probe
// when the server is modern, or by starting a passthrough when it speaks
// 2025. A failed probe is not cached: the next initialize probes again.
func (s *modern) initialize(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	id := []byte(f.ID.Raw)
	p := f.Params
	if !p.IsObject() {
		return link.FrameOnly(rewrite.ErrorFrame(id, protocol.CodeInvalidParams,
			"Invalid params: initialize needs params with protocolVersion, capabilities and clientInfo", nil))
	}
	if s.env.Cfg.ClientEra == link.ClientEraModern {
		return link.FrameOnly(s.env.ErrorFrame(id, rewrite.Errorf(protocol.CodeInvalidRequest, nil,
			"initialize is not served: the proxy serves %s clients only (%s modern); connect with server/discover, or drop %[2]s modern to serve 2025 clients too", protocol.ModernVersion, rewrite.HintClientEra)))
	}
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if out, done := passthrough.SSEFirst(ctx, s.env, c, f); done {
		return out
	}
	if s.env.Cfg.Protocol == link.ProtocolLegacy {
		s.env.Verdict(link.OpOf(ctx), "legacy", "forced by "+rewrite.HintProtocol.String()+" legacy; no probe")
		return passthrough.Init(ctx, s.env, c, f)
	}
	st := &modernState{
		caps:       capabilities.ClientCapabilities([]byte(p.Get("capabilities").Raw)),
		legacyCaps: []byte(p.Get("capabilities").Raw),
	}
	if ci := p.Get("clientInfo"); ci.IsObject() {
		st.clientInfo = []byte(ci.Raw)
	}
	s.srv.metaMu.Lock()
	meta := capabilities.Meta(st.caps, st.clientInfo, s.srv.level)
	s.srv.metaMu.Unlock()
	v := s.probe(ctx, meta, nil)
	if ctx.Err() != nil {
		return link.Outcome{} // the session is ending
	}
	url := s.env.URL()
	switch {
	case v.Era == capabilities.Modern:
		s.env.Verdict(link.OpOf(ctx), "modern", v.Reason)
	case v.Era == capabilities.Legacy && s.env.Cfg.Protocol == link.ProtocolModern:
		s.env.Warn("upstream era detected", zap.String("era", "legacy"), zap.String("url", url), zap.String("reason", v.Reason))
		return link.FrameOnly(s.env.ErrorFrame(id, rewrite.Errorf(protocol.CodeInternalError, link.ErrorData(url, v.Status, "upstreamEra", "legacy"),
			"the upstream server at %s speaks MCP 2025 (%s), but %s modern demands a 2026-07-28 server; drop %[3]s modern (or use %[3]s auto) to pass the 2025 protocol through", url, v.Reason, rewrite.HintProtocol)))
	case v.Era == capabilities.Legacy:
		s.env.Verdict(link.OpOf(ctx), "legacy", v.Reason)
		return passthrough.Init(ctx, s.env, c, f)
	case capabilities.IsAuthError(v.Err):
		// The sign-in did not complete: the hook's text names the server
		// and the way out.
		s.env.Warn("server/discover probe not authorized", zap.String("url", url), zap.Error(v.Err))
		return link.FrameOnly(rewrite.ErrorFrame(id, protocol.CodeInternalError,
			fmt.Sprintf("cannot initialize: %v; the next initialize will try again", v.Err), link.ErrorData(url, 0, "cause", "auth")))
	default:
		s.env.Warn("server/discover probe failed", zap.String("url", url), zap.Int("httpStatus", v.Status), zap.Error(v.Err))
		return link.FrameOnly(rewrite.ErrorFrame(id, protocol.CodeInternalError,
			fmt.Sprintf("cannot initialize: %v (%s); the next initialize will try again", v.Err, capabilities.StatusText(v.Status)),
			link.ErrorData(url, v.Status, "", "")))
	}

	res := capabilities.InitializeResult(v.Discover, capabilities.InitializeOptions{
		RequestedVersion: p.Get("protocolVersion").String(),
		UpstreamURL:      url,
		Tasks:            true,
		Subscriptions:    true,
	})
	st.serverCaps = []byte(gjson.GetBytes(v.Discover, "capabilities").Raw)
	_, st.hasTasks = capabilities.ServerCapabilities(st.serverCaps, false)
	s.srv.metaMu.Lock()
	st.meta = capabilities.Meta(st.caps, st.clientInfo, s.srv.level) // the level may have changed during the probe
	s.srv.state.Store(st)
	s.srv.metaMu.Unlock()
	return link.Outcome{Frame: rewrite.ResultFrame(id, res), Era: protocol.ModernVersion}
}

// setLevel answers logging/setLevel locally and remembers the level; it rides
// every later upstream request as _meta logLevel, since 2026 has no
// logging/setLevel.
func (s *server) setLevel(f *rewrite.Frame, id []byte) []byte {
	lv := f.Params.Get("level")
	if lv.Type != gjson.String || !slices.Contains([]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}, lv.Str) {
		return rewrite.ErrorFrame(id, protocol.CodeInvalidParams,
			fmt.Sprintf("Invalid params: unknown log level %s; use one of debug, info, notice, warning, error, critical, alert, emergency", lv.Raw), nil)
	}
	s.metaMu.Lock()
	s.level = lv.Str
	if st := s.state.Load(); st != nil {
		next := *st
		next.meta = capabilities.Meta(st.caps, st.clientInfo, s.level)
		s.state.Store(&next)
	}
	s.metaMu.Unlock()
	return rewrite.ResultFrame(id, []byte(`{}`))
}
