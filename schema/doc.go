// Package schema is the contract between the hub and its subscribers: the
// JetStream subjects events are published on, the message headers the hub
// sets, the Go types of the provider payloads the example subscribers decode,
// and the JSON Schemas of those payloads.
//
// A message on the stream carries the exact request body the provider sent
// as its data, so a subscriber may re-verify it or decode it with the
// provider's own types. The headers named here carry what the hub learned
// while verifying it (the provider's event id, the event type, when the hub
// received it), so a subscriber never has to parse a provider's envelope to
// route or deduplicate a message.
package schema
