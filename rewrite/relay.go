package rewrite

import (
	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// The relay between a modern client and a modern server changes nothing of
// a frame but the ids the proxy mints: a request goes upstream under an id
// of the proxy's, and what comes back carries the client's id again, in
// the listen streams' subscriptionId too.

// WithID returns the request or response f under id, raw JSON. Every other
// byte is kept.
func WithID(f *Frame, id []byte) []byte {
	if !f.ID.Exists() {
		return f.Raw
	}
	var e edits
	e.replace(f.ID.Index, f.ID.Index+len(f.ID.Raw), id)
	return e.apply(f.Raw)
}

// WithSubscriptionID returns f, a message of a subscriptions/listen stream,
// with the subscriptionId in its _meta (params._meta for a notification,
// result._meta for the listen's result) set to id, and, for a response, its
// own id too. A message without one is returned as it is (a response: under
// id).
func WithSubscriptionID(f *Frame, id []byte) []byte {
	var e edits
	obj := f.Params
	if f.Kind == KindResponse {
		e.replace(f.ID.Index, f.ID.Index+len(f.ID.Raw), id)
		obj = f.Result
	}
	if obj.IsObject() {
		var buf, mbuf [8]member
		if meta := memberNamed(members(obj, buf[:0]), "_meta"); meta != nil && meta.value.IsObject() {
			if sub := memberNamed(members(meta.value, mbuf[:0]), protocol.MetaSubscriptionID); sub != nil {
				e.replace(sub.value.Index, sub.value.Index+len(sub.value.Raw), id)
			}
		}
	}
	return e.apply(f.Raw)
}

// ToolHeadersOf reads the valid x-mcp-header annotations of a tools/list
// result, changing nothing: the relay learns the Mcp-Param-* headers of
// tools/call from the answers the modern client gets unchanged.
func ToolHeadersOf(result gjson.Result) []ToolHeaders {
	var e edits
	headers, _ := toolsList(&e, result.Get("tools"), true)
	return headers
}

// WithParam returns the request f with the value of its params member key
// replaced by raw (a JSON value), or f as it is when it has no such
// member.
func WithParam(f *Frame, key string, raw []byte) []byte {
	if !f.Params.IsObject() {
		return f.Raw
	}
	var buf [16]member
	m := memberNamed(members(f.Params, buf[:0]), key)
	if m == nil {
		return f.Raw
	}
	var e edits
	e.replace(m.value.Index, m.value.Index+len(m.value.Raw), raw)
	return e.apply(f.Raw)
}
