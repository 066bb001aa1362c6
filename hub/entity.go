package hub

import (
	"strings"

	"github.com/hookhub/hookhub/schema"
)

// Entity is a business object an event is about, as its provider names
// it: a Stripe customer (Kind "customer", ID "cus_123"), a Paddle
// subscription, a Clerk user, a GitHub repository ("octo/hello") or pull
// request ("octo/hello#12"). Each provider extracts its events' entities
// beside its verifier (hub/provider); the hub archives them and indexes
// them so that every event about one ID, newest first, is an index lookup,
// and publishes them with the message (schema.HeaderEntity).
//
// An entity is found by its ID alone: ids are chosen to be unique across
// providers (prefixed ids as the provider issues them, Shopify's GIDs,
// GitHub's owner/name), so one search follows a customer across
// providers when their payloads carry the same id (a Clerk user id in a
// Stripe customer's metadata.user_id).
//
// It is schema.Entity, the type the stream's Hookhub-Entity header
// carries, with its bounds: one type and one set of limits for the hub
// and the subscribers.
type Entity = schema.Entity

// Bounds on an event's entities (schema's). An entity that does not fit
// is left out; it never fails a delivery.
const (
	MaxEntities      = schema.MaxEntities
	MaxEntityIDLen   = schema.MaxEntityIDLen
	MaxEntityKindLen = schema.MaxEntityKindLen
)

// ParseEntity reads an entity written by Entity.String: the kind is what
// comes before the first ':'. ok is false when s has no ':'.
func ParseEntity(s string) (e Entity, ok bool) {
	kind, id, ok := strings.Cut(s, ":")
	if !ok {
		return Entity{}, false
	}
	return Entity{Kind: kind, ID: id}, true
}

// CheckEntityID checks an entity id as given to a search (CheckText, at
// most MaxEntityIDLen bytes).
func CheckEntityID(id string) error { return CheckText("entity", id, MaxEntityIDLen) }
