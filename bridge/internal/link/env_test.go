package link

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"
)

type nopObserver struct{}

func (nopObserver) FromClient(string, string, []byte)                                      {}
func (nopObserver) ToClient(string, string, []byte, []string)                              {}
func (nopObserver) Note(string, string, string)                                            {}
func (nopObserver) FromServer(string, string, int, []byte, time.Duration, error)           {}
func (nopObserver) ToServer(string, string, []string, string, string, http.Header, []byte) {}

// TestObservedCarriesItsOp: a context made for the Observer names the op
// of its exchanges, for OpOf too, so an exchange made under it inherits
// that op; one without an op takes the op of the context it was made
// under, and every other key is the parent's. Without an Observer the
// context is the caller's own.
func TestObservedCarriesItsOp(t *testing.T) {
	s := &Env{Cfg: Config{Observer: nopObserver{}}}
	type other struct{}
	outer := context.WithValue(WithOp(context.Background(), "op-outer"), other{}, "kept")
	named := s.Observed(outer, "op-named", nil)
	if got := OpOf(named); got != "op-named" {
		t.Errorf("opOf under a named exchange: %q", got)
	}
	nested := s.Observed(named, "", RwOwn)
	if got := hopOf(nested); got.op != "op-named" || !slices.Equal(got.rewrites, RwOwn) {
		t.Errorf("an exchange under a named one: %+v, want op-named and %v", got, RwOwn)
	}
	if got := OpOf(s.Observed(outer, "", nil)); got != "op-outer" {
		t.Errorf("an exchange without an op has %q, want the context's op-outer", got)
	}
	if got := nested.Value(other{}); got != "kept" {
		t.Errorf("another key through two exchanges: %v", got)
	}
	off := &Env{}
	if ctx := off.Observed(outer, "op-named", RwOwn); ctx != outer {
		t.Error("without an Observer, Observed made a new context")
	}
}
