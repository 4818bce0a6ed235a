//go:build unix

package main

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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

func TestPollableStdinPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, restore := pollableStdin(r)
	if in == io.Reader(r) {
		t.Fatal("a pipe was left blocking")
	}
	if !isNonblock(t, r) {
		t.Fatal("the pipe is not in non-blocking mode")
	}
	go func() { _, _ = w.Write([]byte("line\n")) }()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(in, buf); err != nil || string(buf) != "line\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	restore()
	if isNonblock(t, r) {
		t.Fatal("blocking mode not restored")
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
