package ops

// SetMaxBulkEvents lowers o's bound on a bulk action's events, for tests.
func SetMaxBulkEvents(o *Ops, n int) { o.maxBulkEvents = n }
