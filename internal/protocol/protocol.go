// Package protocol is the MCP vocabulary of mcp-tasks-proxy, defined once:
// the protocol versions of both eras, the _meta keys, the error codes, the
// result types, the x-mcp-header annotation type, and the method table
// (method.go). It is a leaf: it imports only the standard library, holds
// no state beyond constant tables, and does no I/O.
package protocol

// Protocol versions.
const (
	// ModernVersion is the one modern version the proxy speaks upstream.
	ModernVersion = "2026-07-28"
	// LegacyVersion is the version the proxy answers a legacy client with
	// when it asked for one the proxy does not support.
	LegacyVersion = "2025-11-25"
	// TasksExtension is the 2026-07-28 tasks extension's identifier.
	TasksExtension = "io.modelcontextprotocol/tasks"
)

// LegacyVersions are the 2025-era versions a legacy client may ask for and
// that the proxy answers with as they are; any other gets 2025-11-25, as
// the 2025 lifecycle allows.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// IsModernVersion reports whether v names a protocol version after the
// 2025 era (versions are dates, YYYY-MM-DD, and compare as strings).
func IsModernVersion(v string) bool { return len(v) == len(ModernVersion) && v > LegacyVersions[0] }

// The request and result _meta keys of 2026-07-28 and of the tasks
// extension.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaRelatedTask        = "io.modelcontextprotocol/related-task"
)

// JSON-RPC and MCP error codes the proxy reads or writes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// 2026-07-28 Streamable HTTP errors.
	CodeHeaderMismatch             = -32020
	CodeMissingRequiredCapability  = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// Result types (resultType) of 2026-07-28 and of the tasks extension.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
	ResultTask          = "task"
)

// ParamHeader is one x-mcp-header annotation (2026-07-28 Streamable HTTP):
// a tool argument mirrored into an Mcp-Param-{Name} header. rewrite finds them
// in a tools/list result; routing writes them; both use this one type.
type ParamHeader struct {
	// Name is the suffix after "Mcp-Param-".
	Name string
	// Path is the gjson path of the value in the request body.
	Path string
}
