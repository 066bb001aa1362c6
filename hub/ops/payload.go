package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// Payload filters: EventFilter.Where.
//
// A path is dot-separated object keys from the payload's root, each key
// optionally followed by array indexes: data.object.customer,
// items[0].price.id, data.items[2][0]. A key is any text without '.',
// '[', ']' or '=' (there is no escaping: a key holding one of them cannot
// be named). A value is compared with the JSON value at the path:
//   - a JSON string equal to the value's text exactly (case and all);
//   - a JSON number equal to the value read as a JSON number (10, 10.0
//     and 1e1 are the same number);
//   - true, false or null when the value is that word.
//
// So `amount=10` matches the number 10 and the string "10", and
// `paid=true` the boolean and the string "true". An object, an array, or
// a missing key never matches.

// PayloadMatch is one payload condition: the JSON value at Path equals
// Value (see above).
type PayloadMatch struct {
	Path  string `json:"path"`
	Value string `json:"value"`
}

// String is the match as the command line takes it: path=value.
func (m PayloadMatch) String() string { return m.Path + "=" + m.Value }

// Bounds of payload filters.
const (
	// MaxPayloadMatches is the conditions one filter may have.
	MaxPayloadMatches = 4
	// MaxPayloadPathLen and MaxPayloadPathDepth bound a path: bytes, and
	// keys plus indexes.
	MaxPayloadPathLen   = 256
	MaxPayloadPathDepth = 16
	// MaxPayloadIndex is the largest array index a path may name.
	MaxPayloadIndex = 99_999
	// MaxPayloadValueLen bounds a value in bytes.
	MaxPayloadValueLen = 1024
	// MaxPayloadFilterRange is the longest time range a payload filter
	// searches: there is no index on the payload, so every row of the
	// range may be read.
	MaxPayloadFilterRange = 7 * 24 * time.Hour
	// DefaultPayloadScanRows is the archive rows one page of a payload
	// filter reads at most (Config.PayloadScanRows); past it the page
	// ends with what it found, EventPage.Truncated and a cursor.
	DefaultPayloadScanRows = 20_000
	// MaxPayloadScanBytes bounds the payload bytes (as Postgres stores
	// them) one page of a payload filter reads: past it the page ends as
	// at its row bound, Truncated, with a cursor. 20,000 rows of 1 MiB
	// bodies would be 20 GB to read for one page.
	MaxPayloadScanBytes = 64 << 20
	// payloadScanChunk is the rows one statement of a page reads: the
	// page counts rows and bytes between them, and stops at its bounds.
	payloadScanChunk = 2_000
)

// ParseWhere reads "path=value" (the first '=' splits them) given as
// field, checking both.
func ParseWhere(field, s string) (PayloadMatch, error) {
	path, value, ok := strings.Cut(s, "=")
	if !ok {
		return PayloadMatch{}, inputErr(field, "%s is not path=value (e.g. data.object.customer=cus_123)", quote(s))
	}
	m := PayloadMatch{Path: path, Value: value}
	if _, err := m.compile(field); err != nil {
		return PayloadMatch{}, err
	}
	return m, nil
}

// ParseWheres reads each of ss with ParseWhere; at most MaxPayloadMatches.
func ParseWheres(field string, ss []string) ([]PayloadMatch, error) {
	if len(ss) > MaxPayloadMatches {
		return nil, inputErr(field, "at most %d payload conditions, got %d", MaxPayloadMatches, len(ss))
	}
	var out []PayloadMatch
	for _, s := range ss {
		m, err := ParseWhere(field, s)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ParsePayloadPath splits a path into keys and indexes (decimal text), as
// Postgres's #> operator takes them.
func ParsePayloadPath(field, path string) ([]string, error) {
	bad := func(why string) error {
		return inputErr(field, "%s is not a payload path (%s): keys separated by dots, each optionally followed by [index], e.g. data.object.customer or items[0].id", quote(path), why)
	}
	if path == "" {
		return nil, bad("empty")
	}
	if len(path) > MaxPayloadPathLen {
		return nil, inputErr(field, "payload path longer than %d bytes (%d)", MaxPayloadPathLen, len(path))
	}
	if err := checkText(field, path, MaxPayloadPathLen); err != nil {
		return nil, err
	}
	var out []string
	for _, seg := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if key == "" {
			return nil, bad("an empty key")
		}
		if strings.ContainsAny(key, "]=") {
			return nil, bad("a key with ']' or '='")
		}
		out = append(out, key)
		if seg != key {
			rest = "[" + rest
		}
		for rest != "" {
			if rest[0] != '[' {
				return nil, bad("text after an index")
			}
			idx, after, ok := strings.Cut(rest[1:], "]")
			if !ok {
				return nil, bad("an unclosed [")
			}
			n, err := strconv.Atoi(idx)
			if err != nil || n < 0 || n > MaxPayloadIndex || idx != strconv.Itoa(n) {
				return nil, bad(fmt.Sprintf("an index must be a whole number 0..%d", MaxPayloadIndex))
			}
			out = append(out, idx)
			rest = after
		}
		if len(out) > MaxPayloadPathDepth {
			return nil, inputErr(field, "payload path deeper than %d keys and indexes", MaxPayloadPathDepth)
		}
	}
	return out, nil
}

// payloadValues are the JSON values v equals (see the package comment on
// payload filters): its text as a JSON string, and the number or word it
// spells.
func payloadValues(v string) []json.RawMessage {
	s, _ := json.Marshal(v) // a string always marshals
	out := []json.RawMessage{s}
	switch {
	case v == "true" || v == "false" || v == "null":
		out = append(out, json.RawMessage(v))
	case v != "" && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) && json.Valid([]byte(v)):
		out = append(out, json.RawMessage(v)) // a JSON number: valid JSON starting so is nothing else
	}
	return out
}

// compile checks m and makes it the store's condition.
func (m PayloadMatch) compile(field string) (hub.PayloadMatch, error) {
	path, err := ParsePayloadPath(field, m.Path)
	if err != nil {
		return hub.PayloadMatch{}, err
	}
	if len(m.Value) > MaxPayloadValueLen {
		return hub.PayloadMatch{}, inputErr(field, "payload value longer than %d bytes (%d)", MaxPayloadValueLen, len(m.Value))
	}
	if err := checkText(field, m.Value, MaxPayloadValueLen); err != nil {
		return hub.PayloadMatch{}, err
	}
	return hub.PayloadMatch{Path: path, Any: payloadValues(m.Value)}, nil
}

// checkWhere checks f's payload filter: the conditions and the range,
// which must start (Since) within MaxPayloadFilterRange of its end (Until,
// or now).
func (f EventFilter) checkWhere(now time.Time) ([]hub.PayloadMatch, error) {
	if len(f.Where) == 0 {
		return nil, nil
	}
	if len(f.Where) > MaxPayloadMatches {
		return nil, inputErr("where", "at most %d payload conditions, got %d", MaxPayloadMatches, len(f.Where))
	}
	out := make([]hub.PayloadMatch, 0, len(f.Where))
	for _, m := range f.Where {
		c, err := m.compile("where")
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	end := f.Until
	if end.IsZero() {
		end = now
	}
	if f.Since.IsZero() || end.Sub(f.Since) > MaxPayloadFilterRange {
		return nil, inputErr("since", "a payload filter searches at most %s: set since within %s of until (or of now when until is not set)",
			fmtRange(MaxPayloadFilterRange), fmtRange(MaxPayloadFilterRange))
	}
	return out, nil
}

func fmtRange(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	}
	return d.String()
}

// EventPage is one page of a listing.
type EventPage struct {
	Events []EventRow `json:"events"`
	// Next continues the listing (EventFilter.Before) when there may be
	// more: the page is full, or the scan stopped at its bound; "" when
	// the listing is complete.
	Next string `json:"next,omitempty"`
	// Scanned is the archive rows a payload filter read for this page
	// (0 without one), ScannedBytes their payloads' stored bytes.
	Scanned      int   `json:"scanned,omitempty"`
	ScannedBytes int64 `json:"scanned_bytes,omitempty"`
	// Truncated: a payload filter read its bound of rows
	// (DefaultPayloadScanRows) or of payload bytes (MaxPayloadScanBytes)
	// before the page was full. The page holds
	// what it found; older rows are still to search from Next.
	Truncated bool `json:"truncated,omitempty"`
}

// ListEventPage lists a page of archive rows, newest first, as
// ListEvents does, and also takes payload filters (Where): then the page
// says how many rows were read and whether the read stopped at its bound.
// A payload filter without Since searches the MaxPayloadFilterRange
// before Until (or now); a Since further back is refused.
//
// A payload filter is an expensive read: it is admitted (admission.go) at
// the cost of its page's scan bound, or refused with ErrBusy.
func (o *Ops) ListEventPage(ctx context.Context, f EventFilter) (EventPage, error) {
	af, err := o.eventQuery(f)
	if err != nil || af.Where == nil {
		return o.listEvents(ctx, af, nil, err)
	}
	// Checked first: a bad filter is refused as such, never as busy.
	permit, err := o.admitRead(AdmitPayload, Cost{Rows: int64(o.payloadScanRows)})
	if err != nil {
		return EventPage{}, err
	}
	p, err := o.listEvents(ctx, af, permit, nil)
	permit.Scanned(int64(p.Scanned))
	permit.Release()
	return p, err
}

// listEventPage is ListEventPage, unadmitted: a bulk action's pages are
// admitted with the action.
func (o *Ops) listEventPage(ctx context.Context, f EventFilter, permit *Permit) (EventPage, error) {
	af, err := o.eventQuery(f)
	return o.listEvents(ctx, af, permit, err)
}

// eventQuery checks f and makes it the store's filter: a payload filter
// without Since searches the MaxPayloadFilterRange before its end.
func (o *Ops) eventQuery(f EventFilter) (hub.ArchiveFilter, error) {
	before, err := f.check()
	if err != nil {
		return hub.ArchiveFilter{}, err
	}
	now := f.Now
	if now.IsZero() {
		now = o.now()
	}
	if len(f.Where) > 0 && f.Since.IsZero() {
		end := f.Until
		if end.IsZero() {
			end = now
		}
		f.Since = end.Add(-MaxPayloadFilterRange)
	}
	where, err := f.checkWhere(now)
	if err != nil {
		return hub.ArchiveFilter{}, err
	}
	af := f.archiveFilter(before)
	if where != nil {
		af.Where, af.MaxScan = where, o.payloadScanRows
	}
	return af, nil
}

// listEvents reads the page af (from eventQuery, which failed with
// err when not nil) selects; a payload filter's scan is paced by permit
// (nil: not paced).
func (o *Ops) listEvents(ctx context.Context, af hub.ArchiveFilter, permit *Permit, err error) (EventPage, error) {
	var p EventPage
	if err != nil {
		return p, err
	}
	var ds []hub.ArchivedDelivery
	if af.Where == nil {
		if ds, err = o.archive.ListArchive(ctx, af); err != nil {
			return p, fmt.Errorf("list events: %w", err)
		}
		if len(ds) == af.Limit {
			p.Next = FormatCursor(ds[len(ds)-1].Cursor())
		}
	} else if ds, err = o.scanPayloads(ctx, af, permit, &p); err != nil {
		return p, err
	}
	p.Events = eventRows(ds)
	return p, nil
}

// scanPayloads reads a page of a payload filter (af.Where) in chunks of
// payloadScanChunk rows, counting the rows and payload bytes read as it
// goes: it stops when the page is full, at the range's end, or at the
// page's bound, o.payloadScanRows rows or o.payloadScanBytes
// (MaxPayloadScanBytes) of payloads, whichever comes first (then p.Truncated, and p.Next where to
// continue).
func (o *Ops) scanPayloads(ctx context.Context, af hub.ArchiveFilter, permit *Permit, p *EventPage) ([]hub.ArchivedDelivery, error) {
	var out []hub.ArchivedDelivery
	limit := af.Limit
	for {
		af.Limit = limit - len(out)
		af.MaxScan = min(o.payloadScanChunk, o.payloadScanRows-p.Scanned)
		scan, err := o.archive.ScanArchive(ctx, af)
		if err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		out = append(out, scan.Rows...)
		p.Scanned += scan.Scanned
		p.ScannedBytes += scan.Bytes
		if err := permit.Pace(ctx, int64(scan.Scanned)); err != nil { // spread over time: reads must not starve ingest
			return nil, err
		}
		switch {
		case len(out) == limit:
			if !scan.Resume.IsZero() {
				p.Next = FormatCursor(scan.Resume)
			}
			return out, nil
		case !scan.Truncated:
			return out, nil // the range's end
		case p.Scanned >= o.payloadScanRows || p.ScannedBytes >= o.payloadScanBytes:
			p.Truncated, p.Next = true, FormatCursor(scan.Resume)
			return out, nil
		}
		af.Before = scan.Resume
	}
}

// FormatWheres is payload conditions as one line, each as --where takes
// it, separated by spaces: for logs and the audit trail.
func FormatWheres(ws []PayloadMatch) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return strings.Join(out, " ")
}
