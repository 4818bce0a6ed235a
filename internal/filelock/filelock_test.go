package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

func TestLockExcludesInOneProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := TryLock(path); ok || err != nil {
		t.Fatalf("TryLock while held: ok=%v err=%v, want false, nil", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LockContext(ctx, path); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockContext with a done ctx while held: %v, want context.Canceled", err)
	}
	unlock()
	unlock() // harmless
	u2, ok, err := TryLock(path)
	if !ok || err != nil {
		t.Fatalf("TryLock after unlock: ok=%v err=%v", ok, err)
	}
	u2()
}

func TestLockContextWaitsForRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		u, err := LockContext(ctx, path)
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("LockContext did not get the released lock")
	}
}

func TestLockFileMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("lock file mode %v, want no group or other bits", fi.Mode().Perm())
	}
}

func TestLockMissingDir(t *testing.T) {
	if _, err := Lock(filepath.Join(t.TempDir(), "no", "x.lock")); err == nil {
		t.Fatal("want an error for a missing directory")
	}
}
