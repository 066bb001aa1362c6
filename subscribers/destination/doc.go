// Package destination delivers the hub's events to HTTP endpoints, so a
// subscriber can be written in any language: each destination is a
// subscriber (subscribers/subscriber) whose handler POSTs the event,
// signed with Standard Webhooks (standardwebhooks.com), to a URL declared
// in a destinations file. Delivery is at least once with a stable
// webhook-id, the hub's "<provider>:<event_id>": the receiver deduplicates
// on it. See docs/destinations.md.
//
// Destinations are declared in a destinations file (Parse, Load): YAML,
// or JSON, with a list under "destinations:" of entries naming a URL,
// subject filters, the environment variables holding the signing secrets
// and optional limits (Spec). Unknown fields are errors, and every
// problem is reported at once, naming the destination and the field.
package destination
