package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

func delivery(eventID string, body string) hub.Delivery {
	return hub.Delivery{
		ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
		EventType: "subscription.created", Body: []byte(body), Signature: "ts=1;h1=00",
		ReceivedAt: time.Now(),
	}
}

func TestIngestBatch(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()

	failed := delivery("evt_c", `{}`)
	failed.Error = "cannot publish: bad type"
	outs, err := s.Ingest(ctx, []hub.Delivery{
		delivery("evt_a", `{"n":1}`),
		delivery("evt_b", `{"n":2}`),
		delivery("evt_a", `{"n":1}`), // the same event twice in one batch
		failed,
	})
	require.NoError(t, err)
	require.Equal(t, []hub.Outcome{
		{Status: hub.Pending},
		{Status: hub.Pending},
		{Status: hub.Skipped, Duplicate: true},
		{Status: hub.Failed},
	}, outs)

	outs, err = s.Ingest(ctx, []hub.Delivery{delivery("evt_a", `{"n":1}`), delivery("evt_c", `{}`)})
	require.NoError(t, err)
	require.Equal(t, []hub.Outcome{{Status: hub.Skipped, Duplicate: true}, {Status: hub.Skipped, Duplicate: true}}, outs)

	var dedup, archive, bodies int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM processed_webhook_events`).Scan(&dedup))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(body) FROM webhook_event_status`).Scan(&archive, &bodies))
	require.Equal(t, 3, dedup)
	require.Equal(t, 6, archive)
	require.Equal(t, 3, bodies, "only first deliveries keep the body")
	var signedAt, errMsgs, sigs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(signed_at), count(error_message), count(signature) FROM webhook_event_status`).Scan(&signedAt, &errMsgs, &sigs))
	require.Zero(t, signedAt, "a zero time is stored as NULL")
	require.Equal(t, 1, errMsgs, "only the FAILED row has an error message")
	require.Equal(t, 6, sigs)
}

func TestIngestUnstorablePayloadDoesNotFailTheBatch(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	bad := []string{
		`{"a":"\u0000"}`,       // NUL escape: valid JSON, rejected by jsonb
		`{"a":"\ud800"}`,       // unpaired surrogate
		"{\"a\":\"\xff\xfe\"}", // invalid UTF-8
		`{"n":1e1000000}`,      // beyond numeric's range
	}
	ds := []hub.Delivery{delivery("evt_ok", `{"fine":true}`)}
	for i, b := range bad {
		ds = append(ds, delivery("evt_bad_"+string(rune('a'+i)), b))
	}
	outs, err := s.Ingest(ctx, ds)
	require.NoError(t, err)
	for i, o := range outs {
		require.Equal(t, hub.Pending, o.Status, "delivery %d", i)
	}
	for i, b := range bad {
		var body []byte
		var payload string
		require.NoError(t, pool.QueryRow(ctx, `SELECT body, payload::text FROM webhook_event_status WHERE event_id = $1`,
			"evt_bad_"+string(rune('a'+i))).Scan(&body, &payload))
		require.Equal(t, b, string(body), "the exact body is kept")
		require.Contains(t, payload, "hub_unstorable_payload")
	}
}

func TestIngestUnavailable(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	pool.Close()
	_, err := s.Ingest(context.Background(), []hub.Delivery{delivery("evt_x", `{}`)})
	require.ErrorIs(t, err, hub.ErrUnavailable)
}

// claimAndRecord claims up to limit due events, as the relay does, and
// records what publish makes of them. It returns how many it claimed.
func claimAndRecord(ctx context.Context, s *store.Store, limit int, publish func([]hub.OutboxRow) []hub.PublishResult) (int, error) {
	rows, err := s.Claim(ctx, limit, time.Minute)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return len(rows), s.RecordPublished(ctx, publish(rows))
}

func TestClaimRecordsResults(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	_, err := s.Ingest(ctx, []hub.Delivery{delivery("evt_1", `{}`), delivery("evt_2", `{}`), delivery("evt_3", `{}`)})
	require.NoError(t, err)

	n, err := claimAndRecord(ctx, s, 10, func(rows []hub.OutboxRow) []hub.PublishResult {
		require.Len(t, rows, 3)
		res := make([]hub.PublishResult, len(rows))
		for i, r := range rows {
			res[i].ArchiveID = r.ArchiveID
			switch r.EventID {
			case "evt_1":
				res[i].Seq = 7
			case "evt_2":
				res[i].Err, res[i].RetryIn = "nats down", time.Hour
			case "evt_3":
				res[i].Err, res[i].Permanent = "bad subject", true
			}
		}
		return res
	})
	require.NoError(t, err)
	require.Equal(t, 3, n)

	type row struct {
		status   string
		seq      *int64
		attempts int
		errMsg   *string
	}
	get := func(id string) row {
		var r row
		require.NoError(t, pool.QueryRow(ctx, `SELECT processing_status, stream_seq, publish_attempts, error_message
			FROM webhook_event_status WHERE event_id = $1`, id).Scan(&r.status, &r.seq, &r.attempts, &r.errMsg))
		return r
	}
	r1 := get("evt_1")
	require.Equal(t, "PROCESSED", r1.status)
	require.EqualValues(t, 7, *r1.seq)
	r2 := get("evt_2")
	require.Equal(t, "PENDING", r2.status)
	require.Equal(t, 1, r2.attempts)
	require.Equal(t, "nats down", *r2.errMsg)
	require.Equal(t, "FAILED", get("evt_3").status)

	// evt_2 is not due for an hour: nothing to claim.
	n, err = claimAndRecord(ctx, s, 10, func([]hub.OutboxRow) []hub.PublishResult { panic("no rows expected") })
	require.NoError(t, err)
	require.Zero(t, n)

	b, err := s.OutboxBacklog(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.Pending)

	// RetryNow makes it due again.
	moved, err := s.RetryNow(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, moved)
	n, err = claimAndRecord(ctx, s, 10, func(rows []hub.OutboxRow) []hub.PublishResult {
		require.Equal(t, 1, rows[0].Attempts)
		require.False(t, rows[0].FirstAttemptAt.IsZero())
		return []hub.PublishResult{{ArchiveID: rows[0].ArchiveID, Seq: 8}}
	})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestConcurrentClaimsAreDisjoint(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	var ds []hub.Delivery
	for i := range 200 {
		ds = append(ds, delivery(uuid.NewString()+string(rune('a'+i%26)), `{}`))
	}
	_, err := s.Ingest(ctx, ds)
	require.NoError(t, err)

	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				n, err := claimAndRecord(ctx, s, 10, func(rows []hub.OutboxRow) []hub.PublishResult {
					res := make([]hub.PublishResult, len(rows))
					mu.Lock()
					for i, r := range rows {
						seen[r.ArchiveID]++
						res[i] = hub.PublishResult{ArchiveID: r.ArchiveID, Seq: 1}
					}
					mu.Unlock()
					time.Sleep(time.Millisecond) // hold the locks a little
					return res
				})
				require.NoError(t, err)
				if n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	require.Len(t, seen, 200)
	for id, n := range seen {
		require.Equal(t, 1, n, "row %s claimed twice", id)
	}
}

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]hub.Status{"pending": hub.Pending, "FAILED": hub.Failed, "Skipped": hub.Skipped, "processed": hub.Processed} {
		got, err := hub.ParseStatus(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := hub.ParseStatus("DONE")
	require.Error(t, err)
}

// The fast path records both outcomes without a claim: acknowledged rows
// become PROCESSED, failed ones stay PENDING with a short backoff instead
// of waiting out the relay grace.
func TestRecordPublished(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	s.HoldNew(time.Hour)
	ctx := context.Background()
	ok, failed := delivery("evt_ok", `{}`), delivery("evt_failed", `{}`)
	_, err := s.Ingest(ctx, []hub.Delivery{ok, failed})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{
		{ArchiveID: ok.ArchiveID, Seq: 3},
		{ArchiveID: failed.ArchiveID, Err: "publish: no response from stream", RetryIn: 100 * time.Millisecond},
	}))
	var status string
	var attempts int
	var dueIn float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT processing_status FROM webhook_event_status WHERE id = $1`, ok.ArchiveID).Scan(&status))
	require.Equal(t, "PROCESSED", status)
	require.NoError(t, pool.QueryRow(ctx, `SELECT processing_status, publish_attempts, extract(epoch FROM next_attempt_at - now())
		FROM webhook_event_status WHERE id = $1`, failed.ArchiveID).Scan(&status, &attempts, &dueIn))
	require.Equal(t, "PENDING", status)
	require.Equal(t, 1, attempts)
	require.Less(t, dueIn, 60.0, "due after its backoff, not after the hour of grace")
}

func TestIngestPayloadColumn(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	form := delivery("evt_form", "AccountSid=AC1&MessageSid=SM1")
	form.Payload = []byte(`{"AccountSid": "AC1", "MessageSid": "SM1"}`)
	ds := []hub.Delivery{delivery("evt_json", `{"b": [1, 2], "a": "x"}`), form, delivery("evt_json", `{"b": [1, 2], "a": "x"}`),
		delivery("evt_utf8", "{ \"naïve\" :\t\"日本 🎉\" }\n")}
	_, err := s.Ingest(ctx, ds)
	require.NoError(t, err)
	// The exact bytes, whether they travelled as the payload's text (JSON)
	// or on their own (the form, whose payload differs).
	for _, d := range []hub.Delivery{ds[0], form, ds[3]} {
		var body []byte
		require.NoError(t, pool.QueryRow(ctx, `SELECT body FROM webhook_events WHERE id = $1`, d.ArchiveID).Scan(&body))
		require.Equal(t, string(d.Body), string(body), d.EventID)
	}
	for _, tc := range []struct{ eventID, payload string }{
		{"evt_json", `{"a": "x", "b": [1, 2]}`}, // parsed from the body
		{"evt_form", `{"AccountSid": "AC1", "MessageSid": "SM1"}`},
	} {
		rows, err := pool.Query(ctx, `SELECT payload::text FROM webhook_event_status WHERE event_id = $1`, tc.eventID)
		require.NoError(t, err)
		payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		require.NotEmpty(t, payloads)
		for _, p := range payloads {
			require.Equal(t, tc.payload, p, "duplicates keep the payload view too")
		}
	}
}

// An event in the outbox whose archive row was deleted by hand has no body
// to publish: a claim gives it up (FAILED, with the reason) instead of
// leaving it due for ever, and still hands out the others.
func TestClaimGivesUpEventsWithoutArchiveRow(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	gone, kept := delivery("evt_gone", `{}`), delivery("evt_kept", `{}`)
	_, err := s.Ingest(ctx, []hub.Delivery{gone, kept})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM webhook_events WHERE id = $1`, gone.ArchiveID)
	require.NoError(t, err)

	rows, err := s.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, kept.ArchiveID, rows[0].ArchiveID)
	var due *time.Time
	var reason *string
	require.NoError(t, pool.QueryRow(ctx, `SELECT next_attempt_at, publish_error FROM processed_webhook_events WHERE id = $1`,
		gone.ArchiveID).Scan(&due, &reason))
	require.Nil(t, due, "out of the outbox")
	require.Contains(t, *reason, "archive row was deleted")
	b, err := s.OutboxBacklog(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.Pending, "only the leased event is still in the outbox")
}
