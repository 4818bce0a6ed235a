package hostconfig

import (
	"path/filepath"
	"testing"
)

func TestFile(t *testing.T) {
	for _, tc := range []struct {
		host, goos, want string
		ws               bool
	}{
		{"claude-desktop", "darwin", "/H/Library/Application Support/Claude/claude_desktop_config.json", false},
		{"vscode", "linux", "/C/Code/User/mcp.json", false},
		{"vscode", "linux", "/W/.vscode/mcp.json", true},
		{"cursor", "windows", "/H/.cursor/mcp.json", false},
		{"windsurf", "linux", "/H/.codeium/windsurf/mcp_config.json", false},
		{"zed", "darwin", "/H/.config/zed/settings.json", false},
		{"zed", "linux", "/C/zed/settings.json", false},
		{"zed", "windows", "/C/Zed/settings.json", false},
	} {
		cd := "/C"
		if tc.goos == "darwin" {
			cd = "/H/Library/Application Support"
		}
		if got := File(tc.host, tc.goos, "/H", cd, "/W", tc.ws); got != filepath.FromSlash(tc.want) {
			t.Errorf("%s on %s: %s, want %s", tc.host, tc.goos, got, tc.want)
		}
	}
}

// TestStripJSONC: comments and trailing commas go, strings stay whole
// (a URL's //, an escaped quote), so JSONC is told from a broken file.
func TestStripJSONC(t *testing.T) {
	for in, want := range map[string]string{
		"{\"u\": \"https://x/y\", // c\n\"n\": 1,}":           "{\"u\": \"https://x/y\", \n\"n\": 1}",
		`{"a": "q\" // not a comment", /* b */ "c": [1,2,],}`: `{"a": "q\" // not a comment",  "c": [1,2]}`,
		"{} // end":       "{} ",
		`{"a": 1 /* open`: `{"a": 1 `,
	} {
		if got := stripJSONC(in); got != want {
			t.Errorf("stripJSONC(%q) = %q, want %q", in, got, want)
		}
	}
}
