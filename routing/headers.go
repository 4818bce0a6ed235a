package routing

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// The standard headers of the 2026-07-28 Streamable HTTP transport.
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
)

// ParamHeader is protocol.ParamHeader, the x-mcp-header annotation that
// rewrite finds in a tools/list result: the same type, so that the
// annotations go from one package to the other without a conversion.
type ParamHeader = protocol.ParamHeader

// deriveHeaders sets the standard MCP headers of a request from its final
// body, in this one function, so that a header can never disagree with the
// body: MCP-Protocol-Version from params._meta, Mcp-Method from method,
// Mcp-Name from the member protocol.NamePath names, and one
// Mcp-Param-{Name} per annotated argument present in the body. A value
// that is not header-safe takes the Base64 sentinel, or with raw, when it
// is valid UTF-8 and otherwise header-safe (headerSafe), goes as it is. It
// reports whether raw changes any value (rawDiffers); with h nil it writes
// nothing and only reports that.
func deriveHeaders(h http.Header, body []byte, params []protocol.ParamHeader, raw bool) (rawDiffers bool) {
	method := gjson.GetBytes(body, "method").String()
	version := gjson.GetBytes(body, pathProtocolVersion)
	var name gjson.Result
	if p := protocol.NamePath(method); p != "" {
		name = gjson.GetBytes(body, p)
	}
	e := encoder{raw: raw, write: h != nil}
	if version.Type == gjson.String {
		if v, ok := e.value(version.Str); ok {
			h[keyProtocolVersion] = []string{v}
		}
	}
	if v, ok := e.value(method); ok {
		h[HeaderMethod] = []string{v}
	}
	if name.Type == gjson.String {
		if v, ok := e.value(name.Str); ok {
			h[HeaderName] = []string{v}
		}
	}
	for _, p := range params {
		v := gjson.GetBytes(body, p.Path)
		var s string
		switch v.Type {
		case gjson.String:
			s = v.Str
		case gjson.Number, gjson.True, gjson.False:
			s = v.Raw
		default:
			continue // null, absent, objects and arrays get no header
		}
		if v, ok := e.value(s); ok {
			h.Set(HeaderParamPrefix+p.Name, v)
		}
	}
	return e.differs
}

// encoder encodes the values of one request's headers.
type encoder struct {
	raw     bool // values safe as UTF-8 are sent as they are
	write   bool // the values are wanted, not only differs
	differs bool // a value is sent differently with raw than without
}

// value returns the header value for s, and false when the caller only
// wants differs (nothing is encoded then).
func (e *encoder) value(s string) (string, bool) {
	if headerSafe(s, false) {
		return s, e.write
	}
	if headerSafe(s, true) {
		e.differs = true
		if e.raw {
			return s, e.write
		}
	}
	if !e.write {
		return "", false
	}
	return sentinelPrefix + base64.StdEncoding.EncodeToString([]byte(s)) + sentinelSuffix, true
}

// keyProtocolVersion is HeaderProtocolVersion in the canonical form that
// http.Header.Set would store it under.
const keyProtocolVersion = "Mcp-Protocol-Version"

// pathProtocolVersion is the gjson path of protocol.MetaProtocolVersion
// from the top of a request (TestPathProtocolVersion holds it to the key).
const pathProtocolVersion = `params._meta.io\.modelcontextprotocol/protocolVersion`

const (
	sentinelPrefix = "=?base64?"
	sentinelSuffix = "?="
)

// headerSafe reports whether s goes into an Mcp-Name or Mcp-Param-*
// header as it is (the value encoding of the 2026-07-28 Streamable HTTP
// transport): visible ASCII and inner spaces, or with utf, printable valid
// UTF-8 (bytes of 0x80 and above are obs-text, which net/http sends and
// accepts). Anything else takes =?base64?{standard padded Base64 of the
// UTF-8}?=: a control character (CR, LF and NUL above all, which must never
// reach a header), a leading or trailing space (HTTP would strip it), a
// lookalike of the sentinel, and the empty string, which reads as a
// missing header to some servers (go-sdk v1.8.0).
func headerSafe(s string, utf bool) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || strings.HasPrefix(s, sentinelPrefix) && strings.HasSuffix(s, sentinelSuffix) {
		return false
	}
	if utf {
		return utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// Raw UTF-8 headers: go-sdk v1.8.0 servers compare the raw Mcp-Name header
// with the body, so they refuse the spec's Base64 sentinel with -32020
// (header mismatch), and a prompt named "grüße" fails there. A caller that
// gets -32020 for a request whose headers used the sentinel (UsesBase64)
// may send it once more under WithRawUTF8Headers: the values that are
// valid UTF-8 and otherwise header-safe (headerSafe) then go as raw UTF-8.
// CR, LF, NUL and other control characters keep the sentinel whatever the
// mode, so they can never reach a header.

type rawUTF8Key struct{}

// WithRawUTF8Headers returns a context under which Client.Post derives the
// MCP headers with raw UTF-8 values instead of the Base64 sentinel wherever
// the value allows it (see UsesBase64).
func WithRawUTF8Headers(ctx context.Context) context.Context {
	return context.WithValue(ctx, rawUTF8Key{}, true)
}

// RawUTF8Headers reports whether ctx asks for raw UTF-8 headers.
func RawUTF8Headers(ctx context.Context) bool {
	raw, _ := ctx.Value(rawUTF8Key{}).(bool)
	return raw
}

// UsesBase64 reports whether the headers derived from body carry a value in
// the Base64 sentinel that WithRawUTF8Headers would send as raw UTF-8:
// exactly when a retry under it sends different headers. It allocates
// nothing beyond what reading the body takes.
func UsesBase64(body []byte, params []protocol.ParamHeader) bool {
	return deriveHeaders(nil, body, params, false)
}
