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
	"github.com/hookhub/hookhub/hub/store"
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
