package schematest

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvSpecDir names the environment variable that, when set, points at the
// spec directory (the one containing schema/ and examples/). It overrides the
// default location <repo>/../shared/spec.
const EnvSpecDir = "MCP_SPEC_DIR"

// envCI is the environment variable that turns a missing spec into a test
// failure instead of a skip. CI always checks the spec out.
const envCI = "CI"

// SpecDir returns the absolute path of the spec directory (the directory that
// holds schema/ and examples/).
//
// The directory is taken from $MCP_SPEC_DIR when set; otherwise the helper walks
// up from the working directory to the first directory containing go.mod (the
// repository root) and uses <root>/../shared/spec. The directory only counts as
// found if it contains schema/2025-11-25.schema.json.
//
// When the spec is not found, SpecDir calls tb.Fatalf if the environment
// variable CI is non-empty (CI always has the spec) and tb.Skipf otherwise, so
// a developer without ../shared checked out gets skipped tests, not failures.
func SpecDir(tb testing.TB) string {
	tb.Helper()
	dir, ok := findSpecDir()
	if !ok {
		missing(tb, dir)
	}
	return dir
}

// findSpecDir returns the candidate spec directory and whether it holds the
// schema files. The candidate is returned even when absent, for messages.
func findSpecDir() (string, bool) {
	var dir string
	if env := os.Getenv(EnvSpecDir); env != "" {
		dir = env
	} else {
		root, ok := repoRoot()
		if !ok {
			return "<no go.mod above the working directory>/../shared/spec", false
		}
		dir = filepath.Join(root, "..", "shared", "spec")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	fi, err := os.Stat(filepath.Join(dir, "schema", Schema2025+".schema.json"))
	return dir, err == nil && fi.Mode().IsRegular()
}

// repoRoot walks up from the working directory to the first directory that
// contains a go.mod file.
func repoRoot() (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for dir := wd; ; {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// missing reports an absent spec file or directory: fatal in CI, skip
// elsewhere. It does not return.
func missing(tb testing.TB, path string) {
	tb.Helper()
	if os.Getenv(envCI) != "" {
		tb.Fatalf("spec not found at %s: CI must provide it (check out shared/ next to the repo or set %s to the spec dir)", path, EnvSpecDir)
		return
	}
	tb.Skipf("spec not found at %s: schema validation skipped (set %s or check out ../shared)", path, EnvSpecDir)
}
