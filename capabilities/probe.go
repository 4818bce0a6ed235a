package capabilities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/routing"
)

// Era is the verdict of a probe.
type Era int

// The verdicts. Only Modern, Legacy and LegacySSE are evidence about the
// server and may be cached; Unknown is a failure to learn anything (try
// again later).
const (
	Unknown Era = iota
	Modern
	Legacy
	// LegacySSE is a 2024-11-05 server on the old HTTP+SSE transport: it
	// refuses POSTs to its URL, and a GET opens an event stream whose first
	// event names the endpoint to POST to (routing.OpenLegacy). The probe
	// never returns it: the bridge learns it from that GET.
	LegacySSE
)

func (e Era) String() string {
	if e < Unknown || e > LegacySSE {
		return "unknown"
	}
	return [...]string{"unknown", "modern", "legacy", "legacy-sse"}[e]
}

// Verdict is the outcome of a server/discover probe.
type Verdict struct {
	Era Era
	// Discover is the raw DiscoverResult object when Era is Modern.
	Discover []byte
	// Status is the HTTP status of the answer (0 when there was none).
	Status int
	// Reason says, in a sentence, what the answer showed.
	Reason string
	// Err is set when the probe failed or the answer rules out bridging: it
	// explains the cause and the likely fix, for the initialize error.
	Err error
	// transport marks a failure below HTTP (refused, reset, timeout).
	transport bool
}

// Prober runs the era probe against one upstream.
type Prober struct {
	Client *routing.Client
	// NextID mints upstream request ids.
	NextID func() []byte
	// Body, when set, is the probe's request under an id: a modern
	// client's own server/discover, sent as it wrote it. Default:
	// DiscoverBody with the meta given to Probe.
	Body func(id []byte) []byte
}

// Probe POSTs server/discover with the given _meta block and classifies the
// answer: modern, legacy (passthrough), or a failure. A -32022 that names
// 2026-07-28 as supported is retried once.
func (p *Prober) Probe(ctx context.Context, meta rewrite.MetaBlock) Verdict {
	for try := 0; ; try++ {
		v := p.retrying(ctx, meta)
		if v.Era != Modern || v.Discover != nil || v.Err != nil {
			return v
		}
		if try == 1 {
			v.Era = Unknown
			v.Err = fmt.Errorf("%s rejected protocol version %s twice while listing it as supported; the server is misbehaving", p.Client.URL(), protocol.ModernVersion)
			return v
		}
	}
}

// probeRetries bounds the retries of a probe that failed in transport
// (refused, reset, broken stream): server/discover is safe to repeat.
const probeRetries = 2

// retrying runs once, and again, with a new id and backoff, while the
// failure was in transport and the context allows.
func (p *Prober) retrying(ctx context.Context, meta rewrite.MetaBlock) Verdict {
	backoff := 200 * time.Millisecond
	for try := 0; ; try++ {
		v := p.once(ctx, meta)
		if !v.transport || try >= probeRetries || ctx.Err() != nil {
			return v
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return v
		}
		backoff *= 2
	}
}

// DiscoverBody builds a server/discover request.
func DiscoverBody(id []byte, meta rewrite.MetaBlock) []byte {
	params := append(append([]byte(`{"_meta":{`), meta.Raw()...), "}}"...)
	return rewrite.RequestFrame(id, "server/discover", params)
}

func (p *Prober) once(ctx context.Context, meta rewrite.MetaBlock) Verdict {
	id := p.NextID()
	body := DiscoverBody(id, meta)
	if p.Body != nil {
		body = p.Body(id)
	}
	resp, err := p.Client.Post(ctx, body, nil)
	if err != nil {
		if re, ok := errors.AsType[*routing.RedirectError](err); ok {
			// A refused redirect stays refused: no retry.
			return Verdict{Era: Unknown, Reason: "redirect refused", Err: err, Status: re.Status}
		}
		if IsAuthError(err) {
			// The sign-in did not complete: the hook has done what it
			// could, and its text names the way out. No retry (another
			// browser tab would only follow).
			return Verdict{Era: Unknown, Reason: "sign-in did not complete", Err: err}
		}
		return Verdict{Era: Unknown, Reason: "no answer", Err: p.transportErr(err), transport: true}
	}
	defer resp.Close()
	url := p.Client.URL()
	status := resp.Status
	switch {
	case status == 401 || status == 403:
		hint := "authentication required: " + AuthHint(url)
		if status == 403 {
			hint = "access denied: " + ForbiddenHint(url, resp.Header)
		}
		return Verdict{Era: Unknown, Status: status, Reason: "authentication required",
			Err: fmt.Errorf("%s answered HTTP %d to server/discover: %s", url, status, hint)}
	case status == 407:
		return Verdict{Era: Unknown, Status: status, Reason: "proxy authentication required",
			Err: fmt.Errorf("an HTTP proxy between here and %s asks for authentication (HTTP 407): put the proxy credentials in HTTPS_PROXY / HTTP_PROXY", url)}
	case status == 408 || status == 429:
		return Verdict{Era: Unknown, Status: status, Reason: "try again later",
			Err: fmt.Errorf("%s answered HTTP %d to server/discover: the server is busy or rate limiting; try again later", url, status)}
	case status >= 500:
		return Verdict{Era: Unknown, Status: status, Reason: "server error",
			Err: fmt.Errorf("%s answered HTTP %d to server/discover: the server is failing; check its logs and try again", url, status)}
	}
	msg, err := resp.Answer(id)
	if err != nil && !errors.Is(err, io.EOF) {
		if errors.Is(err, routing.ErrContentType) && status < 300 {
			return Verdict{Era: Unknown, Status: status, Reason: "not an MCP endpoint",
				Err: fmt.Errorf("%s answered server/discover with %s, not JSON: this does not look like an MCP endpoint; check the URL (it often ends in /mcp)", url, resp.ContentType)}
		}
		if ctx.Err() != nil || status < 400 {
			return Verdict{Era: Unknown, Status: status, Reason: "unreadable answer", Err: p.transportErr(err), transport: ctx.Err() == nil}
		}
	}
	res := gjson.ParseBytes(msg)
	if len(msg) == 0 || !res.IsObject() {
		if status >= 400 {
			return Verdict{Era: Legacy, Status: status, Reason: fmt.Sprintf("HTTP %d without a JSON-RPC body", status)}
		}
		return Verdict{Era: Unknown, Status: status, Reason: "empty answer",
			Err: fmt.Errorf("%s answered server/discover with HTTP %d and no JSON-RPC message; check the URL", url, status)}
	}
	if e := res.Get("error"); e.Exists() {
		code := e.Get("code").Int()
		switch code {
		case protocol.CodeUnsupportedProtocolVersion:
			sup := e.Get("data.supported")
			if !sup.IsArray() || len(sup.Array()) == 0 {
				return Verdict{Era: Legacy, Status: status, Reason: "-32022 without data.supported"}
			}
			return classifyVersions(url, status, sup, nil)
		case protocol.CodeHeaderMismatch, protocol.CodeMissingRequiredCapability:
			return Verdict{Era: Unknown, Status: status, Reason: "modern server rejected the probe",
				Err: fmt.Errorf("%s is a modern MCP server but rejected the proxy's server/discover with %d %q; this is a proxy bug or a header added with %v; please report it", url, code, e.Get("message").String(), rewrite.HintHeader)}
		}
		return Verdict{Era: Legacy, Status: status, Reason: fmt.Sprintf("error %d to server/discover", code)}
	}
	result := res.Get("result")
	versions := result.Get("supportedVersions")
	if !result.IsObject() || !versions.IsArray() {
		return Verdict{Era: Legacy, Status: status, Reason: "answer is not a DiscoverResult"}
	}
	return classifyVersions(url, status, versions, []byte(result.Raw))
}

func classifyVersions(url string, status int, versions gjson.Result, discover []byte) Verdict {
	var legacy []string
	modern, others := false, false
	for _, v := range versions.Array() {
		switch {
		case v.Str == protocol.ModernVersion:
			modern = true
		case strings.HasPrefix(v.Str, "2025-") || strings.HasPrefix(v.Str, "2024-"):
			legacy = append(legacy, v.Str)
		default:
			others = true
		}
	}
	switch {
	case modern:
		if discover == nil {
			return Verdict{Era: Modern, Status: status, Reason: "-32022 lists " + protocol.ModernVersion}
		}
		return Verdict{Era: Modern, Status: status, Discover: discover, Reason: "DiscoverResult supports " + protocol.ModernVersion}
	case !others && len(legacy) > 0:
		return Verdict{Era: Legacy, Status: status, Reason: "supports only " + strings.Join(legacy, ", ")}
	}
	return Verdict{Era: Unknown, Status: status, Reason: "no common version",
		Err: fmt.Errorf("%s supports protocol versions %s but not %s, the only modern version this proxy speaks; upgrade mcp-tasks-proxy", url, versions.Raw, protocol.ModernVersion)}
}

func (p *Prober) transportErr(err error) error {
	if te, ok := errors.AsType[*routing.TransportError](err); ok {
		switch te.Kind {
		case routing.KindDial:
			return fmt.Errorf("%w: is the server running, and is the URL right?", err)
		case routing.KindTimeout:
			return fmt.Errorf("%w: the server did not answer in time; check that it is up", err)
		}
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s did not answer server/discover in time: check that the server is up and reachable", p.Client.URL())
	}
	return fmt.Errorf("reading the answer of %s to server/discover: %w", p.Client.URL(), err)
}

// AuthHint is the way out of an HTTP 401 from url, for messages: both of
// them, OAuth and a static token.
func AuthHint(url string) string {
	return fmt.Sprintf("sign in with: mcp-tasks-proxy auth login %s (OAuth), or pass a token with %v 'Authorization: Bearer <token>'", url, rewrite.HintHeader)
}

// ForbiddenHint is the way out of an HTTP 403 from url, whose headers are
// h. A 403 insufficient_scope reaches the client only once a step-up did
// not get the scope: the hint names it.
func ForbiddenHint(url string, h http.Header) string {
	if scope := insufficientScope(h); scope != "" {
		return fmt.Sprintf("the server needs the scope %q, which signing in did not grant; the account may not be allowed it (ask the server's administrator), or sign in as another account with: mcp-tasks-proxy auth login %s", scope, url)
	}
	return fmt.Sprintf("the credentials are not allowed to do this; check the account's permissions, sign in as another account with: mcp-tasks-proxy auth login %s (OAuth), or check the token passed with %v", url, rewrite.HintHeader)
}

// insufficientScope is the scope a Bearer insufficient_scope challenge in h
// asks for ("" when h has none; RFC 6750 §3.1).
func insufficientScope(h http.Header) string {
	chs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return ""
	}
	for _, ch := range chs {
		if ch.Scheme == "bearer" && ch.Params["error"] == "insufficient_scope" {
			return ch.Params["scope"]
		}
	}
	return ""
}

// IsAuthError reports whether err is the auth hook's failure to authorize
// a request (routing.KindAuth): a sign-in that did not complete. Its text
// names the server and the way out; it is never retried.
func IsAuthError(err error) bool {
	te, ok := errors.AsType[*routing.TransportError](err)
	return ok && te.Kind == routing.KindAuth
}

// StatusText formats an HTTP status for messages ("HTTP 503", or "no HTTP
// answer").
func StatusText(status int) string {
	if status == 0 {
		return "no HTTP answer"
	}
	return "HTTP " + strconv.Itoa(status)
}
