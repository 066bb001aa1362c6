package main

import (
	"errors"
	"flag"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
)

// Time flags take durations before now (90m, 36h, 7d) or times
// (2026-11-30, RFC 3339), as ops.ParseTime reads them.

// parseWindow reads --since and --until against now; a bad value is a
// usage error naming its flag.
func parseWindow(since, until string, now time.Time) (time.Time, time.Time, error) {
	s, u, err := ops.ParseWindow(since, until, now)
	return s, u, flagErr(err)
}

// flagErr is a decoder's error as the command line says it: a time flag's
// is a usage error naming the flag (exit 2); any other input error names
// its flag when it is printed (exitCode).
func flagErr(err error) error {
	var input *ops.InputError
	switch {
	case errors.Is(err, ops.ErrBadTime):
		field, rest, _ := strings.Cut(err.Error(), ":")
		return usageErr(flagName(field) + ":" + rest)
	case errors.As(err, &input) && input.Field == "until":
		return usageErr("--until must be after --since")
	}
	return err
}

// flagValues is a command's flags as ops.Values, named as the admin API
// names them (--older-than is older_than): each flag given, and each other
// one with a default (a bool's false too), so that the command line's
// defaults hold. Repeated --where flags are each a where value.
func flagValues(fs *flag.FlagSet) ops.Values {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	v := ops.Values{}
	fs.VisitAll(func(f *flag.Flag) {
		name := strings.ReplaceAll(f.Name, "-", "_")
		switch w, isWhere := f.Value.(*whereFlag); {
		case isWhere:
			v[name] = *w
		case given[f.Name] || f.DefValue != "":
			v.Set(name, f.Value.String())
		}
	})
	return v
}
