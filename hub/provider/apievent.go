package provider

// Events read from a provider's API rather than received as webhooks (a
// backfill, hub/backfill): the API returns the same event object the
// webhook carries, and these functions extract its id, type and time with
// the very code Verify uses on a webhook's body, so the dedup row of a
// backfilled event and of its webhook coincide. Nothing is verified: the
// caller trusts the API it authenticated to.

// StripeEvent returns the id, type and created time of a Stripe event
// object (the body of a Stripe webhook, or one element of the data array
// of GET /v1/events). It fails with an error wrapping ErrPayload as Verify
// would on the same bytes.
func StripeEvent(body []byte) (Event, error) { return parseStripeBody(body) }

// PaddleEvent returns the event_id, event_type and occurred_at of a Paddle
// Billing event entity (the body of a Paddle notification, or one element
// of the data array of GET /events). It fails with an error wrapping
// ErrPayload as Verify would on the same bytes.
func PaddleEvent(body []byte) (Event, error) { return parsePaddleBody(body) }
