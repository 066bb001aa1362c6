package hub

import (
	"time"

	"github.com/google/uuid"
)

// The archive as operators read it: every delivery the hub archived, with
// the status and publication its event has now (the publication state is
// on the event's dedup row, the archive row is written once).

// ArchivedDelivery is one archive row: one delivery of an event, the first
// or a duplicate.
type ArchivedDelivery struct {
	ArchiveID  uuid.UUID
	Provider   string
	EventID    string
	EventType  string
	Status     Status
	Error      string    // why it is FAILED, or the last publish failure; "" if none
	ReceivedAt time.Time // created_at: the archive's order
	Signature  string    // the signature header as received; "" if none
	Origin     Origin    // webhook, or api for an event a backfill ingested
	SignedAt   time.Time // zero when the scheme has no signed timestamp
	// StreamSeq and PublishedAt are the original message's, once JetStream
	// acknowledged it; 0 and zero before (and for SKIPPED and FAILED rows).
	StreamSeq   uint64
	PublishedAt time.Time
	Attempts    int // publish attempts so far
	// Entities are the event's business objects as archived with the
	// delivery (none for rows written before entities existed).
	Entities []Entity
	// Body is the exact request body: nil for a duplicate (SKIPPED), and
	// for listings, which do not read it.
	Body []byte
	// Deliveries is the number of archive rows of the event (1 +
	// duplicates still archived), when the listing counted them; 0
	// otherwise.
	Deliveries int
}

// Cursor returns the position right after d in the archive's order.
func (d ArchivedDelivery) Cursor() ArchiveCursor {
	return ArchiveCursor{ReceivedAt: d.ReceivedAt, ArchiveID: d.ArchiveID}
}

// ArchiveCursor is a position in the archive's (received_at, archive id)
// order, the key listings page on.
type ArchiveCursor struct {
	ReceivedAt time.Time
	ArchiveID  uuid.UUID
}

// IsZero reports whether c is no position: the start of a listing.
func (c ArchiveCursor) IsZero() bool { return c.ReceivedAt.IsZero() && c.ArchiveID == uuid.Nil }

// ArchiveFilter selects archive rows, newest first. Zero fields match
// everything.
type ArchiveFilter struct {
	Provider  string
	EventType string
	// EventID, when set, selects the deliveries of that event id (exact
	// match; of any provider unless Provider is set).
	EventID string
	// Entity, when set, selects the first deliveries of the events about
	// that entity id (exact match, any kind), through the entity index.
	Entity string
	// Status selects the rows of that status; empty selects every status
	// but SKIPPED (the first delivery of every event).
	Status Status
	Since  time.Time // received at or after
	Until  time.Time // received before
	// Before continues a listing: only rows after this position in
	// newest-first order (older, or as old with a smaller id).
	Before ArchiveCursor
	Limit  int // required, at least 1
	// CountDeliveries fills ArchivedDelivery.Deliveries (an index look-up
	// per row).
	CountDeliveries bool

	// Payload filters (hub/payload.go): only ScanArchive reads
	// them; ListArchive refuses a filter with Where.
	//
	// Where are conditions on the payload, all of which a row meets.
	Where []PayloadMatch
	// MaxScan bounds the archive rows one ScanArchive call reads
	// (required there, at least 1).
	MaxScan int
}

// EventRecord is an event the hub accepted: its dedup row, which outlives
// the archive rows of its deliveries.
type EventRecord struct {
	// FirstArchiveID is the archive id of the event's first delivery.
	FirstArchiveID uuid.UUID
	Provider       string
	EventID        string
	EventType      string
	FirstSeen      time.Time // when its first delivery was received
}

// PublishedFilter selects published (PROCESSED) first deliveries that
// still have their body, oldest first: what can be published again.
type PublishedFilter struct {
	Provider string // "": any
	EventID  string // "": any; with Provider, one event
	Since    time.Time
	Until    time.Time
	// ArchiveIDs, when not nil, selects only these first deliveries.
	ArchiveIDs []uuid.UUID
	// After continues a listing: only rows after this position in
	// oldest-first order.
	After ArchiveCursor
	Limit int // required, at least 1
}

// PurgeCounts describes the archive rows received before a cutoff.
type PurgeCounts struct {
	// Archived is every archive row received before the cutoff.
	Archived int64
	// Pending are those whose event is still waiting for JetStream (in the
	// outbox): a purge never deletes them.
	Pending int64
	// Failed are FAILED first deliveries: never published, so the archive
	// holds their only copy; a purge deletes them only when asked to.
	Failed int64
}

// Purgeable is how many of Archived a purge deletes.
func (c PurgeCounts) Purgeable(includeFailed bool) int64 {
	n := c.Archived - c.Pending
	if !includeFailed {
		n -= c.Failed
	}
	return max(n, 0)
}
