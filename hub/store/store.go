package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/google/uuid"
	"github.com/hookhub/hookhub/hub"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store is the hub's Postgres store.
type Store struct {
	pool *pgxpool.Pool
	// holdNew is how long a new PENDING event is left to the process that
	// committed it (HoldNew), in nanoseconds.
	holdNew atomic.Int64
	// wire holds the buffers Ingest writes its statement into (execWire).
	wire wireBufs
}

// New returns a Store on pool. The pool's database must be migrated.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, wire: make(wireBufs, keptWireBufs)}
}

// HoldNew leaves each PENDING event committed from now on to the process
// that committed it for d: no relay claims it before d has passed. The
// relay calls it with its grace (relay.Config.Grace), because it
// publishes what its process commits from memory right after the commit
// (the fast path); the claiming relays only cover what that path did not
// finish (a crash, a NATS outage). Default 0: a store without a relay
// (`hub backfill`) has its events due at once.
func (s *Store) HoldNew(d time.Duration) { s.holdNew.Store(int64(d)) }

// Pool returns the store's pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %w", hub.ErrUnavailable, err)
	}
	return nil
}

// ingestSQL archives a batch and records its dedup rows in one statement,
// hence one implicit transaction: Postgres commits it before it answers
// the Sync that ends the statement, so a successful return means a durable
// commit, in one round trip. Optional values travel as empty strings
// (text) or the zero time (timestamps) and become NULL here, which keeps
// every array on pgx's reflection-free encoders. A body that is its own
// payload and valid text (a JSON webhook, almost always) travels once, as
// the payload ($5), and its bytes are taken from it ($6 is NULL): half the
// bytes on the wire for both sides. Trace parents ($14) travel
// as an empty array when no delivery has one (tracing off): unnest pads a
// shorter array with NULLs. Origins ($15) travel the same way: an empty
// array when every delivery is a webhook (the column's default), one entry
// per delivery when a backfill ingests events read from an API. Entities
// ($16) travel the same way, one text per delivery: the archive's
// "<kind>:<id>" strings joined by newlines (which entity kinds and ids
// cannot contain). The archive row is their index (migrations
// 00007_entity_slots.sql: one partial expression index per slot of
// webhook_events.entities), so no other row is written for them.
//
// The archive row is written once and never changed (DESIGN invariant 8):
// a duplicate is SKIPPED, an event whose type cannot form a subject FAILED,
// and a publishable first delivery has no stored status: its dedup row is
// its outbox entry (next_attempt_at set, due once the relay's grace has
// passed) and records its publication later. The statement returns the
// status each delivery has now.
const ingestSQL = ingestHead + ingestTail

const ingestHead = `
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[],
                         $7::text[], $8::timestamptz[], $9::timestamptz[], $10::timestamptz[], $11::text[],
                         $14::text[], $15::text[], $16::text[])
        WITH ORDINALITY AS t(id, provider, event_id, event_type, payload, body,
                             signature, signed_at, occurred_at, received_at, error_message, trace_parent,
                             origin, entities, ord)
), dedup AS (
    INSERT INTO processed_webhook_events (id, provider, event_id, event_type, processed_at, next_attempt_at)
    -- Sorted by key, so concurrent batches take row locks in one order and
    -- never deadlock; within a key the earliest delivery wins.
    SELECT id, provider, event_id, event_type, received_at,
           CASE WHEN error_message = '' THEN now() + $12 * interval '1 millisecond' END
    FROM input ORDER BY provider, event_id, ord
    ON CONFLICT ON CONSTRAINT uq_processed_webhook_events_provider_event_id DO NOTHING
    RETURNING id
)`

const ingestTail = `
INSERT INTO webhook_events (id, provider, event_id, event_type, payload, signature, processing_status,
                            error_message, created_at, body, signed_at, occurred_at, trace_parent, origin,
                            entities)
SELECT i.id, i.provider, i.event_id, i.event_type, i.payload::jsonb, NULLIF(i.signature, ''),
       CASE WHEN d.id IS NULL THEN 'SKIPPED' WHEN i.error_message <> '' THEN 'FAILED' END,
       CASE WHEN d.id IS NULL THEN NULL ELSE NULLIF(i.error_message, '') END,
       i.received_at,
       CASE WHEN d.id IS NULL THEN NULL ELSE COALESCE(i.body, convert_to(i.payload, 'UTF8')) END,
       NULLIF(i.signed_at, $13), NULLIF(i.occurred_at, $13),
       NULLIF(i.trace_parent, ''), COALESCE(NULLIF(i.origin, ''), 'webhook'),
       string_to_array(NULLIF(i.entities, ''), E'\n')
FROM input i LEFT JOIN dedup d ON d.id = i.id
ORDER BY i.ord
RETURNING id, COALESCE(processing_status, 'PENDING')`

// Ingest archives deliveries and records their dedup rows in one
// transaction, and commits it. It returns one hub.Outcome per delivery, in
// order: the first delivery of an event is PENDING (or FAILED when
// hub.Delivery.Error is set), every later one, including a second copy in the
// same batch, is SKIPPED. An error means nothing was committed, or that the
// commit's outcome is unknown; either way it wraps hub.ErrUnavailable and no
// delivery may be acknowledged.
//
// A payload Postgres cannot store as JSONB (a \u0000 escape, an unpaired
// surrogate, a number beyond numeric's range) does not fail the batch: that
// delivery's payload column records why, and its exact body is kept.
func (s *Store) Ingest(ctx context.Context, ds []hub.Delivery) ([]hub.Outcome, error) {
	return s.ingestCarrying(ctx, ds, nil)
}

// ingestCarrying is Ingest whose statement also records the publish marks
// m (marksCTE), in the same transaction: they are recorded if and only if
// it returns no error.
func (s *Store) ingestCarrying(ctx context.Context, ds []hub.Delivery, m *markArgs) ([]hub.Outcome, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	payloads, bodies := payloadViews(ds)
	out, err := s.ingest(ctx, ds, payloads, bodies, m)
	var pgErr *pgconn.PgError
	if err != nil && errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		// A data exception: some payload is JSON that Postgres's jsonb
		// rejects. Find which, replace their payload view (their body then
		// travels on its own), and try again.
		if fixErr := s.replaceUnstorable(ctx, ds, payloads, bodies); fixErr != nil {
			return nil, fmt.Errorf("%w: %w", hub.ErrUnavailable, fixErr)
		}
		out, err = s.ingest(ctx, ds, payloads, bodies, m)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", hub.ErrUnavailable, err)
	}
	return out, nil
}

// payloadViews are the payload and body views ingest stores of each of
// ds: the payload as text, and the body when it differs from the
// payload's bytes (nil when it does not).
func payloadViews(ds []hub.Delivery) ([]string, [][]byte) {
	payloads := make([]string, len(ds))
	bodies := make([][]byte, len(ds)) // nil: the payload's bytes
	for i := range ds {
		switch d := &ds[i]; {
		case d.Payload != nil:
			payloads[i], bodies[i] = bytesString(d.Payload), d.Body
		case textSafe(d.Body):
			payloads[i] = bytesString(d.Body)
		default:
			payloads[i], bodies[i] = bytesString(d.Body), d.Body
		}
	}
	return payloads, bodies
}

func (s *Store) ingest(ctx context.Context, ds []hub.Delivery, payloads []string, bodies [][]byte, m *markArgs) ([]hub.Outcome, error) {
	n := len(ds)
	sql, args := m.statement(), m.withArgs(s.ingestArgs(ds, payloads, bodies)...)
	statuses := make(map[uuid.UUID]hub.Status, n)
	if err := s.execWire(ctx, sql, args, n, func(row [][]byte) error {
		id, st, err := ingestedRow(row)
		statuses[id] = st
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]hub.Outcome, n)
	for i := range ds {
		st, ok := statuses[ds[i].ArchiveID]
		if !ok {
			return nil, fmt.Errorf("ingest: no row returned for archive id %s", ds[i].ArchiveID)
		}
		out[i] = hub.Outcome{Status: st, Duplicate: st == hub.Skipped}
	}
	return out, nil
}

// ingestArgs returns ingestSQL's arguments for ds.
func (s *Store) ingestArgs(ds []hub.Delivery, payloads []string, bodies [][]byte) []any {
	n := len(ds)
	ids := make([][16]byte, n)
	providers := make([]string, n)
	eventIDs := make([]string, n)
	types := make([]string, n)
	sigs := make([]string, n)
	signedAt := make([]time.Time, n)
	occurredAt := make([]time.Time, n)
	receivedAt := make([]time.Time, n)
	errs := make([]string, n)
	traceParents := []string{} // not nil: pgx would send NULL
	origins := []string{}
	entities := []string{}
	for i := range ds {
		d := &ds[i]
		ids[i], providers[i], eventIDs[i], types[i] = d.ArchiveID, d.Provider, d.EventID, d.EventType
		sigs[i], errs[i] = cleanText(d.Signature), cleanText(d.Error)
		signedAt[i], occurredAt[i], receivedAt[i] = d.SignedAt, d.OccurredAt, d.ReceivedAt
		if d.TraceParent != "" && len(traceParents) == 0 {
			traceParents = make([]string, n)
		}
		if len(traceParents) > 0 {
			traceParents[i] = cleanText(d.TraceParent)
		}
		if d.Origin != "" && d.Origin != hub.OriginWebhook && len(origins) == 0 {
			origins = make([]string, n)
		}
		if len(origins) > 0 {
			origins[i] = string(d.Origin)
		}
		if len(d.Entities) > 0 {
			if len(entities) == 0 {
				entities = make([]string, n)
			}
			entities[i] = entityTexts(d.Entities)
		}
	}
	return []any{ids, providers, eventIDs, types, payloads,
		pgtype.FlatArray[[]byte](bodies), sigs, signedAt, occurredAt, receivedAt, errs,
		time.Duration(s.holdNew.Load()).Milliseconds(), time.Time{}, traceParents, origins, entities}
}

// entityTexts returns an event's entities as ingestSQL takes them: the
// archive's "<kind>:<id>" strings joined by newlines. An entity that
// breaks the rules (hub.Entity: a kind of [a-z_]{1,32}, an id
// CheckEntityID accepts), repeats one already listed, or comes past
// hub.MaxEntities is left out: providers extract only valid ones, and a
// stray one must not fail the delivery. Each kept entity has its slot in
// the archive row, and each slot its index, so an id listed under two
// kinds is found twice by the look-up, which keeps it once.
func entityTexts(es []hub.Entity) string {
	var a strings.Builder
	kept := 0
	for i, e := range es {
		if kept == hub.MaxEntities {
			break
		}
		if !validKind(e.Kind) || hub.CheckEntityID(e.ID) != nil || slices.Contains(es[:i], e) {
			continue
		}
		if kept > 0 {
			a.WriteByte('\n')
		}
		a.WriteString(e.Kind)
		a.WriteByte(':')
		a.WriteString(e.ID)
		kept++
	}
	return a.String()
}

// validKind reports whether k is an entity kind: [a-z_]{1,hub.MaxEntityKindLen}.
func validKind(k string) bool {
	if k == "" || len(k) > hub.MaxEntityKindLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// replaceUnstorable checks each payload on its own and replaces those
// Postgres cannot parse as jsonb with a small JSON object saying why; their
// bodies then travel on their own.
func (s *Store) replaceUnstorable(ctx context.Context, ds []hub.Delivery, payloads []string, bodies [][]byte) error {
	for i, p := range payloads {
		_, err := s.pool.Exec(ctx, `SELECT $1::text::jsonb`, p)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
		case errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22"):
			payloads[i] = `{"hub_unstorable_payload": "Postgres jsonb rejected this body; the exact bytes are in the body column"}`
			bodies[i] = ds[i].Body
		default:
			return fmt.Errorf("check payload: %w", err)
		}
	}
	return nil
}

// textSafe reports whether b can travel as Postgres text and come back the
// same bytes: valid UTF-8 without NUL.
func textSafe(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// bytesString views b as a string without copying it. The hub never
// changes a delivery's bytes once read, and pgx only reads the string
// while it encodes the statement.
func bytesString(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// cleanText makes s storable in a text column: valid UTF-8 without NUL.
func cleanText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
