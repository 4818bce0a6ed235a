//go:build !unix

package main

import "io"

// pollableStdin leaves stdin as it is where non-blocking pipes are not
// available.
func pollableStdin(in io.Reader, _ ...io.Writer) (io.Reader, func()) { return in, func() {} }
