package bridge

import (
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStdioOwnPipe: a pipe on stdin is read through a description of the
// proxy's own, non-blocking, while the one the host handed over (and may
// share) keeps its blocking mode; lines and the end of input read as
// before, and Close ends a Read that is still waiting.
func TestStdioOwnPipe(t *testing.T) {
	// A blocking pipe, as a host hands one over (os.Pipe's are not).
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "host")
	defer r.Close()
	defer w.Close()
	c := NewStdio(r, io.Discard, 1<<10)
	if c.own == nil {
		t.Fatal("the pipe was read as handed over, not through a description of its own")
	}
	if flags(t, r)&unix.O_NONBLOCK != 0 {
		t.Error("the handed-over description was made non-blocking")
	}
	if flags(t, c.own)&unix.O_NONBLOCK == 0 {
		t.Error("the proxy's own description is blocking")
	}
	if _, err := w.WriteString("{\"a\":1}\n{\"b\":2}\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		if in, err := c.Read(); err != nil || string(in.Frame) != want {
			t.Fatalf("read %q, %v; want %q", in.Frame, err, want)
		}
	}

	// A Read waiting for input ends once the Conn is closed.
	done := make(chan error, 1)
	go func() { _, err := c.Read(); done <- err }()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("a Read after Close returned a line")
		}
	case <-time.After(wait):
		t.Fatal("Close left a Read waiting")
	}

	// The end of input still reads as io.EOF on a fresh Conn.
	c2 := NewStdio(r, io.Discard, 1<<10)
	defer c2.Close()
	w.Close()
	if _, err := c2.Read(); !errors.Is(err, io.EOF) {
		t.Errorf("at the end of input: %v, want io.EOF", err)
	}
}

func flags(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fl int
	var ferr error
	if err := rc.Control(func(fd uintptr) { fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	return fl
}
