package modern

import (
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// TestOwnedRegistry: a serve session lists only its own tasks, reads by id
// the tasks of its identity (another session of the same bearer), and
// neither sees nor changes another identity's; stdio (no owner) sees only
// the tasks recorded without one.
func TestOwnedRegistry(t *testing.T) {
	for name, inner := range map[string]func() *store{
		"memory": func() *store { return openStore("", "", zap.NewNop()) },
		"file": func() *store {
			return openStore(filepath.Join(t.TempDir(), "tasks.json"), "http://up", zap.NewNop())
		},
	} {
		t.Run(name, func(t *testing.T) {
			shared := inner()
			a1 := ownedBy(shared, "bearer-a/s1")
			a2 := ownedBy(shared, "bearer-a/s2")
			b := ownedBy(shared, "bearer-b/s3")
			stdio := ownedBy(shared, "")
			put := func(r *ownedRegistry, id string) {
				t.Helper()
				r.update(id, func(rec *record) bool { *rec = record{ID: id, Seq: 1, Task: []byte(`{}`)}; return true })
			}
			put(a1, "t1")
			put(b, "t3")
			put(stdio, "t0")
			ids := func(r *ownedRegistry) []string {
				recs := r.list()
				var out []string
				for _, rec := range recs {
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
			if _, ok := a2.get("t1"); !ok {
				t.Error("a2 cannot read t1 by id, a task of the same identity")
			}
			for _, r := range []*ownedRegistry{b, stdio} {
				if _, ok := r.get("t1"); ok {
					t.Error("another identity reads t1")
				}
			}
			if !b.foreign("t1") || a2.foreign("t1") || b.foreign("nope") {
				t.Error("foreign is wrong")
			}
			// b's cancel of a1's task changes nothing.
			b.update("t1", func(rec *record) bool { rec.CancelledAt = "now"; return true })
			if rec, _ := a1.get("t1"); rec.CancelledAt != "" || rec.Owner != "bearer-a/s1" {
				t.Errorf("after another identity's update: %+v", rec)
			}
			// a2's update keeps the record under a1's session.
			a2.update("t1", func(rec *record) bool { *rec = record{ID: "t1", Seq: 2}; return true })
			if rec, _ := a1.get("t1"); rec.Seq != 2 || rec.Owner != "bearer-a/s1" {
				t.Errorf("after the same identity's update: %+v", rec)
			}
		})
	}
}
