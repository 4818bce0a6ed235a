package modern

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/reverse"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// relay serves a modern (2026-07-28) client against a modern server: the
// proxy adds a transport, not a translation. Each request goes upstream as
// the client sent it, under an id of the proxy's, with the HTTP headers a
// stdio client cannot send (routing derives them from the body; the
// Mcp-Param-* ones come from the tools' x-mcp-header annotations). What
// comes back reaches the client unchanged but for its id, and a listen
// stream's subscriptionId: input_required results and their retries, and
// the tasks extension's frames, are the client's own to speak.
type relay struct {
	env   *link.Env
	tools *toolAnnotations
	// states are the requestStates the server wrote with escapes, by the
	// string they decode to (see restoreState).
	statesMu sync.Mutex
	states   map[string]string
}

// maxStates bounds the requestStates a relay remembers; past it, the
// oldest are forgotten all at once.
const maxStates = 256

// newRelay is the relay of a session whose client is modern. meta is the
// _meta block of the proxy's own requests (the tools/list that finds the
// annotations): the client's own version, identity and capabilities.
func newRelay(e *link.Env, meta rewrite.MetaBlock) *relay {
	srv := &server{env: e}
	srv.state.Store(&modernState{meta: meta})
	return &relay{env: e, tools: &toolAnnotations{env: e, srv: srv, params: map[string][]protocol.ParamHeader{}}, states: map[string]string{}}
}

// modernClient serves a request that shows a modern client (see
// protocol.IsModernVersion) before any initialize: the session's front
// (the relay to a modern server, the reverse bridge to a 2025 one) answers
// it and every later message of the session.
func (s *modern) modernClient(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	if s.env.Cfg.ClientEra == link.ClientEraLegacy {
		// So that a client of both eras falls back to initialize.
		return link.FrameOnly(s.env.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeMethodNotFound, nil,
			"%s is not served: the proxy serves %s clients only (%s legacy); send initialize", f.Method, protocol.LegacyVersion, rewrite.HintClientEra)))
	}
	front, answer := s.frontFor(ctx, c, f)
	if front == nil || answer != nil {
		return link.Outcome{Frame: answer, Next: front}
	}
	// Outside initMu: a first request that lasts (a listen) holds nobody.
	out := front.Request(ctx, c, f)
	out.Next = front
	return out
}

// frontFor is the session's front, chosen once, by the first request of a
// modern client: with answer, when choosing it answered f (the probe was
// the client's discover), or nil and the client's error.
func (s *modern) frontFor(ctx context.Context, c *link.Call, f *rewrite.Frame) (front link.Upstream, answer []byte) {
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if s.front != nil {
		return s.front, nil
	}
	// The client's discover is the probe, sent as the client wrote it;
	// any other first request is preceded by one in its name (unless
	// another session of the process found the server modern). A
	// discover never starts a sign-in that waits for a person: a dual
	// client's short-lived probe process would leave one half done (a
	// stored or refreshed token is used). Any other request signs in.
	var v capabilities.Verdict
	switch known := s.env.Cfg.KnownModern; {
	case s.env.Cfg.Protocol == link.ProtocolLegacy:
		v.Era, v.Reason = capabilities.Legacy, "forced by "+rewrite.HintProtocol.String()+" legacy; no probe"
	case f.Method != "server/discover" && known != nil && known.Load():
		v.Era = capabilities.Modern // another session of the process found it so
	case f.Method == "server/discover":
		v = s.probe(routing.Unattended(ctx), clientMeta(f, true), func(id []byte) []byte { return rewrite.WithID(f, id) })
	default:
		v = s.probe(ctx, clientMeta(f, true), nil)
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	url := s.env.URL()
	switch {
	case v.Era == capabilities.Modern:
		if v.Discover != nil {
			s.env.VerdictMode(link.OpOf(ctx), "modern", "relay (2026-07-28 on both sides)", v.Reason)
			if known := s.env.Cfg.KnownModern; known != nil {
				known.Store(true)
			}
		}
		s.front = newRelay(s.env, clientMeta(f, false))
		if f.Method == "server/discover" {
			return s.front, rewrite.ResultFrame(c.ID, v.Discover)
		}
		return s.front, nil
	case v.Era == capabilities.Legacy && s.env.Cfg.Protocol == link.ProtocolModern:
		s.env.Warn("upstream era detected", zap.String("era", "legacy"), zap.String("url", url), zap.String("reason", v.Reason))
		return nil, s.env.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInternalError, link.ErrorData(url, v.Status, "upstreamEra", "legacy"),
			"the upstream server at %s speaks MCP 2025 (%s), but %s modern demands a 2026-07-28 server; drop %[3]s modern (or use %[3]s auto) to serve this client from it", url, v.Reason, rewrite.HintProtocol))
	case v.Era == capabilities.Legacy && s.env.Cfg.Stateless:
		s.env.Warn("a stateless 2026-07-28 request met a 2025 server", zap.String("url", url), zap.String("reason", v.Reason))
		return nil, s.env.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeMethodNotFound, link.ErrorData(url, v.Status, "upstreamEra", "legacy"),
			"the upstream server at %s speaks MCP 2025 (%s): serve relays a 2026-07-28 client's stateless requests to a 2026-07-28 server only; open a session with initialize (2025-11-25), or run the proxy on stdio, whose reverse bridge serves a 2026-07-28 client from a 2025 server", url, v.Reason))
	case v.Era == capabilities.Legacy:
		s.env.VerdictMode(link.OpOf(ctx), "legacy", "reverse bridge (a 2026-07-28 client, a 2025 server)", v.Reason)
		front, refused := reverse.Start(ctx, s.env, c, f)
		s.front = front
		return front, refused
	case capabilities.IsAuthError(v.Err):
		s.env.Warn("server/discover for a 2026-07-28 client not authorized", zap.String("url", url), zap.Error(v.Err))
		msg := fmt.Sprintf("cannot reach the server: %v; the next request will try again", v.Err)
		if f.Method == "server/discover" {
			msg = fmt.Sprintf("cannot reach the server: %v; server/discover does not start a sign-in (a client's short-lived probe process would leave it half done): sign in with `mcp-tasks-proxy auth login %s`, or send any other request, which does", v.Err, url)
		}
		return nil, rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, msg, link.ErrorData(url, 0, "cause", "auth"))
	}
	s.env.Warn("server/discover for a 2026-07-28 client failed", zap.String("url", url), zap.Int("httpStatus", v.Status), zap.Error(v.Err))
	return nil, rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("cannot reach the server: %v (%s); the next request will try again", v.Err, capabilities.StatusText(v.Status)),
		link.ErrorData(url, v.Status, "", ""))
}

// clientMeta is the _meta block of a request of the proxy's own in the
// name of the client of f: with all, every member of the client's _meta
// (the probe that answers its discover), else its version, identity and
// capabilities only. A version the client did not send is the proxy's.
func clientMeta(f *rewrite.Frame, all bool) rewrite.MetaBlock {
	var pairs []rewrite.MetaPair
	hasVersion := false
	f.Params.Get("_meta").ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case protocol.MetaProtocolVersion:
			hasVersion = true
		case protocol.MetaClientInfo, protocol.MetaClientCapabilities:
		default:
			if !all {
				return true
			}
		}
		pairs = append(pairs, rewrite.MetaPair{Key: k.Str, Value: []byte(v.Raw)})
		return true
	})
	if !hasVersion {
		pairs = append(pairs, rewrite.MetaPair{Key: protocol.MetaProtocolVersion, Value: []byte(`"` + protocol.ModernVersion + `"`)})
	}
	return rewrite.NewMetaBlock(pairs...)
}

// Open, Barrier and Close: the relay holds nothing beyond its requests.
func (r *relay) Open()                    {}
func (r *relay) Barrier() <-chan struct{} { return nil }
func (r *relay) Close()                   {}

func (r *relay) Reached() (era, transport string) { return protocol.ModernVersion, "streamable-http" }

// Local answers nothing at once but a request missing the string param its
// Mcp-Name header carries: a modern server answers the rest.
func (r *relay) Local(f *rewrite.Frame) ([]byte, []string, bool) {
	if e, ok := rewrite.CheckNameParam(f); !ok {
		return r.env.ErrorFrame([]byte(f.ID.Raw), e), nil, true
	}
	return nil, nil, false
}

// Notified ends a request the client cancelled (closing its stream is the
// 2026 cancellation over HTTP); a modern client has no other notification
// for a server.
func (r *relay) Notified(f *rewrite.Frame, _ string, cancel func()) {
	if f.Method == "notifications/cancelled" && cancel != nil {
		cancel()
		return
	}
	r.env.Debug("client notification consumed", zap.String("method", f.Method))
}

// Answered: a modern server asks its client nothing (input_required
// results carry what it needs), so no client response is awaited.
func (r *relay) Answered(*rewrite.Frame, string) bool { return false }

func (r *relay) Request(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	switch f.Method {
	case "initialize":
		return link.FrameOnly(rewrite.ErrorFrame(c.ID, protocol.CodeInvalidRequest,
			"this session speaks 2026-07-28, as its client's first request did, and a client keeps its era: a 2025-11-25 client starts a new session with initialize", nil))
	case "subscriptions/listen":
		return r.listen(ctx, c, f)
	case "tools/call":
		if err := r.tools.ensure(ctx); refused(err) {
			return link.FrameOnly(r.env.TransportError(c.ID, f.Method, err))
		}
	}
	f = r.restoreState(f)
	var t tries
	for {
		res := r.env.Attempt(ctx, c, f.Method, func() link.Result { return r.exchange(ctx, c, f, &t, nil) })
		if ctx.Err() != nil || res.Code != protocol.CodeHeaderMismatch || !r.tools.headerRetry(ctx, c, f, &t) {
			return res.Outcome()
		}
	}
}

// exchange relays f once. Notifications on its stream go to the client
// before the answer (to note, for a listen stream).
func (r *relay) exchange(ctx context.Context, c *link.Call, f *rewrite.Frame, t *tries, note func(m *rewrite.Frame)) link.Result {
	upID := r.env.NextUpstreamID()
	if note == nil {
		note = func(m *rewrite.Frame) {
			if !c.Cancelled.Load() {
				r.env.Send(link.Clone(m.Raw), c.Op, nil) // the stream reader reuses its buffer
			}
		}
	}
	return post(ctx, r.env, c, rewrite.WithID(f, upID), upID, r.tools.headers(f), rwRelay, t, func(actx context.Context, resp *routing.Response, touch func()) link.Result {
		return readAnswer(actx, r.env, c, f.Method, upID, resp, touch, note, func(m *rewrite.Frame, _ int, _ []byte) link.Result {
			if f.Method == "tools/list" && m.Result.IsObject() {
				r.tools.keep(rewrite.ToolHeadersOf(m.Result))
			}
			if protocol.InputRequired(f.Method) && m.Result.Get("resultType").Str == protocol.ResultInputRequired {
				if st := m.Result.Get("requestState"); st.Type == gjson.String && strings.ContainsRune(st.Raw, '\\') {
					r.keepState(st)
				}
			}
			if f.Method == "subscriptions/listen" {
				return link.Result{Frame: rewrite.WithSubscriptionID(m, c.ID)}
			}
			return link.Result{Frame: rewrite.WithID(m, c.ID)}
		})
	})
}

// keepState remembers a requestState the server wrote with escapes.
func (r *relay) keepState(st gjson.Result) {
	r.statesMu.Lock()
	defer r.statesMu.Unlock()
	if len(r.states) >= maxStates {
		clear(r.states)
	}
	r.states[st.Str] = st.Raw
}

// restoreState gives a retry back the requestState bytes the server wrote,
// when the client echoed the same string with other escapes: a client
// that decodes the result and encodes its retry anew (the TS SDK does)
// turns "\/" into "/" and "\u00e9" into "é", and a server may compare the
// bytes, as the protocol says it may.
func (r *relay) restoreState(f *rewrite.Frame) *rewrite.Frame {
	if !protocol.InputRequired(f.Method) {
		return f // only a retry carries one: no scan of every request's params
	}
	st := f.Params.Get("requestState")
	if st.Type != gjson.String {
		return f
	}
	r.statesMu.Lock()
	raw, ok := r.states[st.Str]
	delete(r.states, st.Str)
	r.statesMu.Unlock()
	if !ok || raw == st.Raw {
		return f
	}
	g, err := rewrite.Parse(rewrite.WithParam(f, "requestState", []byte(raw)))
	if err != nil {
		return f
	}
	r.env.Debug("the client's requestState given back the server's escapes", zap.ByteString("id", []byte(f.ID.Raw)))
	return &g
}

// rwRelay names what the relay changes in a request, for the Observer.
var rwRelay = []string{"id.upstream"}

// listen relays a subscriptions/listen: its stream stays open, and each
// notification on it reaches the client with the client's listen id as its
// subscriptionId. A result from the server ends it as the server chose.
// When the stream drops after the server acknowledged it, the client is
// told with notifications/cancelled for the listen id, the one
// cancellation a server may send on stdio, so that it listens again.
func (r *relay) listen(ctx context.Context, c *link.Call, f *rewrite.Frame) link.Outcome {
	acknowledged := false
	var t tries
	res := r.exchange(ctx, c, f, &t, func(m *rewrite.Frame) {
		acknowledged = true
		if !c.Cancelled.Load() {
			r.env.Send(rewrite.WithSubscriptionID(m, c.ID), c.Op, nil)
		}
	})
	if ctx.Err() != nil || !acknowledged || res.Code != 0 || gjson.GetBytes(res.Frame, "result").Exists() {
		return res.Outcome() // cancelled, refused, or ended by the server
	}
	reason := gjson.GetBytes(res.Frame, "error.message").String()
	r.env.Info("listen stream dropped; the client is told to listen again", zap.ByteString("id", c.ID), zap.String("reason", reason))
	return link.FrameOnly(rewrite.NotificationFrame("notifications/cancelled", rewrite.CancelledParams(c.ID, "the upstream listen stream ended: "+reason)))
}
