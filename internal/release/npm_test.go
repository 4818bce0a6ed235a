package release_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testVersion is what the test binary is linked with and the npm packages
// carry; the postinstall step checks that --version prints it.
const testVersion = "0.0.0-releasetest"

// The Go targets of the npm packages, as scripts/npm/mcp-tasks-proxy/lib/platform.js
// lists them, with npm's names.
var npmTargets = []struct{ goos, goarch, npmOS, npmCPU string }{
	{"linux", "amd64", "linux", "x64"},
	{"linux", "arm64", "linux", "arm64"},
	{"darwin", "amd64", "darwin", "x64"},
	{"darwin", "arm64", "darwin", "arm64"},
	{"windows", "amd64", "win32", "x64"},
	{"windows", "arm64", "win32", "arm64"},
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"release-test","version":"1"}}}`

// TestNPMPackages builds this machine's binary, makes the npm packages with
// scripts/npm/pack.js (a stand-in file for the other platforms' binaries,
// which npm must never install here), and installs them as users do:
// offline from the .tgz files, from a registry (a local one serving those
// files) with npm install -g and with npx, approved under npm 11's
// allowScripts policy, and with install scripts off. Each time the
// installed command must be the native binary itself (the Node launcher
// with scripts off, whose binary must have the command's stdin and stdout),
// print the version and answer an initialize in --demo mode.
func TestNPMPackages(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the npm install test runs on Unix: on Windows npm's shims run the Node launcher by design")
	}
	node, npm, npx := npmTools(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()

	native := buildBinary(t, root, filepath.Join(tmp, "build"))
	stub := filepath.Join(tmp, "build", "not-this-platform")
	if err := os.WriteFile(stub, []byte("not a binary for this machine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	host := hostTarget(t)
	packArgs := []string{filepath.Join(root, "scripts", "npm", "pack.js"), "--all", "--version", testVersion, "--out", filepath.Join(tmp, "npm")}
	for _, tg := range npmTargets {
		bin := stub
		if tg.goos == runtime.GOOS && tg.goarch == runtime.GOARCH {
			bin = native
		}
		packArgs = append(packArgs, "--binary", tg.goos+"/"+tg.goarch+"="+bin)
	}
	run(t, tmp, nil, node, packArgs...)
	// The main package and this machine's are side by side, so that
	// `npm install -g DIR/*.tgz` works as it stands; the other platforms'
	// are in DIR/platforms.
	local, _ := filepath.Glob(filepath.Join(tmp, "npm", "*.tgz"))
	others, _ := filepath.Glob(filepath.Join(tmp, "npm", "platforms", "*.tgz"))
	if len(local) != 2 || len(others) != len(npmTargets)-1 {
		t.Fatalf("pack.js made %v and %v, want the main and this machine's package, and the %d others in platforms/", local, others, len(npmTargets)-1)
	}
	tgzs := append(append([]string(nil), local...), others...)
	mainTgz := filepath.Join(tmp, "npm", "mcp-tasks-proxy-"+testVersion+".tgz")
	hostTgz := filepath.Join(tmp, "npm", "mcp-tasks-proxy-"+host.npmOS+"-"+host.npmCPU+"-"+testVersion+".tgz")
	for _, f := range []string{mainTgz, hostTgz} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("pack.js did not make %s: %v", filepath.Base(f), err)
		}
	}

	// The user's npm configuration stays out, and an offline install
	// cannot reach a registry even by mistake.
	baseEnv := func(dir string) []string {
		return []string{
			"npm_config_userconfig=" + filepath.Join(dir, "npmrc"),
			"npm_config_cache=" + filepath.Join(dir, "cache"),
			"npm_config_registry=http://127.0.0.1:9/",
			"npm_config_update_notifier=false",
			"npm_config_fund=false",
			"npm_config_audit=false",
		}
	}

	t.Run("install -g DIR/*.tgz, offline", func(t *testing.T) {
		dir := t.TempDir()
		prefix := filepath.Join(dir, "prefix")
		args := append([]string{"install", "-g", "--offline", "--prefix", prefix}, local...)
		run(t, dir, baseEnv(dir), npm, args...)
		installed := filepath.Join(prefix, "bin", "mcp-tasks-proxy")
		checkNative(t, installed, native)
		checkOnlyHostPackage(t, filepath.Join(prefix, "lib", "node_modules"), host)
		checkVersion(t, installed)
		checkDemo(t, installed, nil, "")
	})

	t.Run("install -g and npx from a registry", func(t *testing.T) {
		reg := startRegistry(t, tgzs)
		dir := t.TempDir()
		env := append(baseEnv(dir), "npm_config_registry="+reg.url+"/")

		prefix := filepath.Join(dir, "prefix")
		run(t, dir, env, npm, "install", "-g", "--prefix", prefix, "mcp-tasks-proxy")
		installed := filepath.Join(prefix, "bin", "mcp-tasks-proxy")
		checkNative(t, installed, native)
		checkOnlyHostPackage(t, filepath.Join(prefix, "lib", "node_modules"), host)
		checkVersion(t, installed)
		checkDemo(t, installed, nil, "")

		// npx, as a host's configuration runs it: npm waits as the
		// parent, and the native binary has the host's stdin and stdout.
		npxEnv := append(env, "npm_config_cache="+filepath.Join(dir, "npx-cache"))
		out := run(t, dir, npxEnv, npx, "-y", "mcp-tasks-proxy", "--version")
		if !strings.Contains(out, testVersion) {
			t.Errorf("npx -y mcp-tasks-proxy --version printed %q, want %s in it", out, testVersion)
		}
		checkDemo(t, npx, npxEnv, native, "-y", "mcp-tasks-proxy")

		for _, f := range reg.fetched() {
			if f != filepath.Base(mainTgz) && f != filepath.Base(hostTgz) {
				t.Errorf("npm downloaded %s, which is not for this machine", f)
			}
		}
	})

	// npm 11's allowScripts policy: what the README says to run to approve
	// the postinstall step, at install and after an install that skipped it.
	// (What a user who does not approve it gets is the Node launcher, as
	// with --ignore-scripts below.)
	t.Run("npm allowScripts", func(t *testing.T) {
		dir := t.TempDir()
		if out := run(t, dir, baseEnv(dir), npm, "config", "get", "strict-allow-scripts"); strings.TrimSpace(out) != "false" {
			t.Skipf("this npm has no allowScripts policy (npm config get strict-allow-scripts: %q)", strings.TrimSpace(out))
		}
		reg := startRegistry(t, tgzs)
		env := append(baseEnv(dir), "npm_config_registry="+reg.url+"/")

		// Approved at install: --strict-allow-scripts makes npm fail
		// where the approval did not cover the script. (npm 11.19's check
		// for it looks at PREFIX/lib before it makes it: made here, as any
		// used global prefix has it.)
		prefix := filepath.Join(dir, "approved")
		if err := os.MkdirAll(filepath.Join(prefix, "lib"), 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, dir, env, npm, "install", "-g", "--strict-allow-scripts", "--allow-scripts=mcp-tasks-proxy", "--prefix", prefix, "mcp-tasks-proxy")
		checkNative(t, filepath.Join(prefix, "bin", "mcp-tasks-proxy"), native)

		// Approved after an install that skipped the script.
		prefix = filepath.Join(dir, "later")
		run(t, dir, env, npm, "install", "-g", "--ignore-scripts", "--prefix", prefix, "mcp-tasks-proxy")
		run(t, dir, env, npm, "rebuild", "-g", "--strict-allow-scripts", "--allow-scripts=mcp-tasks-proxy", "--prefix", prefix, "mcp-tasks-proxy")
		checkNative(t, filepath.Join(prefix, "bin", "mcp-tasks-proxy"), native)
	})

	t.Run("install scripts off: the Node launcher", func(t *testing.T) {
		dir := t.TempDir()
		prefix := filepath.Join(dir, "prefix")
		run(t, dir, baseEnv(dir), npm, "install", "-g", "--ignore-scripts", "--offline", "--prefix", prefix, mainTgz, hostTgz)
		installed := filepath.Join(prefix, "bin", "mcp-tasks-proxy")
		head := readHead(t, installed, 2)
		if head != "#!" {
			t.Fatalf("with --ignore-scripts, %s should be the Node launcher, starts with %q", installed, head)
		}
		checkVersion(t, installed)
		checkDemo(t, installed, nil, native)
	})
}

func npmTools(t *testing.T) (node, npm, npx string) {
	t.Helper()
	var missing []string
	look := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			missing = append(missing, name)
		}
		return p
	}
	node, npm, npx = look("node"), look("npm"), look("npx")
	if len(missing) > 0 {
		msg := fmt.Sprintf("the npm package test needs %s on PATH", strings.Join(missing, ", "))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: not skipped)")
		}
		t.Skip(msg)
	}
	return node, npm, npx
}

func hostTarget(t *testing.T) struct{ goos, goarch, npmOS, npmCPU string } {
	t.Helper()
	for _, tg := range npmTargets {
		if tg.goos == runtime.GOOS && tg.goarch == runtime.GOARCH {
			return tg
		}
	}
	t.Skipf("no npm package for %s/%s", runtime.GOOS, runtime.GOARCH)
	panic("unreachable")
}

// buildBinary builds the command as the release does (static, trimmed,
// with the version linked in).
func buildBinary(t *testing.T, root, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "mcp-tasks-proxy")
	ldflags := "-s -w -X main.version=" + testVersion + " -X main.commit=releasetest"
	run(t, root, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/mcp-tasks-proxy")
	return out
}

// run runs a command with a bound, fails the test on an error and returns
// its stdout.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	t.Logf("%s %s: %v", filepath.Base(name), firstArgs(args), time.Since(start).Round(time.Millisecond))
	return stdout.String()
}

func firstArgs(args []string) string {
	if len(args) > 3 {
		return strings.Join(args[:3], " ") + " …"
	}
	return strings.Join(args, " ")
}

func readHead(t *testing.T, file string, n int) string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		t.Fatalf("reading %s: %v", file, err)
	}
	return string(buf)
}

func fileSum(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkNative: the installed command resolves to a file with the native
// binary's bytes (the hard link or copy made at postinstall), not a script.
func checkNative(t *testing.T, installed, native string) {
	t.Helper()
	resolved, err := filepath.EvalSymlinks(installed)
	if err != nil {
		t.Fatalf("the installed command: %v", err)
	}
	if fileSum(t, resolved) != fileSum(t, native) {
		t.Fatalf("%s resolves to %s, which is not the native binary (starts with %q): the postinstall step did not replace the launcher",
			installed, resolved, readHead(t, resolved, 2))
	}
}

// checkOnlyHostPackage: of the platform packages, npm installed this
// machine's only.
func checkOnlyHostPackage(t *testing.T, nodeModules string, host struct{ goos, goarch, npmOS, npmCPU string }) {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(nodeModules, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && filepath.Base(filepath.Dir(p)) == "@mcp-tasks-proxy" {
			found = append(found, d.Name())
			return filepath.SkipDir
		}
		return nil
	})
	want := []string{host.npmOS + "-" + host.npmCPU}
	if !slices.Equal(found, want) {
		t.Errorf("installed platform packages %v, want %v", found, want)
	}
}

func checkVersion(t *testing.T, installed string) {
	t.Helper()
	out := run(t, t.TempDir(), nil, installed, "--version")
	if !strings.Contains(out, testVersion) || !strings.Contains(out, "commit releasetest") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("%s --version printed %q, want %s, commit releasetest and %s in it", installed, out, testVersion, runtime.Version())
	}
}

// checkDemo starts `name args... --demo`, sends one initialize line and
// expects a JSON-RPC answer to it on stdout, every wait bounded. On Linux it
// also checks that the process holding the command's stdin and stdout is
// the native binary: the started process itself, or, when wantDescendant is
// set (npx, the Node launcher), a descendant running the file with the same
// bytes as wantDescendant.
func checkDemo(t *testing.T, name string, env []string, wantDescendant string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, append(args, "--demo")...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()

	if _, err := io.WriteString(stdin, initializeLine+"\n"); err != nil {
		t.Fatalf("writing initialize: %v", err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var line string
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatalf("%s --demo closed stdout without an answer; stderr:\n%s", name, stderr.String())
		}
		line = l
	case <-time.After(60 * time.Second):
		t.Fatalf("%s --demo gave no answer in 60 s; stderr:\n%s", name, stderr.String())
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" || string(msg.ID) != "1" || len(msg.Result) == 0 {
		t.Fatalf("the first stdout line is not the initialize result (%v): %s", err, line)
	}

	if runtime.GOOS == "linux" {
		checkStdioHolder(t, cmd.Process.Pid, name, wantDescendant)
	}

	_ = stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("%s --demo, after end of input: %v; stderr:\n%s", name, err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s --demo did not exit within 30 s of the end of its input", name)
	}
}

// checkStdioHolder (Linux): the process that has the pipe we write to as
// fd 0 and the pipe we read as fd 1 runs the native binary.
func checkStdioHolder(t *testing.T, pid int, name, wantDescendant string) {
	t.Helper()
	fd0, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid))
	fd1, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid))
	if wantDescendant == "" {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			t.Fatalf("/proc/%d/exe: %v", pid, err)
		}
		resolved, _ := filepath.EvalSymlinks(name)
		if exe != resolved {
			t.Errorf("the started process runs %s, want the native binary %s", exe, resolved)
		}
		t.Logf("the started process (pid %d) runs %s", pid, exe)
		return
	}
	want := fileSum(t, wantDescendant)
	// A launcher on a Node with process.execve becomes the binary: the
	// started process itself then runs it, with the pipes we gave it.
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && fileSum(t, exe) == want {
		t.Logf("the started process (pid %d) runs the native binary itself (the launcher exec'd it)", pid)
		return
	}
	for _, d := range descendants(pid) {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", d))
		if err != nil || fileSum(t, exe) != want {
			continue
		}
		d0, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", d))
		d1, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/1", d))
		if d0 != fd0 || d1 != fd1 {
			t.Errorf("the native binary (pid %d) has stdin %s and stdout %s, not the pipes of %s (%s, %s): something in between copies the bytes", d, d0, d1, name, fd0, fd1)
		}
		t.Logf("under %s (pid %d), pid %d runs the native binary with its stdin %s and stdout %s", filepath.Base(name), pid, d, d0, d1)
		return
	}
	t.Errorf("no process under %s (pid %d) runs the native binary", name, pid)
}

// descendants lists the processes under pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// registry is a minimal npm registry on loopback: a packument per package
// and the .tgz files, which it records as fetched.
type registry struct {
	url string
	mu  sync.Mutex
	got []string
}

func (r *registry) fetched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func startRegistry(t *testing.T, tgzs []string) *registry {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := &registry{url: "http://" + ln.Addr().String()}
	packuments := map[string][]byte{}
	files := map[string]string{}
	for _, tgz := range tgzs {
		data, err := os.ReadFile(tgz)
		if err != nil {
			t.Fatal(err)
		}
		manifest, err := packageJSON(data)
		if err != nil {
			t.Fatalf("%s: %v", tgz, err)
		}
		name, _ := manifest["name"].(string)
		version, _ := manifest["version"].(string)
		base := filepath.Base(tgz)
		files[base] = tgz
		s512 := sha512.Sum512(data)
		s1 := sha1.Sum(data)
		manifest["dist"] = map[string]any{
			"tarball":   reg.url + "/-/" + base,
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
			"shasum":    hex.EncodeToString(s1[:]),
		}
		if scripts, ok := manifest["scripts"].(map[string]any); ok && scripts["postinstall"] != nil {
			manifest["hasInstallScript"] = true
		}
		doc, err := json.Marshal(map[string]any{
			"name":      name,
			"dist-tags": map[string]string{"latest": version},
			"versions":  map[string]any{version: manifest},
		})
		if err != nil {
			t.Fatal(err)
		}
		packuments[name] = doc
	}
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			path := strings.TrimPrefix(req.URL.Path, "/")
			if base, ok := strings.CutPrefix(path, "-/"); ok {
				if f, ok := files[base]; ok {
					reg.mu.Lock()
					reg.got = append(reg.got, base)
					reg.mu.Unlock()
					w.Header().Set("Content-Type", "application/octet-stream")
					http.ServeFile(w, req, f)
					return
				}
			}
			if doc, ok := packuments[path]; ok {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(doc)
				return
			}
			http.NotFound(w, req)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return reg
}

// packageJSON reads package/package.json out of an npm .tgz.
func packageJSON(tgz []byte) (map[string]any, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, errors.Join(errors.New("no package/package.json"), err)
		}
		if h.Name != "package/package.json" {
			continue
		}
		var m map[string]any
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return nil, err
		}
		return m, nil
	}
}
