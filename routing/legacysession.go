package routing

import (
	"context"
	"net/http"
	"sync"
)

// Header names of 2025 Streamable HTTP sessions.
const (
	HeaderSessionID   = "Mcp-Session-Id"
	HeaderLastEventID = "Last-Event-ID"
)

// A LegacySession is the client side of one 2025 Streamable HTTP session
// (protocol versions 2025-03-26 to 2025-11-25): the Mcp-Session-Id and the
// MCP-Protocol-Version an initialize answer gave, sent on every later
// request; the GET stream and the resumption of a dropped stream with
// Last-Event-ID; DELETE at the end. A new initialize (after the server
// expired the session) starts a new generation. It knows no JSON-RPC: what
// to send, and what an expiry means for the client's messages, is the
// caller's. It is safe for concurrent use.
type LegacySession struct {
	c *Client

	mu      sync.Mutex
	id      string // "" when the server uses no session id
	version string
	gen     int
}

// LegacySession returns a session over c that has not started yet: its
// requests carry no session headers.
func (c *Client) LegacySession() *LegacySession { return &LegacySession{c: c} }

// Stamp is the session's headers as one request carries them, and the
// generation they belong to.
type Stamp struct {
	Header http.Header
	Gen    int
}

// Expired reports whether status, answered to a request with this stamp,
// means that the server ended the session: 404 to a request that named a
// session.
func (st Stamp) Expired(status int) bool {
	return status == http.StatusNotFound && st.Header.Get(HeaderSessionID) != ""
}

// Begin records the session an initialize answer started, with the id it
// carried ("" for none) and the negotiated version, as a new generation.
func (s *LegacySession) Begin(id, version string) {
	s.mu.Lock()
	s.id, s.version = id, version
	s.gen++
	s.mu.Unlock()
}

// Version is the negotiated protocol version ("" before Begin).
func (s *LegacySession) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Gen is the current generation.
func (s *LegacySession) Gen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// Stamp is what the next request carries.
func (s *LegacySession) Stamp() Stamp {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := make(http.Header, 2)
	if s.version != "" {
		h.Set("MCP-Protocol-Version", s.version)
	}
	if s.id != "" {
		h.Set(HeaderSessionID, s.id)
	}
	return Stamp{Header: h, Gen: s.gen}
}

// Post POSTs one message with st's headers.
func (s *LegacySession) Post(ctx context.Context, st Stamp, body []byte) (*Response, error) {
	return s.c.Send(ctx, http.MethodPost, body, st.Header)
}

// Stream GETs the session's stream: the server's messages outside of any
// request (lastEventID ""), or the rest of a dropped stream after the
// event lastEventID.
func (s *LegacySession) Stream(ctx context.Context, st Stamp, lastEventID string) (*Response, error) {
	h := st.Header.Clone()
	if lastEventID != "" {
		h.Set(HeaderLastEventID, lastEventID)
	}
	return s.c.Send(ctx, http.MethodGet, nil, h)
}

// End ends the session with DELETE, when the server gave it an id; it
// returns the status (0 when there was nothing to end). A 405 means the
// server does not let clients end sessions.
func (s *LegacySession) End(ctx context.Context) (int, error) {
	st := s.Stamp()
	if st.Header.Get(HeaderSessionID) == "" {
		return 0, nil
	}
	resp, err := s.c.Send(ctx, http.MethodDelete, nil, st.Header)
	if err != nil {
		return 0, err
	}
	resp.Close()
	return resp.Status, nil
}

// SessionID is the Mcp-Session-Id an answer carries ("" for none).
func (r *Response) SessionID() string { return r.Header.Get(HeaderSessionID) }
