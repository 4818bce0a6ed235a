//go:build unix

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// plant writes target (content, mode) and a symbolic link to it.
func plant(t *testing.T, dir string) (link, target string) {
	t.Helper()
	target = filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("precious data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o644); err != nil {
		t.Fatal(err)
	}
	link = filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link, target
}

// unchanged fails t unless target still holds its content and mode 0644.
func unchanged(t *testing.T, target string) {
	t.Helper()
	b, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "precious data\n" || st.Mode().Perm() != 0o644 {
		t.Errorf("the link's target changed: %q, mode %04o", b, st.Mode().Perm())
	}
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestOpenWriteRefusesLinks: a link to a file, in either mode, and a
// dangling link are refused with an error naming the path and the way out;
// the target keeps its content and mode, and a dangling link's target is
// not created.
func TestOpenWriteRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	link, target := plant(t, dir)
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nothing"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling} {
		for _, m := range []Mode{Truncate, Append} {
			f, err := OpenWrite(p, m)
			if err == nil {
				f.Close()
				t.Fatalf("OpenWrite(%s, %d) opened a symbolic link", p, m)
			}
			if !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "remove the link") {
				t.Errorf("OpenWrite(%s): %v; want an error naming the link and the way out", p, err)
			}
		}
	}
	unchanged(t, target)
	if _, err := os.Lstat(filepath.Join(dir, "nothing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created (%v)", err)
	}
	if err := Check(link); !errors.Is(err, ErrSymlink) {
		t.Errorf("Check(link) = %v, want ErrSymlink", err)
	}
	// The open itself refuses a link (a link planted after the check).
	if _, err := os.OpenFile(link, os.O_WRONLY|NoFollow, 0); err == nil {
		t.Errorf("an open with NoFollow followed the link")
	}
}

// TestOpenWriteFiles: a new file is 0600; an existing regular file open to
// others is made 0600, then truncated (Truncate) or kept (Append).
func TestOpenWriteFiles(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "new")
	f, err := OpenWrite(fresh, Truncate)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if p := perm(t, fresh); p != 0o600 {
		t.Errorf("a new file has mode %04o, want 0600", p)
	}
	for _, c := range []struct {
		mode Mode
		want string
	}{{Truncate, "new\n"}, {Append, "old\nnew\n"}} {
		p := filepath.Join(dir, "loose")
		if err := os.WriteFile(p, []byte("old\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
		f, err := OpenWrite(p, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("new\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if got := perm(t, p); got != 0o600 {
			t.Errorf("mode %d: an existing 0666 file ends %04o, want 0600", c.mode, got)
		}
		if b, _ := os.ReadFile(p); string(b) != c.want {
			t.Errorf("mode %d: the file holds %q, want %q", c.mode, b, c.want)
		}
	}
}

// TestOpenWriteDevice: /dev/null is opened as it is, its mode untouched
// and nothing truncated.
func TestOpenWriteDevice(t *testing.T) {
	before := perm(t, os.DevNull)
	f, err := OpenWrite(os.DevNull, Truncate)
	if err != nil {
		t.Fatalf("OpenWrite(%s): %v", os.DevNull, err)
	}
	if _, err := f.WriteString("x"); err != nil {
		t.Error(err)
	}
	f.Close()
	if after := perm(t, os.DevNull); after != before {
		t.Errorf("%s changed mode from %04o to %04o", os.DevNull, before, after)
	}
}

// TestOpenWriteOtherUsersFile: a file or FIFO of another user is refused,
// untouched, even when the process could chmod it (root); the test needs
// root to make one.
func TestOpenWriteOtherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making another user's file needs root")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "theirs")
	if err := os.WriteFile(p, []byte("theirs\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{p, fifo} {
		if err := os.Chmod(q, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(q, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		f, err := OpenWrite(q, Truncate)
		if err == nil {
			f.Close()
			t.Fatalf("OpenWrite(%s) opened another user's file", q)
		}
		if !strings.Contains(err.Error(), "another user") || !strings.Contains(err.Error(), q) {
			t.Errorf("OpenWrite(%s): %v; want an error naming the file's owner", q, err)
		}
		if got := perm(t, q); got != 0o666 {
			t.Errorf("%s: mode changed to %04o", q, got)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "theirs\n" {
		t.Errorf("another user's file now holds %q", b)
	}
}
