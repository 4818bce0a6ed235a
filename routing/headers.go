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

// namePath returns the gjson path of the params member that Mcp-Name
// mirrors for a method, or "" when the method carries no Mcp-Name.
func namePath(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "params.name"
	case "resources/read":
		return "params.uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		return "params.taskId"
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
	method := gjson.Get(doc, "method").String()
	// The version is read from _meta without an escaped path, which gjson
	// would allocate to parse; only a body whose first _meta lacks it
	// (duplicate keys) takes the path, so that the answer is the path's.
	version := memberOf(gjson.Get(doc, "params._meta"), metaProtocolVersion)
	if !version.Exists() {
		version = gjson.Get(doc, pathProtocolVersion)
	}
	var name gjson.Result
	if p := namePath(method); p != "" {
		name = gjson.Get(doc, p)
	}
	if version.Type == gjson.String {
		h[keyProtocolVersion] = versionValue(version.Str)
	}
	h[HeaderMethod] = []string{EncodeValue(method)}
	if name.Type == gjson.String {
		h[HeaderName] = []string{EncodeValue(name.Str)}
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
		h.Set(HeaderParamPrefix+p.Name, EncodeValue(s))
	}
}

// keyProtocolVersion is HeaderProtocolVersion in the canonical form that
// http.Header.Set would store it under.
const keyProtocolVersion = "Mcp-Protocol-Version"

// metaProtocolVersion is the _meta member that carries the version, and
// pathProtocolVersion its gjson path from the top of a request.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	pathProtocolVersion = `params._meta.io\.modelcontextprotocol/protocolVersion`
)

// modernVersionValue is shared by every request that carries 2026-07-28,
// which is all of them in a session; net/http only reads header values.
var modernVersionValue = []string{"2026-07-28"}

func versionValue(v string) []string {
	if v == modernVersionValue[0] {
		return modernVersionValue
	}
	return []string{EncodeValue(v)}
}

// memberOf returns the first member key of obj, as gjson.Get(obj, escaped
// key) would, without building a path.
func memberOf(obj gjson.Result, key string) gjson.Result {
	var out gjson.Result
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			out = v
			return false
		}
		return true
	})
	return out
}

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
