package rewrite

import "strconv"

// The frame constructors: every JSON-RPC frame and frame part the proxy
// mints is built here (ErrorFrame and ResultFrame are in errors.go). Ids
// and params are raw JSON, copied byte for byte and never re-encoded;
// strings are JSON-quoted by AppendString. Params must be valid JSON
// objects: the constructors do not check what they copy.

// RequestFrame builds a JSON-RPC request. id is the raw id; params is a raw
// JSON object, or empty for a request without params.
func RequestFrame(id []byte, method string, params []byte) []byte {
	b := envelope(id, "method", 16+len(method)+len(params))
	b = AppendString(b, method)
	return appendParams(b, params)
}

// NotificationFrame builds a JSON-RPC notification. params is a raw JSON
// object, or empty for a notification without params.
func NotificationFrame(method string, params []byte) []byte {
	b := make([]byte, 0, 40+len(method)+len(params))
	b = AppendString(append(b, `{"jsonrpc":"2.0","method":`...), method)
	return appendParams(b, params)
}

func appendParams(b, params []byte) []byte {
	if len(params) > 0 {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, '}')
}

// CancelledParams are the params of a notifications/cancelled for the raw
// request id.
func CancelledParams(requestID []byte, reason string) []byte {
	b := make([]byte, 0, 32+len(requestID)+len(reason))
	b = append(append(b, `{"requestId":`...), requestID...)
	if reason != "" {
		b = AppendString(append(b, `,"reason":`...), reason)
	}
	return append(b, '}')
}

// ProgressParams are the params of a notifications/progress: the raw
// progress token, the progress count, and the message when not empty.
func ProgressParams(token []byte, progress int64, message string) []byte {
	b := make([]byte, 0, 48+len(token)+len(message))
	b = append(append(b, `{"progressToken":`...), token...)
	b = strconv.AppendInt(append(b, `,"progress":`...), progress, 10)
	if message != "" {
		b = AppendString(append(b, `,"message":`...), message)
	}
	return append(b, '}')
}

// InputAnswer is the client's answer to one MRTR input request: the
// request's key in inputRequests and the raw answer.
type InputAnswer struct {
	Key    string
	Answer []byte
}

// RetryParams are the params members an MRTR retry adds to the original
// request (MRTR, multi round-trip requests),
// `"inputResponses":{...},"requestState":...` without braces or a leading
// comma, for Up.Extra: inputResponses when there are answers, and requestState,
// echoed byte for byte, when state is not empty.
func RetryParams(answers []InputAnswer, state []byte) []byte {
	n := len(state) + 32
	for _, a := range answers {
		n += len(a.Key) + len(a.Answer) + 4
	}
	b := make([]byte, 0, n)
	if len(answers) > 0 {
		b = append(b, `"inputResponses":{`...)
		for i, a := range answers {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, a.Key)
			b = append(b, ':')
			b = append(b, a.Answer...)
		}
		b = append(b, '}')
	}
	if len(state) > 0 {
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = append(append(b, `"requestState":`...), state...)
	}
	return b
}

// SyntheticTask is the task the proxy makes of a task-augmented tools/call
// that the server answered at once (without a task): completed, created and
// updated at, with ttlMs when ttl is true, null otherwise. The shape is the
// extension's Task, which ReadTask reads.
func SyntheticTask(taskID, at string, ttlMs int64, ttl bool) []byte {
	b := make([]byte, 0, 112+len(taskID)+2*len(at))
	b = AppendString(append(b, `{"taskId":`...), taskID)
	b = AppendString(append(b, `,"status":"completed","createdAt":`...), at)
	b = AppendString(append(b, `,"lastUpdatedAt":`...), at)
	b = append(b, `,"ttlMs":`...)
	if ttl {
		b = strconv.AppendInt(b, ttlMs, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// ToolErrorResult is a CallToolResult that reports a failure the model can
// read: one text content and isError.
func ToolErrorResult(message string) []byte {
	b := make([]byte, 0, 64+len(message))
	b = AppendString(append(b, `{"content":[{"type":"text","text":`...), message)
	return append(b, `}],"isError":true}`...)
}
