package bridge

import (
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/bridge/internal/link"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/protocol"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// toolPattern compiles an --ignore-tool pattern. It matches as mcp-remote
// does: the whole name, ignoring case, where * stands for any run of
// characters (none included) and every other character for itself.
// "delete*" matches deleteFile and DELETE; "*_admin" matches user_admin.
func toolPattern(pattern string) *regexp.Regexp {
	parts := strings.Split(pattern, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("(?is)^" + strings.Join(parts, ".*") + "$")
}

// ignoredBy is the first --ignore-tool pattern that hides the tool, or "".
func (s *Session) ignoredBy(name string) string {
	for i, re := range s.ignore {
		if re.MatchString(name) {
			return s.env.Cfg.IgnoreTools[i]
		}
	}
	return ""
}

// refuseIgnored answers a tools/call of a hidden tool, as a server answers
// a tool it does not have; nothing is sent upstream. It is nil for any
// other request.
func (s *Session) refuseIgnored(c *link.Call, f *rewrite.Frame) []byte {
	if f.Method != "tools/call" || len(s.ignore) == 0 {
		return nil
	}
	n := f.Params.Get("name")
	name, pattern := n.Str, ""
	if n.Type == gjson.String {
		pattern = s.ignoredBy(name)
	}
	if pattern == "" {
		return nil
	}
	s.env.Info("tools/call refused: the tool is hidden by "+s.env.Hint(rewrite.HintIgnoreTool), zap.String("tool", name), zap.String("pattern", pattern))
	data := append(rewrite.AppendString([]byte(`{"tool":`), name), `,"ignoreTool":`...)
	data = append(rewrite.AppendString(data, pattern), '}')
	return s.env.ErrorFrame(c.ID, rewrite.Errorf(protocol.CodeInvalidParams, data,
		"Unknown tool: %s is hidden by the proxy's %s %s, so it cannot be called; drop it to use the tool", name, rewrite.HintIgnoreTool, pattern))
}

// hideIgnored leaves the hidden tools out of a tools/list answer. The
// tools kept, and everything else in the frame, keep their bytes.
func (s *Session) hideIgnored(frame []byte) []byte {
	if len(s.ignore) == 0 || frame == nil {
		return frame
	}
	tools := gjson.GetBytes(frame, "result.tools")
	if !tools.IsArray() {
		return frame
	}
	kept := append(make([]byte, 0, len(tools.Raw)), '[')
	hidden := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		if name := t.Get("name"); name.Type == gjson.String && s.ignoredBy(name.Str) != "" {
			hidden++
			return true
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, t.Raw...)
		return true
	})
	if hidden == 0 {
		return frame
	}
	kept = append(kept, ']')
	out, err := sjson.SetRawBytes(frame, "result.tools", kept)
	if err != nil {
		s.env.Warn("cannot hide the tools of "+s.env.Hint(rewrite.HintIgnoreTool)+" from tools/list", zap.Error(err))
		return frame
	}
	s.env.Debug("tools hidden from tools/list by "+s.env.Hint(rewrite.HintIgnoreTool), zap.Int("hidden", hidden))
	return out
}
