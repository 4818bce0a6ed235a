//go:build !unix

package routing

// allocPart returns n bytes of the heap: this system gets no mappings of
// its own here, and a message longer than its start buffer is held about
// twice while it is joined.
func allocPart(n int) ([]byte, bool) { return make([]byte, n), false }

// freePart leaves a heap part to the collector.
func freePart(part) {}
