package rewrite

import (
	"slices"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// MetaBlock is the set of _meta members the proxy owns on upstream requests,
// pre-serialized once so that each request costs one splice.
type MetaBlock struct {
	raw  []byte   // `"k1":v1,"k2":v2` without braces
	keys []string // the member names, to drop the client's copies
}

// NewMetaBlock builds a block from key / raw JSON value pairs, in order.
// Values must be valid JSON.
func NewMetaBlock(pairs ...MetaPair) MetaBlock {
	var m MetaBlock
	for i, p := range pairs {
		if i > 0 {
			m.raw = append(m.raw, ',')
		}
		m.raw = append(append(AppendString(m.raw, p.Key), ':'), p.Value...)
		m.keys = append(m.keys, p.Key)
	}
	return m
}

// MetaPair is one _meta member: a key and its raw JSON value.
type MetaPair struct {
	Key   string
	Value []byte
}

// Raw returns the members as they are spliced, `"k":v,...`.
func (m MetaBlock) Raw() []byte { return m.raw }

// Up says how to rewrite one request for the modern server.
type Up struct {
	// ID is the proxy-minted upstream id, raw JSON.
	ID []byte
	// Meta is spliced into params._meta; the client's own members are kept
	// unless the block owns their key.
	Meta MetaBlock
	// DropParams names top-level params members to remove (e.g. "task").
	DropParams []string
	// Extra holds raw params members to add at the end, `"k":v,...`: an
	// MRTR retry's inputResponses and requestState.
	Extra []byte
}

// RequestUp rewrites a legacy request f for the modern server: the id becomes
// up.ID and params._meta gains up.Meta, creating params and _meta when
// absent. Everything else is copied byte for byte.
func RequestUp(f *Frame, up Up) ([]byte, error) {
	if f.Kind != KindRequest {
		return nil, ErrShape
	}
	e := make(edits, 0, 4) // one allocation for the usual two or three edits
	var buf [8]member
	e.replace(f.ID.Index, f.ID.Index+len(f.ID.Raw), up.ID)
	switch {
	case !f.Params.Exists():
		end := len(f.Raw) - 1 // the frame's closing '}'
		e.replace(end, end, wrapMeta(`,"params":{"_meta":{`, up.Meta.raw, "}"+extra(up.Extra)+"}"))
	case f.Params.Type == gjson.Null:
		e.replace(f.Params.Index, f.Params.Index+len(f.Params.Raw), wrapMeta(`{"_meta":{`, up.Meta.raw, "}"+extra(up.Extra)+"}"))
	case f.Params.IsObject():
		ms := members(f.Params, buf[:0])
		var meta *member
		if i := slices.IndexFunc(ms, func(m member) bool { return m.key.Str == "_meta" }); i >= 0 {
			meta = &ms[i]
		}
		kept := len(ms)
		if len(up.DropParams) > 0 {
			kept = e.removeMembers(f.Params, ms, func(i int) bool { return slices.Contains(up.DropParams, ms[i].key.Str) })
		}
		switch {
		case meta == nil:
			sep := ","
			if kept == 0 {
				sep = ""
			}
			e.replace(f.Params.Index+1, f.Params.Index+1, wrapMeta(`"_meta":{`, up.Meta.raw, "}"+sep))
		case meta.value.IsObject():
			prependMembers(&e, meta.value, up.Meta.raw, up.Meta.keys...) // the client's members the block owns go
		default:
			// A non-object _meta cannot carry the required keys: replace it.
			e.replace(meta.value.Index, meta.value.Index+len(meta.value.Raw), wrapMeta("{", up.Meta.raw, "}"))
		}
		if len(up.Extra) > 0 {
			// params holds _meta by now, so a comma goes first. Added
			// last, it sorts after an insertion at the same offset.
			end := lastBrace(f.Params)
			e.replace(end, end, comma, up.Extra)
		}
	default:
		return nil, ErrParams
	}
	return e.apply(f.Raw), nil
}

// prependMembers puts raw, members without braces, at the front of the
// object obj, dropping its members named in drop.
func prependMembers(e *edits, obj gjson.Result, raw []byte, drop ...string) {
	var buf [8]member
	ms := members(obj, buf[:0])
	if e.removeMembers(obj, ms, func(i int) bool { return slices.Contains(drop, ms[i].key.Str) }) > 0 {
		e.replace(obj.Index+1, obj.Index+1, raw, comma)
	} else {
		e.replace(obj.Index+1, obj.Index+1, raw)
	}
}

var comma = []byte{','}

func extra(members []byte) string {
	if len(members) == 0 {
		return ""
	}
	return "," + string(members)
}

func wrapMeta(prefix string, raw []byte, suffix string) []byte {
	return append(append(append(make([]byte, 0, len(prefix)+len(raw)+len(suffix)), prefix...), raw...), suffix...)
}

// UpFor is the Up of the legacy request f, sent under the upstream id with
// the session's _meta block: a task-augmented request loses params.task
// (the 2026 tasks extension has no request-side task flag), and an MRTR retry
// (retry, from RetryParams, not empty) replaces the request's own
// inputResponses and requestState with its members.
func UpFor(f *Frame, id []byte, meta MetaBlock, retry []byte) Up {
	u := Up{ID: id, Meta: meta}
	if len(retry) > 0 {
		u.DropParams = []string{"inputResponses", "requestState"}
		u.Extra = retry
	}
	if protocol.MayBecomeTask(f.Method) && f.Params.Get("task").Exists() {
		u.DropParams = append(u.DropParams, "task")
	}
	return u
}

// CheckNameParam refuses a request whose method needs a string param for
// its Mcp-Name (protocol.RequiredParam) and lacks it: the header could not
// be derived, so the request is answered -32602 before anything is sent.
func CheckNameParam(f *Frame) (Error, bool) {
	p := protocol.RequiredParam(f.Method)
	if p == "" || f.Params.Get(p).Type == gjson.String {
		return Error{}, true
	}
	return Errorf(protocol.CodeInvalidParams, nil, "Invalid params: %s needs params.%s, a string", f.Method, p), false
}
