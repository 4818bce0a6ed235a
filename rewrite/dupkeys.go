package rewrite

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// Every reader reads a frame the same way. JSON leaves duplicated keys to
// the reader: gjson, and so the proxy, takes the first member of a name,
// most decoders (JavaScript, Python, Go) the last, and Go's encoding/json
// also takes a member whose name differs only by case ("Name" for "name",
// even "ſ" for "s"). A frame that spells a member the proxy acts on twice
// could be read one way by the proxy and another by the server: a
// tools/call of a tool hidden by --ignore-tool, or the client's own id on
// the wire in place of the proxy's. Parse refuses it: in each object the
// proxy reads (the message, its params, params._meta, params.task,
// params.capabilities and its elicitation), a name the proxy reads must
// appear once, spelled exactly. Other members, and the objects the proxy
// does not read (a tool's arguments, a result), are not looked at.

// ErrDuplicateKey is wrapped by the *DuplicateKeyError Parse returns.
var ErrDuplicateKey = errors.New("a member the proxy reads appears twice")

// DuplicateKeyError reports a member the proxy reads that a frame spells
// twice: the same name twice, or also (or only) in another case.
type DuplicateKeyError struct {
	// In is the object that holds the member: "" for the message itself,
	// "params", "params._meta".
	In string
	// Name is the member's name as the proxy reads it: "id", "name",
	// "progressToken".
	Name string
	// Key is the frame's second spelling of the name: Name itself for a
	// plain duplicate, else the variant that differs by case.
	Key string
}

func (e *DuplicateKeyError) Error() string {
	where := cmp.Or(e.In, "the message")
	if e.Key == e.Name {
		return fmt.Sprintf("%s has the member %q more than once; JSON readers differ on which one counts (the first or the last), so the message is refused: send each member once", where, e.Name)
	}
	return fmt.Sprintf("%s has a member %q, which some JSON decoders read as %q since they ignore case; the message is refused: spell the member %q, once", where, e.Key, e.Name, e.Name)
}

// Is makes the error ErrDuplicateKey, and ErrParams (-32602) for a member
// inside params.
func (e *DuplicateKeyError) Is(target error) bool {
	return target == ErrDuplicateKey || target == ErrParams && e.In != ""
}

// A watch is an object the proxy reads: the names of the members it reads,
// and for each the watch of its value, when the proxy reads inside it too.
// A watch has at most 32 names (a bit each).
type watch struct {
	path  string // the object's own path, "params"
	names []string
	sub   []*watch // sub[i] watches the value of names[i]; nil for none
	// minLen and maxLen bound the names' lengths: a key outside them
	// (but for a non-ASCII one, which may fold to fewer bytes) is none of
	// them, without a comparison.
	minLen, maxLen int
}

func newWatch(path string, names []string, sub map[string]*watch) *watch {
	w := &watch{path: path, names: names, sub: make([]*watch, len(names)), minLen: len(names[0]), maxLen: len(names[0])}
	for i, n := range names {
		w.sub[i] = sub[n]
		w.minLen, w.maxLen = min(w.minLen, len(n)), max(w.maxLen, len(n))
	}
	return w
}

// The objects inside params that the proxy reads, found in the code that
// reads them (bridge, capabilities, rewrite).
var paramsWatch = newWatch("params", []string{
	"name", "uri", "taskId", "_meta", "task", "cursor", "requestId", "arguments",
	"protocolVersion", "capabilities", "clientInfo", "level",
	"inputResponses", "requestState", "progressToken", "progress",
}, map[string]*watch{
	"_meta": newWatch("params._meta", []string{
		"progressToken",
		protocol.MetaProtocolVersion, protocol.MetaClientCapabilities, protocol.MetaClientInfo,
		protocol.MetaLogLevel, protocol.MetaServerInfo, protocol.MetaSubscriptionID, protocol.MetaRelatedTask,
	}, nil),
	"task": newWatch("params.task", []string{"ttl", "ttlSeconds"}, nil),
	"capabilities": newWatch("params.capabilities", []string{
		"elicitation", "sampling", "roots", "tasks", "extensions", "experimental",
	}, map[string]*watch{
		"elicitation": newWatch("params.capabilities.elicitation", []string{"form", "url"}, nil),
	}),
})

// topNames are the message's own members, in the order of the bits
// readTop keeps for them.
var topNames = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// topVariant is the index in topNames of the name key spells in another
// case, or -1 for none (an exact name is not a variant).
func topVariant(key string) int {
	if len(key) < 2 || len(key) > 7 && !nonASCII(key) {
		return -1
	}
	for i, n := range topNames {
		if key != n && strings.EqualFold(key, n) {
			return i
		}
	}
	return -1
}

// find is the index of the name key is, and whether it is spelled exactly;
// -1 when it is none of the names.
func (w *watch) find(key string) (int, bool) {
	if len(key) < w.minLen || len(key) > w.maxLen && !nonASCII(key) {
		return -1, false
	}
	for i, n := range w.names {
		if key == n {
			return i, true
		}
	}
	for i, n := range w.names {
		if strings.EqualFold(key, n) { // as encoding/json matches names, Unicode folding included
			return i, false
		}
	}
	return -1, false
}

func nonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// checkedEnd is the offset just past the object at s[i] (valid JSON), and
// the first of its members that w refuses, depth first in the order of
// the frame, or nil. It allocates nothing for a frame without one (a key
// with an escape is unescaped).
func checkedEnd(s string, i int, w *watch) (end int, dup *DuplicateKeyError) {
	var seen uint32
	for i++; ; {
		k, kend, v, escaped, ok := memberAt(s, i)
		if !ok {
			return k + 1, dup
		}
		n, exact := -1, false
		if dup == nil {
			n, exact = w.find(keyText(s, k, kend, escaped))
		}
		i = v
		switch {
		case n < 0:
		case !exact, seen&(1<<n) != 0:
			dup = &DuplicateKeyError{In: w.path, Name: w.names[n], Key: keyText(s, k, kend, escaped)}
		case w.sub[n] != nil && s[v] == '{':
			seen |= 1 << n
			i, dup = checkedEnd(s, v, w.sub[n])
			continue
		default:
			seen |= 1 << n
		}
		i = skipValue(s, i)
	}
}
