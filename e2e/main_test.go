package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// binPath is the mcp-tasks-proxy binary built by TestMain.
var binPath string

// cacheDir is XDG_CACHE_HOME for every proxy the tests start.
var cacheDir string

// raceEnabled is set by race_test.go when the tests run with -race; the
// binary under test is then built with the race detector too, so that a data
// race in the product fails the test that triggered it (exit status 66 and a
// report on stderr).
var raceEnabled bool

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "mcp-tasks-proxy-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "mcp-tasks-proxy")
	// Proxies keep their default task state file under this run's own
	// cache directory, not the user's.
	cacheDir = filepath.Join(dir, "cache")

	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "-o", binPath, "./cmd/mcp-tasks-proxy")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", args...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go %s: %v\n%s", strings.Join(args, " "), err, out)
		return 1
	}
	return m.Run()
}

// moduleRoot finds the directory of the main module's go.mod: `go env GOMOD`
// first, then a walk up from the working directory.
func moduleRoot() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err == nil {
		if gomod := string(bytes.TrimSpace(out)); gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above " + wd)
		}
		dir = parent
	}
}

// proxyEnv is the environment for the binary: the test's own, without an
// upstream URL that would change what the command line means.
func proxyEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "MCP_TASKS_PROXY_URL=") {
			continue
		}
		env = append(env, kv)
	}
	// The default OAuth store too lives under this run's directory, never
	// the user's (macOS and Windows ignore XDG_CONFIG_HOME, but the tests
	// that sign in pass --oauth-store).
	env = append(env, "XDG_CACHE_HOME="+cacheDir, "XDG_CONFIG_HOME="+filepath.Join(filepath.Dir(cacheDir), "config"))
	if raceEnabled {
		// The race runtime sleeps 1 s at exit by default; a race still
		// fails the run (exit status 66).
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return append(env, extra...)
}
