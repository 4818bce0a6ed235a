//go:build unix

package safefile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// NoFollow is O_NOFOLLOW: an open with it fails when the path's last
// component is a symbolic link. Callers that open a file themselves (a
// lock file) add it to their flags.
const NoFollow = syscall.O_NOFOLLOW

// modeBits says the system has Unix permission bits.
const modeBits = true

// checkOwner refuses a regular file or named pipe that another user owns:
// writing into it would hand the data to that user, who could read it
// whatever its mode.
func checkOwner(path string, st fs.FileInfo) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(sys.Uid) != uid {
		return fmt.Errorf("%s belongs to another user (uid %d, not %d), who could read what is written there: remove it, or name another file", path, sys.Uid, uid)
	}
	return nil
}
