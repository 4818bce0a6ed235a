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

	rawHeadersNoted sync.Once // the first raw UTF-8 header retry is logged
}

// headerRetry prepares the one more try a request refused with -32020
// (header mismatch) is worth, and reports false when there is none. First,
// when the headers carried a value in the Base64 form the spec asks for,
// with raw UTF-8 values: some servers (go-sdk v1.8.0) compare the header
// with the body without decoding it. Then, for tools/call, once, with the
// annotations refreshed from tools/list. The server refused before it ran
// anything, so the retry is safe.
func (s *toolAnnotations) headerRetry(ctx context.Context, c *link.Call, f *rewrite.Frame, t *tries) bool {
	switch {
	case t.sentBase64 && !t.rawHeaders:
		t.rawHeaders = true
		s.rawHeadersNoted.Do(func() {
			s.env.Info("the server refused a header in the Base64 form the spec asks for (-32020 header mismatch); such a request is retried once with the raw UTF-8 value",
				zap.String("method", f.Method), zap.ByteString("id", c.ID))
		})
	case f.Method == "tools/call" && !t.recovered:
		t.recovered = true
		s.env.Info("header mismatch: refreshing tools/list and retrying once", zap.ByteString("id", c.ID))
		_ = s.fetch(ctx) // a failure leaves the annotations as they were
	default:
		return false
	}
	return true
}

// remember keeps the annotations of a tools/list page the client asked
// for, and reports the tools removed from it.
func (s *toolAnnotations) remember(d rewrite.Downed) {
	for _, r := range d.Rejected {
		s.env.Warn("tool removed from tools/list: invalid x-mcp-header annotation", zap.String("tool", r.Tool), zap.String("reason", r.Reason))
	}
	s.keep(d.Tools)
}

// keep records the annotations of one tools/list page.
func (s *toolAnnotations) keep(tools []rewrite.ToolHeaders) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listed = true
	for _, t := range tools {
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
