package rewrite

import (
	"cmp"
	"math"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// Task shapes: a modern (2026 tasks extension) task object read and turned
// into the 2025 Task view, normalized: stray and draft fields dropped, units
// and bounds made 2025's.

// Task statuses, the same five in both eras.
const (
	StatusWorking       = "working"
	StatusInputRequired = "input_required"
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCancelled     = "cancelled"
)

// TaskOptions are the user's choices for the task mapping.
type TaskOptions struct {
	// IsErrorFailed shows a completed task whose result has isError:true as
	// failed (--task-iserror failed). The default keeps it completed, so
	// that clients that read the result only on completed see the tool's
	// error text.
	IsErrorFailed bool
	// TTLSeconds expresses the legacy ttl in seconds (--legacy-ttl-unit s),
	// for clients built on the early draft where ttl was in seconds.
	TTLSeconds bool
}

// Task is a read view of a modern task object: a CreateTaskResult, a
// tasks/get result or the params of notifications/tasks.
type Task struct {
	obj gjson.Result
	ID  string
	// Status is the normalized status: an unknown value reads as working
	// (keep polling); RawStatus keeps what the server said.
	Status, RawStatus string
	// StatusMessage is the server's message, if any.
	StatusMessage string
	// Result, Error and InputRequests are the inlined payloads of the
	// completed, failed and input_required variants.
	Result, Error, InputRequests gjson.Result
	// PollInterval is the raw suggested poll interval (any draft name).
	PollInterval gjson.Result
	// Meta is the result-level _meta.
	Meta gjson.Result
}

// ReadTask reads a modern task object.
func ReadTask(obj gjson.Result) Task {
	t := Task{obj: obj}
	var buf [16]member
	for _, m := range members(obj, buf[:0]) {
		switch m.key.Str {
		case "taskId":
			t.ID = m.value.String()
		case "status":
			t.RawStatus = m.value.String()
		case "statusMessage":
			if m.value.Type == gjson.String {
				t.StatusMessage = m.value.Str
			}
		case "result":
			t.Result = m.value
		case "error":
			t.Error = m.value
		case "inputRequests":
			t.InputRequests = m.value
		case "_meta":
			t.Meta = m.value
		}
	}
	t.Status = t.RawStatus
	if !IsTerminal(t.Status) && t.Status != StatusInputRequired {
		t.Status = StatusWorking
	}
	for _, k := range [...]string{"pollIntervalMs", "pollIntervalMilliseconds", "pollInterval"} {
		if t.PollInterval = obj.Get(k); t.PollInterval.Exists() {
			break
		}
	}
	return t
}

// Raw is the task object as the server sent it.
func (t Task) Raw() string { return t.obj.Raw }

// Terminal reports whether the status is completed, failed or cancelled.
func (t Task) Terminal() bool { return IsTerminal(t.Status) }

// IsTerminal reports whether a status is terminal.
func IsTerminal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// IsError reports a completed task whose tool result has isError:true.
func (t Task) IsError() bool {
	return t.Status == StatusCompleted && t.Result.Get("isError").Type == gjson.True
}

// ViewOverride changes what a view shows, for the proxy's own states.
type ViewOverride struct {
	// Status replaces the status ("working" for a new task, "cancelled"
	// after a client cancel).
	Status string
	// StatusMessage replaces the message when Status is set.
	StatusMessage string
	// LastUpdatedAt replaces lastUpdatedAt (and stands in when it is absent).
	LastUpdatedAt string
}

// View returns the 2025 Task object for t: only the 2025 Task fields (an
// allowlist), ttlMs renamed to ttl and pollIntervalMs to pollInterval, in
// milliseconds in both eras, the poll interval held between MinPollInterval
// and MaxPollInterval.
func (t Task) View(o TaskOptions, ov ViewOverride) []byte {
	status, msg := t.Status, t.StatusMessage
	switch {
	case ov.Status != "":
		status, msg = ov.Status, cmp.Or(ov.StatusMessage, msg)
	case t.IsError() && o.IsErrorFailed:
		status, msg = StatusFailed, cmp.Or(msg, "Tool execution returned isError: true")
	case status == StatusFailed && msg == "":
		msg = t.Error.Get("message").String()
	}
	b := make([]byte, 0, 256)
	b = AppendString(append(b, `{"taskId":`...), t.ID)
	b = AppendString(append(b, `,"status":`...), status)
	if msg != "" {
		b = AppendString(append(b, `,"statusMessage":`...), msg)
	}
	updated := cmp.Or(ov.LastUpdatedAt, t.obj.Get("lastUpdatedAt").String())
	b = AppendString(append(b, `,"createdAt":`...), cmp.Or(t.obj.Get("createdAt").String(), updated))
	b = AppendString(append(b, `,"lastUpdatedAt":`...), updated)
	b = appendTTL(append(b, `,"ttl":`...), t.obj, o.TTLSeconds)
	if _, ok := nonNegative(t.PollInterval); ok {
		// Clamped like the proxy's own polling: a client that honours 0
		// would otherwise poll the server through the proxy in a loop.
		b = strconv.AppendInt(append(b, `,"pollInterval":`...), PollInterval(t.PollInterval).Milliseconds(), 10)
	}
	return append(b, '}')
}

// appendTTL writes the legacy ttl: ttlMs wins; then the draft ttlSeconds;
// then a stray ttl, read as milliseconds; otherwise null (unlimited, and the
// 2025 field is required). A finite ttl is held to MaxTTL.
func appendTTL(b []byte, obj gjson.Result, seconds bool) []byte {
	for _, k := range [...]string{"ttlMs", "ttlSeconds", "ttl"} {
		v := obj.Get(k)
		if !v.Exists() {
			continue
		}
		if v.Type == gjson.Null {
			break
		}
		ms, _ := TTLMillis(v, k == "ttlSeconds")
		if seconds {
			ms /= 1000
		}
		return strconv.AppendInt(b, ms, 10)
	}
	return append(b, "null"...)
}

// MaxTTL is the longest task retention the proxy converts, shows or grants:
// one year. A larger ttl (a thousand years, 2^63-1, 1e300) counts as one
// year, so that no ttl arithmetic can overflow: a time.Duration holds only
// about 292 years, and an overflow would put a task's expiry in the past.
const MaxTTL = 365 * 24 * time.Hour

// TTLMillis reads a ttl in milliseconds (in seconds with seconds set),
// floored and held to 0 … MaxTTL. Negatives, NaN and non-numbers are not
// ok. The arithmetic is done in float64, which cannot overflow here.
func TTLMillis(v gjson.Result, seconds bool) (int64, bool) {
	ms, ok := nonNegative(v)
	if !ok {
		return 0, false
	}
	if seconds {
		ms *= 1000
	}
	if limit := float64(MaxTTL / time.Millisecond); ms >= limit {
		return int64(limit), true
	}
	return int64(math.Floor(ms)), true
}

// nonNegative is v's number when it is one and not negative (nor NaN).
func nonNegative(v gjson.Result) (float64, bool) {
	return v.Num, v.Type == gjson.Number && v.Num >= 0 && !math.IsNaN(v.Num)
}

// Poll interval bounds: a server's pollIntervalMs, whatever it is, is held
// between these, so that polling neither spins nor stalls.
const (
	MinPollInterval     = 100 * time.Millisecond
	MaxPollInterval     = 5 * time.Minute
	DefaultPollInterval = 2 * time.Second
)

// PollInterval clamps a server's suggested poll interval to
// MinPollInterval … MaxPollInterval.
// A missing, null, negative or non-numeric value gives the 2 s default; 0
// gives the 100 ms floor; 2^40 gives the 5 min ceiling.
func PollInterval(v gjson.Result) time.Duration {
	ms, ok := nonNegative(v)
	switch {
	case !ok:
		return DefaultPollInterval
	case ms >= float64(MaxPollInterval/time.Millisecond):
		return MaxPollInterval
	}
	return max(time.Duration(ms*float64(time.Millisecond)), MinPollInterval)
}

// CreateTaskResult turns a modern flat CreateTaskResult (the result object)
// into the legacy nested one: {"task": view}, with the status shown as
// working (2025 tasks MUST begin there) and the result-level _meta kept
// without serverInfo.
func CreateTaskResult(t Task, o TaskOptions) []byte {
	b := append([]byte(`{"task":`), t.View(o, ViewOverride{Status: StatusWorking})...)
	return withMeta(append(b, '}'), t.Meta)
}

// TaskResult is the legacy answer to tasks/get or tasks/cancel: the task
// view plus the result-level _meta without serverInfo.
func TaskResult(t Task, o TaskOptions, ov ViewOverride) []byte {
	return withMeta(t.View(o, ov), t.Meta)
}

// withMeta adds to the object b the members of the _meta object meta but
// serverInfo, as its _meta, when any are left.
func withMeta(b []byte, meta gjson.Result) []byte {
	if !meta.IsObject() {
		return b
	}
	var buf [8]member
	n := len(b)
	b = append(b[:n-1], `,"_meta":{`...)
	for _, m := range members(meta, buf[:0]) {
		if m.key.Str == protocol.MetaServerInfo {
			continue
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(append(append(b, m.key.Raw...), ':'), m.value.Raw...)
	}
	if b[len(b)-1] == '{' {
		return append(b[:n-1], '}') // nothing left
	}
	return append(b, '}', '}')
}

// ResultFrameFor wraps a raw result object as a response to id and rewrites
// it like any answer to method (ResponseDown): resultType and serverInfo go,
// and with relatedTask the related-task _meta is added, as tasks/result
// requires (2025 tasks, tasks/result).
func ResultFrameFor(id []byte, method string, result gjson.Result, relatedTask string) ([]byte, error) {
	frame := ResultFrame([]byte("0"), []byte(result.Raw))
	f, err := Parse(frame)
	if err != nil {
		return nil, err
	}
	d, err := ResponseDown(&f, Down{ID: id, Method: method, RelatedTask: relatedTask})
	if err != nil {
		return nil, err
	}
	if d.Frame == nil {
		return nil, rewriteError("the task's result has resultType " + d.ResultType)
	}
	return d.Frame, nil
}

// relatedTaskMember is `"io.modelcontextprotocol/related-task":{"taskId":…}`.
func relatedTaskMember(taskID string) []byte {
	b := AppendString(nil, protocol.MetaRelatedTask)
	b = AppendString(append(b, `:{"taskId":`...), taskID)
	return append(b, '}')
}

// InputRequestParams prepares the params of an inputRequests entry for the
// legacy client (a task's input_required, or an MRTR round): with relatedTask
// the related-task _meta is added (2025 MUST for messages tied to a task the
// client knows), and with elicitationID a URL-mode elicitation gets the
// elicitationId that 2025 requires and 2026 dropped.
func InputRequestParams(params gjson.Result, relatedTask, elicitationID string) []byte {
	raw := []byte(params.Raw)
	if !params.IsObject() {
		raw = []byte(`{}`)
	}
	obj := gjson.Result{Type: gjson.JSON, Raw: view(raw)}
	var e edits
	var buf [16]member
	ms := members(obj, buf[:0])
	var meta *member
	hasID := false
	for i := range ms {
		switch ms[i].key.Str {
		case "_meta":
			meta = &ms[i]
		case "elicitationId":
			hasID = true
		}
	}
	var add []byte
	kept := len(ms)
	if elicitationID != "" && !hasID {
		add = append(AppendString([]byte(`"elicitationId":`), elicitationID), ',')
	}
	if relatedTask != "" {
		if meta != nil && meta.value.IsObject() {
			relatedTaskInto(&e, meta.value, relatedTask)
		} else {
			if meta != nil {
				kept = e.removeMembers(obj, ms, func(i int) bool { return &ms[i] == meta })
			}
			add = append(add, `"_meta":{`...)
			add = append(add, relatedTaskMember(relatedTask)...)
			add = append(add, "},"...)
		}
	}
	if len(add) > 0 {
		if kept == 0 {
			add = add[:len(add)-1] // no member follows: drop the last comma
		}
		e.replace(1, 1, add)
	}
	return e.apply(raw)
}

// InputResponse prepares a legacy client's answer (an ElicitResult,
// CreateMessageResult or ListRootsResult) for tasks/update or an MRTR retry:
// the related-task _meta the client echoed is removed.
func InputResponse(result gjson.Result) []byte {
	raw := []byte(result.Raw)
	if !result.IsObject() {
		return raw
	}
	var e edits
	e.dropMetaMember(gjson.Result{Type: gjson.JSON, Raw: view(raw)}, protocol.MetaRelatedTask, false)
	return e.apply(raw)
}

// dropMetaMember removes key from the _meta object of obj, and _meta itself
// when nothing else is left in it (or, with empty, when it was empty). It
// returns how many members of obj are left.
func (e *edits) dropMetaMember(obj gjson.Result, key string, empty bool) (kept int) {
	var buf [16]member
	ms := members(obj, buf[:0])
	return e.removeMembers(obj, ms, func(i int) bool {
		m := ms[i].value
		return ms[i].key.Str == "_meta" && m.IsObject() && (empty && objectIsEmpty(m.Raw) || dropMetaKey(e, m, key))
	})
}

// dropMetaKey removes key from the _meta object meta. It reports true, and
// edits nothing, when key is all meta holds: the caller drops the _meta.
func dropMetaKey(e *edits, meta gjson.Result, key string) (dropAll bool) {
	var buf [8]member
	ms := members(meta, buf[:0])
	isKey := func(i int) bool { return ms[i].key.Str == key }
	n := 0
	for i := range ms {
		if isKey(i) {
			n++
		}
	}
	switch {
	case n == 0:
		return false
	case n == len(ms):
		return true
	}
	e.removeMembers(meta, ms, isKey)
	return false
}

// ListenNotification prepares a notification from a subscriptions/listen
// stream for the legacy client: the subscriptionId _meta is removed, and
// _meta and params go too when nothing else is left in them.
func ListenNotification(f *Frame) []byte {
	if !f.Params.IsObject() {
		return f.Raw
	}
	var e edits
	if e.dropMetaMember(f.Params, protocol.MetaSubscriptionID, true) == 0 {
		// No params left: drop the member, with its comma.
		var top [8]member
		frame := gjson.Result{Type: gjson.JSON, Raw: view(f.Raw)}
		all := members(frame, top[:0])
		var only edits
		only.removeMembers(frame, all, func(i int) bool { return all[i].key.Str == "params" })
		return only.apply(f.Raw)
	}
	return e.apply(f.Raw)
}
