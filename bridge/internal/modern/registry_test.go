package modern

import (
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// TestOwnedRegistry: a serve session lists only its own tasks, reads by id
// the tasks of its identity (another session of the same bearer), and
// neither sees nor changes another identity's; stdio (no owner) sees only
// the tasks recorded without one. The sessions share the state file.
func TestOwnedRegistry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.json")
	open := func(owner string) *store { return openStore(path, "http://up", owner, zap.NewNop()) }
	a1, a2, b, stdio := open("bearer-a/s1"), open("bearer-a/s2"), open("bearer-b/s3"), open("")
	put := func(r *store, id string) {
		t.Helper()
		r.update(id, func(rec *record) bool { *rec = record{ID: id, Seq: 1, Task: []byte(`{}`)}; return true })
	}
	put(a1, "t1")
	put(b, "t3")
	put(stdio, "t0")
	ids := func(r *store) []string {
		var out []string
		for _, rec := range r.list() {
			out = append(out, rec.ID)
		}
		return out
	}
	if got := ids(a1); len(got) != 1 || got[0] != "t1" {
		t.Errorf("a1 lists %v, want [t1]", got)
	}
	if got := ids(a2); len(got) != 0 {
		t.Errorf("a2 lists %v, want none (list is per session)", got)
	}
	if got := ids(stdio); len(got) != 1 || got[0] != "t0" {
		t.Errorf("stdio lists %v, want [t0]", got)
	}
	if _, ok, foreign := a2.get("t1"); !ok || foreign {
		t.Error("a2 cannot read t1 by id, a task of the same identity")
	}
	for _, r := range []*store{b, stdio} {
		if _, ok, foreign := r.get("t1"); ok || !foreign {
			t.Errorf("another identity reads t1 (found %v) or does not see it as foreign (%v)", ok, foreign)
		}
	}
	if _, ok, foreign := b.get("nope"); ok || foreign {
		t.Error("an unknown id is found or foreign")
	}
	// b's cancel of a1's task changes nothing.
	b.update("t1", func(rec *record) bool { rec.CancelledAt = "now"; return true })
	if rec, _, _ := a1.get("t1"); rec.CancelledAt != "" || rec.Owner != "bearer-a/s1" {
		t.Errorf("after another identity's update: %+v", rec)
	}
	// a2's update keeps the record under a1's session.
	a2.update("t1", func(rec *record) bool { *rec = record{ID: "t1", Seq: 2}; return true })
	if rec, _, _ := a1.get("t1"); rec.Seq != 2 || rec.Owner != "bearer-a/s1" {
		t.Errorf("after the same identity's update: %+v", rec)
	}
	// b cannot delete a1's task either.
	b.update("t1", func(*record) bool { return false })
	if _, ok, _ := a1.get("t1"); !ok {
		t.Error("another identity deleted t1")
	}
}
