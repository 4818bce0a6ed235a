// Package rewrite holds the pure frame transforms of mcp-tasks-proxy: legacy
// (2025-11-25) requests up to the modern (2026-07-28) shape, modern results
// down to the legacy shape (one small rule per protocol.Answer of the method
// table), every frame the proxy mints (ErrorFrame, ResultFrame,
// RequestFrame, NotificationFrame, RetryParams, SyntheticTask), the typed
// Error whose Hints name the settings a fix involves (rendered by the
// caller's HintText, or as text by the one installed with SetHintText),
// the JSON byte primitives (scan.go), and the log and trace redaction rule
// (SensitiveKeys). The protocol vocabulary is internal/protocol's.
//
// Every function here is []byte in, []byte out. The package owns no state
// but that one process setting, which changes no frame; it starts no
// goroutines, performs no I/O and writes no logs. Frames are read with gjson
// and changed by splicing only the bytes the rewrite owns, in one copy per
// frame (see edits.apply): ids stay byte-exact, key order and unknown fields
// are untouched, and a large result is never decoded.
//
//	legacy client ──RequestUp──▶ modern server
//	legacy client ◀─ResponseDown─ modern server
package rewrite

import (
	"bytes"
	"errors"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// Kind is what a JSON-RPC message is.
type Kind int

const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
)

func (k Kind) String() string {
	if k < KindInvalid || k > KindResponse {
		return "invalid"
	}
	return [...]string{"invalid", "request", "notification", "response"}[k]
}

// Frame is a read-only view of one JSON-RPC message. The gjson results point
// into Raw and carry their byte offsets, so rewrites can splice them.
type Frame struct {
	Raw    []byte
	Kind   Kind
	ID     gjson.Result // raw id; absent for notifications
	Method string
	Params gjson.Result
	Result gjson.Result
	Error  gjson.Result
}

// Parse errors. Each maps to the JSON-RPC code the proxy answers with.
var (
	// ErrParse: the bytes are not JSON (-32700).
	ErrParse = errors.New("not valid JSON")
	// ErrBatch: a JSON array; batching was removed in 2025-06-18 (-32600).
	ErrBatch = errors.New("JSON-RPC batches are not supported by MCP 2025-06-18 and later; send one message per line")
	// ErrNotObject: valid JSON that is not an object (-32600).
	ErrNotObject = errors.New("a JSON-RPC message must be a JSON object")
	// ErrVersion: "jsonrpc" is not "2.0" (-32600).
	ErrVersion = errors.New(`"jsonrpc" must be "2.0"`)
	// ErrID: an id that is not a string or a number (-32600).
	ErrID = errors.New(`"id" must be a string or a number`)
	// ErrShape: neither a request, a notification nor a response (-32600).
	ErrShape = errors.New(`a JSON-RPC message needs a string "method", or an "id" with "result" or "error"`)
	// ErrParams: "params" that is not an object (-32602 for requests).
	ErrParams = errors.New(`"params" must be an object`)
)

// Code returns the JSON-RPC error code for a Parse error.
func Code(err error) int {
	switch {
	case errors.Is(err, ErrParse):
		return protocol.CodeParseError
	case errors.Is(err, ErrParams):
		return protocol.CodeInvalidParams
	}
	return protocol.CodeInvalidRequest
}

// TrimFrame strips the surrounding whitespace of a line, including the "\r"
// of a "\r\n" line ending, as bytes.TrimSpace does. A frame that begins and
// ends with a printable ASCII byte, as nearly all do, is returned at once.
func TrimFrame(b []byte) []byte {
	if n := len(b); n > 0 && b[0]-0x21 < 0x5e && b[n-1]-0x21 < 0x5e {
		return b
	}
	return bytes.TrimSpace(b)
}

// Parse classifies one trimmed JSON-RPC message. On an error the returned
// Frame still carries the id when one could be read, so the caller can answer
// the request that was malformed.
func Parse(raw []byte) (Frame, error) {
	f := Frame{Raw: raw}
	if len(raw) == 0 || !validJSON(raw) {
		return f, ErrParse
	}
	switch raw[0] {
	case '[':
		return f, ErrBatch
	case '{':
	default:
		return f, ErrNotObject
	}
	t := readTop(raw, &f)
	method, hasID := t.method, t.hasID
	if t.dup != nil {
		return duplicateFrame(f, t.dup, method, hasID, t.idVariant)
	}
	if hasID && f.ID.Type != gjson.String && f.ID.Type != gjson.Number {
		if f.ID.Type != gjson.Null || method.Exists() {
			f.ID = gjson.Result{}
			return f, ErrID
		}
	}
	if t.jsonrpc.Type != gjson.String || t.jsonrpc.Str != "2.0" {
		return f, ErrVersion
	}
	switch {
	case method.Exists():
		if method.Type != gjson.String {
			return f, ErrShape
		}
		f.Method = method.Str
		f.Kind = KindNotification
		if hasID {
			f.Kind = KindRequest
		}
		if f.Params.Exists() && f.Params.Type != gjson.Null && !f.Params.IsObject() {
			return f, ErrParams
		}
	case hasID && (f.Result.Exists() || f.Error.Exists()):
		f.Kind = KindResponse
	default:
		return f, ErrShape
	}
	if t.paramsDup != nil {
		return f, t.paramsDup
	}
	return f, nil
}

// top is what Parse reads of a message's own members besides those it
// keeps in the Frame.
type top struct {
	jsonrpc, method gjson.Result
	hasID           bool
	idVariant       bool // a member spells "id" in another case
	dup             *DuplicateKeyError
	paramsDup       *DuplicateKeyError
}

// readTop reads the top-level members of raw, a valid JSON object, into f
// (id, params, result, error) and t. A member named twice (or also in
// another case) is refused (t.dup, see DuplicateKeyError); until then the
// first one counts, as gjson (and so every later read of the frame) sees it.
func readTop(raw []byte, f *Frame) (t top) {
	var buf [8]member
	var ms []member
	ms, t.paramsDup = scanMembers(view(raw), 0, buf[:0], paramsWatch)
	var vals [len(topNames)]gjson.Result
	var seen uint8
	for _, m := range ms {
		n := slices.Index(topNames[:], m.key.Str)
		switch {
		case n >= 0 && seen&(1<<n) == 0:
			seen |= 1 << n
			vals[n] = m.value
		case n >= 0:
			if t.dup == nil {
				t.dup = &DuplicateKeyError{Name: topNames[n], Key: topNames[n]}
			}
		default:
			if n = topVariant(m.key.Str); n >= 0 {
				t.idVariant = t.idVariant || n == 1
				if t.dup == nil {
					t.dup = &DuplicateKeyError{Name: topNames[n], Key: m.key.Str}
				}
			}
		}
	}
	t.jsonrpc, f.ID, t.method, f.Params, f.Result, f.Error = vals[0], vals[1], vals[2], vals[3], vals[4], vals[5]
	t.hasID = seen&2 != 0
	return t
}

// duplicateFrame is Parse's answer for a message with a duplicated
// top-level member: the error, with what can be read without doubt. The
// id is kept only when it is unambiguous (the answer's id is null
// otherwise, as JSON-RPC asks for an id that cannot be read); a message
// with an id of either spelling is a request, since it may be one, and
// one without any is a notification, which is not answered. (Other
// messages keep KindInvalid, and are answered as invalid.)
func duplicateFrame(f Frame, dup *DuplicateKeyError, method gjson.Result, hasID, idVariant bool) (Frame, error) {
	if dup.Name == "id" || idVariant || hasID && f.ID.Type != gjson.String && f.ID.Type != gjson.Number {
		f.ID = gjson.Result{}
	}
	if method.Type == gjson.String {
		f.Method = method.Str
	}
	switch {
	case method.Exists() && (hasID || idVariant):
		f.Kind = KindRequest
	case method.Exists():
		f.Kind = KindNotification
	}
	return f, dup
}
