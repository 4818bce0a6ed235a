//go:build unix

package routing

import "golang.org/x/sys/unix"

// allocPart returns n bytes of an anonymous private mapping, outside the Go
// heap, so that freePart can hand them back to the system at once: the
// collector would keep heap memory until its next cycle, and the runtime
// keeps what it frees for reuse. It falls back to the heap when the system
// refuses the mapping.
func allocPart(n int) ([]byte, bool) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return make([]byte, n), false
	}
	return b, true
}

// freePart hands a part back. No slice of a mapped part may be used after.
func freePart(p part) {
	if p.mapped {
		_ = unix.Munmap(p.b[:cap(p.b)])
	}
}
