//go:build unix

package main

import (
	"io"
	"os"
	"runtime"
	"syscall"
)

// pollableStdin returns stdin in non-blocking mode when it is a pipe or a
// socket, as it is under an MCP client, so that reading it parks a
// goroutine in the runtime's poller instead of holding an OS thread in a
// blocking read(2). The hand-off from that thread was a measurable part of
// every call's latency (BENCHMARKS.md). A terminal or a file is left as it
// is. restore puts the blocking mode back for whoever shares the pipe.
func pollableStdin(in io.Reader) (r io.Reader, restore func()) {
	f, ok := in.(*os.File)
	if !ok {
		return in, func() {}
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return in, func() {}
	}
	fd := int(f.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		return in, func() {}
	}
	nf := os.NewFile(uintptr(fd), f.Name())
	return nf, func() {
		_ = syscall.SetNonblock(fd, false)
		runtime.KeepAlive(nf) // its finalizer would close the descriptor
	}
}
