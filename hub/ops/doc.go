// Package ops implements the operator's tools on top of the archive, the
// stream and the subscribers' own tables: forensics (events list and
// show), safe replay to one subscriber, republishing archived events,
// dead letters, retention and status. The `hub` command line and the admin
// HTTP API are thin layers over it, so both behave the same.
//
// Every operation is safe to repeat: replays and republishes reach
// subscribers whose idempotency skips what they already processed, and a
// purge never touches the dedup table.
package ops
