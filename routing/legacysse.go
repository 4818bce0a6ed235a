package routing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The HTTP+SSE transport of MCP 2024-11-05: the client GETs the server's
// URL and keeps the event stream open; its first event, "endpoint", names
// the URL to POST messages to; every server message, the answers included,
// comes on that one stream, and each POST is answered 202. A new GET is a
// new session. OpenLegacy and SendTo take the door every request takes
// (Client.do), and an endpoint on another origin is refused, so that
// credentials stay with their origin.

// DefaultEndpointWait bounds the wait for the endpoint event once the
// stream is open.
const DefaultEndpointWait = 10 * time.Second

// LegacyStream is an open 2024-11-05 event stream. Next yields the server's
// messages ("message" events); Close ends the stream, and with it the
// session on most servers.
type LegacyStream struct {
	*Response
	// Endpoint is the absolute URL to POST messages to, on the origin of
	// the client's URL. It may hold the session in its query: Redact it
	// for messages.
	Endpoint string
}

// NotLegacyError says that the GET did not open a 2024-11-05 event stream:
// the server refused it, answered something else than an event stream, or
// sent no endpoint event first. Status is the HTTP status (0 when there
// was none).
type NotLegacyError struct {
	URL         string
	Status      int
	ContentType string
	Reason      string
}

func (e *NotLegacyError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s did not open an HTTP+SSE (2024-11-05) event stream: %s", e.URL, e.Reason)
	}
	return fmt.Sprintf("%s did not open an HTTP+SSE (2024-11-05) event stream: the GET was answered HTTP %d (%s): %s", e.URL, e.Status, cmp.Or(e.ContentType, "no content type"), e.Reason)
}

// EndpointError is an endpoint event that names a URL on another origin
// than the client's URL (or an unreadable one). It is refused: the user's
// headers and the sign-in's token go only to the origin the user named.
type EndpointError struct {
	// URL is the stream's URL, Endpoint the named endpoint, both redacted.
	URL, Endpoint string
	// Reason says what is wrong with it.
	Reason string
}

func (e *EndpointError) Error() string {
	return fmt.Sprintf("the HTTP+SSE server at %s named the message endpoint %s, %s; the proxy refuses it so that credentials stay with their origin: point the proxy at a server whose endpoint is on its own origin", e.URL, e.Endpoint, e.Reason)
}

// OpenLegacy GETs the client's URL for a 2024-11-05 event stream and reads
// it up to its endpoint event, waiting at most wait for it once the stream
// is open (DefaultEndpointWait when 0). ctx governs the whole stream: its
// end closes it. Errors are a *TransportError (no HTTP answer), a
// *NotLegacyError or an *EndpointError.
func (c *Client) OpenLegacy(ctx context.Context, wait time.Duration) (*LegacyStream, error) {
	if wait <= 0 {
		wait = DefaultEndpointWait
	}
	resp, err := c.do(ctx, c.url, http.MethodGet, nil, func(h http.Header) {
		h.Set("Accept", "text/event-stream")
	})
	if err != nil {
		return nil, err
	}
	fail := func(reason string) (*LegacyStream, error) {
		resp.Close()
		return nil, &NotLegacyError{URL: c.URL(), Status: resp.Status, ContentType: resp.ContentType, Reason: reason}
	}
	if resp.Status != http.StatusOK || !resp.IsSSE() {
		return fail("not an event stream")
	}
	timer := time.AfterFunc(wait, func() { resp.Close() })
	data, err := resp.Next()
	if !timer.Stop() {
		return fail(fmt.Sprintf("no endpoint event within %v", wait))
	}
	switch {
	case errors.Is(err, io.EOF):
		return fail("the stream ended before an endpoint event")
	case err != nil && ctx.Err() != nil:
		resp.Close()
		return nil, ctx.Err()
	case err != nil:
		return fail("reading the stream failed: " + err.Error())
	case resp.sse.event != "endpoint":
		return fail(fmt.Sprintf("its first event is %q, not an endpoint event (a Streamable HTTP server's stream?)", cmp.Or(resp.sse.event, "message")))
	}
	base, _ := url.Parse(c.url)
	if resp.final != nil {
		base = resp.final
	}
	endpoint, err := c.endpoint(base, strings.TrimSpace(string(data)))
	if err != nil {
		resp.Close()
		return nil, err
	}
	return &LegacyStream{Response: resp, Endpoint: endpoint}, nil
}

// endpoint resolves the endpoint event's URI against the stream's URL and
// checks that it stays on the client URL's origin.
func (c *Client) endpoint(base *url.URL, raw string) (string, error) {
	origin, _ := url.Parse(c.url)
	ref, err := url.Parse(raw)
	if raw == "" || err != nil {
		if len(raw) > 200 {
			raw = raw[:200] + "…"
		}
		return "", &EndpointError{URL: c.URL(), Endpoint: fmt.Sprintf("%q", raw), Reason: "which is not a URL"}
	}
	u := base.ResolveReference(ref)
	if !sameOrigin(origin, u) {
		return "", &EndpointError{URL: c.URL(), Endpoint: Redact(u.String()), Reason: "on another origin (scheme, host or port)"}
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String(), nil
}

// SendTo POSTs one 2024-11-05 message to endpoint, a URL OpenLegacy
// returned (on the origin of the client's URL, which is checked again).
// The caller closes the Response; a server accepts a message with 202.
func (c *Client) SendTo(ctx context.Context, endpoint string, body []byte) (*Response, error) {
	origin, _ := url.Parse(c.url)
	u, err := url.Parse(endpoint)
	if err != nil || !sameOrigin(origin, u) {
		return nil, &TransportError{Kind: KindRedirect, URL: c.URL(), Err: &EndpointError{URL: c.URL(), Endpoint: Redact(endpoint), Reason: "on another origin (scheme, host or port)"}}
	}
	return c.do(ctx, endpoint, http.MethodPost, body, postHeaders)
}

// Event is the type of the event Next last returned, "" for a "message"
// event or an answer that is not a stream.
func (r *Response) Event() string {
	if r.sse == nil {
		return ""
	}
	return r.sse.event
}
