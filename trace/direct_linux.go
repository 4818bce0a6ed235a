package trace

import "syscall"

// oDirect opens a file for direct I/O.
const oDirect = syscall.O_DIRECT
