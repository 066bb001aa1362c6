package ops

import (
	"fmt"
	"time"
)

// The words every face (the command line's text, the console's pages, the
// admin API's notes) uses for the same outcome, so that an operator reads
// one sentence for it wherever they look. Each face adds only how to act
// on it there (a flag, a button, a field).

// DryRunNote says that a dry run changed nothing; how says what runs it.
func DryRunNote(how string) string { return "dry run: nothing was deleted; " + how }

// RedriveText says that n dead letters of subscriber are to be redriven.
func RedriveText(n int64, subscriber string) string {
	return fmt.Sprintf("redrive requested for %d dead letter(s) of %s; the running subscriber picks them up within seconds", n, subscriber)
}

// SettledText says what a subscriber (or a destination) did with a
// replay's copies.
func SettledText(destination bool, processed, skipped, resent, deadLettered int) string {
	if destination {
		return fmt.Sprintf("%d sent: %d not delivered before, %d already delivered (sent again); %d dead-lettered", processed+resent, processed, resent, deadLettered)
	}
	return fmt.Sprintf("%d processed, %d skipped as already processed, %d dead-lettered", processed, skipped, deadLettered)
}

// Latency rounds an HTTP attempt's latency: 3.2ms, 120ms, 1.5s; none is
// "".
func Latency(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
