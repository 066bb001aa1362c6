package relay

import "context"

// RunFast runs one fast-path pipeline alone, without the claiming relay
// Start would run beside it, until ctx is done: for tests in which only
// the fast path may publish.
func RunFast(ctx context.Context, r *Relay) { r.runFast(ctx) }
