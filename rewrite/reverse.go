package rewrite

import (
	"slices"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// The reverse bridge serves a modern (2026-07-28) client from a 2025
// server: its requests lose the 2026 envelope on the way up, and the
// results gain what 2026 requires on the way down.
//
//	modern client ──LegacyRequest──▶ 2025 server
//	modern client ◀──ResultUp─────── 2025 server
//	modern client ◀──InputRequired── 2025 server requests during a call

// envelopeKeys are the request _meta members of 2026 that a 2025 server
// does not know (the session's initialize said them once).
var envelopeKeys = []string{protocol.MetaProtocolVersion, protocol.MetaClientInfo, protocol.MetaClientCapabilities, protocol.MetaLogLevel}

// LegacyRequest rewrites a modern client's request for a 2025 server,
// under id: the 2026 envelope leaves params._meta (and _meta goes when
// nothing else is left in it), and an MRTR retry's inputResponses and
// requestState leave params (the proxy answered the server's requests with
// them). Everything else is copied byte for byte.
func LegacyRequest(f *Frame, id []byte) []byte {
	var e edits
	e.replace(f.ID.Index, f.ID.Index+len(f.ID.Raw), id)
	if f.Params.IsObject() {
		var buf [8]member
		ms := members(f.Params, buf[:0])
		e.removeMembers(f.Params, ms, func(i int) bool {
			switch ms[i].key.Str {
			case "inputResponses", "requestState":
				return true
			case "_meta":
				return ms[i].value.IsObject() && dropEnvelope(&e, ms[i].value)
			}
			return false
		})
	}
	return e.apply(f.Raw)
}

// dropEnvelope removes the envelope keys from the _meta object meta, and
// reports true, having edited nothing, when they are all it holds.
func dropEnvelope(e *edits, meta gjson.Result) (dropAll bool) {
	var buf [8]member
	ms := members(meta, buf[:0])
	isKey := func(i int) bool { return slices.Contains(envelopeKeys, ms[i].key.Str) }
	n := 0
	for i := range ms {
		if isKey(i) {
			n++
		}
	}
	if n == len(ms) {
		return true
	}
	e.removeMembers(meta, ms, isKey)
	return false
}

// ResultUp rewrites a 2025 server's response for a modern client, under
// id: a result gains resultType "complete" and, for a cacheable method
// (discover, the lists and resources/read), the cache fields with
// values that forbid caching (a 2025 server gave none). An error is only
// re-addressed.
func ResultUp(f *Frame, id []byte, method string) []byte {
	var e edits
	e.replace(f.ID.Index, f.ID.Index+len(f.ID.Raw), id)
	if f.Result.IsObject() {
		var buf [16]member
		ms := members(f.Result, buf[:0])
		var add []byte
		if memberNamed(ms, "resultType") == nil {
			add = append(add, `"resultType":"complete",`...)
		}
		if cacheable(method) && memberNamed(ms, "ttlMs") == nil {
			add = append(add, `"ttlMs":0,"cacheScope":"private",`...)
		}
		if len(add) > 0 {
			if len(ms) == 0 {
				add = add[:len(add)-1] // no member follows: no comma
			}
			e.replace(f.Result.Index+1, f.Result.Index+1, add)
		}
	}
	return e.apply(f.Raw)
}

// cacheable reports whether a 2026 result of method must carry ttlMs and
// cacheScope: the method table's cacheable answers, tools/list among them.
func cacheable(method string) bool {
	a := protocol.AnswerOf(method)
	return a == protocol.AnswerCacheable || a == protocol.AnswerToolsList
}

// InputRequest is one server request a 2025 server made during a call, to
// become one member of an InputRequiredResult's inputRequests.
type InputRequest struct {
	Key    string
	Method string
	Params gjson.Result // the server's params, as sent
}

// InputRequired is the answer, under id, that asks a modern client for the
// input a 2025 server wants during a call: the requests' params lose
// _meta, task and (URL elicitation) elicitationId, which 2026 input
// requests have not, and state is the requestState the client's retry
// echoes.
func InputRequired(id []byte, reqs []InputRequest, state string) []byte {
	b := append([]byte(`{"resultType":"input_required","inputRequests":`), InputRequests(reqs)...)
	b = append(AppendString(append(b, `,"requestState":`...), state), '}')
	return ResultFrame(id, b)
}

// InputRequests is the inputRequests object of reqs (see InputRequired).
func InputRequests(reqs []InputRequest) []byte {
	b := []byte{'{'}
	for i, r := range reqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(AppendString(b, r.Key), `:{"method":`...)
		b = AppendString(b, r.Method)
		if r.Params.IsObject() {
			b = append(append(b, `,"params":`...), inputParams(r.Params)...)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func inputParams(params gjson.Result) []byte {
	raw := []byte(params.Raw)
	obj := gjson.Result{Type: gjson.JSON, Raw: view(raw)}
	var e edits
	var buf [8]member
	ms := members(obj, buf[:0])
	e.removeMembers(obj, ms, func(i int) bool { return slices.Contains([]string{"_meta", "task", "elicitationId"}, ms[i].key.Str) })
	return e.apply(raw)
}

// ListenNotice is a 2025 server's list_changed or resources/updated
// notification as one listen stream delivers it to a modern client: with
// subscriptionId, the listen's id, in its _meta, and the uri of an update.
func ListenNotice(method string, uri gjson.Result, subscriptionID []byte) []byte {
	p := append(AppendString([]byte(`{"_meta":{`), protocol.MetaSubscriptionID), ':')
	p = append(append(p, subscriptionID...), '}')
	if uri.Type == gjson.String {
		p = append(append(p, `,"uri":`...), uri.Raw...)
	}
	return NotificationFrame(method, append(p, '}'))
}

// ModernTask is a 2025 Task object (a CreateTaskResult's task, a tasks/get
// result) as a 2026 tasks-extension result object: resultType ("task" for
// a CreateTaskResult, "complete" for tasks/get), the Task fields with ttl
// renamed ttlMs and pollInterval pollIntervalMs (milliseconds in both
// eras), status shown as status, and payload, raw members (`"result":…`,
// `"error":…` or `"inputRequests":…`) or nothing.
func ModernTask(task gjson.Result, resultType, status string, payload []byte) []byte {
	b := AppendString(append(make([]byte, 0, 256), `{"resultType":`...), resultType)
	b = AppendString(append(b, `,"taskId":`...), task.Get("taskId").String())
	b = AppendString(append(b, `,"status":`...), status)
	for _, m := range [...][2]string{{"statusMessage", "statusMessage"}, {"createdAt", "createdAt"}, {"lastUpdatedAt", "lastUpdatedAt"}, {"ttl", "ttlMs"}, {"pollInterval", "pollIntervalMs"}} {
		if v := task.Get(m[0]); v.Exists() {
			b = append(append(AppendString(append(b, ','), m[1]), ':'), v.Raw...)
		}
	}
	if !task.Get("ttl").Exists() {
		b = append(b, `,"ttlMs":null`...) // required in 2026; absent reads as unlimited
	}
	if len(payload) > 0 {
		b = append(append(b, ','), payload...)
	}
	return append(b, '}')
}

// WithTask returns the request f (a modern tools/call, rewritten for a
// 2025 server by LegacyRequest) with params.task {} added: a 2025 server
// makes a task only when the request asks for one.
func WithTask(f *Frame) []byte {
	if !f.Params.IsObject() {
		return f.Raw
	}
	var e edits
	end := lastBrace(f.Params)
	if objectIsEmpty(f.Params.Raw) {
		e.replace(end, end, []byte(`"task":{}`))
	} else {
		e.replace(end, end, []byte(`,"task":{}`))
	}
	return e.apply(f.Raw)
}
