//go:build !linux

package trace

// oDirect is 0 where the trace has no direct I/O: the file is written
// through the page cache.
const oDirect = 0
