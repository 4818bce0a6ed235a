// Package filelock is the cross-process lock of mcp-tasks-proxy: an
// exclusive advisory lock on a file (flock(2) on Unix, LockFileEx on
// Windows, through github.com/gofrs/flock), for state that several proxy
// processes share: the task registry and the OAuth token store.
//
// The lock belongs to an open file, not to a process: two locks taken on
// one path in the same process exclude each other, as they would in two
// processes. It is advisory: it binds only code that takes it.
//
// It must never lock the data file itself when that file is replaced by
// an atomic rename (the lock would stay with the old inode): lock a
// sibling such as DATA.lock. It never deletes the lock file, which would
// let two holders lock two different inodes.
package filelock

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/gofrs/flock"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/safefile"
)

// retryDelay is how often LockContext tries again while the lock is held
// elsewhere. flock(2) has no wait with a deadline, so a bounded wait polls.
const retryDelay = 20 * time.Millisecond

// Lock takes the exclusive lock on path, creating the file (mode 0600) if
// needed, and waits as long as another holder keeps it. A symbolic link at
// path is refused (see newFlock). It returns the
// function that releases it; calling that function more than once is
// harmless.
func Lock(path string) (unlock func(), err error) {
	f, err := newFlock(path)
	if err != nil {
		return nil, err
	}
	if err := f.Lock(); err != nil {
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	return release(f), nil
}

// LockContext is Lock with a wait bounded by ctx: when ctx ends first it
// returns ctx's error (wrapped; errors.Is works) and holds nothing.
func LockContext(ctx context.Context, path string) (unlock func(), err error) {
	f, err := newFlock(path)
	if err != nil {
		return nil, err
	}
	ok, err := f.TryLockContext(ctx, retryDelay)
	if err == nil && !ok {
		err = ctx.Err()
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	return release(f), nil
}

// TryLock takes the lock only if it is free at once; ok is false (and err
// nil) when another holder has it.
func TryLock(path string) (unlock func(), ok bool, err error) {
	f, err := newFlock(path)
	if err != nil {
		return nil, false, err
	}
	ok, err = f.TryLock()
	if err != nil {
		_ = f.Close()
		return nil, false, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	if !ok {
		_ = f.Close()
		return nil, false, nil
	}
	return release(f), true, nil
}

// newFlock is flock.New for a lock file the user owns: created with mode
// 0600 and never opened through a symbolic link, which would create or
// open the link's target (O_NOFOLLOW where the system has it, and an Lstat
// check everywhere). The open flags are flock's own otherwise: read-only,
// but read-write where an exclusive lock needs it.
func newFlock(path string) (*flock.Flock, error) {
	if err := safefile.Check(path); err != nil {
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	flag := os.O_CREATE | os.O_RDONLY | safefile.NoFollow
	switch runtime.GOOS {
	case "aix", "solaris", "illumos":
		flag = os.O_CREATE | os.O_RDWR | safefile.NoFollow
	}
	return flock.New(path, flock.SetFlag(flag), flock.SetPermissions(0o600)), nil
}

func release(f *flock.Flock) func() {
	return func() { _ = f.Unlock() } // Unlock closes the file; a second call is a no-op
}
