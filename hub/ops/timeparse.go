package ops

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// ErrBadTime reports a time or duration an operator typed that cannot be
// understood.
var ErrBadTime error = &hub.Error{Code: hub.EINVALID, Message: "bad time"}

// ParseTime reads an operator's point in time: an RFC 3339 time
// ("2026-11-30T08:00:00Z"), a date ("2026-11-30", midnight UTC), or a
// duration before now ("90m", "36h", "7d", "2w"; see ParseAge).
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("%w: empty", ErrBadTime)
	}
	if len(s) > maxTimeLen {
		return time.Time{}, fmt.Errorf("%w: longer than %d bytes", ErrBadTime, maxTimeLen)
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if d, err := ParseAge(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %s is neither a duration (90m, 36h, 7d) nor a time (2026-11-30 or 2026-11-30T08:00:00Z)", ErrBadTime, quote(s))
}

// maxAge bounds ages: a century, far from time.Duration's overflow.
const maxAge = 100 * 365 * 24 * time.Hour

// ParseAge reads a positive duration: Go's syntax ("90m", "1h30m") plus
// days and weeks ("7d", "2w", "1d12h").
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%w: empty (want a duration such as 90m, 36h, 7d)", ErrBadTime)
	}
	if len(s) > maxTimeLen {
		return 0, fmt.Errorf("%w: longer than %d bytes", ErrBadTime, maxTimeLen)
	}
	var total time.Duration
	rest := s
	for _, unit := range []struct {
		suffix string
		size   time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}} {
		i := strings.Index(rest, unit.suffix)
		if i < 0 {
			continue
		}
		// Compare the count, not the product: 213504d times 24h
		// overflows time.Duration into 25 minutes.
		n, err := strconv.ParseUint(rest[:i], 10, 31)
		if err != nil || i == 0 || n > uint64(maxAge/unit.size) {
			return 0, fmt.Errorf("%w: %s is not a duration of at most a century", ErrBadTime, quote(s))
		}
		if total += time.Duration(n) * unit.size; total > maxAge {
			return 0, fmt.Errorf("%w: %s must be positive and at most a century", ErrBadTime, quote(s))
		}
		rest = rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("%w: %s is not a duration (90m, 36h, 7d)", ErrBadTime, quote(s))
		}
		// total is at most a century here; so is |d| after this check,
		// so the sum cannot wrap.
		if d > maxAge || d < -maxAge {
			return 0, fmt.Errorf("%w: %s must be positive and at most a century", ErrBadTime, quote(s))
		}
		total += d
	}
	if total <= 0 || total > maxAge {
		return 0, fmt.Errorf("%w: %s must be positive and at most a century", ErrBadTime, quote(s))
	}
	return total, nil
}

// ParseWindow reads an operator's time range, either end optional ("" is
// open). It fails, wrapping ErrBadTime, on a time it cannot read, and
// wrapping ErrInvalid when until is not after since.
func ParseWindow(since, until string, now time.Time) (time.Time, time.Time, error) {
	var s, u time.Time
	var err error
	if since != "" {
		if s, err = ParseTime(since, now); err != nil {
			return s, u, fmt.Errorf("since: %w", err)
		}
	}
	if until != "" {
		if u, err = ParseTime(until, now); err != nil {
			return s, u, fmt.Errorf("until: %w", err)
		}
	}
	if !s.IsZero() && !u.IsZero() && !u.After(s) {
		return s, u, inputErr("until", "must be after since")
	}
	return s, u, nil
}
