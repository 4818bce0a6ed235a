// Package capabilities owns what the two eras say about each other at the
// start of a session: era detection by a server/discover probe, the legacy
// InitializeResult synthesized from the 2026-07-28 DiscoverResult, the
// capability mappings in both directions, and the _meta block the proxy
// injects on every upstream request.
//
// The mappings are pure functions over raw JSON. The probe is the only code
// here that does I/O, and it does it through routing. It must never hold a
// session's state (the bridge stores what the probe found), never send
// anything upstream but the probe, and never spell a flag (hints do).
package capabilities

import (
	"net/url"
	"slices"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// NegotiateLegacy picks the InitializeResult protocolVersion for a client
// that asked for requested: the same when the proxy supports it, otherwise
// 2025-11-25, which the 2025 rules allow.
func NegotiateLegacy(requested string) string {
	if slices.Contains(protocol.LegacyVersions, requested) {
		return requested
	}
	return protocol.LegacyVersion
}

// LegacyTasksCapability is the 2025 server capability that stands for the
// 2026-07-28 tasks extension: list, cancel and task-augmented tools/call.
const LegacyTasksCapability = `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`

// ClientCapabilities maps a legacy initialize params.capabilities object to
// the 2026 per-request clientCapabilities (_meta): roots loses
// listChanged, client-hosted tasks are dropped, and the tasks extension is
// declared. Unknown members are copied.
func ClientCapabilities(legacy []byte) []byte {
	out := []byte(`{}`)
	caps := gjson.ParseBytes(legacy)
	if caps.IsObject() {
		caps.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "tasks":
				return true
			case "roots":
				out, _ = sjson.SetRawBytes(out, "roots", []byte(`{}`))
				return true
			}
			out, _ = sjson.SetRawBytes(out, gjson.Escape(k.Str), []byte(v.Raw))
			return true
		})
	}
	if !gjson.GetBytes(out, "extensions").IsObject() {
		out, _ = sjson.SetRawBytes(out, "extensions", []byte(`{}`))
	}
	out, _ = sjson.SetRawBytes(out, "extensions."+gjson.Escape(protocol.TasksExtension), []byte(`{}`))
	return out
}

// ServerCapabilities maps a 2026 ServerCapabilities object to the 2025 shape
// (server/discover). The extensions member is dropped, since 2025 has none;
// when tasks is true and the server declares the tasks extension, the legacy
// tasks capability takes its place. It reports whether the extension was
// declared.
func ServerCapabilities(modern []byte, tasks bool) (legacy []byte, hasTasks bool) {
	out := []byte(`{}`)
	caps := gjson.ParseBytes(modern)
	if !caps.IsObject() {
		return out, false
	}
	caps.ForEach(func(k, v gjson.Result) bool {
		if k.Str == "extensions" {
			hasTasks = v.Get(gjson.Escape(protocol.TasksExtension)).Exists()
			return true
		}
		if k.Str == "tasks" {
			return true // a 2026 server has no core tasks capability
		}
		out, _ = sjson.SetRawBytes(out, gjson.Escape(k.Str), []byte(v.Raw))
		return true
	})
	if tasks && hasTasks {
		out, _ = sjson.SetRawBytes(out, "tasks", []byte(LegacyTasksCapability))
	}
	return out, hasTasks
}

// InitializeOptions tunes InitializeResult.
type InitializeOptions struct {
	// RequestedVersion is the client's params.protocolVersion.
	RequestedVersion string
	// UpstreamURL names the server when discover carries no serverInfo.
	UpstreamURL string
	// Tasks advertises the legacy tasks capability when the server declares
	// the tasks extension.
	Tasks bool
	// Subscriptions keeps listChanged and resources.subscribe. Without it
	// they are removed: the proxy advertises only what it can deliver, and
	// change notifications need a subscriptions/listen stream.
	Subscriptions bool
}

// InitializeResult synthesizes the legacy InitializeResult from a 2026
// DiscoverResult (initialize is answered locally). serverInfo comes from _meta,
// then from a pre-final top-level serverInfo, and is otherwise synthesized from
// the upstream host with version "unknown".
func InitializeResult(discover []byte, o InitializeOptions) []byte {
	d := gjson.ParseBytes(discover)
	caps, _ := ServerCapabilities([]byte(d.Get("capabilities").Raw), o.Tasks)
	if !o.Subscriptions {
		for _, p := range []string{"tools.listChanged", "prompts.listChanged", "resources.listChanged", "resources.subscribe"} {
			caps, _ = sjson.DeleteBytes(caps, p)
		}
	}
	out := []byte(`{}`)
	out, _ = sjson.SetBytes(out, "protocolVersion", NegotiateLegacy(o.RequestedVersion))
	out, _ = sjson.SetRawBytes(out, "capabilities", caps)
	info := d.Get("_meta." + gjson.Escape(protocol.MetaServerInfo))
	if !validImplementation(info) {
		info = d.Get("serverInfo")
	}
	if validImplementation(info) {
		out, _ = sjson.SetRawBytes(out, "serverInfo", []byte(info.Raw))
	} else {
		name := "mcp-server"
		if u, err := url.Parse(o.UpstreamURL); err == nil && u.Hostname() != "" {
			name = u.Hostname()
		}
		out, _ = sjson.SetBytes(out, "serverInfo", map[string]string{"name": name, "version": "unknown"})
	}
	if ins := d.Get("instructions"); ins.Type == gjson.String {
		out, _ = sjson.SetRawBytes(out, "instructions", []byte(ins.Raw))
	}
	return out
}

func validImplementation(v gjson.Result) bool {
	return v.IsObject() && v.Get("name").Type == gjson.String && v.Get("version").Type == gjson.String
}

// Meta builds the proxy-owned _meta block that 2026-07-28 requires on every
// upstream request: the protocol version, the mapped client capabilities, the
// client's clientInfo when it sent one, and the log level when one was set.
func Meta(clientCaps, clientInfo []byte, logLevel string) rewrite.MetaBlock {
	pairs := []rewrite.MetaPair{
		{Key: protocol.MetaProtocolVersion, Value: []byte(`"` + protocol.ModernVersion + `"`)},
		{Key: protocol.MetaClientCapabilities, Value: clientCaps},
	}
	if len(clientInfo) > 0 {
		pairs = append(pairs, rewrite.MetaPair{Key: protocol.MetaClientInfo, Value: clientInfo})
	}
	if logLevel != "" {
		pairs = append(pairs, rewrite.MetaPair{Key: protocol.MetaLogLevel, Value: rewrite.AppendString(nil, logLevel)})
	}
	return rewrite.NewMetaBlock(pairs...)
}

// The reverse bridge: a modern client, a 2025 server.

// LegacyClientCapabilities maps a modern client's per-request
// clientCapabilities to the 2025 initialize params.capabilities: the
// extensions member goes (2025 has none); the rest is the same shape.
func LegacyClientCapabilities(modern []byte) []byte {
	out := []byte(`{}`)
	gjson.ParseBytes(modern).ForEach(func(k, v gjson.Result) bool {
		if k.Str != "extensions" {
			out, _ = sjson.SetRawBytes(out, gjson.Escape(k.Str), []byte(v.Raw))
		}
		return true
	})
	return out
}

// DiscoverResult answers a modern client's server/discover from a 2025
// server's InitializeResult: the one version the proxy speaks to it, the
// server's capabilities without the 2025 tasks capability, its
// instructions, its
// serverInfo in _meta, and cache fields that forbid caching. With tasks,
// the tasks extension is declared in its place.
func DiscoverResult(initialize gjson.Result, tasks bool) []byte {
	caps := []byte(`{}`)
	initialize.Get("capabilities").ForEach(func(k, v gjson.Result) bool {
		if k.Str != "tasks" {
			caps, _ = sjson.SetRawBytes(caps, gjson.Escape(k.Str), []byte(v.Raw))
		}
		return true
	})
	out := []byte(`{"resultType":"complete","supportedVersions":["` + protocol.ModernVersion + `"],"ttlMs":0,"cacheScope":"private"}`)
	if tasks {
		caps, _ = sjson.SetRawBytes(caps, "extensions", append(append(rewrite.AppendString([]byte(`{`), protocol.TasksExtension), ':'), "{}}"...))
	}
	out, _ = sjson.SetRawBytes(out, "capabilities", caps)
	if ins := initialize.Get("instructions"); ins.Type == gjson.String {
		out, _ = sjson.SetRawBytes(out, "instructions", []byte(ins.Raw))
	}
	if info := initialize.Get("serverInfo"); validImplementation(info) {
		out, _ = sjson.SetRawBytes(out, "_meta", append(append(rewrite.AppendString([]byte(`{`), protocol.MetaServerInfo), ':'), info.Raw+"}"...))
	}
	return out
}
