// Package provider verifies webhook deliveries and extracts the event they
// carry. Each provider (Paddle, Clerk, Stripe, GitHub, Shopify, Standard
// Webhooks, Twilio) lives in one file, implements Provider (one
// Verify(Request)) and Signer (one Sign), and is built by a constructor of
// one shape, NewX(secrets, Options). Adding one means that file, its line
// in Registry (from which the hub's configuration derives its
// HUB_<NAME>_SECRETS), its sample builder in package samples, and its
// entry in the conformance table every provider passes. The HMAC
// skeletons shared by schemes that differ only in header layout are in
// hmacscheme.go and svix.go; event ids and types are checked by the
// domain's one rule (hub.CheckText, which checkText applies where a
// provider reads them). Schemes whose bodies are not JSON implement the
// optional interface of request.go (Payloader).
//
// Each provider also names the entities an event is about (hub.Entity: a
// Stripe customer, a GitHub pull request), in its file, from the body its
// verifier has authenticated and never before; entities.go has the rules
// and the JSON helpers they share, and docs/providers.md the table of what
// each provider names.
//
// Events read from a provider's API rather than received as webhooks (a
// backfill, hub/backfill) have one parser per provider, beside its
// verifier and sharing its code (StripeEvent, PaddleEvent, GitHubEvent):
// the API returns the same event the webhook carries, and its id and type
// come out as Verify's, so the dedup row of a backfilled event and of its
// webhook coincide. They verify nothing: the caller trusts the API it
// authenticated to.
//
// Verification always happens on the raw request bytes, before any JSON
// parsing; MACs are compared in constant time; every configured secret is
// tried (several during a rotation); and the clock is passed in, never read.
package provider

import (
	"errors"
	"net/http"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
)

// Errors a Provider returns. The HTTP layer maps ErrInvalidSignature and
// ErrTimestamp to 401, ErrPayload to 400. Wrapped errors may carry detail
// for logs; the HTTP body never says more than the sentinel's text.
var (
	ErrInvalidSignature = errors.New("invalid signature")
	ErrTimestamp        = errors.New("timestamp outside tolerance")
	ErrPayload          = errors.New("invalid payload")
)

// Header is read-only access to request headers, matched
// case-insensitively. http.Header satisfies it.
type Header interface {
	Get(name string) string
}

// Event is what a verified delivery carries: the domain's hub.Event (id,
// type, signature, signed and occurred times).
type Event = hub.Event

// Provider authenticates deliveries from one webhook provider.
type Provider interface {
	// Name is the provider's name: the path segment in
	// POST /webhooks/{name} and the first subject token.
	Name() string
	// Verify authenticates r (its body against its headers, and its URI
	// for the schemes that sign the URL) at time r.Now and returns the
	// event. It returns an error wrapping ErrInvalidSignature or
	// ErrTimestamp when the delivery is not authentic, and ErrPayload when
	// it is authentic but carries no usable event id or type. The server
	// calls it through VerifyDelivery.
	Verify(r Request) (Event, error)
}

// Signer signs deliveries as the provider would, for `hub send`, tests and
// benchmarks (with the bodies of package samples). Every built-in provider
// implements it.
type Signer interface {
	Provider
	// Sign returns the headers that authenticate body as the event
	// eventID of type eventType, signed with the provider's first secret
	// at time now, and the request-target to POST it to on the hub
	// ("/webhooks/paddle", "/webhooks/twilio?type=sms.status"). The
	// headers include the body's Content-Type when the provider sends
	// one. Schemes that carry the event id or type in the body ignore
	// them; those that carry the type in a header or the URL (GitHub,
	// Shopify, Twilio) leave it out when eventType is empty.
	Sign(eventID, eventType string, body []byte, now time.Time) (h http.Header, target string, err error)
}

// VerifyDelivery authenticates a delivery with p as the HTTP server must:
// p.Verify(r), then the checks below. It is the one place every provider's Event passes through on
// its way to the archive and the stream, so what holds for every provider
// is applied here, where a new provider cannot forget it: the event id
// and type pass hub.CheckText (present, bounded, valid UTF-8, no control
// characters; ErrPayload otherwise), and OccurredAt is
// kept only when it is plausible for r.Now, the time of receipt
// (schema.PlausibleOccurredAt: from 2000-01-01 to a day ahead), and is
// zero otherwise. An implausible time never fails the delivery. The
// event's entities, which the provider read from the body it
// authenticated, are kept only as far as they keep the domain's rules
// (CleanEntities: a valid kind and id, each once, at most hub.MaxEntities);
// an entity that does not never fails the delivery either.
func VerifyDelivery(p Provider, r Request) (Event, error) {
	ev, err := p.Verify(r)
	if err != nil {
		return Event{}, err
	}
	if err := CheckEventID(ev.ID); err != nil {
		return Event{}, err
	}
	if err := CheckEventType(ev.Type); err != nil {
		return Event{}, err
	}
	if !ev.OccurredAt.IsZero() && !schema.PlausibleOccurredAt(ev.OccurredAt, r.Now) {
		ev.OccurredAt = time.Time{}
	}
	ev.Entities = CleanEntities(ev.Entities)
	return ev, nil
}
