package hub

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Status is what became of a delivery: the processing_status the archive
// reports for it.
type Status string

// The archive statuses.
const (
	Pending   Status = "PENDING"   // committed, not yet acknowledged by JetStream
	Processed Status = "PROCESSED" // published: JetStream acknowledged it
	Skipped   Status = "SKIPPED"   // a duplicate delivery, archived for forensics
	Failed    Status = "FAILED"    // verified but cannot be published; see error_message
)

// ParseStatus returns the Status named s (case-insensitive).
func ParseStatus(s string) (Status, error) {
	switch st := Status(strings.ToUpper(s)); st {
	case Pending, Processed, Skipped, Failed:
		return st, nil
	}
	return "", fmt.Errorf("unknown status %q (want PENDING, PROCESSED, SKIPPED or FAILED)", s)
}

// ErrUnavailable wraps every error that kept a delivery from being
// committed: the database is unreachable, the transaction failed, or the
// commit's outcome is unknown. Nothing may be acknowledged to the provider.
var ErrUnavailable error = &Error{Code: EUNAVAILABLE, Message: "database unavailable"}

// DefaultMaxBodyBytes is the largest delivery body the hub takes unless
// configured otherwise (HUB_MAX_BODY_BYTES): the default of the HTTP
// server's and the backfill's bound.
const DefaultMaxBodyBytes = 1 << 20

// Delivery is one verified delivery to archive.
type Delivery struct {
	ArchiveID uuid.UUID // new for every delivery
	Provider  string
	EventID   string
	EventType string
	Body      []byte // the exact request body
	// Payload, when not nil, is the JSON archived in the payload column
	// instead of Body (for providers whose bodies are form-encoded).
	Payload    []byte
	Signature  string // the signature header value
	SignedAt   time.Time
	OccurredAt time.Time
	ReceivedAt time.Time
	// Error, when not empty, marks an event that cannot be published (its
	// type cannot form a subject): the first delivery is archived FAILED
	// with this message instead of PENDING.
	Error string
	// TraceParent is the W3C traceparent of the hub's span for this
	// delivery, published with the message; empty when the hub does not
	// trace.
	TraceParent string
	// Origin is where the delivery came from: OriginWebhook (also "") for
	// a request to the hub, OriginAPI for an event a backfill read from
	// the provider's API. Archived with the row, never changed.
	Origin Origin
	// Entities are the event's business objects (Event.Entities),
	// archived with the row and indexed for look-up by id.
	Entities []Entity
}

// Origin is where an archived delivery came from.
type Origin string

// The origins of archive rows (the origin column).
const (
	OriginWebhook Origin = "webhook" // a verified webhook request
	OriginAPI     Origin = "api"     // read from the provider's API by a backfill (no signature)
)

// Outcome is what became of one delivery.
type Outcome struct {
	Status    Status // PENDING or FAILED for a first delivery, SKIPPED for a duplicate
	Duplicate bool
}
