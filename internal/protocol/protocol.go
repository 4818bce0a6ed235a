// Package protocol is the MCP vocabulary of mcp-tasks-proxy, defined once:
// the protocol versions of both eras, the _meta keys, the JSON-RPC and MCP
// error codes, the result types, the x-mcp-header annotation type, and the
// method table (method.go) that says, per method, in which era it exists,
// which param its Mcp-Name header mirrors, whether it may be repeated after a
// broken stream, how its answer is rewritten for the legacy client and
// whether the proxy answers it itself.
//
// It is a leaf: it imports only the standard library, holds no state beyond
// constant tables, and does no I/O. rewrite, routing, capabilities and the
// command layer read it; it reads none of them.
package protocol

// Protocol versions.
const (
	// ModernVersion is the one modern version the proxy speaks upstream.
	ModernVersion = "2026-07-28"
	// LegacyVersion is the version the proxy answers a legacy client with
	// when it asked for one the proxy does not support.
	LegacyVersion = "2025-11-25"
	// TasksExtension is the tasks extension's identifier (tasks.md §4).
	TasksExtension = "io.modelcontextprotocol/tasks"
)

// LegacyVersions are the 2025-era versions a legacy client may ask for and
// that the proxy answers with as they are (eras.md §3.1 POLICY).
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26"}

// The _meta keys of 2026-07-28 (eras.md §4.2, §4.3) and of the tasks
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

	// 2026-07-28 transport errors (eras.md §14.1).
	CodeHeaderMismatch             = -32020
	CodeMissingRequiredCapability  = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// Result types of 2026-07-28 (eras.md §6) and of the tasks extension.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
	ResultTask          = "task"
)

// ParamHeader is one x-mcp-header annotation (eras.md §15.4): a tool
// argument mirrored into an Mcp-Param-{Name} header. rewrite finds them in
// a tools/list result; routing writes them; both use this one type.
type ParamHeader struct {
	// Name is the suffix after "Mcp-Param-".
	Name string
	// Path is the gjson path of the value in the request body.
	Path string
}
