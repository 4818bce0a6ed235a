package modern

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/internal/statefile"
	"github.com/mcp-tasks-proxy/mcp-tasks-proxy/rewrite"
)

// The task registry: the tasks this client created through the proxy, for
// tasks/list (which the 2026 extension does not have), sticky cancels and
// cached outcomes. It is a state file, so tasks outlive a client or proxy
// restart, shared safely by concurrent proxies through a file lock; with
// --no-state, or once the file cannot be used, it lives in memory.

// record is one registered task.
type record struct {
	ID string `json:"id"`
	// Synthetic marks a proxy-made task for a server that answered a
	// task-augmented call synchronously; it is served locally.
	Synthetic bool  `json:"synthetic,omitempty"`
	Seq       int64 `json:"seq"` // orders tasks by creation (newest first in tasks/list)
	// Task is the last modern task object seen (synthetic: a modern-shaped
	// object made by the proxy).
	Task json.RawMessage `json:"task"`
	// Result or Error is the cached terminal outcome.
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	// CancelledAt is set when the client cancelled the task: the status
	// stays cancelled for the client from then on.
	CancelledAt string `json:"cancelledAt,omitempty"`
	// Unanswerable is the JSON-RPC error object the proxy gave when the
	// task asked for input the client declared it cannot give, and
	// UnanswerableAt when: the task is failed for the client from then on,
	// and tasks/result answers that error.
	Unanswerable   json.RawMessage `json:"unanswerable,omitempty"`
	UnanswerableAt string          `json:"unanswerableAt,omitempty"`
	Expires        string          `json:"expires,omitempty"` // RFC 3339: a synthetic task goes once its ttl has passed
	Owner          string          `json:"owner,omitempty"`   // the Config.StateOwner it was recorded under (see store)
}

// maxRecords bounds the registry; the oldest records go first.
const maxRecords = 1000

// store keeps the records: in the state file while it can be used, in
// memory otherwise. Every operation on the file is read-modify-write under
// an exclusive lock on a sibling .lock file, and the file is replaced
// atomically, so concurrent proxies never lose each other's tasks and a
// crash never leaves a torn file. A file of a newer format is never written
// (nor read: its records may mean what this version cannot know), so a
// newer proxy's fields survive.
//
// A store is scoped to one owner (Config.StateOwner), so that the sessions
// of a serve process, which share the state file, share nothing a client
// can see. An owner is "IDENTITY/SESSION": tasks/list shows the tasks
// recorded under the whole owner (this session's); a task is read or
// updated by id under the same IDENTITY (the client's bearer), so that a
// client that lost its session (a replica that died) re-reads its tasks by
// id from a new one. A task recorded under another identity is foreign:
// not found, never changed. Stdio's owner is empty: it sees the tasks
// recorded without an owner, as every task was before owners.
type store struct {
	mu       sync.Mutex // held over each operation, so a fallback sees every write that succeeded
	file     *statefile.File
	path     string
	upstream string // recorded in the file, for people who look
	owner    string
	identity string // the owner's IDENTITY
	log      *zap.Logger
	recs     map[string]record // the records, while file is nil
}

type stateFile struct {
	Version  int      `json:"version"`
	Upstream string   `json:"upstream,omitempty"`
	Tasks    []record `json:"tasks"`
}

const stateVersion = 1

// openStore opens owner's view of the state file at path ("" keeps the
// records in memory). A file that is not valid JSON is left for the user to
// fix, loudly; any other problem moves the session to memory with one
// warning.
func openStore(path, upstream, owner string, log *zap.Logger) *store {
	r := &store{path: path, upstream: upstream, owner: owner, identity: identityOf(owner), log: log, recs: map[string]record{}}
	if path == "" {
		return r
	}
	f := stateFileAt(path)
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err != nil {
		err = fmt.Errorf("creating the state directory: %w", err)
	} else {
		_, err = readState(f)
	}
	var invalid *statefile.InvalidError
	switch {
	case errors.As(err, &invalid):
		log.Error("the task state file is not valid JSON; tasks are remembered only while this process runs (move it away, or set "+stateHints()+")",
			zap.String("path", path), zap.Error(err))
	case err != nil:
		r.fallBack(err)
	default:
		r.file, r.recs = &f, nil
	}
	return r
}

// fallBack gives up the file for the rest of the session, seeded with the
// records the file still gives; r.mu is held or r is not shared yet.
func (r *store) fallBack(err error) {
	r.file, r.recs = nil, map[string]record{}
	var newer *statefile.NewerError
	if errors.As(err, &newer) {
		r.log.Warn("the task state file was written by a newer mcp-tasks-proxy; it is left untouched, and tasks are remembered only while this process runs (upgrade, or set "+stateHints()+")",
			zap.String("path", r.path), zap.Error(err))
		return
	}
	// Best effort, without the lock: whatever can still be read.
	if st, rerr := readState(stateFileAt(r.path)); rerr == nil {
		r.recs = byID(st.Tasks)
		trim(r.recs)
	}
	r.log.Warn("the task state file cannot be used; tasks are remembered only while this process runs (fix the path or its permissions, or set "+stateHints()+")",
		zap.String("path", r.path), zap.Int("tasksKept", len(r.recs)), zap.Error(err))
}

// do runs fn on the records and keeps what it changed (it reports whether
// it did). It cannot fail: a file that fails moves the store to memory.
func (r *store) do(fn func(recs map[string]record) (changed bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file != nil {
		err := r.locked(fn)
		if err == nil {
			return
		}
		r.fallBack(err)
	}
	if fn(r.recs) {
		trim(r.recs)
	}
}

func stateFileAt(path string) statefile.File {
	return statefile.File{Path: path, LockPath: path + ".lock", Version: stateVersion}
}

// StateLockTimeout bounds the wait for the state file's lock, which
// another proxy holds only for one read-modify-write: one that holds it
// longer is stuck, and the session goes on in memory (every wait ends). A
// variable, for tests.
var StateLockTimeout = 10 * time.Second

// locked runs fn on the records read under the file's lock, and writes
// what fn changed.
func (r *store) locked(fn func(recs map[string]record) bool) error {
	if _, err := os.Stat(r.file.Path); errors.Is(err, fs.ErrNotExist) {
		// Nothing stored yet: no lock and no file unless fn writes (then
		// it runs again below, on the state read under the lock).
		if !fn(map[string]record{}) {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), StateLockTimeout)
	defer cancel()
	unlock, err := r.file.Lock(ctx)
	if err != nil {
		return fmt.Errorf("locking the state file (%s): %w", r.file.LockPath, err)
	}
	defer unlock()
	st, err := readState(*r.file)
	if err != nil {
		return err
	}
	recs := byID(st.Tasks)
	if !fn(recs) {
		return nil
	}
	trim(recs)
	return r.file.Write(stateFile{Version: stateVersion, Upstream: r.upstream, Tasks: sorted(recs)})
}

// readState reads the state file f; a missing one is empty.
func readState(f statefile.File) (stateFile, error) {
	st := stateFile{Version: stateVersion}
	_, err := f.Read(&st)
	return st, err
}

// readable reports whether a stored record is this owner's to read by id.
func (r *store) readable(rec *record) bool {
	if rec.Owner == r.owner {
		return true
	}
	return r.owner != "" && rec.Owner != "" && identityOf(rec.Owner) == r.identity
}

// identityOf is the IDENTITY of an owner "IDENTITY/SESSION" (the whole
// owner when it has no session part).
func identityOf(owner string) string {
	if i := strings.LastIndexByte(owner, '/'); i >= 0 {
		return owner[:i]
	}
	return owner
}

// get looks a task up: found when this owner may read it, foreign when it
// is recorded under another owner.
func (r *store) get(id string) (rec record, found, foreign bool) {
	r.do(func(recs map[string]record) bool {
		rec, found = recs[id]
		return false
	})
	if found && !r.readable(&rec) {
		return record{}, false, true
	}
	return rec, found, false
}

// update applies fn to this owner's record with id (a zero record with
// that id when absent); fn returns false to delete it or leave it absent.
// Another owner's record is left as it is.
func (r *store) update(id string, fn func(*record) bool) {
	r.do(func(recs map[string]record) bool {
		rec, ok := recs[id]
		switch {
		case !ok:
			rec = record{ID: id, Owner: r.owner}
		case !r.readable(&rec):
			return false
		}
		owner := rec.Owner
		keep := fn(&rec)
		rec.Owner = owner
		switch {
		case keep:
			recs[id] = rec
		case ok:
			delete(recs, id)
		default:
			return false
		}
		return true
	})
}

// list is the tasks recorded under this owner, newest first.
func (r *store) list() (out []record) {
	r.do(func(recs map[string]record) bool {
		out = slices.DeleteFunc(sorted(recs), func(rec record) bool { return rec.Owner != r.owner })
		return false
	})
	return out
}

func sorted(recs map[string]record) []record {
	out := slices.Collect(maps.Values(recs))
	slices.SortFunc(out, func(a, b record) int { return cmp.Compare(b.Seq, a.Seq) })
	return out
}

// byID indexes records by id; of two with one id, the later is kept.
func byID(list []record) map[string]record {
	recs := make(map[string]record, len(list)+1)
	for _, r := range list {
		recs[r.ID] = r
	}
	return recs
}

func trim(recs map[string]record) {
	if len(recs) <= maxRecords {
		return
	}
	for _, r := range sorted(recs)[maxRecords:] {
		delete(recs, r.ID)
	}
}

// randomHex returns n random bytes in hex: unguessable ids.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b)
}

func stateHints() string {
	return rewrite.HintStateFile.String() + " or " + rewrite.HintNoState.String()
}
