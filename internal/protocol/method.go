package protocol

import "strings"

// Era is a set of protocol eras.
type Era uint8

// The eras. A method of both has Legacy|Modern.
const (
	// Legacy is 2025-11-25 (and the 2025 versions before it).
	Legacy Era = 1 << iota
	// Modern is 2026-07-28 with the tasks extension.
	Modern
)

// Answer names the rule by which rewrite.ResponseDown rewrites a complete
// modern result for the legacy client. Every rule restores the id and drops
// resultType and the serverInfo _meta; the rules differ in what else goes.
type Answer uint8

const (
	// AnswerPlain drops nothing more. It is the rule of a method the table
	// does not know.
	AnswerPlain Answer = iota
	// AnswerCacheable also drops the cache fields ttlMs and cacheScope
	// (2026-07-28 caching).
	AnswerCacheable
	// AnswerToolsList is AnswerCacheable, plus the tools/list edits: tools
	// with an invalid x-mcp-header annotation are removed, the output
	// schemas adapted, and execution.taskSupport set (docs/protocol.md, Tasks).
	AnswerToolsList
	// AnswerToolCall also drops a structuredContent that is not an object
	// (2025 requires an object).
	AnswerToolCall
	// AnswerTaskView is AnswerPlain for ResponseDown; the caller then shows
	// the task to the client in its 2025 shape (rewrite.TaskResult).
	AnswerTaskView
)

// Local says whether and how the proxy answers a legacy request itself in
// a bridged (modern) session instead of forwarding it as it is. A 2025
// upstream (passthrough) gets every request as it is.
type Local uint8

const (
	// NotLocal: forwarded upstream with the _meta block and headers.
	NotLocal Local = iota
	// LocalAnswer: answered as soon as it is read, never queued (ping,
	// logging/setLevel).
	LocalAnswer
	// LocalInitialize: answered from the server/discover probe.
	LocalInitialize
	// LocalTask: a 2025 tasks/* request, answered by the task code from
	// its registry and the server's tasks extension (docs/protocol.md, Tasks).
	LocalTask
	// LocalSubscription: mapped onto 2026 subscriptions/listen.
	LocalSubscription
)

// Method is what the proxy knows about one MCP method.
type Method struct {
	Name string
	// Eras are the eras the method exists in.
	Eras Era
	// ToClient marks a request the proxy sends the legacy client (the
	// 2025 forms of the MRTR input requests).
	ToClient bool
	// NameParam is the params member that the Mcp-Name header mirrors
	// (2026-07-28 Streamable HTTP), "" when the method carries no Mcp-Name.
	NameParam string
	// NamePath is NameParam's gjson path from the top of a request,
	// "params." + NameParam.
	NamePath string
	// NameRequired: a request without NameParam as a string is refused
	// before it is sent (the header could not be derived).
	NameRequired bool
	// Repeatable: the method is safe to send again after a dial error or
	// a broken stream, with a new upstream id: repeating it cannot cause a
	// second side effect. A tools/call never is: it may have run.
	Repeatable bool
	// Answer is the rule that rewrites its complete result downward.
	Answer Answer
	// Local says whether the proxy answers it itself.
	Local Local
	// InputRequired: the server may answer it with input_required (MRTR,
	// multi round-trip requests).
	InputRequired bool
	// MayBecomeTask: the server may answer it with a task (in the tasks
	// extension, only tools/call).
	MayBecomeTask bool
	// Standing: the request stays open until its client ends it (a
	// listen); the end of the client's input ends it, unanswered.
	Standing bool
}

// methods is the method table.
var methods = [...]Method{
	// The 2025 lifecycle, answered by the proxy.
	{Name: "initialize", Eras: Legacy, Local: LocalInitialize},
	{Name: "ping", Eras: Legacy, Repeatable: true, Local: LocalAnswer},
	{Name: "logging/setLevel", Eras: Legacy, Repeatable: true, Local: LocalAnswer},
	{Name: "resources/subscribe", Eras: Legacy, Repeatable: true, Local: LocalSubscription},
	{Name: "resources/unsubscribe", Eras: Legacy, Repeatable: true, Local: LocalSubscription},

	// Forwarded in both eras.
	{Name: "tools/list", Eras: Legacy | Modern, Repeatable: true, Answer: AnswerToolsList},
	{Name: "prompts/list", Eras: Legacy | Modern, Repeatable: true, Answer: AnswerCacheable},
	{Name: "resources/list", Eras: Legacy | Modern, Repeatable: true, Answer: AnswerCacheable},
	{Name: "resources/templates/list", Eras: Legacy | Modern, Repeatable: true, Answer: AnswerCacheable},
	{Name: "resources/read", Eras: Legacy | Modern, NameParam: "uri", NamePath: "params.uri", NameRequired: true,
		Repeatable: true, Answer: AnswerCacheable, InputRequired: true},
	{Name: "prompts/get", Eras: Legacy | Modern, NameParam: "name", NamePath: "params.name", NameRequired: true,
		Repeatable: true, InputRequired: true},
	{Name: "tools/call", Eras: Legacy | Modern, NameParam: "name", NamePath: "params.name", NameRequired: true,
		Answer: AnswerToolCall, InputRequired: true, MayBecomeTask: true},
	{Name: "completion/complete", Eras: Legacy | Modern, Repeatable: true},

	// Tasks: the 2025 core methods and the 2026 extension's.
	{Name: "tasks/get", Eras: Legacy | Modern, NameParam: "taskId", NamePath: "params.taskId",
		Repeatable: true, Answer: AnswerTaskView, Local: LocalTask},
	{Name: "tasks/result", Eras: Legacy, Repeatable: true, Local: LocalTask},
	{Name: "tasks/list", Eras: Legacy, Repeatable: true, Local: LocalTask},
	{Name: "tasks/cancel", Eras: Legacy | Modern, NameParam: "taskId", NamePath: "params.taskId", Local: LocalTask},
	{Name: "tasks/update", Eras: Modern, NameParam: "taskId", NamePath: "params.taskId"},

	// Modern only, originated by the proxy.
	{Name: "server/discover", Eras: Modern, Repeatable: true, Answer: AnswerCacheable},
	{Name: "subscriptions/listen", Eras: Modern, Standing: true},

	// 2025 requests the proxy sends the client for the MRTR input
	// requests, as a 2025 server would send them.
	{Name: "elicitation/create", Eras: Legacy, ToClient: true},
	{Name: "sampling/createMessage", Eras: Legacy, ToClient: true},
	{Name: "roots/list", Eras: Legacy, ToClient: true, Repeatable: true},
}

var byName = func() map[string]*Method {
	m := make(map[string]*Method, len(methods))
	for i := range methods {
		m[methods[i].Name] = &methods[i]
	}
	return m
}()

// Lookup returns the table's entry for method.
func Lookup(method string) (Method, bool) {
	if m := byName[method]; m != nil {
		return *m, true
	}
	return Method{}, false
}

// Methods returns a copy of the table, in its order.
func Methods() []Method { return append([]Method(nil), methods[:]...) }

// The table's answers for one method; a method it does not know has the
// zero Method's: no Mcp-Name, AnswerPlain, NotLocal.

// NamePath is the gjson path of the member Mcp-Name mirrors for method
// ("params.name"...), or "".
func NamePath(method string) string { m, _ := Lookup(method); return m.NamePath }

// RequiredParam is the string param a request of method cannot do without
// (its Mcp-Name), or "" when there is none to check before sending.
func RequiredParam(method string) string {
	if m, _ := Lookup(method); m.NameRequired {
		return m.NameParam
	}
	return ""
}

// Repeatable reports whether a request of method may be sent again after a
// dial error or a broken stream. A method the table does not know is
// repeatable only when it is a list call (its name ends in "/list").
func Repeatable(method string) bool {
	if m, ok := Lookup(method); ok {
		return m.Repeatable
	}
	return strings.HasSuffix(method, "/list")
}

// AnswerOf is the answer rule of method.
func AnswerOf(method string) Answer { m, _ := Lookup(method); return m.Answer }

// LocalOf says whether and how the proxy answers method itself.
func LocalOf(method string) Local { m, _ := Lookup(method); return m.Local }

// InputRequired reports whether the server may answer method with
// input_required.
func InputRequired(method string) bool { m, _ := Lookup(method); return m.InputRequired }

// Standing reports whether a request of method stays open until its client
// ends it.
func Standing(method string) bool { m, _ := Lookup(method); return m.Standing }

// MayBecomeTask reports whether the server may answer method with a task.
func MayBecomeTask(method string) bool { m, _ := Lookup(method); return m.MayBecomeTask }
