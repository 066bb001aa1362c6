package main

import (
	"errors"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

// parseWindow reads --since and --until; a bad value is a usage error.
func parseWindow(o *ops.Ops, since, until string) (time.Time, time.Time, error) {
	s, u, err := ops.ParseWindow(since, until, o.Now())
	switch {
	case errors.Is(err, ops.ErrInvalid):
		return s, u, usageErr("--until must be after --since")
	case err != nil:
		return s, u, usageErr("--" + err.Error())
	}
	return s, u, nil
}
