//go:build unix

package main

import (
	"io"
	"os"
	"syscall"
)

// pollableStdin returns stdin in non-blocking mode when it is a blocking
// pipe or socket, as it is under most MCP clients, so that reading it parks
// a goroutine in the runtime's poller instead of holding an OS thread in a
// blocking read(2). The hand-off from that thread was a measurable part of
// every call's latency (BENCHMARKS.md). A stdin that is already
// non-blocking is polled by the runtime as it is, and a terminal or a file
// is left alone. So is a stdin that is the same file as stdout or stderr
// (one socket for both, as socat's EXEC and inetd hand over): the mode
// belongs to the open file, and a blocking os.Stdout would then fail its
// writes with EAGAIN instead of waiting. restore puts the blocking mode
// back for whoever shares the pipe; an exit that skips it (SIGKILL) leaves
// the pipe non-blocking for anyone else reading it.
func pollableStdin(in io.Reader, outs ...io.Writer) (r io.Reader, restore func()) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return in, func() {}
	}
	for _, w := range outs {
		if of, ok := w.(*os.File); ok {
			if ost, err := of.Stat(); err != nil || os.SameFile(st, ost) {
				return in, func() {}
			}
		}
	}
	// The descriptor, without File.Fd, which would set it to blocking.
	rc, err := f.SyscallConn()
	if err != nil {
		return in, func() {}
	}
	fd, blocking := -1, false
	if err := rc.Control(func(d uintptr) {
		fd = int(d)
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, d, syscall.F_GETFL, 0)
		blocking = errno == 0 && flags&syscall.O_NONBLOCK == 0
	}); err != nil || !blocking {
		return in, func() {}
	}
	// A duplicate descriptor for the runtime to poll, so that the new File
	// owns what it closes; the mode belongs to the open pipe, which both
	// descriptors share.
	dup, err := syscall.Dup(fd)
	if err != nil {
		return in, func() {}
	}
	syscall.CloseOnExec(dup)
	if err := syscall.SetNonblock(dup, true); err != nil {
		syscall.Close(dup)
		return in, func() {}
	}
	nf := os.NewFile(uintptr(dup), f.Name())
	return nf, func() {
		// Close first: it wakes a read parked in the poller, and a read
		// already in read(2) returns at once while the pipe is still
		// non-blocking. In blocking mode such a read would wait for the
		// client, and Close with it.
		nf.Close()
		_ = syscall.SetNonblock(fd, false)
	}
}
