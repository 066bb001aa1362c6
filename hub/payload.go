package hub

import "encoding/json"

// Payload filters: a condition on an archived event's JSON body,
// read over a bounded time range of the archive (no index on the payload).

// PayloadMatch is one condition on the payload: the JSON value at Path
// equals one of Any (jsonb equality: a number equals the same number
// however written, an object or array never equals a scalar).
type PayloadMatch struct {
	// Path is the keys (and array indexes, as decimal text) from the
	// document's root, at least one.
	Path []string
	// Any are the JSON values the one at Path may equal, at least one.
	Any []json.RawMessage
}

// ArchiveScan is one page of a scan of the archive with payload filters
// (Store.ScanArchive): the rows that matched, and how far the scan read.
type ArchiveScan struct {
	Rows []ArchivedDelivery
	// Scanned is the archive rows read (matching or not).
	Scanned int
	// Truncated: the scan stopped at its bound (ArchiveFilter.MaxScan)
	// before the page was full; older rows are left to read. Resume is
	// where to continue (ArchiveFilter.Before); it is set whenever there
	// may be more: a full page, or a truncated scan.
	Truncated bool
	Resume    ArchiveCursor
	// Bytes is the stored size of the payloads of the rows read
	// (pg_column_size: compressed as Postgres keeps them), counted as the
	// scan reads them.
	Bytes int64
}
