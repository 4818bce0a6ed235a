//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// isNonblock reads the descriptor's mode without File.Fd, which would set
// it to blocking.
func isNonblock(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		flags, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}); err != nil || errno != 0 {
		t.Fatal(err, errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// blockingPipe is a pipe made the way a client hands stdin over: blocking
// descriptors, wrapped as os.Stdin is, so the runtime does not poll them.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestPollableStdinPipe(t *testing.T) {
	r, w := blockingPipe(t)
	in, restore := pollableStdin(r)
	if in == io.Reader(r) {
		t.Fatal("a blocking pipe was left blocking")
	}
	if !isNonblock(t, r) {
		t.Fatal("the pipe is not in non-blocking mode")
	}
	// The read starts before anything is written: it must wait in the
	// poller, not fail with EAGAIN.
	got := make(chan error, 1)
	buf := make([]byte, 5)
	go func() {
		_, err := io.ReadFull(in, buf)
		got <- err
	}()
	time.Sleep(10 * time.Millisecond) // only makes the early read likely; the test holds either way
	if _, err := w.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil || string(buf) != "line\n" {
			t.Fatalf("read %q, %v", buf, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read never returned")
	}
	restore()
	if isNonblock(t, r) {
		t.Fatal("blocking mode not restored")
	}
}

// An already non-blocking stdin is polled by the runtime as it is: it is
// returned unchanged, and still reads.
func TestPollableStdinAlreadyNonblocking(t *testing.T) {
	r, w, err := os.Pipe() // non-blocking and polled already
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, restore := pollableStdin(r)
	defer restore()
	if in != io.Reader(r) {
		t.Fatal("a polled pipe was wrapped again")
	}
	go func() { _, _ = w.Write([]byte("ok\n")) }()
	buf := make([]byte, 3)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "ok\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if !isNonblock(t, r) {
		t.Fatal("the pipe's mode was changed")
	}
}

func TestPollableStdinFileUnchanged(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, restore := pollableStdin(f)
	defer restore()
	if in != io.Reader(f) || isNonblock(t, f) {
		t.Fatal("a regular file was changed")
	}
	var sr io.Reader = io.MultiReader()
	if got, _ := pollableStdin(sr); got != sr {
		t.Fatal("a non-file reader was replaced")
	}
}

// A stdin that is one socket with stdout (socat EXEC, inetd) stays
// blocking: the mode is the socket's, and os.Stdout, not polled, would fail
// its writes with EAGAIN.
func TestPollableStdinSharedWithStdout(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	peer := os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()
	outFD, err := syscall.Dup(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	in, out := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(outFD), "stdout")
	defer in.Close()
	defer out.Close()
	_, w := blockingPipe(t) // another file first in the list

	got, restore := pollableStdin(in, w, out)
	defer restore()
	if got != io.Reader(in) || isNonblock(t, in) {
		t.Fatal("a stdin shared with stdout was made non-blocking")
	}
	// A stdout that is another file does not stop the switch.
	r, _ := blockingPipe(t)
	got, restore2 := pollableStdin(r, w)
	defer restore2()
	if got == io.Reader(r) || !isNonblock(t, r) {
		t.Fatal("a stdin pipe apart from stdout was left blocking")
	}
}
