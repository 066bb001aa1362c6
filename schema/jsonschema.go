package schema

import "embed"

// JSONSchemas holds the JSON Schemas (draft 2020-12) of the payloads the
// example subscribers decode, under jsonschema/:
//
//   - paddle-subscription.json: Paddle subscription.created, .updated and
//     .canceled bodies (PaddleEvent with a PaddleSubscription as data);
//   - clerk-user.json: Clerk user.* bodies (ClerkEvent with a ClerkUser).
//
// They describe only the fields the subscribers read and allow any other.
//
//go:embed jsonschema/*.json
var JSONSchemas embed.FS
