package hub

import (
	"errors"
	"time"
)

// ErrBackfillBusy is returned when another run holds a provider's
// backfill checkpoint (its lease): AcquireBackfill before a run starts,
// SaveBackfill and RenewBackfill when a run lost it.
var ErrBackfillBusy = errors.New("another backfill of this provider is running")

// BackfillCheckpoint is where a provider's backfill stands: the window it
// lists, the cursor of the next page to read, and what it found so far. It
// is saved after each page is fully ingested, so an interrupted run is
// continued from the page after the last one ingested.
type BackfillCheckpoint struct {
	Provider string
	// Since and Until bound the window [Since, Until) the run lists.
	Since, Until time.Time
	// Cursor is the provider's cursor of the next page; "" before the
	// first page.
	Cursor string
	// Pages and the counts are the run's totals so far.
	Pages    int64
	Listed   int64 // events of the window the API listed
	Already  int64 // already in the dedup table (received as webhooks)
	Ingested int64 // missing, ingested now
	// Redelivered: missing, and the provider was asked to send the
	// webhook again instead (hub backfill --redeliver).
	Redelivered int64
	Failed      int64 // missing, but unusable (no id or type, body too large, ...)
	// StartedAt is when the run began, UpdatedAt when the last page was
	// saved; CompletedAt is zero while the run is unfinished.
	StartedAt, UpdatedAt, CompletedAt time.Time
	// Resumes is how many times later runs continued this unfinished
	// run (0 for a run started over).
	Resumes int
	// LeaseOwner names the process that holds (or last held) the run's
	// lease, until LeaseUntil (in the past when nobody holds it).
	LeaseOwner string
	LeaseUntil time.Time
}

// Done reports whether the run of c listed its whole window.
func (c BackfillCheckpoint) Done() bool { return !c.CompletedAt.IsZero() }
