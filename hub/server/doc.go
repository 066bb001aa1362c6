// Package server is the hub's webhook listener (fiber, HUB_HTTP_ADDR):
// POST /webhooks/{provider} for each configured provider, and the probes
// /healthz and /readyz (Probes, which the admin listener serves too).
// Operator HTTP (/admin/, /console/, /metrics, /debug/pprof/) is
// hub/admin's: on its own listener, or mounted on this one's app when
// there is none (admin.Server.Mount). Traffic counts the webhook answers
// per minute for the console's chart; ProviderTraffic counts them per
// provider and minute over a day, with their latency, for its charts page.
//
// The contract providers and tests rely on:
//
//	200 {"event_id": "...", "idempotent": false}  first delivery, committed
//	200 {"event_id": "...", "idempotent": true}   duplicate, committed as SKIPPED
//	401 invalid signature | timestamp outside tolerance   nothing archived
//	400 body not JSON, or no event id / type             nothing archived
//	404 unknown or unconfigured provider
//	405 method other than POST
//	413 body over the limit
//	415 compressed body
//	408 the request did not arrive within the read timeout
//	431 request line or headers beyond the 4 KiB read buffer
//	503 the database could not commit: nothing was acknowledged
//	503 past the connection cap, MaxInflight or the body budget (Retry-After)
//
// A request answered with its bytes unread (408, 413, 431, a connection
// past the cap) is answered, then its connection lingers half-closed
// (limits.go; the mechanism, shared with the admin listener, is
// hub/internal/hubhttp's).
//
// No 2xx is ever sent before the commit that contains the delivery. The
// webhook's status mapping lives in errors.go (classify): the refusals of
// this contract and their delivery outcomes (metrics), and for everything
// else the hub's one table by error code (hubhttp.ErrorStatus).
package server
