package schema

import (
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// HeaderMarkerReason is the header of the messages the NATS server itself
// writes on a stream (nats-server 2.11+): with the stream setting
// SubjectDeleteMarkerTTL, the server stores a subject delete marker
// (reason "MaxAge", "Purge" or "Remove") when the last message of a
// subject is removed, e.g. expired by MaxAge or its Nats-TTL.
const HeaderMarkerReason = jetstream.MarkerReasonHeader

// IsServerMarker reports whether a stream message with headers h is a
// marker the server wrote, not an event the hub published: it carries no
// hub headers, and every reader of the stream acks or skips it, never
// treats it as an event (or as an invalid one).
func IsServerMarker(h nats.Header) bool {
	return h.Get(HeaderMarkerReason) != ""
}
