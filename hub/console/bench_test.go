package console_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// benchRows is the archive the events page is measured on.
const benchRows = 1_000_000

// BenchmarkEventsPage renders /console/events (50 rows) on an archive of
// a million rows: the first page, a filtered page (provider, type and
// status), a page far back (a cursor 900,000 rows deep) and an event id.
// The target is under 200 ms a page.
func BenchmarkEventsPage(b *testing.B) {
	s, end, start := benchSite(b, benchEvents)
	for _, table := range []string{"webhook_events", "processed_webhook_events"} {
		_, err := s.pool.Exec(context.Background(), "VACUUM ANALYZE "+table)
		require.NoError(b, err)
	}
	b.Logf("preloaded %d archive rows in %s", benchRows, time.Since(start).Round(time.Second))
	sc, _ := s.login(adminToken)
	cookies := []*http.Cookie{sc}

	// A cursor 900,000 rows back: the position of the row received then.
	deep := s.do("GET", "/console/events?until="+end.Add(-time.Duration(benchRows*9/10)*time.Second/10).UTC().Format(time.RFC3339Nano)+"&limit=1", "", cookies)
	m := regexp.MustCompile(`before=([A-Za-z0-9_-]{32})`).FindStringSubmatch(deep.body)
	require.NotNil(b, m, deep.body)
	for _, bc := range []struct{ name, query string }{
		{"first", ""},
		{"filtered", "provider=clerk&type=user.deleted&status=PROCESSED"},
		{"deep", "before=" + m[1]},
		{"event_id", "event_id=evt_bench_0500000"},
		{"provider_event_id", "provider=stripe&event_id=evt_bench_0500000"},
		{"filtered_none", "provider=paddle&type=user.deleted&status=PROCESSED"},
		{"type_none", "type=user.nothing"},
		{"type_only", "type=user.deleted"},
		{"provider_only", "provider=stripe&status=PROCESSED"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				a := s.do("GET", "/console/events?"+bc.query, "", cookies)
				if a.status != 200 || !strings.Contains(a.body, `<tr class="event"`) && !strings.HasSuffix(bc.name, "_none") {
					b.Fatalf("%d: %.500s", a.status, a.body)
				}
			}
		})
	}
}

// benchEvents makes rows events received 100 ms apart up to end, over
// three providers and four types each, published.
// benchSite is a new site whose archive holds benchRows events, imported
// as published; the newest was received at end, a minute ago. start is
// when the import began.
func benchSite(b *testing.B, events func(rows int, end time.Time) iter.Seq[store.ImportedEvent]) (s *site, end, start time.Time) {
	b.Helper()
	s = newSite(b)
	end, start = time.Now().Add(-time.Minute), time.Now()
	archived, _, err := store.New(s.pool).ImportPublished(context.Background(), events(benchRows, end))
	require.NoError(b, err)
	require.EqualValues(b, benchRows, archived)
	return s, end, start
}

func benchEvents(rows int, end time.Time) iter.Seq[store.ImportedEvent] {
	providers := []string{"paddle", "clerk", "stripe"}
	types := map[string][]string{
		"paddle": {"subscription.created", "subscription.updated", "transaction.completed", "customer.created"},
		"clerk":  {"user.created", "user.updated", "user.deleted", "session.created"},
		"stripe": {"invoice.paid", "customer.created", "charge.succeeded", "invoice.payment_failed"},
	}
	return func(yield func(store.ImportedEvent) bool) {
		first := end.Add(-time.Duration(rows) * 100 * time.Millisecond)
		for i := range rows {
			p := providers[i%3]
			typ := types[p][(i/3)%4]
			id := fmt.Sprintf("evt_bench_%07d", i)
			at := first.Add(time.Duration(i) * 100 * time.Millisecond)
			au := uuid.Must(uuid.NewV7())
			copy(au[:6], []byte{byte(at.UnixMilli() >> 40), byte(at.UnixMilli() >> 32), byte(at.UnixMilli() >> 24), byte(at.UnixMilli() >> 16), byte(at.UnixMilli() >> 8), byte(at.UnixMilli())})
			body := `{"id":"` + id + `","type":"` + typ + `","data":{"n":` + fmt.Sprint(i) + `}}`
			ev := store.ImportedEvent{
				First: hub.Delivery{ArchiveID: au, Provider: p, EventID: id, EventType: typ, Body: []byte(body),
					Signature: "v1,bench", ReceivedAt: at},
				StreamSeq: uint64(i + 1), PublishedAt: at.Add(20 * time.Millisecond),
			}
			if !yield(ev) {
				return
			}
		}
	}
}

// entityBenchEvents is benchEvents with entities: every event is about
// its own object (obj_<n>: one event each) and one of 100,000 customers
// (cus_<n mod 100000>: ten events each), and every tenth also about
// cus_hot (100,000 events).
func entityBenchEvents(rows int, end time.Time) iter.Seq[store.ImportedEvent] {
	return func(yield func(store.ImportedEvent) bool) {
		i := 0
		for ev := range benchEvents(rows, end) {
			ev.First.Entities = []hub.Entity{{Kind: "object", ID: fmt.Sprintf("obj_%07d", i)},
				{Kind: "customer", ID: fmt.Sprintf("cus_%d", i%100_000)}}
			if i%10 == 0 {
				ev.First.Entities = append(ev.First.Entities, hub.Entity{Kind: "customer", ID: "cus_hot"})
			}
			i++
			if !yield(ev) {
				return
			}
		}
	}
}

// BenchmarkEntityPage measures the entity look-up (ops.EntityTimeline: the
// index look-up and every subscriber's outcome of a 50-event page) and the
// console's entity page (an HTTP round trip, rendered) on an archive of a
// million deliveries, with a subscriber that processed every event and a
// destination that attempted every tenth: an id with 100,000 events (its
// newest page, and a page 50,000 events back), one with 10, one with 1,
// and an unknown one. The target is under 200 ms.
func BenchmarkEntityPage(b *testing.B) {
	s, _, start := benchSite(b, entityBenchEvents)
	ctx := context.Background()
	require.NoError(b, subscriber.Migrate(ctx, s.pool, "credits", nil))
	require.NoError(b, subscriber.Migrate(ctx, s.pool, "crm", destination.Migrations("crm")))
	_, err := s.pool.Exec(ctx, `INSERT INTO credits.processed_messages (subscriber, provider, event_id, subject, stream_seq, processed_at, outcome)
		SELECT 'credits', provider, event_id, provider || '.' || event_type, stream_seq, published_at, 'processed' FROM processed_webhook_events`)
	require.NoError(b, err)
	_, err = s.pool.Exec(ctx, `INSERT INTO crm.attempts (provider, event_id, stream_seq, attempted_at, status, latency_ms, outcome, error, response)
		SELECT provider, event_id, stream_seq, published_at, 200, 12, 'delivered', '', '' FROM processed_webhook_events
		WHERE right(event_id, 1) = '0'`)
	require.NoError(b, err)
	for _, table := range []string{"credits.processed_messages", "crm.attempts", "webhook_events"} {
		_, err = s.pool.Exec(ctx, "VACUUM ANALYZE "+table)
		require.NoError(b, err)
	}
	var indexed int
	require.NoError(b, s.pool.QueryRow(ctx, `SELECT coalesce(sum(cardinality(entities)), 0) FROM webhook_events
		WHERE processing_status IS DISTINCT FROM 'SKIPPED'`).Scan(&indexed))
	b.Logf("preloaded %d archive rows (%d entity index entries) in %s", benchRows, indexed, time.Since(start).Round(time.Second))

	o := ops.New(ops.Config{Archive: store.New(s.pool), Subscribers: s.pool})
	// A cursor 50,000 events of cus_hot back.
	var deep string
	{
		var at time.Time
		require.NoError(b, s.pool.QueryRow(ctx, `SELECT created_at FROM webhook_events WHERE 'customer:cus_hot' = ANY (entities)
			AND processing_status IS DISTINCT FROM 'SKIPPED' ORDER BY created_at DESC OFFSET 50000 LIMIT 1`).Scan(&at))
		rows, err := o.ListEvents(ctx, ops.EventFilter{Entity: "cus_hot", Until: at.Add(time.Nanosecond), Limit: 1})
		require.NoError(b, err)
		require.Len(b, rows, 1)
		deep = rows[0].Cursor
	}
	cases := []struct {
		name, id, before string
		events           int
	}{
		{"hot", "cus_hot", "", 50},
		{"hot_deep", "cus_hot", deep, 50},
		{"ten", "cus_4242", "", 10},
		{"one", "obj_0500000", "", 1},
		{"none", "cus_nobody", "", 0},
	}
	for _, bc := range cases {
		b.Run("lookup_"+bc.name, func(b *testing.B) {
			for b.Loop() {
				tl, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: bc.id, Before: bc.before})
				if err != nil || len(tl.Events) != bc.events {
					b.Fatalf("%d events, %v", len(tl.Events), err)
				}
				for _, e := range tl.Events {
					if len(e.Subscribers) != 2 {
						b.Fatalf("%s: outcomes %+v", e.EventID, e.Subscribers)
					}
				}
			}
		})
	}
	sc, _ := s.login(adminToken)
	cookies := []*http.Cookie{sc}
	for _, bc := range cases {
		b.Run("page_"+bc.name, func(b *testing.B) {
			q := "/console/entity?id=" + bc.id
			if bc.before != "" {
				q += "&before=" + bc.before
			}
			for b.Loop() {
				a := s.do("GET", q, "", cookies)
				if a.status != 200 || strings.Count(a.body, `<li class="timeline-event"`) != bc.events {
					b.Fatalf("%d: %.300s", a.status, a.body)
				}
			}
		})
	}
}
