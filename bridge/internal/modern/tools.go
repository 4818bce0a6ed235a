package modern

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// maxToolPages bounds a proxy-made tools/list walk.
const maxToolPages = 100

// toolAnnotations are the x-mcp-header params of the server's tools, by
// tool (2026-07-28 Streamable HTTP), so that tools/call can mirror the
// annotated arguments into Mcp-Param-* headers: learned from the client's
// own tools/list pages, or fetched lazily when a tools/call comes first.
type toolAnnotations struct {
	env *link.Env
	srv *server

	// mu guards the params, whether they reflect a tools/list, and the
	// count and outcome of the lazy fetches.
	mu       sync.Mutex
	params   map[string][]protocol.ParamHeader
	listed   bool
	fetched  int
	fetchErr error
	fetchMu  sync.Mutex // one lazy tools/list fetch at a time
}

// remember keeps the annotations of a tools/list page the client asked
// for, and reports the tools removed from it.
func (s *toolAnnotations) remember(d rewrite.Downed) {
	for _, r := range d.Rejected {
		s.env.Warn("tool removed from tools/list: invalid x-mcp-header annotation", zap.String("tool", r.Tool), zap.String("reason", r.Reason))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listed = true
	for _, t := range d.Tools {
		s.params[t.Tool] = t.Params
	}
}

// headers returns the Mcp-Param-* annotations for a tools/call.
func (s *toolAnnotations) headers(f *rewrite.Frame) []protocol.ParamHeader {
	if f.Method != "tools/call" {
		return nil
	}
	name := f.Params.Get("name").String()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.params[name]
}

// ensure lists the tools once, lazily, when a tools/call comes before
// the client has listed them: the call may need Mcp-Param-* headers. It
// returns the listing's error: one the proxy refused to send on (see
// refused) ends the call too, which would only meet it again.
func (s *toolAnnotations) ensure(ctx context.Context) error {
	s.mu.Lock()
	listed, gen := s.listed, s.fetched
	s.mu.Unlock()
	if listed {
		return nil
	}
	s.fetchMu.Lock()
	defer s.fetchMu.Unlock()
	s.mu.Lock()
	listed, ran, err := s.listed, s.fetched != gen, s.fetchErr
	s.mu.Unlock()
	switch {
	case listed:
		return nil
	case ran:
		// A listing ran while this call waited for it: its outcome stands
		// (a sign-in nobody finished is not started again at once).
		return err
	}
	err = s.fetch(ctx)
	s.mu.Lock()
	s.fetched++
	s.fetchErr = err
	s.mu.Unlock()
	return err
}

// fetch walks every tools/list page and replaces the annotations. A
// server that refuses tools/list counts as listed (there is nothing to
// learn); a transport failure does not, so a later call tries again. It
// returns that failure.
func (s *toolAnnotations) fetch(ctx context.Context) error {
	params := make(map[string][]protocol.ParamHeader)
	var cursor *string
	for range maxToolPages {
		p := []byte(`{}`)
		if cursor != nil {
			p = append(rewrite.AppendString([]byte(`{"cursor":`), *cursor), '}')
		}
		msg, err := s.srv.internalCall(ctx, "tools/list", p)
		if err != nil {
			s.env.Warn("listing tools for x-mcp-header annotations failed", zap.Error(err))
			return err
		}
		m, err := rewrite.Parse(msg)
		if err != nil || m.Kind != rewrite.KindResponse {
			s.env.Warn("invalid tools/list answer", zap.ByteString("frame", s.env.LogFrame(msg)))
			break
		}
		d, err := rewrite.ResponseDown(&m, rewrite.Down{ID: []byte("0"), Method: "tools/list"})
		if err != nil || d.IsError || d.ResultType != protocol.ResultComplete {
			s.env.Debug("tools/list refused; no x-mcp-header annotations", zap.ByteString("frame", s.env.LogFrame(msg)))
			break
		}
		for _, t := range d.Tools {
			params[t.Tool] = t.Params
		}
		next := m.Result.Get("nextCursor")
		// An empty string is a valid cursor in 2026; a repeated one would loop.
		if next.Type != gjson.String || (cursor != nil && next.Str == *cursor) {
			break
		}
		cursor = &next.Str
	}
	s.mu.Lock()
	s.params, s.listed = params, true
	s.mu.Unlock()
	return nil
}

// internalCall makes a request of the proxy's own with the session's _meta
// and returns the raw answer.
func (s *server) internalCall(ctx context.Context, method string, params []byte) ([]byte, error) {
	body, id, err := s.ownRequest(method, params)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.env.Cfg.IdleTimeout)
	defer cancel()
	resp, err := s.env.Client.Post(s.env.Observed(ctx, "", link.RwOwn), body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Close()
	msg, err := resp.Answer(id)
	switch {
	case err == nil || errors.Is(err, io.EOF):
		if len(msg) == 0 {
			return nil, &noAnswerError{method: method, status: resp.Status}
		}
		return msg, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: %w", method, err)
	case errors.Is(err, routing.ErrContentType) || errors.Is(err, routing.ErrTooLarge):
		return nil, &noAnswerError{method: method, status: resp.Status, err: err}
	}
	// The connection broke while the answer was read.
	return nil, fmt.Errorf("%s: %w", method, &routing.TransportError{Kind: routing.KindBroken, URL: s.env.URL(), Err: err})
}

// ownRequest is the body of a request of the proxy's own, with a fresh
// upstream id and the session's _meta.
func (s *server) ownRequest(method string, params []byte) (body, id []byte, err error) {
	f, err := rewrite.Parse(rewrite.RequestFrame([]byte("0"), method, params))
	if err != nil {
		return nil, nil, err
	}
	id = s.env.NextUpstreamID()
	body, err = rewrite.RequestUp(&f, rewrite.Up{ID: id, Meta: s.state.Load().meta})
	return body, id, err
}

// noAnswerError is an internal request whose HTTP answer carried no JSON-RPC
// message: nothing, or a body of another kind (err).
type noAnswerError struct {
	method string
	status int
	err    error
}

func (e *noAnswerError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("%s: %v (HTTP %d)", e.method, e.err, e.status)
	}
	return fmt.Sprintf("%s: no answer (HTTP %d)", e.method, e.status)
}

func (e *noAnswerError) Unwrap() error { return e.err }
