package hub

import (
	"time"

	"github.com/google/uuid"
)

// OutboxRow is a committed first delivery that JetStream has not
// acknowledged yet: a row of the outbox.
type OutboxRow struct {
	ArchiveID  uuid.UUID
	Provider   string
	EventID    string
	EventType  string
	Body       []byte
	ReceivedAt time.Time
	OccurredAt time.Time // zero if unknown
	Attempts   int
	// FirstAttemptAt is when a publish of this row was first tried, or zero.
	// A publish that failed may still have been stored by the server, so
	// once this is older than the stream's duplicate window a retry could
	// store the event twice; the relay checks the stream first.
	FirstAttemptAt time.Time
	// TraceParent is the W3C traceparent of the delivery's span, or "".
	TraceParent string
	// Entities are the event's business objects, published one
	// schema.HeaderEntity value each.
	Entities []Entity
}

// PublishResult is the relay's verdict on one claimed row.
type PublishResult struct {
	ArchiveID uuid.UUID
	// Seq is the stream sequence of the acknowledged message; 0 means the
	// publish failed.
	Seq uint64
	// PublishedAt is when JetStream acknowledged the message (or it was
	// found in the stream): the row's published_at. Zero means the time it
	// is recorded.
	PublishedAt time.Time
	// Err describes the failure when Seq is 0.
	Err string
	// RetryIn delays the next attempt of a failed row.
	RetryIn time.Duration
	// Permanent marks a failure no retry can fix: the row becomes FAILED.
	Permanent bool
}

// Backlog is the state of the outbox.
type Backlog struct {
	Pending int64
	Oldest  time.Time // created_at of the oldest PENDING row; zero if none
}

// PublishedEvent is an archived first delivery JetStream acknowledged: a
// message the stream held when the event was published.
type PublishedEvent struct {
	ArchiveID  uuid.UUID
	Provider   string
	EventID    string
	ReceivedAt time.Time // created_at: the page cursor
}

// PublishedPage selects a page of PublishedEvents.
type PublishedPage struct {
	// ReceivedSince bounds created_at from below, so the query runs on the
	// created_at index: an event acknowledged in the range but received
	// before ReceivedSince is not listed.
	ReceivedSince time.Time
	// From and Until bound published_at: [From, Until).
	From, Until time.Time
	// Providers, when not empty, lists the only providers to include.
	Providers []string
	// After is the last event of the previous page; zero for the first.
	After PublishedEvent
	Limit int
}
