package demo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"
)

// x-mcp-header (2026-07-28 Streamable HTTP): tool arguments mirrored in
// Mcp-Param-* headers.
//
// The weather tool annotates its arguments "city" (Mcp-Param-City) and
// "days" (Mcp-Param-Days). The HTTP handler checks those headers before the
// go-sdk sees the request: when an argument is present and not null its
// header must be present exactly once and, after decoding a
// =?base64?...?= sentinel (padded standard Base64 of UTF-8 text), equal
// the argument (integers compared numerically, so "3.0" matches 3); when
// the argument is absent or null the header must be absent. A plain value
// must be visible ASCII or space without leading or trailing whitespace.
// Any violation is answered 400 with -32020 "Header mismatch: ...". (The
// go-sdk v1.8.0 server runs an equivalent check afterwards, which accepts
// Base64-encoded non-ASCII values correctly; the demo's own check fixes
// the error messages and the stricter Base64 rules.)
//
// bad_header_tool is listed with an invalid annotation ("x-mcp-header":
// "Bad Header", a space is not a token character), which a compliant
// client must drop from its tools/list. The go-sdk refuses to register
// such a tool (AddTool panics), so a receiving middleware appends it to
// the last tools/list page; it cannot be called (-32602 unknown tool).

// weatherSchema is the inputSchema of the weather tool.
const weatherSchema = `{"type":"object","properties":{` +
	`"city":{"type":"string","x-mcp-header":"City"},` +
	`"days":{"type":"integer","x-mcp-header":"Days"}},"required":["city"]}`

// BadHeaderTool is the name of the tool whose x-mcp-header annotation is
// invalid.
const BadHeaderTool = "bad_header_tool"

// badHeaderTool is the tool the tools/list middleware injects.
var badHeaderTool = &mcp.Tool{
	Name: BadHeaderTool,
	Description: "Listed with an invalid x-mcp-header annotation (\"Bad Header\" has a space); " +
		"a compliant client drops it from tools/list. It cannot be called.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"q":{"type":"string","x-mcp-header":"Bad Header"}}}`),
}

// paramBinding ties a top-level argument to its Mcp-Param-* header.
type paramBinding struct {
	arg, header string
}

// paramHeaderTools are the tools whose Mcp-Param-* headers the handler
// checks, with their bindings.
var paramHeaderTools = map[string][]paramBinding{
	"weather": {{"city", "City"}, {"days", "Days"}},
}

// weatherArgs are the arguments of the weather tool.
type weatherArgs struct {
	City string `json:"city"`
	Days *int   `json:"days"`
}

// weatherTool answers "weather for CITY (N days)"; N defaults to 1.
func weatherTool(_ context.Context, _ *mcp.CallToolRequest, in weatherArgs) (*mcp.CallToolResult, any, error) {
	days := 1
	if in.Days != nil {
		days = *in.Days
	}
	return textResult(fmt.Sprintf("weather for %s (%d days)", in.City, days)), nil, nil
}

// addParamHeaderTools registers weather. (newServer installs
// injectBadHeaderTool.)
func addParamHeaderTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name: "weather",
		Description: "Report the weather for a city. city and days travel as the " +
			"Mcp-Param-City and Mcp-Param-Days headers too (x-mcp-header), which the server checks.",
		InputSchema: json.RawMessage(weatherSchema),
	}, weatherTool)
}

// injectBadHeaderTool appends bad_header_tool to the last tools/list page.
func injectBadHeaderTool(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil {
			return res, err
		}
		if lr, ok := res.(*mcp.ListToolsResult); ok && lr != nil && lr.NextCursor == "" {
			cp := *lr
			cp.Tools = append(append([]*mcp.Tool(nil), lr.Tools...), badHeaderTool)
			return &cp, nil
		}
		return res, err
	}
}

// checkParamHeaders checks the Mcp-Param-* headers of a tools/call body
// against its arguments for the given bindings. It returns the cause of a
// mismatch, or nil.
func checkParamHeaders(h http.Header, body []byte, bindings []paramBinding) error {
	args := gjson.GetBytes(body, "params.arguments")
	for _, b := range bindings {
		name := "Mcp-Param-" + b.header
		values := h.Values(name)
		arg := args.Get(gjson.Escape(b.arg))
		if !args.IsObject() || !arg.Exists() || arg.Type == gjson.Null {
			if len(values) > 0 {
				return fmt.Errorf("unexpected %s header for absent or null argument %q", name, b.arg)
			}
			continue
		}
		switch {
		case len(values) == 0:
			return fmt.Errorf("missing %s header for argument %q", name, b.arg)
		case len(values) > 1:
			return fmt.Errorf("%d %s headers, want one", len(values), name)
		}
		value, err := decodeParamValue(values[0])
		if err != nil {
			return fmt.Errorf("%s header: %w", name, err)
		}
		if !paramEqual(value, arg) {
			return fmt.Errorf("%s header value %q does not match argument %q value %s", name, values[0], b.arg, arg.Raw)
		}
	}
	return nil
}

// decodeParamValue decodes an Mcp-Name / Mcp-Param-* value: a
// =?base64?...?= sentinel holds padded standard Base64 of UTF-8 text; a
// plain value must be visible ASCII or space, without leading or trailing
// whitespace.
func decodeParamValue(v string) (string, error) {
	if len(v) >= len(base64Prefix)+len(base64Suffix) &&
		strings.HasPrefix(v, base64Prefix) && strings.HasSuffix(v, base64Suffix) {
		b, err := base64.StdEncoding.Strict().DecodeString(v[len(base64Prefix) : len(v)-len(base64Suffix)])
		if err != nil || !utf8.Valid(b) {
			return "", fmt.Errorf("invalid Base64 value %q", v)
		}
		return string(b), nil
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", fmt.Errorf("value %q has a character that requires Base64 encoding", v)
		}
	}
	if strings.TrimSpace(v) != v {
		return "", fmt.Errorf("value %q has leading or trailing whitespace without Base64 encoding", v)
	}
	return v, nil
}

// paramEqual compares a decoded header value with a JSON argument:
// strings exactly, numbers numerically, booleans as true/false.
func paramEqual(header string, arg gjson.Result) bool {
	switch arg.Type {
	case gjson.String:
		return header == arg.Str
	case gjson.Number:
		h, err := strconv.ParseFloat(header, 64)
		if err != nil || math.IsInf(h, 0) || math.IsNaN(h) {
			return false
		}
		a, err := strconv.ParseFloat(arg.Raw, 64)
		return err == nil && a == h
	case gjson.True:
		return header == "true"
	case gjson.False:
		return header == "false"
	}
	return false
}
