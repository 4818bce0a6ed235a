package rewrite

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// ToolHeaders are the valid x-mcp-header annotations of one tool: on
// tools/call their argument values are mirrored into Mcp-Param-{Name}
// headers (x-mcp-header, 2026-07-28 Streamable HTTP).
type ToolHeaders struct {
	Tool   string
	Params []protocol.ParamHeader
}

// RejectedTool is a tool removed from a tools/list result, and why.
type RejectedTool struct {
	Tool   string
	Reason string
}

const taskSupportOptional = `"execution":{"taskSupport":"optional"}`

// toolsList edits the tools array of a tools/list result: tools with invalid
// x-mcp-header annotations are removed (a Streamable HTTP client MUST exclude
// them), an outputSchema that is not type "object" is dropped (2025 requires
// one), and execution.taskSupport is made what the legacy client must see
// (docs/protocol.md, Tasks): "optional" on every tool with taskSupport (the
// server declared the tasks extension), on none without it.
func toolsList(e *edits, tools gjson.Result, taskSupport bool) (headers []ToolHeaders, rejected []RejectedTool) {
	elems := elements(tools, nil)
	e.removeMembers(tools, elems, func(i int) bool {
		tool := elems[i].value
		if !tool.IsObject() {
			return false
		}
		name := tool.Get("name").String()
		params, reason := xMCPHeaders(tool.Get("inputSchema"))
		if reason != "" {
			rejected = append(rejected, RejectedTool{Tool: name, Reason: reason})
			return true
		}
		if len(params) > 0 {
			headers = append(headers, ToolHeaders{Tool: name, Params: params})
		}
		editTool(e, tool, taskSupport)
		return false
	})
	return headers, rejected
}

// editTool adapts one tool. A 2026 Tool has no execution member, but a
// server may send one anyway (mcp-go v1.2.1 marks its tools
// taskSupport "optional" without declaring the tasks extension), and a
// legacy client would task-augment calls on the strength of it. So the
// proxy owns execution.taskSupport: with taskSupport every tool gets
// "optional" (inserted or overwritten); without it every taskSupport is
// removed, and the execution object too when nothing else is left in it.
// Other members of execution are kept as they are.
func editTool(e *edits, tool gjson.Result, taskSupport bool) {
	var buf [16]member
	ms := members(tool, buf[:0])
	hasExecution := false
	// One call for all of the tool's removals, so that the commas of
	// neighbouring removed members are handled together.
	kept := e.removeMembers(tool, ms, func(i int) bool {
		v := ms[i].value
		switch ms[i].key.Str {
		case "execution":
			hasExecution = true
			if dropExecution(v, taskSupport) {
				return true
			}
			editExecution(e, v, taskSupport)
		case "inputSchema":
			objectProperties(e, v)
		case "outputSchema":
			if v.Get("type").String() != "object" {
				return true // 2025 requires type "object"
			}
			objectProperties(e, v)
		}
		return false
	})
	if taskSupport && !hasExecution {
		end := lastBrace(tool)
		b := []byte(taskSupportOptional)
		if kept > 0 {
			b = append([]byte{','}, b...)
		}
		e.replace(end, end, b)
	}
}

// dropExecution reports whether a tool's execution member must go: without
// taskSupport, one that is not an object (2025 requires one) or whose
// members are all taskSupport. An empty object the server sent is kept.
func dropExecution(execution gjson.Result, taskSupport bool) bool {
	if taskSupport {
		return false
	}
	if !execution.IsObject() {
		return true
	}
	var buf [4]member
	ms := members(execution, buf[:0])
	for i := range ms {
		if ms[i].key.Str != "taskSupport" {
			return false
		}
	}
	return len(ms) > 0
}

// editExecution edits an execution member that stays: with taskSupport,
// every taskSupport becomes "optional" (one is added when there is none,
// and a value that is not an object is replaced); without it, every
// taskSupport member is removed.
func editExecution(e *edits, execution gjson.Result, taskSupport bool) {
	if !execution.IsObject() {
		e.replace(execution.Index, execution.Index+len(execution.Raw), []byte(`{"taskSupport":"optional"}`))
		return
	}
	var buf [4]member
	ms := members(execution, buf[:0])
	isTaskSupport := func(i int) bool { return ms[i].key.Str == "taskSupport" }
	if !taskSupport {
		e.removeMembers(execution, ms, isTaskSupport)
		return
	}
	found := false
	for i := range ms {
		if isTaskSupport(i) {
			found = true
			e.replace(ms[i].value.Index, ms[i].value.Index+len(ms[i].value.Raw), []byte(`"optional"`))
		}
	}
	if !found {
		prependMembers(e, execution, []byte(`"taskSupport":"optional"`))
	}
}

// objectProperties rewrites boolean subschemas directly under a schema's
// properties: JSON Schema 2020-12 (and so 2026) allows true and false there,
// and SDKs emit true for "any"; the 2025 Tool schema requires objects. true
// becomes {} and false becomes {"not":{}}, which mean the same.
func objectProperties(e *edits, schema gjson.Result) {
	if !schema.IsObject() {
		return
	}
	props := schema.Get("properties")
	if !props.IsObject() || props.Index <= schema.Index { // Get adds schema.Index; no offset means unknown
		return
	}
	var buf [16]member
	for _, m := range members(props, buf[:0]) {
		switch m.value.Type {
		case gjson.True:
			e.replace(m.value.Index, m.value.Index+len(m.value.Raw), []byte(`{}`))
		case gjson.False:
			e.replace(m.value.Index, m.value.Index+len(m.value.Raw), []byte(`{"not":{}}`))
		}
	}
}

// xMCPHeaders returns the valid x-mcp-header annotations of an inputSchema,
// or the reason the tool must be rejected (x-mcp-header, 2026-07-28
// Streamable HTTP).
func xMCPHeaders(schema gjson.Result) ([]protocol.ParamHeader, string) {
	if !schema.IsObject() || !strings.Contains(schema.Raw, "x-mcp-header") {
		return nil, ""
	}
	w := headerWalk{seen: map[string]string{}}
	w.walk(schema, nil, true)
	if w.reason != "" {
		return nil, w.reason
	}
	return w.params, ""
}

type headerWalk struct {
	params []protocol.ParamHeader
	seen   map[string]string // lower-case name -> property path
	reason string
}

// walk visits every object under node. path is the property chain from the
// root; onChain is true when node was reached through "properties" keys only.
func (w *headerWalk) walk(node gjson.Result, path []string, onChain bool) {
	if w.reason != "" {
		return
	}
	if node.IsArray() {
		node.ForEach(func(_, v gjson.Result) bool {
			w.walk(v, nil, false)
			return w.reason == ""
		})
		return
	}
	if !node.IsObject() {
		return
	}
	node.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "x-mcp-header":
			w.check(node, v, path, onChain)
		case "properties":
			if v.IsObject() {
				v.ForEach(func(pk, pv gjson.Result) bool {
					w.walk(pv, append(path[:len(path):len(path)], pk.Str), onChain)
					return w.reason == ""
				})
			}
		case "default", "const", "enum", "examples":
			// Instance data, not schemas.
		default:
			if v.IsObject() || v.IsArray() {
				w.walk(v, nil, false)
			}
		}
		return w.reason == ""
	})
}

func (w *headerWalk) check(prop, name gjson.Result, path []string, onChain bool) {
	where := "the schema root"
	if len(path) > 0 {
		where = "property " + strings.Join(path, ".")
	}
	switch {
	case len(path) == 0 || !onChain:
		w.reason = fmt.Sprintf("x-mcp-header on %s is not reachable from the root through properties", where)
	case name.Type != gjson.String || name.Str == "":
		w.reason = fmt.Sprintf("x-mcp-header on %s must be a non-empty string", where)
	case !isToken(name.Str):
		w.reason = fmt.Sprintf("x-mcp-header %q on %s is not a valid header name token", name.Str, where)
	default:
		t := prop.Get("type")
		if t.Type != gjson.String || (t.Str != "string" && t.Str != "integer" && t.Str != "boolean") {
			w.reason = fmt.Sprintf("x-mcp-header %q on %s: the property type must be string, integer or boolean, not %s", name.Str, where, t.Raw)
			return
		}
		lower := strings.ToLower(name.Str)
		if other, dup := w.seen[lower]; dup {
			w.reason = fmt.Sprintf("x-mcp-header %q on %s duplicates the one on property %s", name.Str, where, other)
			return
		}
		w.seen[lower] = strings.Join(path, ".")
		esc := make([]string, len(path))
		for i, p := range path {
			esc[i] = gjson.Escape(p)
		}
		w.params = append(w.params, protocol.ParamHeader{Name: name.Str, Path: "params.arguments." + strings.Join(esc, ".")})
	}
}

// isToken reports whether s is an RFC 9110 token (1*tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
