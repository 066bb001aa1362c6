package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// Publish marks carried by the group commit.
//
// Recording an acknowledged publish changes the event's dedup row (its
// next_attempt_at leaves the outbox index, so the update is never HOT).
// Recorded in statements of their own, the marks cost a transaction and a
// commit (a WAL flush) of their own besides the row versions. Handed to
// the GroupCommitter instead (RecordPublished), they ride the next shared
// ingest statement as a data-modifying CTE (marksCTE): one statement, one
// transaction, one commit for the deliveries and the marks. Only marks no
// ingest carried within the mark delay (a quiet hub) are committed on
// their own, as are the marks of a shared transaction Postgres refused,
// once its callers are answered.

// DefaultMarkDelay is how long publish marks wait for an ingest statement
// to carry them before they are committed on their own (MarkDelay). The
// relay has gathered them for its own MarkDelay already; this wait only
// has to catch the next ingest commit, which comes every few milliseconds
// at any rate worth saving commits at (100/s and up), and it is part of
// how long a processed event still shows PENDING.
const DefaultMarkDelay = 10 * time.Millisecond

// MarkDelay sets how long publish marks handed to the group committer
// (RecordPublished) wait for a shared commit to carry them before they are
// committed on their own; default DefaultMarkDelay.
func MarkDelay(d time.Duration) GroupOption {
	return func(g *GroupCommitter) { g.marks.delay = d }
}

// marksCTE records the acknowledged publishes an ingest statement carries
// ($17 archive ids, $18 stream sequences, $19 PubAck times, the zero time
// $13 meaning the time of the statement): markPublishedSQL as a CTE, on
// rows committed by earlier statements (an event is published only once
// committed), so it never meets a row the statement inserts. No query
// reads it, so Postgres runs it after the statement's inserts: it takes
// its row locks last and waits for no concurrent ingest while it holds
// them.
const marksCTE = `, marks AS (
    UPDATE processed_webhook_events p
    SET stream_seq = u.seq, published_at = COALESCE(NULLIF(u.at, $13), clock_timestamp()),
        publish_attempts = p.publish_attempts + 1, next_attempt_at = NULL, first_attempt_at = NULL,
        publish_error = NULL
    FROM unnest($17::uuid[], $18::bigint[], $19::timestamptz[]) AS u(id, seq, at)
    WHERE p.id = u.id AND p.next_attempt_at IS NOT NULL
)`

// ingestMarksSQL is ingestSQL carrying publish marks.
const ingestMarksSQL = ingestHead + marksCTE + ingestTail

// markArgs are acknowledged publishes as markPublishedSQL and marksCTE
// take them. [16]byte rather than uuid.UUID: pgx encodes it without
// reflection or a detour through uuid's driver.Valuer.
type markArgs struct {
	ids  [][16]byte
	seqs []int64
	ats  []time.Time
}

func (m *markArgs) add(r hub.PublishResult) {
	m.ids = append(m.ids, r.ArchiveID)
	m.seqs = append(m.seqs, int64(r.Seq))
	m.ats = append(m.ats, r.PublishedAt)
}

func (m *markArgs) empty() bool { return m == nil || len(m.ids) == 0 }

// statement returns the ingest statement: ingestSQL, carrying m
// (marksCTE) when it holds marks.
func (m *markArgs) statement() string {
	if m.empty() {
		return ingestSQL
	}
	return ingestMarksSQL
}

// withArgs returns the ingest statement's arguments followed by m's.
func (m *markArgs) withArgs(args ...any) []any {
	if m.empty() {
		return args
	}
	return append(args, m.ids, m.seqs, m.ats)
}

// markPublished records m in a statement of its own.
func (s *Store) markPublished(ctx context.Context, m *markArgs) error {
	if m.empty() {
		return nil
	}
	if _, err := s.pool.Exec(ctx, markPublishedSQL, m.ids, m.seqs, m.ats, time.Time{}); err != nil {
		return fmt.Errorf("mark published: %w", err)
	}
	return nil
}

// markQueue holds the marks handed to a GroupCommitter until a commit
// takes them.
type markQueue struct {
	mu      sync.Mutex
	pending []*markRequest
	queued  chan struct{} // a value when the queue turns non-empty
	delay   time.Duration
}

type markRequest struct {
	m      markArgs
	queued time.Time
	err    error
	done   chan struct{}
}

// carriedMarks are the mark requests one statement records.
type carriedMarks struct {
	args markArgs
	reqs []*markRequest
}

// settle answers the requests: err is the outcome of the statement that
// recorded them.
func (c *carriedMarks) settle(err error) {
	for _, r := range c.reqs {
		r.err = err
		close(r.done)
	}
}

func (q *markQueue) push(r *markRequest) {
	q.mu.Lock()
	q.pending = append(q.pending, r)
	first := len(q.pending) == 1
	q.mu.Unlock()
	if first {
		select {
		case q.queued <- struct{}{}:
		default:
		}
	}
}

// take removes and returns the requests queued at or before until (all
// of them when until is zero), and the time the oldest one left was
// queued (zero when none is left).
func (q *markQueue) take(until time.Time) (*carriedMarks, time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.pending)
	if !until.IsZero() {
		n = 0
		for n < len(q.pending) && !q.pending[n].queued.After(until) {
			n++
		}
	}
	var next time.Time
	if n < len(q.pending) {
		next = q.pending[n].queued
	}
	if n == 0 {
		return nil, next
	}
	c := &carriedMarks{reqs: q.pending[:n:n]}
	q.pending = q.pending[n:]
	if len(c.reqs) == 1 {
		c.args = c.reqs[0].m
		return c, next
	}
	for _, r := range c.reqs {
		c.args.ids = append(c.args.ids, r.m.ids...)
		c.args.seqs = append(c.args.seqs, r.m.seqs...)
		c.args.ats = append(c.args.ats, r.m.ats...)
	}
	return c, next
}

// takeMarks returns every queued mark, for the statement about to run
// (nil when there is none).
func (g *GroupCommitter) takeMarks() *carriedMarks {
	c, _ := g.marks.take(time.Time{})
	return c
}

// markAlone records c in a statement of its own and answers its requests.
func (g *GroupCommitter) markAlone(c *carriedMarks) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	c.settle(g.store.markPublished(ctx, &c.args))
}

// marks returns the marks c records, nil when c is nil.
func (c *carriedMarks) marks() *markArgs {
	if c == nil {
		return nil
	}
	return &c.args
}

// RecordPublished records publish results like Store.RecordPublished, and
// returns once they are recorded: the acknowledged ones ride the next
// shared ingest statement, or are committed on their own when none comes
// within the mark delay (or the committer is not running: before Start,
// after Stop, which records what is queued). Failed publishes, rare, are
// recorded at once on their own. An error means some results may not be
// recorded: their events stay in the outbox, where a relay takes them
// once due, and recording them again changes nothing.
func (g *GroupCommitter) RecordPublished(ctx context.Context, results []hub.PublishResult) error {
	var m markArgs
	var failed []hub.PublishResult
	for _, r := range results {
		if r.Seq > 0 {
			m.add(r)
			continue
		}
		failed = append(failed, r)
	}
	var err error
	if len(failed) > 0 {
		err = g.store.RecordPublished(ctx, failed)
	}
	if m.empty() {
		return err
	}
	r := &markRequest{m: m, queued: time.Now(), done: make(chan struct{})}
	g.mu.RLock()
	if !g.running {
		g.mu.RUnlock()
		return errors.Join(err, g.store.markPublished(ctx, &m))
	}
	g.marks.push(r)
	g.mu.RUnlock()
	select {
	case <-r.done:
		return errors.Join(err, r.err)
	case <-ctx.Done():
		// Still queued or being recorded: recorded later, or the events
		// stay in the outbox.
		return errors.Join(err, fmt.Errorf("mark published: %w", ctx.Err()))
	}
}

// runMarks commits on their own the marks no shared commit carried within
// the mark delay, until ctx is cancelled (by Stop, once nothing can be
// queued any more); then it commits what is left.
func (g *GroupCommitter) runMarks(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			g.markAlone(g.takeMarks())
			return
		case <-g.marks.queued:
		}
		// Each pass either commits the requests older than the delay or
		// sleeps until the oldest left is; it ends when none is left.
		for {
			c, next := g.marks.take(time.Now().Add(-g.marks.delay))
			g.markAlone(c)
			if next.IsZero() {
				break
			}
			timer.Reset(time.Until(next.Add(g.marks.delay)))
			select {
			case <-ctx.Done():
				timer.Stop()
				g.markAlone(g.takeMarks())
				return
			case <-timer.C:
			}
		}
	}
}
