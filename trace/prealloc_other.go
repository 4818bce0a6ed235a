//go:build !linux

package trace

import (
	"errors"
	"os"
)

// preallocate is only done on Linux.
func preallocate(*os.File, int64, int64) error { return errors.ErrUnsupported }
