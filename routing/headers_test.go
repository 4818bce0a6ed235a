package routing

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
)

// Test forms of what the product does inside Client.Post.

// DeriveHeaders sets the MCP headers of body as Post does without raw
// UTF-8.
func DeriveHeaders(h http.Header, body []byte, params []ParamHeader) {
	deriveHeaders(h, body, params, false)
}

// HeadersFor is Headers as Post sends them under ctx.
func HeadersFor(ctx context.Context, body []byte, params []ParamHeader) http.Header {
	h := make(http.Header, 6)
	writeHeaders(h, body, params, RawUTF8Headers(ctx))
	return h.Clone()
}

// EncodeValue is the header value of s without raw UTF-8.
func EncodeValue(s string) string {
	v, _ := (&encoder{write: true}).value(s)
	return v
}

// DecodeValue reverses EncodeValue; it is what a server does before
// comparing a header with the body.
func DecodeValue(v string) (string, bool) {
	if len(v) < len(sentinelPrefix)+len(sentinelSuffix) || !strings.HasPrefix(v, sentinelPrefix) || !strings.HasSuffix(v, sentinelSuffix) {
		return v, true
	}
	b, err := base64.StdEncoding.DecodeString(v[len(sentinelPrefix) : len(v)-len(sentinelSuffix)])
	if err != nil {
		return "", false
	}
	return string(b), true
}

// NewSSEReader reads events from r as a Response does; max bounds one
// event's data (0: unlimited).
func NewSSEReader(r io.Reader, max int) *SSEReader { return newSSEReaderSize(r, max, 32<<10, nil) }
