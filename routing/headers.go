package routing

import (
	"encoding/base64"
	"net/http"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The standard headers of 2026-07-28 Streamable HTTP (eras.md §15.2).
const (
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderParamPrefix     = "Mcp-Param-"
)

// ParamHeader mirrors one tool argument into an Mcp-Param-{Name} header
// (an x-mcp-header annotation, eras.md §15.4).
type ParamHeader struct {
	// Name is the suffix after "Mcp-Param-".
	Name string
	// Path is the gjson path of the value in the request body.
	Path string
}

const pathProtocolVersion = `params._meta.io\.modelcontextprotocol/protocolVersion`

// nameParam returns the params member that Mcp-Name mirrors for a method,
// or "" when the method carries no Mcp-Name.
func nameParam(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "taskId"
	}
	return ""
}

// DeriveHeaders sets the standard MCP headers of a request from its final
// body, in one place, so that a header can never disagree with the body:
// MCP-Protocol-Version from params._meta, Mcp-Method from method, Mcp-Name
// from params.name, params.uri or params.taskId per method, and one
// Mcp-Param-{Name} per annotated argument present in the body. Values that
// are not header-safe use the Base64 sentinel (EncodeValue).
func DeriveHeaders(h http.Header, body []byte, params []ParamHeader) {
	doc := unsafe.String(unsafe.SliceData(body), len(body))
	r := gjson.GetMany(doc, "method", pathProtocolVersion)
	method := r[0].String()
	if v := r[1]; v.Type == gjson.String {
		set(h, HeaderProtocolVersion, EncodeValue(v.Str))
	}
	set(h, HeaderMethod, EncodeValue(method))
	if p := nameParam(method); p != "" {
		if v := gjson.Get(doc, "params."+p); v.Type == gjson.String {
			set(h, HeaderName, EncodeValue(v.Str))
		}
	}
	for _, p := range params {
		v := gjson.Get(doc, p.Path)
		var s string
		switch v.Type {
		case gjson.String:
			s = v.Str
		case gjson.Number:
			s = v.Raw
		case gjson.True:
			s = "true"
		case gjson.False:
			s = "false"
		default:
			continue // null, absent, objects and arrays get no header
		}
		set(h, HeaderParamPrefix+p.Name, EncodeValue(s))
	}
}

// set writes one header value; values are already safe, since EncodeValue
// never yields CR, LF or any other control character.
func set(h http.Header, name, value string) { h.Set(name, value) }

const (
	sentinelPrefix = "=?base64?"
	sentinelSuffix = "?="
)

// EncodeValue makes s safe for an Mcp-Name or Mcp-Param-* header (eras.md
// §15.3). A value made only of visible ASCII and inner spaces is sent as is;
// anything else (non-ASCII, control characters including tab, CR and LF,
// leading or trailing whitespace, a value that itself looks like the
// sentinel, or the empty string) is sent as
// =?base64?{standard padded Base64 of the UTF-8}?=.
func EncodeValue(s string) string {
	if plainSafe(s) {
		return s
	}
	return sentinelPrefix + base64.StdEncoding.EncodeToString([]byte(s)) + sentinelSuffix
}

func plainSafe(s string) bool {
	if s == "" {
		// An empty header reads as a missing one to some servers (go-sdk
		// v1.8.0): the sentinel keeps "present and empty" distinct.
		return false
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return !(strings.HasPrefix(s, sentinelPrefix) && strings.HasSuffix(s, sentinelSuffix))
}

// DecodeValue reverses EncodeValue; it is what a server does before comparing
// a header with the body.
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
