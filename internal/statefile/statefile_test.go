package statefile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/safefile"
)

type doc struct {
	Version int    `json:"version"`
	Note    string `json:"note"`
}

func newFile(t *testing.T) *File {
	dir := t.TempDir()
	return &File{Path: filepath.Join(dir, "state.json"), LockPath: filepath.Join(dir, "state.lock"), Version: 2}
}

// A write replaces the document whole: a reader of the old file still
// reads the old document, no temporary file is left, the mode is 0600,
// and strings are written as they are.
func TestWriteReplacesAtomically(t *testing.T) {
	f := newFile(t)
	if err := f.Write(doc{Version: 2, Note: "old"}); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := f.Write(doc{Version: 2, Note: "new <&>"}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 256)
	if n, _ := old.Read(b); !strings.Contains(string(b[:n]), `"old"`) {
		t.Errorf("the old file changed under its reader: %s", b[:n])
	}
	var got doc
	if found, err := f.Read(&got); !found || err != nil || got.Note != "new <&>" {
		t.Fatalf("Read = %v, %v, %+v", found, err, got)
	}
	if b, _ := os.ReadFile(f.Path); !strings.Contains(string(b), "<&>") {
		t.Errorf("written with HTML escapes: %s", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(f.Path))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	if fi, _ := os.Stat(f.Path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// What Read makes of what it finds: nothing (missing or blank: v
// untouched), a newer version (refused undecoded), a document that does
// not decode, and the caller's own check.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		found         bool
		want          func(error) bool
	}{
		{"missing", "", false, func(err error) bool { return err == nil }},
		{"blank", " \n", false, func(err error) bool { return err == nil }},
		{"current", `{"version":2,"note":"n"}`, true, func(err error) bool { return err == nil }},
		{"older", `{"note":"n"}`, true, func(err error) bool { return err == nil }},
		{"newer", `{"version":3,"note":["a new shape"]}`, false, func(err error) bool {
			var e *NewerError
			return errors.As(err, &e) && e.Version == 3 && e.Known == 2
		}},
		{"not JSON", `{"version":2,`, false, func(err error) bool {
			var e *InvalidError
			return errors.As(err, &e)
		}},
		{"wrong shape", `{"version":2,"note":7}`, false, func(err error) bool {
			var e *InvalidError
			return errors.As(err, &e)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFile(t)
			if tc.name != "missing" {
				if err := os.WriteFile(f.Path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got := doc{Note: "untouched"}
			found, err := f.Read(&got)
			if found != tc.found || !tc.want(err) {
				t.Fatalf("Read of %q = %v, %v", tc.content, found, err)
			}
			if !found && got.Note != "untouched" {
				t.Errorf("v changed though nothing was found: %+v", got)
			}
			if found && got.Note != "n" {
				t.Errorf("v = %+v", got)
			}
		})
	}
	f := newFile(t)
	if err := f.Write(doc{Version: 2}); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	f.Check = func(fi fs.FileInfo) error {
		if !fi.Mode().IsRegular() {
			t.Errorf("Check saw %v", fi.Mode())
		}
		return refused
	}
	if _, err := f.Read(&doc{}); !errors.Is(err, refused) {
		t.Errorf("Read with a refusing Check = %v", err)
	}
}

// A symbolic link at the document's path is not read through, and a
// write replaces the link, leaving its target as it was. A link at the
// lock file's path is refused by name, and its missing target is not
// created.
func TestNotThroughLink(t *testing.T) {
	f := newFile(t)
	target := filepath.Join(t.TempDir(), "target.json")
	if err := os.WriteFile(target, []byte(`{"version":1,"note":"theirs"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, f.Path); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if _, err := f.Read(&doc{}); !errors.Is(err, safefile.ErrSymlink) {
		t.Errorf("Read through a link = %v, want it refused", err)
	}
	if err := f.Write(doc{Version: 2, Note: "mine"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != `{"version":1,"note":"theirs"}` {
		t.Errorf("the link's target changed: %s", b)
	}
	if fi, err := os.Lstat(f.Path); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the path after a write: %v, %v; want a regular file", fi, err)
	}

	missing := filepath.Join(t.TempDir(), "missing")
	if err := os.Symlink(missing, f.LockPath); err != nil {
		t.Fatal(err)
	}
	if unlock, err := f.Lock(t.Context()); err == nil {
		unlock()
		t.Errorf("Lock followed the link")
	} else if !errors.Is(err, safefile.ErrSymlink) || !strings.Contains(err.Error(), f.LockPath) {
		t.Errorf("Lock on a link: %v; want the symbolic link refused, by name", err)
	}
	if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the lock link's target was created (%v)", err)
	}
}

// The lock excludes a second holder in the same process (it belongs to an
// open file): one whose context is done gets its error at once, one that
// waits gets the lock once it is released. The lock file is 0600, the
// document is not created, and a lock in a missing directory fails.
func TestLock(t *testing.T) {
	f := newFile(t)
	unlock, err := f.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(t.Context())
	cancel()
	if u, err := f.Lock(done); !errors.Is(err, context.Canceled) {
		if u != nil {
			u()
		}
		t.Fatalf("a second Lock while held = %v, want the context's error", err)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		u, err := f.Lock(ctx)
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	unlock() // harmless
	if err := <-got; err != nil {
		t.Fatalf("a waiting Lock once released: %v", err)
	}
	if fi, err := os.Stat(f.LockPath); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("the lock file: %v, %v; want mode 0600", fi, err)
	}
	if _, err := os.Stat(f.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("locking created the document: %v", err)
	}
	f.LockPath = filepath.Join(t.TempDir(), "no", "x.lock")
	if _, err := f.Lock(t.Context()); err == nil {
		t.Error("Lock in a missing directory succeeded")
	}
}
