package link

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/capabilities"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// The retry policy (docs/reliability.md, Retries): a request that could not
// be sent (a dial error) is retried whatever its method; once bytes have
// left, only methods that are safe to repeat are, each time with a new
// upstream id, as 2026 requires after a broken stream. A tools/call is
// never replayed.
const (
	MaxDialRetries   = 3
	MaxBrokenRetries = 2
	RetryBackoff     = 200 * time.Millisecond
)

// The reconnect delays of a dropped stream the client did not ask for
// (listen, the 2025 GET stream, HTTP+SSE), doubling from BackoffMin.
const (
	BackoffMin = 250 * time.Millisecond
	BackoffMax = 30 * time.Second
)

// RetryKind says whether and why a failed exchange may be retried.
type RetryKind int

const (
	RetryNone   RetryKind = iota
	RetryDial             // the connection was never made
	RetryBroken           // the exchange broke before its response
)

// Attempt makes one upstream exchange for a client request, and repeats it
// under the retry policy above.
func (e *Env) Attempt(ctx context.Context, c *Call, method string, exchange func() Result) Result {
	var r Result
	if !Retry(ctx, protocol.Repeatable(method), func() RetryKind { r = exchange(); return r.Again }, func(after time.Duration) {
		e.Info("retrying the upstream request", zap.String("method", method), zap.ByteString("id", c.ID), zap.Duration("after", after))
	}) {
		return Result{}
	}
	return r
}

// Retry runs try until it needs no retry under the retry policy above (a
// broken exchange is made again only when repeatable), telling note of
// each retry. It reports false when ctx ended during a backoff.
func Retry(ctx context.Context, repeatable bool, try func() RetryKind, note func(after time.Duration)) bool {
	dials, breaks := 0, 0
	backoff := RetryBackoff
	for {
		switch try() {
		case RetryDial:
			if dials++; dials > MaxDialRetries {
				return true
			}
		case RetryBroken:
			if breaks++; !repeatable || breaks > MaxBrokenRetries {
				return true
			}
		default:
			return true
		}
		note(backoff)
		if !Sleep(ctx, backoff) {
			return false
		}
		backoff *= 2
	}
}

// Deadlines bounds one upstream exchange of c with one timer, set to the
// sooner of two deadlines: the idle one, which Touch restarts on every
// message from the server (progress keeps a long call alive), and what is
// left of the request's --request-timeout, which nothing moves. When the
// timer fires, actx ends with errIdle or errHardMax, whichever deadline
// has passed. Stop releases the timer.
func (e *Env) Deadlines(ctx context.Context, c *Call) (actx context.Context, d *Deadline) {
	actx, cancel := context.WithCancelCause(ctx)
	d = &Deadline{cancel: cancel, idle: e.Cfg.IdleTimeout}
	if e.Cfg.RequestTimeout > 0 {
		d.hard = c.Start.Add(e.Cfg.RequestTimeout)
	}
	d.timer = time.AfterFunc(d.wait(), d.fire)
	return actx, d
}

// Deadline is the timer of one exchange (see Deadlines).
type Deadline struct {
	cancel context.CancelCauseFunc
	idle   time.Duration
	hard   time.Time // zero for none
	timer  *time.Timer
}

func (d *Deadline) wait() time.Duration {
	if d.hard.IsZero() {
		return d.idle
	}
	return min(d.idle, time.Until(d.hard))
}

func (d *Deadline) fire() {
	if !d.hard.IsZero() && !time.Now().Before(d.hard) {
		d.cancel(errHardMax)
		return
	}
	d.cancel(errIdle)
}

func (d *Deadline) Touch() { d.timer.Reset(d.wait()) }

func (d *Deadline) Stop() {
	d.timer.Stop()
	d.cancel(nil)
}

// RequestBound bounds a wait that is part of request c by what is left of
// --request-timeout, counted from when the request was read: its upstream
// exchanges and the waits for the client's answers to what the server
// asked (MRTR) together never take longer.
func (e *Env) RequestBound(ctx context.Context, c *Call) (context.Context, context.CancelFunc) {
	if e.Cfg.RequestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadlineCause(ctx, c.Start.Add(e.Cfg.RequestTimeout), errHardMax)
}

// SendFailed is the answer for an exchange that failed before any status,
// and whether it may be retried: a dial error always, a broken connection
// for methods safe to repeat, a timeout never (it would only multiply the
// wait). It is nil when the client cancelled or the session is ending.
func (e *Env) SendFailed(ctx, actx context.Context, c *Call, err error) ([]byte, RetryKind) {
	if ctx.Err() != nil {
		return nil, RetryNone
	}
	if frame := e.TimedOut(actx, c); frame != nil {
		return frame, RetryNone
	}
	e.Warn("upstream request failed", zap.String("method", c.Method), zap.ByteString("id", c.ID), zap.Error(err))
	return e.transportError(c.ID, c.Method, err)
}

// TooLargeAnswer is the error for an upstream answer over the message size
// limit.
func (e *Env) TooLargeAnswer(c *Call, status int) []byte {
	return e.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInternalError, ErrorData(e.URL(), status, "", ""),
		"the upstream answer to %s is larger than the message size limit; raise %s", c.Method, rewrite.HintMaxMessageSize))
}

// Timeout causes of one upstream exchange.
var (
	errIdle    = errors.New("idle timeout")
	errHardMax = errors.New("request timeout")
)

// TimedOut is the answer for an exchange a timeout ended (its stream is
// closed, which cancels it upstream), or nil when no timeout did.
func (e *Env) TimedOut(actx context.Context, c *Call) []byte {
	data := ErrorData(e.URL(), 0, "cause", "timeout")
	var err rewrite.Error
	switch context.Cause(actx) {
	case errIdle:
		err = rewrite.Errorf(protocol.CodeInternalError, data, "the upstream server sent nothing for %v while answering %s, so the proxy gave up (raise %s if the tool is that slow)", e.Cfg.IdleTimeout, c.Method, rewrite.HintIdleTimeout)
	case errHardMax:
		err = rewrite.Errorf(protocol.CodeInternalError, data, "%s took longer than %v, so the proxy gave up (raise %s for longer calls)", c.Method, e.Cfg.RequestTimeout, rewrite.HintRequestTimeout)
	default:
		return nil
	}
	e.Warn("upstream request timed out", zap.String("method", c.Method), zap.ByteString("id", c.ID), zap.String("why", context.Cause(actx).Error()))
	return e.ErrorFrame(c.ID, err)
}

// TransportError is the error for an exchange that failed before any status.
func (e *Env) TransportError(id []byte, method string, err error) []byte {
	frame, _ := e.transportError(id, method, err)
	return frame
}

// transportError is TransportError and whether the exchange may be retried.
func (e *Env) transportError(id []byte, method string, err error) ([]byte, RetryKind) {
	msg := fmt.Sprintf("the request %s to the upstream server failed: %v", method, err)
	cause, again := "network", RetryBroken
	if te, ok := errors.AsType[*routing.TransportError](err); ok {
		switch te.Kind {
		case routing.KindDial:
			cause, again = "connect", RetryDial
			msg = fmt.Sprintf("cannot reach the upstream server for %s: %v; is the server running, and is the URL right?", method, err)
		case routing.KindTimeout:
			cause, again = "timeout", RetryNone
			msg = fmt.Sprintf("the upstream server did not answer %s in time: %v; raise %s if the server is that slow to start answering", method, err, e.Hint(rewrite.HintResponseHeaderTimeout))
		case routing.KindRedirect:
			cause, again = "redirect", RetryNone
			msg = fmt.Sprintf("%s was not sent: %v", method, te.Err)
		case routing.KindAuth:
			// The hook's text: it names the server, what did not happen
			// and the way out (mcp-tasks-proxy auth login URL).
			cause, again = "auth", RetryNone
			msg = te.Err.Error()
		default:
			msg = fmt.Sprintf("the connection to the upstream server broke during %s: %v; the request may or may not have run", method, err)
		}
	}
	return rewrite.ErrorFrame(id, protocol.CodeInternalError, msg, ErrorData(e.URL(), 0, "cause", cause)), again
}

// LogExchange writes the debug line of one upstream exchange.
func (e *Env) LogExchange(c *Call, upID []byte, status int, start time.Time, up, down int) {
	if ce := e.Log.Check(zapcore.DebugLevel, "upstream exchange"); ce != nil {
		fields := []zap.Field{zap.String("dir", "proxy->server"), zap.String("op", c.Op), zap.String("method", c.Method), zap.ByteString("id", c.ID),
			zap.Int("httpStatus", status), zap.Duration("latency", time.Since(start)), zap.Int("bytesUp", up), zap.Int("bytesDown", down)}
		if upID != nil {
			fields = append(fields, zap.ByteString("upstreamId", upID))
		}
		ce.Write(fields...)
	}
}

// ErrorData builds error.data for proxy-made errors: the upstream URL
// (secrets redacted), the HTTP status when there was one, and string
// members given as key, value pairs (a pair with key "" is left out).
func ErrorData(url string, status int, kv ...string) []byte {
	b := rewrite.AppendString([]byte(`{"url":`), url)
	if status != 0 {
		b = fmt.Appendf(b, `,"httpStatus":%d`, status)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] != "" {
			b = append(rewrite.AppendString(append(b, ','), kv[i]), ':')
			b = rewrite.AppendString(b, kv[i+1])
		}
	}
	return append(b, '}')
}

// NoAnswer is the error for a body or stream that ended without a response.
func NoAnswer(url string, c *Call, resp *routing.Response, skipped string) []byte {
	if resp.Status >= 300 {
		return HTTPFailure(url, c.ID, c.Method, resp, nil)
	}
	msg := fmt.Sprintf("the upstream server answered HTTP %d with no JSON-RPC response to %s", resp.Status, c.Method)
	if resp.IsSSE() {
		msg = fmt.Sprintf("the upstream event stream for %s ended before the response", c.Method)
		if skipped != "" {
			msg += "; it carried " + skipped
		}
		if c.Method != "tools/call" {
			msg += "; retrying the request is safe"
		} else {
			msg += "; the tool may or may not have run"
		}
	}
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError, msg, ErrorData(url, resp.Status, "", ""))
}

// BrokenRead is the error for a connection that broke while an answer was
// read.
func BrokenRead(url string, c *Call, status int, err error) []byte {
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("the connection to the upstream server broke while reading the answer to %s (%v); the request may or may not have run", c.Method, err),
		ErrorData(url, status, "", ""))
}

// WrongID is the error for a JSON answer to another request.
func WrongID(url string, c *Call, status int, got string, want []byte) []byte {
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("the upstream server answered %s with a response for id %s instead of %s; the server is misbehaving", c.Method, got, want),
		ErrorData(url, status, "", ""))
}

// HTTPFailure is the error for an HTTP answer that carries no usable
// JSON-RPC response: its message names the status and the likely fix, and
// error.data holds the status, the URL and the start of the body.
func HTTPFailure(url string, id []byte, method string, resp *routing.Response, body []byte) []byte {
	st := resp.Status
	var hint string
	switch {
	case st == http.StatusUnauthorized:
		hint = "authentication required: " + capabilities.AuthHint(url)
	case st == http.StatusForbidden:
		hint = "access denied: " + capabilities.ForbiddenHint(url, resp.Header)
	case st == http.StatusNotFound:
		hint = "endpoint not found: check the URL path (MCP endpoints often end in /mcp)"
	case st == http.StatusTooManyRequests:
		hint = "rate limited: try again later"
	case st >= 500:
		hint = "the server or a gateway in front of it is failing: try again later or check the server's logs"
	case st >= 400:
		hint = "the server rejected the request"
	default:
		hint = "the URL may point at a web page rather than an MCP endpoint"
	}
	kv := []string{"contentType", resp.ContentType}
	if len(body) > 0 {
		kv = append(kv, "body", string(capSnippet(body)))
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		kv = append(kv, "retryAfter", ra)
	}
	return rewrite.ErrorFrame(id, protocol.CodeInternalError, fmt.Sprintf("upstream %s answered %s with HTTP %d (%s): %s", url, method, st, cmp.Or(resp.ContentType, "no content type"), hint), ErrorData(url, st, kv...))
}

// InvalidBody is the error for a successful HTTP answer whose body is not a
// JSON-RPC message.
func InvalidBody(url string, c *Call, resp *routing.Response, body []byte, err error) []byte {
	return rewrite.ErrorFrame(c.ID, protocol.CodeInternalError,
		fmt.Sprintf("the upstream server answered %s with HTTP %d but an invalid JSON-RPC body (%v); the server is misbehaving: check its logs", c.Method, resp.Status, err),
		ErrorData(url, resp.Status, "contentType", resp.ContentType, "body", string(capSnippet(body))))
}

// capSnippet is the start of a body for error.data.
func capSnippet(b []byte) []byte { return b[:min(len(b), 256)] }

// InvalidMessage is the error message for a frame rewrite.Parse refused.
func InvalidMessage(err error) string {
	switch {
	case errors.Is(err, rewrite.ErrParse):
		return "Parse error: the line is not valid JSON; send one JSON-RPC message per line"
	case errors.Is(err, rewrite.ErrParams):
		return "Invalid params: " + err.Error()
	}
	return "Invalid Request: " + err.Error()
}
