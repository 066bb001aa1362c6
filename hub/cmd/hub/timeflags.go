package main

import (
	"errors"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

// Time flags take durations before now (90m, 36h, 7d) or times
// (2026-11-30, RFC 3339), as ops.ParseTime reads them.

// parseWindow reads --since and --until against now; a bad value is a
// usage error naming its flag.
func parseWindow(since, until string, now time.Time) (time.Time, time.Time, error) {
	s, u, err := ops.ParseWindow(since, until, now)
	switch {
	case errors.Is(err, ops.ErrInvalid):
		return s, u, usageErr("--until must be after --since")
	case err != nil:
		return s, u, usageErr("--" + err.Error())
	}
	return s, u, nil
}

// parseAge reads an age flag (--older-than 90d); a bad value is a usage
// error naming the flag.
func parseAge(name, v string) (time.Duration, error) {
	age, err := ops.ParseAge(v)
	if err != nil {
		return 0, usageErr("--" + name + ": " + err.Error())
	}
	return age, nil
}
