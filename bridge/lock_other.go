//go:build !unix

package bridge

import "os"

// lockFile creates path but takes no lock: on this platform concurrent
// proxies sharing one state file are not protected (each process still
// serializes its own writes, and writes are atomic renames).
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}
