package ops

// SetMaxBulkEvents lowers o's bound on a bulk action's events, for tests.
func SetMaxBulkEvents(o *Ops, n int) { o.maxBulkEvents = n }

// SetPayloadScanBytes lowers o's bound on the payload bytes one page of a
// payload filter reads, and the rows it reads a statement, for tests.
func SetPayloadScanBytes(o *Ops, bytes int64, chunk int) {
	o.payloadScanBytes, o.payloadScanChunk = bytes, chunk
}
