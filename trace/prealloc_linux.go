package trace

import (
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: reserve, but leave the size.
const fallocKeepSize = 0x1

// preallocate reserves n bytes of f from off without changing its size.
func preallocate(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = syscall.Fallocate(int(fd), fallocKeepSize, off, n)
	}); err != nil {
		return err
	}
	return ferr
}
