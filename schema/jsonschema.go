package schema

import "embed"

// JSONSchemas holds the JSON Schemas (draft 2020-12) of the payloads the
// example subscribers decode, and of the envelope HTTP destinations
// receive, under jsonschema/:
//
//   - paddle-subscription.json: Paddle subscription.created, .updated and
//     .canceled bodies (PaddleEvent with a PaddleSubscription as data);
//   - clerk-user.json: Clerk user.* bodies (ClerkEvent with a ClerkUser);
//   - destination-envelope.json: the envelope an HTTP destination receives
//     (subscribers/destination.Body: type, timestamp and the provider's
//     event as data).
//
// The payload schemas describe only the fields the subscribers read and
// allow any other; the envelope's is exact.
//
//go:embed jsonschema/*.json
var JSONSchemas embed.FS
