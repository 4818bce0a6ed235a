//go:build !unix

package safefile

import "io/fs"

// NoFollow is 0 where the system has no O_NOFOLLOW: the Lstat check alone
// refuses a link.
const NoFollow = 0

// modeBits says the system has no Unix permission bits (Windows).
const modeBits = false

// checkOwner has no owner to compare without Unix ownership.
func checkOwner(string, fs.FileInfo) error { return nil }
