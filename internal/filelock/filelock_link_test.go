//go:build unix

package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/safefile"
)

// TestLockRefusesLink: a symbolic link at the lock path is refused by
// every way to lock, and neither a dangling link's target is created nor
// an existing target changed.
func TestLockRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "x.lock")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, safefile.ErrSymlink) || !strings.Contains(err.Error(), link) {
			t.Errorf("%s on a link: %v; want the symbolic link refused, by name", what, err)
		}
	}
	if unlock, err := Lock(link); err == nil {
		unlock()
		t.Errorf("Lock followed the link")
	} else {
		check("Lock", err)
	}
	if unlock, err := LockContext(t.Context(), link); err == nil {
		unlock()
		t.Errorf("LockContext followed the link")
	} else {
		check("LockContext", err)
	}
	if unlock, _, err := TryLock(link); err == nil {
		unlock()
		t.Errorf("TryLock followed the link")
	} else {
		check("TryLock", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created (%v)", err)
	}
	// A lock file of its own is created 0600.
	own := filepath.Join(dir, "own.lock")
	unlock, err := Lock(own)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if st, err := os.Stat(own); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("a new lock file: %v, %v; want mode 0600", st.Mode().Perm(), err)
	}
}
