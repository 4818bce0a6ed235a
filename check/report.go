package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tidwall/gjson"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
)

// Report is what a check found. Its JSON form is for scripts; its field
// names are stable.
type Report struct {
	URL    string `json:"url"`
	Usable bool   `json:"usable"`
	// Reason says why the server is not usable, or is empty.
	Reason string `json:"reason,omitempty"`
	// Era is "2026-07-28", the 2025 (or 2024-11-05) version the server
	// negotiated, or "unknown".
	Era string `json:"era"`
	// Transport is "streamable-http", "http+sse" (the old HTTP+SSE
	// transport of MCP 2024-11-05, passed through; also when its endpoint
	// event names another origin, which is refused), "not-streamable-http"
	// (the POST was refused, and no HTTP+SSE event stream opened, or
	// --transport http-only kept the session from trying one) or "" when
	// nothing answered.
	Transport    string          `json:"transport,omitempty"`
	Versions     []string        `json:"versions,omitempty"`
	ServerInfo   json.RawMessage `json:"serverInfo,omitempty"`
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
	Extensions   []string        `json:"extensions,omitempty"`
	// Tasks: the server declares the tasks extension (2026) or the tasks
	// capability (2025).
	Tasks     bool         `json:"tasks"`
	Tools     *ListCount   `json:"tools,omitempty"`
	Prompts   *ListCount   `json:"prompts,omitempty"`
	Resources *ListCount   `json:"resources,omitempty"`
	Filtered  []HiddenTool `json:"filteredTools,omitempty"`
	// Base64Names is "accepted", "refused" (the server answers -32020 to
	// the Base64 Mcp-Name form; the proxy then resends raw UTF-8), or
	// "unknown"; empty for a 2025 server, which reads no Mcp-Name.
	Base64Names string      `json:"base64Names,omitempty"`
	Auth        *AuthReport `json:"auth,omitempty"`
	// RoundTripMs is the first request's round trip, in milliseconds, and
	// HTTPStatus its HTTP status.
	RoundTripMs float64 `json:"roundTripMs,omitempty"`
	HTTPStatus  int     `json:"httpStatus,omitempty"`
	// Next is what to do next, when there is something.
	Next string `json:"next,omitempty"`
	// Clients says what a client of each era gets through the proxy.
	Clients []ClientEra `json:"clients,omitempty"`
}

// ClientEra is what a client of one era gets through the proxy: Gets, or
// the Error its session answered.
type ClientEra struct {
	Client string `json:"client"` // the client's protocol version
	Gets   string `json:"gets,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ListCount is how many items a list has (every page), counting the tools
// the proxy hides; Error says why listing failed.
type ListCount struct {
	Count int    `json:"count"`
	Error string `json:"error,omitempty"`
}

// HiddenTool is a tool the server lists that the proxy hides from its
// client, and why.
type HiddenTool struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Exit statuses of check.
const (
	ExitUsable   = 0
	ExitUnusable = 1
	ExitSignIn   = 3
)

// ExitCode is the command's exit status for the report: 0 usable, 3 when
// the server wants a sign-in first, 1 otherwise.
func (r *Report) ExitCode() int {
	switch {
	case r.Usable:
		return ExitUsable
	case r.Auth != nil && r.Auth.Required && r.Auth.AuthorizationServer != "":
		return ExitSignIn
	}
	return ExitUnusable
}

// Write prints the report for people: one aligned line per fact, the
// verdict first.
func (r *Report) Write(w io.Writer, color bool) {
	var lines reportLines
	lines.identity(r, color)
	lines.contents(r)
	lines.auth(r)
	for _, ce := range r.Clients {
		lines.add(ce.Client+" client", cmp.Or(ce.Gets, "refused: "+ce.Error))
	}
	if r.RoundTripMs > 0 {
		lines.add("round trip", fmt.Sprintf("%.1f ms", r.RoundTripMs))
	}
	lines.add("next", r.Next)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprintf(tw, "%s:\t%s\n", l[0], l[1])
	}
	tw.Flush()
}

// reportLines are the lines of a report: a name and a value each.
type reportLines [][2]string

// add adds a line; an empty value adds none.
func (l *reportLines) add(k, v string) {
	if v != "" {
		*l = append(*l, [2]string{k, v})
	}
}

var (
	transportText = map[string]string{"streamable-http": "Streamable HTTP", "http+sse": "HTTP+SSE (MCP 2024-11-05 transport): passed through",
		"not-streamable-http": "not Streamable HTTP (the POST was refused)"}
	base64Text = map[string]string{"accepted": "accepted", "refused": "refused (-32020): the proxy resends such requests with raw UTF-8 names",
		"unknown": "unknown (the probe got no answer)"}
)

// identity adds what the server is: the URL, the verdict (in colour on a
// terminal), the era, the transport, the versions, the server's info,
// capabilities and extensions, and tasks.
func (l *reportLines) identity(r *Report, color bool) {
	verdict, paint := "usable", "32"
	if !r.Usable {
		verdict, paint = "not usable", "31"
	}
	if color {
		verdict = "\x1b[" + paint + "m" + verdict + "\x1b[0m"
	}
	if !r.Usable {
		verdict += ": " + r.Reason
	}
	l.add("server", r.URL)
	l.add("verdict", verdict)
	switch {
	case r.Era == protocol.ModernVersion:
		l.add("era", "2026-07-28 (modern): the proxy bridges it")
	case strings.HasPrefix(r.Era, "2025") || strings.HasPrefix(r.Era, "2024"):
		l.add("era", r.Era+" (2025 era): the proxy passes it through")
	case r.Transport == "not-streamable-http":
		l.add("era", "unknown")
	}
	l.add("transport", transportText[r.Transport])
	l.add("versions", strings.Join(r.Versions, ", "))
	if info := gjson.ParseBytes(r.ServerInfo); info.IsObject() {
		s := info.Get("name").String() + " " + info.Get("version").String()
		if t := info.Get("title").String(); t != "" {
			s += " (" + t + ")"
		}
		l.add("server info", strings.TrimSpace(s))
	}
	if caps := gjson.ParseBytes(r.Capabilities); caps.IsObject() {
		var names []string
		caps.ForEach(func(k, _ gjson.Result) bool {
			if k.Str != "extensions" {
				names = append(names, k.Str)
			}
			return true
		})
		l.add("capabilities", cmp.Or(strings.Join(names, ", "), "none"))
	}
	if r.Era == protocol.ModernVersion {
		l.add("extensions", cmp.Or(strings.Join(r.Extensions, ", "), "none"))
	}
	if r.Usable {
		tasks := "no: tools/call runs without tasks"
		if r.Tasks {
			tasks = "yes"
		}
		l.add("tasks", tasks)
	}
}

// contents adds what the server offers: tools, prompts and resources, the
// tools the proxy hides, and whether it takes Base64 names.
func (l *reportLines) contents(r *Report) {
	for _, list := range []struct {
		name string
		lc   *ListCount
	}{{"tools", r.Tools}, {"prompts", r.Prompts}, {"resources", r.Resources}} {
		switch {
		case list.lc == nil && r.Usable:
			l.add(list.name, "not offered")
		case list.lc == nil:
		case list.lc.Error != "":
			l.add(list.name, fmt.Sprintf("%d (listing failed: %s)", list.lc.Count, list.lc.Error))
		case list.name == "tools" && len(r.Filtered) > 0:
			l.add(list.name, fmt.Sprintf("%d (%d hidden by the proxy, below)", list.lc.Count, len(r.Filtered)))
		default:
			l.add(list.name, strconv.Itoa(list.lc.Count))
		}
	}
	for _, t := range r.Filtered {
		l.add("hidden tool", t.Name+": "+t.Reason)
	}
	l.add("Base64 names", base64Text[r.Base64Names])
}

// auth adds the sign-in the server wants, if any.
func (l *reportLines) auth(r *Report) {
	a := r.Auth
	if a == nil {
		if r.Usable {
			l.add("auth", "none needed")
		}
		return
	}
	switch {
	case !a.Required && a.SignedIn:
		l.add("auth", "signed in (a stored OAuth token was used)")
	case a.StaticToken:
		l.add("auth", "a static token (no OAuth metadata)")
	default:
		l.add("auth", "OAuth required")
	}
	l.add("resource metadata", a.ResourceMetadata)
	l.add("resource", a.Resource)
	as := a.AuthorizationServer
	if as != "" && a.DynamicRegistration {
		as += " (dynamic client registration)"
	}
	l.add("auth server", as)
	l.add("scopes", strings.Join(a.Scopes, " "))
}
