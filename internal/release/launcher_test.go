//go:build linux || darwin

package release_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Node launcher (scripts/npm/mcp-tasks-proxy/bin/mcp-tasks-proxy) runs
// when the postinstall step did not put the native binary in its place: an
// npm whose allowScripts policy did not approve the script, --ignore-scripts,
// Windows. These tests run it with node against a fake native binary (this
// test executable, in fakeNative mode) laid out as npm lays out the
// packages, and check that it gets out of the way: the binary has the very
// pipes node was given as stdin, stdout and stderr; where Node has
// process.execve, the binary is the process that was started (no Node
// process left); else node is its parent, passes SIGINT, SIGTERM and SIGHUP
// on, and ends as the binary ended, exit code or signal.
//
// They use the node on PATH, and each node listed in MCP_TASKS_PROXY_TEST_NODES
// (paths, separated as in PATH): with a Node 20, the spawn path is tested;
// with a Node 22.15+ or 23.11+, the exec path.

// fakeEnv set to 1 makes this test executable the fake native binary.
const fakeEnv = "MCP_TASKS_PROXY_RELEASE_FAKE_NATIVE"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) == "1" {
		os.Exit(fakeNative())
	}
	os.Exit(m.Run())
}

// fakeReport is the first line the fake binary writes on its stdout.
type fakeReport struct {
	PID    int      `json:"pid"`
	PPID   int      `json:"ppid"`
	Stdin  string   `json:"stdin"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
	Args   []string `json:"args"`
}

// fdID names the open file behind a descriptor: device and inode.
func fdID(f interface{ Fd() uintptr }) string {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return "fstat: " + err.Error()
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// fakeNative: report the pid, the parent's pid and what stdin, stdout and
// stderr are; then obey stdin lines: "exit N" exits with N, "die N" dies of
// signal N, "write" writes to stdout until it breaks (dying of SIGPIPE when
// nobody reads it). SIGINT, SIGTERM or SIGHUP makes it print "signal N" and
// exit with 100+N; the end of stdin, with 0.
func fakeNative() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	rep, err := json.Marshal(fakeReport{
		PID: os.Getpid(), PPID: os.Getppid(),
		Stdin: fdID(os.Stdin), Stdout: fdID(os.Stdout), Stderr: fdID(os.Stderr),
		Args: os.Args[1:],
	})
	if err != nil {
		return 90
	}
	if _, err := os.Stdout.Write(append(rep, '\n')); err != nil {
		return 91
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case s := <-sigs:
			n := int(s.(syscall.Signal))
			fmt.Printf("signal %d\n", n)
			return 100 + n
		case line, ok := <-lines:
			if !ok {
				return 0
			}
			cmd, arg, _ := strings.Cut(line, " ")
			n, _ := strconv.Atoi(arg)
			switch cmd {
			case "exit":
				return n
			case "die":
				signal.Reset(syscall.Signal(n))
				_ = syscall.Kill(os.Getpid(), syscall.Signal(n))
				time.Sleep(time.Minute)
				return 92
			case "write":
				for {
					if _, err := os.Stdout.Write([]byte("x\n")); err != nil {
						return 93
					}
				}
			default:
				fmt.Fprintf(os.Stderr, "fake: unknown command %q\n", line)
				return 94
			}
		}
	}
}

// testNode is a node binary and whether it has process.execve.
type testNode struct {
	path, version string
	execve        bool
}

func testNodes(t *testing.T) []testNode {
	t.Helper()
	var paths []string
	if p, err := exec.LookPath("node"); err == nil {
		paths = append(paths, p)
	} else if os.Getenv("CI") == "true" {
		t.Fatal("the launcher test needs node on PATH (CI=true: not skipped)")
	}
	for _, p := range filepath.SplitList(os.Getenv("MCP_TASKS_PROXY_TEST_NODES")) {
		if p != "" {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		t.Skip("the launcher test needs node on PATH")
	}
	var nodes []testNode
	for _, p := range paths {
		out, err := exec.Command(p, "-p", "process.version + ' ' + typeof process.execve").Output()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		version, kind, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
		nodes = append(nodes, testNode{path: p, version: version, execve: kind == "function"})
	}
	if !slices.ContainsFunc(nodes, func(n testNode) bool { return n.execve }) {
		t.Logf("no node here has process.execve (%v): the exec path is not tested; "+
			"list a Node 22.15+ in MCP_TASKS_PROXY_TEST_NODES to test it", nodes)
	}
	return nodes
}

// launcherTree lays out node_modules as npm does for the main package and
// this machine's platform package, with the launcher and lib/ from
// scripts/npm and this test executable as the native binary. It returns
// the launcher's path.
func launcherTree(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return launcherTreeWith(t, func(dst string) error { return os.Symlink(self, dst) })
}

// launcherTreeWith is launcherTree with the native binary's file made by
// place.
func launcherTreeWith(t *testing.T, place func(dst string) error) string {
	t.Helper()
	host := hostTarget(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	nm := filepath.Join(t.TempDir(), "node_modules")
	main := filepath.Join(nm, "mcp-tasks-proxy")
	for _, f := range []string{"bin/mcp-tasks-proxy", "lib/platform.js"} {
		data, err := os.ReadFile(filepath.Join(root, "scripts", "npm", "mcp-tasks-proxy", filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(main, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(nm, "@mcp-tasks-proxy", host.npmOS+"-"+host.npmCPU, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := place(filepath.Join(bin, "mcp-tasks-proxy")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(main, "bin", "mcp-tasks-proxy")
}

// launched is a running `node launcher`, with pipes of the test's own as
// its stdin, stdout and stderr.
type launched struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end: what we write, the launcher reads
	stdout *os.File // our end: what it writes, we read
	ids    [3]string
	lines  chan string
	stderr lockedBuffer
	done   chan struct{}
}

func startLauncher(t *testing.T, node testNode, launcher string) *launched {
	t.Helper()
	l := &launched{lines: make(chan string, 16), done: make(chan struct{})}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	l.stdin, l.stdout = inW, outR
	l.ids = [3]string{fdID(inR), fdID(outW), fdID(errW)}
	l.cmd = exec.Command(node.path, launcher, "--fake-arg", "two words")
	l.cmd.Env = append(os.Environ(), fakeEnv+"=1")
	l.cmd.Stdin, l.cmd.Stdout, l.cmd.Stderr = inR, outW, errW
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{inR, outW, errW} {
		_ = f.Close()
	}
	go func() {
		defer close(l.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
	}()
	go func() {
		_, _ = io.Copy(&l.stderr, errR)
		_ = errR.Close()
	}()
	go func() {
		_ = l.cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(func() {
		select {
		case <-l.done:
		default:
			_ = l.cmd.Process.Kill()
			<-l.done
		}
		_ = inW.Close()
		_ = outR.Close()
	})
	return l
}

const launcherWait = 30 * time.Second

func (l *launched) line(t *testing.T) string {
	t.Helper()
	select {
	case s, ok := <-l.lines:
		if !ok {
			t.Fatalf("the launcher's stdout closed; stderr:\n%s", l.stderr.String())
		}
		return s
	case <-time.After(launcherWait):
		t.Fatalf("no line from the launcher in %v; stderr:\n%s", launcherWait, l.stderr.String())
	}
	return ""
}

func (l *launched) report(t *testing.T) fakeReport {
	t.Helper()
	s := l.line(t)
	var rep fakeReport
	if err := json.Unmarshal([]byte(s), &rep); err != nil {
		t.Fatalf("the fake binary's report %q: %v; stderr:\n%s", s, err, l.stderr.String())
	}
	return rep
}

func (l *launched) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(l.stdin, line+"\n"); err != nil {
		t.Fatalf("writing %q to the launcher: %v", line, err)
	}
}

// wait returns how the launcher ended.
func (l *launched) wait(t *testing.T) syscall.WaitStatus {
	t.Helper()
	select {
	case <-l.done:
	case <-time.After(launcherWait):
		t.Fatalf("the launcher did not end within %v; stderr:\n%s", launcherWait, l.stderr.String())
	}
	ws, ok := l.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		t.Fatalf("no wait status: %v", l.cmd.ProcessState)
	}
	return ws
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return "exit code " + strconv.Itoa(ws.ExitStatus())
}

// TestLauncherHandsOverStdio: the binary gets node's own stdin, stdout and
// stderr (not pipes that Node copies), its arguments as given, and either
// replaces node (execve) or is its direct child; its exit code is the
// launcher's.
func TestLauncherHandsOverStdio(t *testing.T) {
	launcher := launcherTree(t)
	for _, node := range testNodes(t) {
		t.Run(node.version, func(t *testing.T) {
			l := startLauncher(t, node, launcher)
			rep := l.report(t)
			got := [3]string{rep.Stdin, rep.Stdout, rep.Stderr}
			if got != l.ids {
				t.Errorf("the binary's stdin, stdout, stderr are %v; node was given %v: something in between copies the bytes", got, l.ids)
			}
			if want := []string{"--fake-arg", "two words"}; !slices.Equal(rep.Args, want) {
				t.Errorf("the binary got the arguments %q, want %q", rep.Args, want)
			}
			pid := l.cmd.Process.Pid
			switch {
			case node.execve && rep.PID != pid:
				t.Errorf("node %s has process.execve, yet the binary runs as pid %d (parent %d), not as the started process %d: a Node process stays", node.version, rep.PID, rep.PPID, pid)
			case !node.execve && rep.PPID != pid:
				t.Errorf("the binary's parent is %d, not the started node %d", rep.PPID, pid)
			}
			t.Logf("node %s (execve: %v): started pid %d, binary pid %d, parent %d", node.version, node.execve, pid, rep.PID, rep.PPID)
			l.send(t, "exit 7")
			if ws := l.wait(t); ws.Signaled() || ws.ExitStatus() != 7 {
				t.Errorf("the binary exited with 7, the launcher ended with %s", describe(ws))
			}
		})
	}
}

// TestLauncherForwardsSignals: SIGINT, SIGTERM and SIGHUP sent to the
// started process reach the binary, and the launcher ends with the exit
// code the binary chose.
func TestLauncherForwardsSignals(t *testing.T) {
	launcher := launcherTree(t)
	for _, node := range testNodes(t) {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
			t.Run(node.version+"/"+sigName(sig), func(t *testing.T) {
				l := startLauncher(t, node, launcher)
				l.report(t)
				if err := l.cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				if got, want := l.line(t), fmt.Sprintf("signal %d", int(sig)); got != want {
					t.Errorf("after %s the binary printed %q, want %q", sigName(sig), got, want)
				}
				if ws := l.wait(t); ws.Signaled() || ws.ExitStatus() != 100+int(sig) {
					t.Errorf("the binary exited with %d after %s, the launcher ended with %s", 100+int(sig), sigName(sig), describe(ws))
				}
			})
		}
	}
}

// TestLauncherEndsAsItsChild: a binary killed by a signal makes the
// launcher end the same way (or, for a signal Node keeps to itself, with
// 128 + its number, as a shell reports it), never with 0.
func TestLauncherEndsAsItsChild(t *testing.T) {
	launcher := launcherTree(t)
	for _, node := range testNodes(t) {
		t.Run(node.version+"/SIGTERM", func(t *testing.T) {
			l := startLauncher(t, node, launcher)
			l.report(t)
			l.send(t, fmt.Sprintf("die %d", int(syscall.SIGTERM)))
			if ws := l.wait(t); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Errorf("the binary died of SIGTERM, the launcher ended with %s", describe(ws))
			}
		})
		// The host closed the binary's stdout: it dies of SIGPIPE, which
		// Node ignores for itself.
		t.Run(node.version+"/SIGPIPE", func(t *testing.T) {
			l := startLauncher(t, node, launcher)
			l.report(t)
			_ = l.stdout.Close()
			l.send(t, "write")
			ws := l.wait(t)
			if !(ws.Signaled() && ws.Signal() == syscall.SIGPIPE) && ws.ExitStatus() != 128+int(syscall.SIGPIPE) {
				t.Errorf("the binary died of SIGPIPE, the launcher ended with %s, want SIGPIPE or exit code %d", describe(ws), 128+int(syscall.SIGPIPE))
			}
			t.Logf("ended with %s", describe(ws))
		})
	}
}

// TestLauncherBinaryItCannotRun: a platform binary that cannot be run (not
// executable, or no binary for this machine) ends the launcher with an
// error that names it, never an abort: Node before 26 aborts the process
// when process.execve fails, so the launcher must not try the exec then.
func TestLauncherBinaryItCannotRun(t *testing.T) {
	nodes := testNodes(t)
	for _, c := range []struct {
		name string
		mode os.FileMode
		want int // exit code, as a shell gives it
	}{
		{"not executable", 0o644, 126},
		{"not a binary for this machine", 0o755, 126},
	} {
		launcher := launcherTreeWith(t, func(dst string) error {
			return os.WriteFile(dst, []byte("not a binary for this machine\n"), c.mode)
		})
		for _, node := range nodes {
			t.Run(node.version+"/"+c.name, func(t *testing.T) {
				l := startLauncher(t, node, launcher)
				_ = l.stdin.Close()
				ws := l.wait(t)
				<-l.lines // stdout closed: the launcher and all it started are gone
				stderr := l.stderr.String()
				if ws.Signaled() || ws.ExitStatus() != c.want {
					t.Errorf("the launcher ended with %s, want exit code %d; stderr:\n%s", describe(ws), c.want, stderr)
				}
				if !strings.Contains(stderr, "mcp-tasks-proxy: cannot start ") {
					t.Errorf("stderr does not say the binary cannot start:\n%s", stderr)
				}
				if strings.Contains(stderr, "execve") {
					t.Errorf("stderr speaks of execve, which the launcher should not have tried:\n%s", stderr)
				}
				t.Logf("ended with %s; stderr: %q", describe(ws), stderr)
			})
		}
	}
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}
