package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/store"
)

// preloadSpan is how far back a preloaded archive reaches: the archive's
// retention (docs/DESIGN.md: purged after 90 days).
const preloadSpan = 90 * 24 * time.Hour

// preloadPrefix starts every preloaded event id; no workload event has it.
const preloadPrefix = "evt_preload_"

// Preload describes one archive size the runs were measured with: the
// rows every run's database held before its first delivery.
type Preload struct {
	ArchiveRows int64 `json:"archive_rows"`
	Events      int64 `json:"events"` // dedup rows
	// FillSeconds is how long filling the template database took, once
	// per invocation: generating the rows, COPY, VACUUM ANALYZE.
	FillSeconds float64 `json:"fill_seconds,omitempty"`
	// CopySeconds is the median time to create a run's database from the
	// template (CREATE DATABASE … TEMPLATE, file copy).
	CopySeconds float64 `json:"copy_seconds,omitempty"`
	DatabaseMB  float64 `json:"database_mb,omitempty"`
	// VsUnbatched and VsCeiling are the medians of the rounds' ratios at
	// this archive size, as Report's are at the first.
	VsUnbatched float64 `json:"throughput_vs_unbatched,omitempty"`
	VsCeiling   float64 `json:"throughput_vs_ceiling,omitempty"`
	// ThroughputVsFirst and PostgresCPUVsFirst compare the batched hub at
	// this archive size with the batched hub at the first size listed, in
	// the same round (median of the rounds' ratios); 0 for the first size.
	ThroughputVsFirst  float64 `json:"throughput_vs_first_size,omitempty"`
	PostgresCPUVsFirst float64 `json:"postgres_cpu_vs_first_size,omitempty"`

	template string    // the template database; "" for an empty archive
	since    time.Time // every preloaded row was received before it
}

// fillTemplate creates a database holding rows archive rows (see
// preloadEvents) for the runs to copy, and makes it a template.
func (s *server) fillTemplate(ctx context.Context, rows int, dupShare float64, log io.Writer) (Preload, error) {
	start := time.Now()
	db, err := s.create(ctx, "template_"+strconv.Itoa(rows), "")
	if err != nil {
		return Preload{}, err
	}
	pl := Preload{template: db.name, since: start}
	fail := func(err error) (Preload, error) {
		s.drop(db.name)
		return Preload{}, fmt.Errorf("preload %d rows: %w", rows, err)
	}
	events, err := preloadEvents(rows, dupShare, start)
	if err != nil {
		return fail(err)
	}
	pool, err := pgxpool.New(ctx, db.url)
	if err != nil {
		return fail(err)
	}
	// Progress every tenth, and when the last event was handed over: the
	// COPY is done but for one chunk; the commit and VACUUM ANALYZE follow.
	var copied time.Duration
	written, tenth := 0, max(rows/10, 1)
	logged := func(yield func(store.ImportedEvent) bool) {
		for ev := range events {
			n := 1 + len(ev.Duplicates)
			if (written+n)/tenth > written/tenth && written+n < rows {
				fmt.Fprintf(log, "… %d rows after %.0f s\n", written+n, time.Since(start).Seconds())
			}
			written += n
			if !yield(ev) {
				return
			}
		}
		copied = time.Since(start)
	}
	pl.ArchiveRows, pl.Events, err = store.New(pool).ImportPublished(ctx, logged)
	pool.Close()
	if err != nil {
		return fail(err)
	}
	if pl.ArchiveRows != int64(rows) {
		return fail(fmt.Errorf("wrote %d archive rows", pl.ArchiveRows))
	}
	if err := s.freeze(ctx, db.name); err != nil {
		return fail(err)
	}
	pl.FillSeconds = time.Since(start).Seconds()
	if pl.DatabaseMB, err = s.sizeMB(ctx, db.name); err != nil {
		return fail(err)
	}
	fmt.Fprintf(log, "preloaded %d archive rows (%d events, %.0f MB) in %.1f s: %.1f s to generate and COPY them, %.1f s to commit, VACUUM ANALYZE and make it a template\n",
		pl.ArchiveRows, pl.Events, pl.DatabaseMB, pl.FillSeconds, copied.Seconds(), pl.FillSeconds-copied.Seconds())
	return pl, nil
}

// preloadEvents yields the state after rows Paddle deliveries, each
// published: events of the workload's body size, each followed by a
// duplicate delivery with probability dupShare (and that one by another
// with the same probability, and so on), so about that share of the rows
// are duplicates. The rows' receipt times are spread evenly over the
// preloadSpan before end, oldest first; a duplicate is the next row after
// its event's. Archive ids are UUIDv7 of the receipt time, as the hub
// makes them, and every delivery is signed. Deterministic but for the
// times.
func preloadEvents(rows int, dupShare float64, end time.Time) (iter.Seq[store.ImportedEvent], error) {
	p, err := provider.NewPaddle([]string{benchSecret}, provider.Options{})
	if err != nil {
		return nil, err
	}
	width := len(strconv.Itoa(max(rows-1, 0)))
	placeholder := preloadPrefix + strings.Repeat("0", width)
	tmpl, err := samples.Body(p.Name(), placeholder, "subscription.created", nil, end.Add(-preloadSpan/2))
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(tmpl, []byte(placeholder)) {
		return nil, fmt.Errorf("preload: the sample body does not hold its event id")
	}
	step := preloadSpan / time.Duration(max(rows, 1))
	first := end.Add(-preloadSpan)
	deliver := func(eventID string, body []byte, row int, rng *rand.Rand) (hub.Delivery, error) {
		at := first.Add(time.Duration(row) * step)
		h, _, err := p.Sign(eventID, "", body, at.Add(-time.Second))
		if err != nil {
			return hub.Delivery{}, err
		}
		return hub.Delivery{
			ArchiveID: uuidV7At(at, rng), Provider: "paddle", EventID: eventID, EventType: "subscription.created",
			Body: body, Signature: h.Get(provider.PaddleSignatureHeader),
			SignedAt: at.Add(-time.Second).Truncate(time.Second), OccurredAt: at.Add(-2 * time.Second), ReceivedAt: at,
		}, nil
	}
	generate := func(yield func(store.ImportedEvent) bool) error {
		rng := rand.New(rand.NewPCG(3, 4))
		id := []byte(placeholder)
		for row, event := 0, 0; row < rows; event++ {
			digits := strconv.Itoa(event)
			eventID := preloadPrefix + strings.Repeat("0", width-len(digits)) + digits
			copy(id, eventID)
			body := bytes.ReplaceAll(tmpl, []byte(placeholder), id)
			d, err := deliver(eventID, body, row, rng)
			if err != nil {
				return err
			}
			row++
			ev := store.ImportedEvent{First: d, StreamSeq: uint64(event) + 1, PublishedAt: d.ReceivedAt.Add(20 * time.Millisecond)}
			for row < rows && rng.Float64() < dupShare {
				dup, err := deliver(eventID, body, row, rng)
				if err != nil {
					return err
				}
				ev.Duplicates = append(ev.Duplicates, dup)
				row++
			}
			if !yield(ev) {
				return nil
			}
		}
		return nil
	}
	// The events are made in a goroutine of their own, so making them and
	// writing them to Postgres overlap.
	return func(yield func(store.ImportedEvent) bool) {
		ch := make(chan store.ImportedEvent, 1024)
		done := make(chan struct{})
		go func() {
			defer close(ch)
			// An error (Sign fails only before 1970) ends the events
			// short; fillTemplate counts what was written.
			_ = generate(func(e store.ImportedEvent) bool {
				select {
				case ch <- e:
					return true
				case <-done:
					return false
				}
			})
		}()
		defer close(done)
		for e := range ch {
			if !yield(e) {
				return
			}
		}
	}, nil
}

// uuidV7At makes a version 7 UUID of time t (RFC 9562): 48 bits of Unix
// milliseconds, then random bits.
func uuidV7At(t time.Time, rng *rand.Rand) uuid.UUID {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[0:8], uint64(t.UnixMilli())<<16|rng.Uint64()&0x0fff|0x7000)
	binary.BigEndian.PutUint64(u[8:16], rng.Uint64()&^(3<<62)|2<<62)
	return u
}

// Bounds of a preload: rows take about 4 KB of disk each, in the template
// and in the copy of each run.
const (
	MaxPreloadRows  = 10_000_000
	maxPreloadSizes = 8
)

// ParsePreload reads a comma-separated list of archive sizes ("0",
// "0,2000000"); underscores may group digits (2_000_000).
func ParsePreload(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(strings.ReplaceAll(f, "_", ""), 10, 64)
		if err != nil || strings.HasPrefix(f, "_") || strings.HasSuffix(f, "_") {
			return nil, fmt.Errorf("%q is not a number of archive rows", f)
		}
		if n < 0 || n > MaxPreloadRows {
			return nil, fmt.Errorf("%d archive rows: must be within 0..%d", n, MaxPreloadRows)
		}
		sizes = append(sizes, int(n))
	}
	if len(sizes) > maxPreloadSizes {
		return nil, fmt.Errorf("%d archive sizes: at most %d", len(sizes), maxPreloadSizes)
	}
	return sizes, nil
}
