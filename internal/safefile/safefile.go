// Package safefile opens the files mcp-tasks-proxy writes for its user
// (the trace, the log, the lock files of the task state and the OAuth
// store) so that they stay the user's:
//
//   - never through a symbolic link, which (planted say in /tmp) would send
//     the write to its target: the last component is checked with Lstat
//     and opened with O_NOFOLLOW, so a link planted between the two is
//     refused as well;
//   - a file it creates is 0600, and an existing regular file with a looser
//     mode is made 0600 before anything is written to it (when that fails,
//     nothing is written and the error says so);
//   - only a regular file is truncated: a device such as /dev/null, or a
//     named pipe, is written as it is, its mode left alone.
//
// Windows has neither O_NOFOLLOW nor these mode bits: there the Lstat check
// refuses a link, and modes are not changed.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrSymlink is wrapped by the error of an open refused because the path
// is a symbolic link.
var ErrSymlink = errors.New("symbolic link")

// Mode says what OpenWrite does to a regular file that already exists.
type Mode int

const (
	// Truncate empties it (a trace starts afresh).
	Truncate Mode = iota
	// Append writes after what it holds (a log).
	Append
)

// OpenWrite opens path for writing: a new regular file of mode 0600, an
// existing regular file (made 0600 first, then truncated or appended to
// as mode says), or an existing device or named pipe as it is (opening a
// named pipe waits for its reader). A symbolic link at path is refused
// with an error that wraps ErrSymlink and names the way out.
func OpenWrite(path string, mode Mode) (*os.File, error) {
	if err := Check(path); err != nil {
		return nil, err
	}
	flag := os.O_WRONLY | os.O_CREATE | NoFollow
	if mode == Append {
		flag |= os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, linkError(path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return f, nil // a device's or a pipe's mode is the system's or its owner's
	}
	err = checkOwner(path, st)
	if err == nil {
		err = private(f, path, st)
	}
	if err == nil && mode == Truncate && st.Size() > 0 {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Check refuses what OpenWrite would refuse before opening path: a
// symbolic link, and a named pipe of another user (opening one waits for
// its reader). A missing path passes.
func Check(path string) error {
	st, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil
	case st.Mode()&fs.ModeSymlink != 0:
		return symlinkError(path)
	case st.Mode()&fs.ModeNamedPipe != 0:
		return checkOwner(path, st)
	}
	return nil
}

// linkError turns the error of an O_NOFOLLOW open of a symbolic link (a
// link planted after the Lstat; the errno differs between systems) into
// the error Check gives; other errors are returned as they are.
func linkError(path string, err error) error {
	if st, lerr := os.Lstat(path); lerr == nil && st.Mode()&fs.ModeSymlink != 0 {
		return symlinkError(path)
	}
	return err
}

func symlinkError(path string) error {
	return fmt.Errorf("%s is a %w; mcp-tasks-proxy never writes through one (a link planted there would send the write to its target): remove the link, or name a file that is not one", path, ErrSymlink)
}

// private makes an open regular file mode 0600 when group or others may
// use it.
func private(f *os.File, path string, st fs.FileInfo) error {
	if !modeBits || st.Mode().Perm()&0o077 == 0 {
		return nil // the user's alone already (0600, 0400, 0700, …)
	}
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("%s can be used by other users (mode %04o) and cannot be made private (%v): remove it, or name another file", path, st.Mode().Perm(), err)
	}
	return nil
}
