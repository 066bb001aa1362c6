package ops

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
)

// Bounds of the operator's inputs. The command line and the admin API hand
// flags and fields to the operations as they are; each operation checks
// them here, so both refuse the same values with the same message.
const (
	// DefaultListLimit and MaxListLimit bound `hub events list` and
	// GET /admin/events: at most 10,000 rows an answer (a few MB of JSON);
	// narrow the time range for more.
	DefaultListLimit = 100
	MaxListLimit     = 10_000

	// MinReplayRate and MaxReplayRate bound a replay's pace in copies a
	// second (0: as fast as JetStream acknowledges). Below one a second a
	// replay is a stall (pause the subscriber instead); above 10,000 a
	// second a limit limits nothing (the unlimited pace is about that).
	// Within them the publish interval stays between 100µs and 1s.
	MinReplayRate = 1.0
	MaxReplayRate = 10_000.0

	// MinReplayWait and MaxReplayWait bound how long a replay waits for
	// the subscriber to settle its copies.
	MinReplayWait     = time.Second
	MaxReplayWait     = 24 * time.Hour
	DefaultReplayWait = 2 * time.Minute

	// MaxReplayEvents and MaxReplayBytes bound one replay run: a replay
	// holds the range's messages in memory, so a range beyond them is
	// refused (replay it in consecutive parts: each is safe to repeat)
	// rather than let an admin request exhaust the hub's memory.
	MaxReplayEvents = 100_000
	MaxReplayBytes  = 64 << 20

	// DefaultPurgeBatch and MaxPurgeBatch bound the rows a purge deletes
	// in one transaction.
	DefaultPurgeBatch = 5000
	MaxPurgeBatch     = 50_000

	// MinPurgeAge is the youngest archive row a purge may delete (see
	// Purge for why). A stream whose duplicate window is longer raises it
	// to that window.
	MinPurgeAge = 24 * time.Hour

	maxSubscriberLen = 63 // a Postgres identifier; subscriber names are schema names
	maxProviderLen   = 32 // the archive's provider column
	maxEventTypeLen  = hub.MaxEventTypeLen
	maxEventIDLen    = hub.MaxEventIDLen
	maxSubjectLen    = 255
	maxTimeLen       = 64
)

// InputError is an operator's input outside what an operation accepts. It
// wraps ErrInvalid. Field is the admin API's name for the input; the
// command line's flag is the same with dashes (older_than: --older-than).
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes every InputError an ErrInvalid.
func (e *InputError) Unwrap() error { return ErrInvalid }

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// quote shows an operator's input in a message: quoted, and cut short, so
// an answer never carries a megabyte of it back.
func quote(s string) string {
	const max = 40
	if len(s) > max {
		return fmt.Sprintf("%q…", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

// checkText refuses text that no column can hold or no operator could
// read, by hub.CheckText's rule (invalid UTF-8, control characters, NUL
// among them, which Postgres text refuses, or longer than maxLen bytes);
// empty text is no filter, and passes.
func checkText(field, s string, maxLen int) error {
	if s == "" {
		return nil
	}
	if len(s) > maxLen {
		return inputErr(field, "longer than %d bytes (%d)", maxLen, len(s))
	}
	var te *hub.TextError
	if errors.As(hub.CheckText(field, s, maxLen), &te) {
		return inputErr(field, "%s %s", quote(s), te.Reason)
	}
	return nil
}

// checkSubscriberName refuses what cannot be a subscriber's name; an
// unknown but well-formed one is ErrUnknownSubscriber (checkSubscriber).
func checkSubscriberName(name string) error {
	if name == "" {
		return inputErr("subscriber", "required (credits, email, downgrade, …)")
	}
	return checkText("subscriber", name, maxSubscriberLen)
}

// checkProvider refuses a provider filter that cannot be a provider's
// name (a subject token of at most 32 bytes); empty means any provider.
func checkProvider(field, p string) error {
	if p == "" {
		return nil
	}
	if err := checkText(field, p, maxProviderLen); err != nil {
		return err
	}
	if !schema.ValidToken(p) {
		return inputErr(field, "%s is not a provider name ([A-Za-z0-9_-])", quote(p))
	}
	return nil
}

// checkEventRef splits "<provider>:<event_id>" and checks both parts.
func checkEventRef(field, ref string) (string, string, error) {
	if err := checkText(field, ref, maxProviderLen+1+maxEventIDLen); err != nil {
		return "", "", err
	}
	provider, eventID, ok := schema.SplitEventRef(ref)
	if !ok {
		return "", "", inputErr(field, "%s is not provider:event_id", quote(ref))
	}
	if err := checkProvider(field, provider); err != nil {
		return "", "", err
	}
	return provider, eventID, nil
}

// checkSubjectFilter refuses a subject filter no hub subject can match:
// tokens of [A-Za-z0-9_-], "*" for one token, a final ">" for the rest.
func checkSubjectFilter(field, s string) error {
	if err := checkText(field, s, maxSubjectLen); err != nil {
		return err
	}
	toks := strings.Split(s, ".")
	for i, tok := range toks {
		switch {
		case tok == ">" && i == len(toks)-1, tok == "*", schema.ValidToken(tok):
		default:
			return inputErr(field, "%s is not a subject filter (tokens of [A-Za-z0-9_-] separated by dots, * for one token, a final > for the rest)", quote(s))
		}
	}
	return nil
}

// ParseStatus reads an archive status (PENDING, PROCESSED, SKIPPED,
// FAILED; any case) given as field.
func ParseStatus(field, s string) (hub.Status, error) {
	if len(s) > 16 {
		return "", inputErr(field, "%s is not a status (PENDING, PROCESSED, SKIPPED or FAILED)", quote(s))
	}
	st, err := hub.ParseStatus(s)
	if err != nil {
		return "", inputErr(field, "%s is not a status (PENDING, PROCESSED, SKIPPED or FAILED)", quote(s))
	}
	return st, nil
}

// checkLimit bounds a listing's row count.
func checkLimit(n int) error {
	if n < 1 || n > MaxListLimit {
		return inputErr("limit", "must be within 1..%d, got %d", MaxListLimit, n)
	}
	return nil
}

// checkRate bounds a replay's pace; NaN and infinities are refused with
// the rest.
func checkRate(r float64) error {
	if r == 0 {
		return nil
	}
	if math.IsNaN(r) || r < MinReplayRate || r > MaxReplayRate {
		return inputErr("rate", "must be 0 (unlimited) or within %g..%g copies a second, got %g", MinReplayRate, MaxReplayRate, r)
	}
	return nil
}
