package main

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// duration is a duration flag that also takes bare seconds, as mcp-remote's
// --auth-timeout does: 10, 2.5, 10s, 2m, 1h30m. zeroOK lets 0 through (it
// means "none" for the flag); form, when set, is the message of a wrong value.
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
	form := v.form
	switch {
	case form != nil:
	case v.zeroOK:
		form = errDurationZeroForm
	default:
		form = errDurationForm
	}
	s = strings.TrimSpace(s)
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > 1e9 {
			return form
		}
		d = time.Duration(f * float64(time.Second))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			return form
		}
	}
	if d == 0 && !v.zeroOK {
		return form
	}
	*v.d = d
	return nil
}
