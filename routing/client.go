// Package routing is the upstream HTTP face of mcp-tasks-proxy: it POSTs one
// JSON-RPC request per HTTP request to a Streamable HTTP endpoint, derives
// the MCP headers from the body, and reads the answer as application/json
// or text/event-stream, one message at a time. It owns connection reuse,
// proxies from the environment, TLS and timeouts, the redirect policy (same
// origin only), the Auth hook that OAuth plugs into, the 2025 session
// transport (LegacySession), the 2024-11-05 HTTP+SSE transport (OpenLegacy,
// SendTo), the Observer hook that sees every exchange, and the one bounded
// reader for messages of unknown length (reader.go), which the bridge reads
// its stdin with too. Every request goes through one door, Client.do.
//
// It must never change JSON-RPC semantics: it reads an id only to find the
// answer to a request (Response.Answer), never rewrites a body, and decides
// no retry: its errors say what is safe (a *TransportError's Kind; any
// other error means bytes may have reached the server), the caller
// decides. Cancelling a request's context closes its stream, which is how
// 2026-07-28 cancels a request over HTTP.
//
// With an Auth hook every request carries the hook's Authorization header.
// A 401, or a 403 whose challenge says insufficient_scope, is reported to
// the hook, and when it says so the request is sent once more with the new
// header: the one exception to "a tools/call is never replayed", since the
// server's auth layer refused the first copy before any processing.
package routing

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
)

// Config is the upstream client's configuration. Zero values take the
// defaults.
type Config struct {
	// URL is the modern server's Streamable HTTP endpoint.
	URL string
	// Header holds the user's extra headers (--header), sent on every POST.
	Header http.Header
	// ConnectTimeout bounds dialing and the TLS handshake. Default
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// MaxIdleConnsPerHost is the keep-alive pool size. Default DefaultMaxIdleConnsPerHost.
	MaxIdleConnsPerHost int
	// MaxMessageBytes bounds one upstream message. Default
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// ResponseHeaderTimeout bounds the wait for the response headers after
	// the request is sent. Default DefaultResponseHeaderTimeout, long: a server that answers a long tool
	// call with plain JSON sends its headers only at the end.
	ResponseHeaderTimeout time.Duration
	// RootCAs adds PEM certificates to the system roots (--ca-file).
	RootCAs []byte
	// Insecure skips TLS verification (--insecure).
	Insecure bool
	// UserAgent is sent on every request.
	UserAgent string
	// Transport, when set, replaces the default transport (tests).
	Transport http.RoundTripper
	// Auth, when set, authorizes every request (see Auth); nil means the
	// user's headers are all the authorization there is. Its Authorization
	// header replaces one given in Header.
	Auth Auth
}

const (
	DefaultConnectTimeout        = 10 * time.Second
	DefaultMaxIdleConnsPerHost   = 128
	DefaultMaxMessageBytes       = 128 << 20
	DefaultResponseHeaderTimeout = 10 * time.Minute
)

// Client is safe for concurrent use; one Client serves a whole session.
type Client struct {
	http   *http.Client
	url    string
	shown  string // url, redacted (URL)
	header http.Header
	max    int
	ua     []string     // the User-Agent value, shared by every request
	auth   Auth         // nil: no hook, no cost
	last   atomic.Int64 // the size of the last large message of unknown length (chunks.last)
}

// New validates cfg and builds the client with one shared keep-alive pool.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("upstream URL %q must be an absolute http:// or https:// URL", Redact(cfg.URL))
	}
	cfg.ConnectTimeout = orDefault(cfg.ConnectTimeout, DefaultConnectTimeout)
	cfg.MaxIdleConnsPerHost = orDefault(cfg.MaxIdleConnsPerHost, DefaultMaxIdleConnsPerHost)
	cfg.MaxMessageBytes = orDefault(cfg.MaxMessageBytes, DefaultMaxMessageBytes)
	cfg.ResponseHeaderTimeout = orDefault(cfg.ResponseHeaderTimeout, DefaultResponseHeaderTimeout)
	rt := cfg.Transport
	if rt == nil {
		t, err := NewTransport(cfg.RootCAs, cfg.Insecure, cfg.ConnectTimeout)
		if err != nil {
			return nil, err
		}
		t.MaxIdleConns, t.MaxIdleConnsPerHost = cfg.MaxIdleConnsPerHost*2, cfg.MaxIdleConnsPerHost
		t.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout
		rt = t
	}
	h := cfg.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	var ua []string
	if cfg.UserAgent != "" {
		ua = []string{cfg.UserAgent}
	}
	return &Client{
		// No Client.Timeout: long tool calls and streams stay open for
		// minutes; per-request deadlines come from the caller's context.
		// CheckRedirect: credentials stay with their origin (redirect.go).
		http:   &http.Client{Transport: rt, CheckRedirect: checkRedirect},
		url:    cfg.URL,
		shown:  Redact(cfg.URL),
		header: h,
		max:    cfg.MaxMessageBytes,
		ua:     ua,
		auth:   cfg.Auth,
	}, nil
}

// NewTransport is the upstream's HTTP transport, which the OAuth client's
// traffic shares too: proxies from the environment, and TLS with caPEM
// added to the system roots (--ca-file) or no verification (--insecure).
func NewTransport(caPEM []byte, insecure bool, connectTimeout time.Duration) (*http.Transport, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure} // --insecure: the user's explicit, loudly logged choice
	if len(caPEM) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(caPEM) {
			return nil, errors.New("the CA file holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connectTimeout,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       tlsCfg,
	}, nil
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// URL returns the endpoint with credentials and query values redacted, for
// messages and logs.
func (c *Client) URL() string { return c.shown }

// CloseIdle closes idle keep-alive connections (on exit).
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }

// Kind classifies a transport failure.
type Kind int

const (
	// KindDial: the connection could not be made (refused, DNS, TLS
	// handshake); nothing was sent, so it is always safe to retry.
	KindDial Kind = iota + 1
	// KindTimeout: the request timed out after it may have been sent.
	KindTimeout
	// KindBroken: the connection failed after bytes may have left.
	KindBroken
	// KindRedirect: the server redirected the request somewhere the proxy
	// does not follow (Err is a *RedirectError). Not retried: the same
	// request gets the same redirect.
	KindRedirect
	// KindAuth: the Auth hook could not authorize the request (Err is its
	// error, written for the end user: a sign-in that did not complete, a
	// refresh refused, a scope never granted). Nothing was sent, or the
	// server refused the request before any processing. Not retried: the
	// hook has done what it could.
	KindAuth
)

// TransportError is an HTTP exchange that failed below HTTP status level.
type TransportError struct {
	Kind Kind
	URL  string
	Err  error
}

func (e *TransportError) Error() string {
	switch e.Kind {
	case KindDial:
		return fmt.Sprintf("cannot connect to %s: %v", e.URL, rootCause(e.Err))
	case KindTimeout:
		return fmt.Sprintf("request to %s timed out: %v", e.URL, rootCause(e.Err))
	case KindRedirect, KindAuth:
		return e.Err.Error() // it names the URLs or the server, the cause and the way out
	}
	return fmt.Sprintf("connection to %s failed: %v", e.URL, rootCause(e.Err))
}

func (e *TransportError) Unwrap() error { return e.Err }

func rootCause(err error) error {
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Err != nil {
		return op.Err
	}
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.Err != nil {
		return ue.Err
	}
	return err
}

// Post sends body with the MCP headers derived from it (see
// WithRawUTF8Headers) and the user's headers. It returns a Response for
// every HTTP status, which the caller must Close; a *TransportError reports
// a failure before any status.
func (c *Client) Post(ctx context.Context, body []byte, params []ParamHeader) (*Response, error) {
	raw := RawUTF8Headers(ctx)
	return c.do(ctx, c.url, http.MethodPost, body, func(h http.Header) { writeHeaders(h, body, params, raw) })
}

// Send makes one 2025-era (passthrough) HTTP request: method is POST, GET
// or DELETE, body is the JSON-RPC message to POST (nil otherwise), and h
// holds the session headers (MCP-Protocol-Version, Mcp-Session-Id,
// Last-Event-ID). The user's headers and User-Agent come on top, as for
// Post; no header is derived from the body, since a 2025 server needs none.
func (c *Client) Send(ctx context.Context, method string, body []byte, h http.Header) (*Response, error) {
	return c.do(ctx, c.url, method, body, func(rh http.Header) {
		switch method {
		case http.MethodPost:
			postHeaders(rh)
		case http.MethodGet:
			rh.Set("Accept", "text/event-stream")
		}
		for k, v := range h {
			rh[k] = v
		}
	})
}

// do makes one HTTP request with the user's headers and User-Agent, then
// the protocol headers set() adds on top, then the Auth hook's
// Authorization. A request the server's auth layer refused is sent once
// more when the hook says so.
func (c *Client) do(ctx context.Context, target, method string, body []byte, set func(http.Header)) (*Response, error) {
	if c.auth == nil {
		return c.send(ctx, target, method, body, set, "")
	}
	authz, err := c.auth.Authorization(ctx)
	if err != nil {
		return nil, c.authError(err)
	}
	resp, err := c.send(ctx, target, method, body, set, authz)
	if err != nil || !authRefused(resp) {
		return resp, err
	}
	again, err := c.auth.Retry(ctx, resp.Status, resp.Header, authz)
	if err == nil && !again {
		return resp, nil // the refusal, for the caller to report
	}
	// Drain a little of the refusal, so that the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.body, 64<<10))
	_ = resp.Close()
	if err == nil {
		authz, err = c.auth.Authorization(ctx)
	}
	if err != nil {
		return nil, c.authError(err)
	}
	return c.send(ctx, target, method, body, set, authz) // a second refusal goes to the caller as it is
}

// send makes one HTTP request to target (the endpoint, or a URL of its
// origin); authz, when not empty, is its Authorization header. The
// Observer in ctx, if any, sees the request and its answer.
func (c *Client) send(ctx context.Context, target, method string, body []byte, set func(http.Header), authz string) (*Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, &TransportError{Kind: KindDial, URL: c.URL(), Err: err}
	}
	h := req.Header
	for k, v := range c.header {
		h[k] = v
	}
	if c.ua != nil {
		h["User-Agent"] = c.ua
	}
	set(h)
	var w watch // kept in the Response: no allocation of its own
	if o := observerOf(ctx); o != nil {
		shown := c.shown
		if target != c.url {
			shown = Redact(target)
		}
		o.Request(ctx, method, shown, h, body)
		w = watch{o: o, ctx: ctx, start: time.Now()}
	}
	if authz != "" {
		h["Authorization"] = []string{authz}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		err = c.classify(ctx, err)
		if w.o != nil {
			w.o.Answer(ctx, 0, nil, w.start, err)
		}
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	r := &Response{
		Status:      resp.StatusCode,
		ContentType: strings.ToLower(mt),
		Header:      resp.Header,
		body:        resp.Body,
		max:         c.max,
		size:        resp.ContentLength,
		last:        &c.last,
		watch:       w,
	}
	if resp.Request != nil {
		r.final = resp.Request.URL
	}
	if r.ContentType == "text/event-stream" {
		r.sse = newSSEReaderSize(resp.Body, c.max, 32<<10, &c.last)
	}
	return r, nil
}

// Headers returns the protocol headers of a POST that carries body:
// Content-Type, Accept and the MCP headers derived from the body. The user's
// --header values and User-Agent come on top of these in Post.
func Headers(body []byte, params []ParamHeader) http.Header {
	h := make(http.Header, 6)
	writeHeaders(h, body, params, false)
	return h.Clone() // the caller may change it; the shared values stay as they are
}

// Header values every POST carries, shared: net/http only reads them.
var (
	jsonContentType = []string{"application/json"}
	acceptJSONOrSSE = []string{"application/json, text/event-stream"}
)

func postHeaders(h http.Header) {
	h["Content-Type"] = jsonContentType
	h["Accept"] = acceptJSONOrSSE
}

func writeHeaders(h http.Header, body []byte, params []ParamHeader, raw bool) {
	postHeaders(h)
	deriveHeaders(h, body, params, raw)
}

func (c *Client) classify(ctx context.Context, err error) error {
	kind := KindBroken
	var op *net.OpError
	var ne net.Error
	var re *RedirectError
	var dns *net.DNSError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &re):
		// Not the *url.Error around it: its URL is the raw Location,
		// query secrets included.
		return &TransportError{Kind: KindRedirect, URL: c.URL(), Err: re}
	case errors.As(err, &op) && op.Op == "dial", errors.As(err, &dns):
		kind = KindDial
	case errors.As(err, &ne) && ne.Timeout():
		kind = KindTimeout
	}
	return &TransportError{Kind: kind, URL: c.URL(), Err: err}
}

// Response is one HTTP answer. Next yields its JSON-RPC messages: exactly one
// for application/json, any number for text/event-stream.
type Response struct {
	Status      int
	ContentType string // media type, lower case, without parameters
	Header      http.Header

	body  io.ReadCloser
	sse   *SSEReader
	max   int
	size  int64 // Content-Length, -1 when unknown
	done  bool
	room  []byte        // the JSON body's whole buffer, when it has room in front
	last  *atomic.Int64 // the Client's last large message (chunks.last)
	watch watch         // the exchange's Observer, if any
	// final is the URL that gave the answer, after same-origin redirects:
	// a relative 2024-11-05 endpoint is resolved against it.
	final *url.URL
}

// IsSSE reports whether the answer is an event stream.
func (r *Response) IsSSE() bool { return r.sse != nil }

// LastEventID is the id of the last complete event of a stream, "" when it
// has none (or the answer is not a stream).
func (r *Response) LastEventID() string {
	if r.sse == nil {
		return ""
	}
	return r.sse.id
}

// Retry is the reconnection delay a stream asked for, 0 when none.
func (r *Response) Retry() time.Duration {
	if r.sse == nil {
		return 0
	}
	return r.sse.retry
}

// ErrContentType is returned by Next for a body that is neither JSON nor SSE.
var ErrContentType = errors.New("upstream answered with an unexpected content type")

// Next returns the next message. For SSE the slice is only valid until the
// following call. It returns io.EOF after the last message.
func (r *Response) Next() ([]byte, error) {
	msg, err := r.next()
	if err == nil {
		r.watch.message(r.Status, msg)
	}
	return msg, err
}

func (r *Response) next() ([]byte, error) {
	if r.sse != nil {
		return r.sse.Next()
	}
	if r.done {
		return nil, io.EOF
	}
	r.done = true
	buf, off, err := readBody(r.body, r.max, r.size, r.last)
	if err != nil {
		return nil, err
	}
	body := buf[off:]
	if off > 0 {
		r.room = buf
	}
	if r.ContentType != "application/json" && !strings.HasSuffix(r.ContentType, "+json") {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, io.EOF
		}
		return body, fmt.Errorf("%w %q", ErrContentType, r.ContentType)
	}
	return body, nil
}

// Answer reads the messages until the one that answers id (raw JSON), or
// an id-less (null id) error, which some servers send; notifications and
// requests on the way are skipped. It is the one place routing looks at a
// JSON-RPC id, to find an answer, never to change it. The returned slice
// is the caller's.
func (r *Response) Answer(id []byte) ([]byte, error) {
	for {
		msg, err := r.Next()
		if err != nil {
			return append([]byte(nil), msg...), err
		}
		m := gjson.ParseBytes(msg)
		if !m.Get("result").Exists() && !m.Get("error").Exists() {
			continue // a notification on the stream
		}
		rid := m.Get("id")
		if rid.Raw == string(id) || rid.Type == gjson.Null || !rid.Exists() {
			return append([]byte(nil), msg...), nil
		}
	}
}

// Close releases the connection; for a stream still open this is the
// 2026-07-28 cancellation of the request.
func (r *Response) Close() error {
	r.watch.closed(r.Status)
	return r.body.Close()
}

// Room returns the whole buffer of the message Next last returned when it
// has BodyRoom spare bytes in front of it (a JSON body of RoomMin bytes or
// more or of unknown length, or an event whose data was one line longer
// than the read buffer), else nil: a rewrite that grows the message by at
// most BodyRoom can be done in place (rewrite.Down.Room). The buffer is the
// caller's from then on.
func (r *Response) Room() []byte {
	if r.sse != nil {
		return r.sse.takeRoom()
	}
	return r.room
}

const (
	// RoomMin is the body size from which a JSON body of known length is
	// read with room in front of it; a smaller body is cheaper to copy than
	// to make room for.
	RoomMin = 32 << 10
	// BodyRoom is that room.
	BodyRoom = 4 << 10
)

// readBody reads all of r, failing with ErrTooLarge past max bytes. It
// returns the buffer and the offset of the body in it: 0 for a body of
// known length under RoomMin bytes, else BodyRoom. A body of known length
// is read into one buffer of its size; one of unknown length by chunks,
// after the last large one's size (last, when not nil).
func readBody(r io.Reader, max int, size int64, last *atomic.Int64) (buf []byte, off int, err error) {
	if size > int64(max) {
		return nil, 0, tooLarge(max)
	}
	c := chunks{room: BodyRoom, last: last}
	if size >= 0 {
		c.first = int(size) + 1 // one spare byte to read the EOF into
		if size < RoomMin {
			c.room = 0
		}
	}
	if err := c.readFrom(r, max); err != nil {
		return nil, 0, err
	}
	return c.join(), c.room, nil
}

// Redact hides URL userinfo and query values, for messages and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<invalid URL>"
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}
