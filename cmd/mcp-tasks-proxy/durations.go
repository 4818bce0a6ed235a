package main

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// duration is a duration flag that also takes bare seconds, as mcp-remote's
// --auth-timeout does: 10, 2.5, 10s, 2m, 1h30m. zeroOK lets 0 through (it
// means "none" for the flag); form is the message of a wrong value.
type duration struct {
	d      *time.Duration
	zeroOK bool
	form   error
}

var (
	errDurationForm     = errors.New("use a positive number of seconds (10) or a duration with a unit (10s, 2m, 1h30m)")
	errDurationZeroForm = errors.New("use seconds (10) or a duration with a unit (10s, 2m, 1h30m), or 0 for none")
	errSecondsForm      = errors.New("use a positive number of seconds (120) or a duration (2m, 90s)")
)

func (v duration) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v duration) Set(s string) error {
	s = strings.TrimSpace(s)
	d, err := time.ParseDuration(s)
	if f, ferr := strconv.ParseFloat(s, 64); ferr == nil && f <= 1e9 {
		d, err = time.Duration(f*float64(time.Second)), nil
	}
	if err != nil || d < 0 || d == 0 && !v.zeroOK {
		return v.form
	}
	*v.d = d
	return nil
}
