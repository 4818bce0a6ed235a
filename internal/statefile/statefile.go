// Package statefile is the state that several mcp-tasks-proxy processes of
// one user share (the task registry, each OAuth server's tokens): one JSON
// document with a format version, read whole and replaced whole under an
// exclusive lock on a sibling lock file.
//
// The lock (flock(2), or LockFileEx on Windows) belongs to an open file,
// not to a process: two locks on one path in one process exclude each
// other. The lock file is never the document, which a write replaces (the
// lock would stay with the old inode), and is never deleted, which would
// let two holders lock two different inodes. The document is never read or
// written through a symbolic link: reading refuses one, and a write renames
// a new 0600 file over the path. A reader sees the old document or the new
// one, never a part.
package statefile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/gofrs/flock"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/safefile"
)

// File is one state document.
type File struct {
	// Path is the document.
	Path string
	// LockPath is its lock file (never Path itself).
	LockPath string
	// Version is the newest format version this program reads and writes.
	Version int
	// Indent indents the JSON written by as much per level ("" for none).
	Indent string
	// Check, when set, vets the opened document before it is read; its
	// error is Read's.
	Check func(fi fs.FileInfo) error
}

// NewerError is a document of a format version newer than File.Version.
// It is not decoded: a newer format may not mean what this one does.
type NewerError struct {
	Path           string
	Version, Known int
}

func (e *NewerError) Error() string {
	return fmt.Sprintf("%s has format version %d, newer than this mcp-tasks-proxy knows (%d)", e.Path, e.Version, e.Known)
}

// InvalidError is a document that is not JSON of the expected shape; Err
// is encoding/json's error.
type InvalidError struct {
	Path string
	Err  error
}

func (e *InvalidError) Error() string { return fmt.Sprintf("%s is not valid (%v)", e.Path, e.Err) }

// retryDelay is how often Lock tries again while the lock is held
// elsewhere: flock(2) has no wait with a deadline, so a bounded wait polls.
const retryDelay = 20 * time.Millisecond

// Lock takes the document's lock, waiting at most until ctx ends (then it
// returns ctx's error, wrapped, and holds nothing), and returns the
// function that releases it, harmless to call twice. The lock file is
// created 0600 if missing, never through a symbolic link, which would
// create or open the link's target.
func (f *File) Lock(ctx context.Context) (unlock func(), err error) {
	if err := safefile.Check(f.LockPath); err != nil {
		return nil, fmt.Errorf("cannot lock %s: %w", f.LockPath, err)
	}
	// flock's own open flags otherwise: read-only, but read-write where an
	// exclusive lock needs it.
	flag := os.O_CREATE | os.O_RDONLY | safefile.NoFollow
	switch runtime.GOOS {
	case "aix", "solaris", "illumos":
		flag = os.O_CREATE | os.O_RDWR | safefile.NoFollow
	}
	l := flock.New(f.LockPath, flock.SetFlag(flag), flock.SetPermissions(0o600))
	ok, err := l.TryLockContext(ctx, retryDelay)
	if err == nil && !ok {
		err = ctx.Err()
	}
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("cannot lock %s: %w", f.LockPath, err)
	}
	return func() { _ = l.Unlock() }, nil // Unlock closes the file; a second call is a no-op
}

// Read decodes the document into v after reading its "version" member: a
// newer version is a *NewerError, a document that does not decode an
// *InvalidError. found is false, and v untouched, when the file is missing
// or holds only whitespace.
func (f *File) Read(v any) (found bool, err error) {
	b, err := f.readAll()
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return false, err
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return false, &InvalidError{Path: f.Path, Err: err}
	}
	if head.Version > f.Version {
		return false, &NewerError{Path: f.Path, Version: head.Version, Known: f.Version}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, &InvalidError{Path: f.Path, Err: err}
	}
	return true, nil
}

// readAll is the document's bytes, nil for a missing file.
func (f *File) readAll() ([]byte, error) {
	if err := safefile.Check(f.Path); err != nil {
		return nil, err
	}
	file, err := os.OpenFile(f.Path, os.O_RDONLY|safefile.NoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", f.Path, err)
	}
	defer file.Close()
	if f.Check != nil {
		fi, err := file.Stat()
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", f.Path, err)
		}
		if err := f.Check(fi); err != nil {
			return nil, err
		}
	}
	b, err := io.ReadAll(file)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", f.Path, err)
	}
	return b, nil
}

// Write replaces the document with v as JSON (strings as they are, without
// HTML escapes): a temporary file of mode 0600 beside it, synced, then
// renamed over it. The caller holds the lock.
func (f *File) Write(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", f.Indent)
	if err := enc.Encode(v); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+"-*.tmp")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", f.Path, err)
	}
	_, err = tmp.Write(buf.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("cannot write %s: %w", f.Path, err)
	}
	return nil
}
