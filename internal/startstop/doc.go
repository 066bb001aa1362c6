// Package startstop is the one lifecycle contract of the hub's background
// components (the relay's workers, the stream keeper, the group committer,
// the periodic backfill, the listeners): River's startstop is the model.
//
// A component implements Service: Start launches its background work and
// returns once it runs (an error means nothing was left running); Stop
// asks it to finish, waits for its goroutines, and is idempotent and safe
// on a component that was never started. The context given to Stop bounds
// the graceful part (a relay's drain, in-flight requests); past it the
// component stops anyway and says what it left undone in its error.
//
// Embed Base to get that bookkeeping; use Group to start components in
// order and stop them in reverse.
package startstop
