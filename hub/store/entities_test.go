package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

func withEntities(d hub.Delivery, es ...hub.Entity) hub.Delivery {
	d.Entities = es
	return d
}

// entityIndex is how many archive rows the entity look-up finds for id.
func entityIndex(t *testing.T, s *store.Store, id string) int {
	t.Helper()
	rows, err := s.ListArchive(context.Background(), hub.ArchiveFilter{Entity: id, Limit: 1000})
	require.NoError(t, err)
	return len(rows)
}

// entityPages reads the archive's events of entity, newest first, limit a
// page, each page after the last row of the one before.
func entityPages(t *testing.T, s *store.Store, entity string, limit int) []string {
	t.Helper()
	f := hub.ArchiveFilter{Entity: entity, Limit: limit}
	return pageIDs(t, f.Limit, func(last *hub.ArchivedDelivery) ([]hub.ArchivedDelivery, error) {
		if last != nil {
			f.Before = last.Cursor()
		}
		return s.ListArchive(context.Background(), f)
	}, func(r hub.ArchivedDelivery) string { return r.EventID })
}

// Ingest archives each delivery's entities and indexes those of first
// deliveries (not duplicates, also not within a batch), once per id; an
// entity that breaks the rules or repeats is left out, never failing the
// delivery.
func TestIngestEntities(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	cus := hub.Entity{Kind: "customer", ID: "cus_1"}
	sub := hub.Entity{Kind: "subscription", ID: "sub:with:colons"}
	first := withEntities(delivery("evt_1", `{}`), cus, sub, cus,
		hub.Entity{Kind: "user", ID: "cus_1"},    // the same id, another kind: archived, indexed once
		hub.Entity{Kind: "Bad:Kind", ID: "x"},    // kind breaks the rules
		hub.Entity{Kind: "customer", ID: ""},     // empty id
		hub.Entity{Kind: "customer", ID: "a\nb"}, // control character
		hub.Entity{Kind: "customer", ID: string(make([]byte, hub.MaxEntityIDLen+1))})
	dup := withEntities(delivery("evt_1", `{}`), cus)
	failed := withEntities(delivery("evt_2", `{}`), cus)
	failed.Error = "cannot publish: bad type"
	plain := delivery("evt_3", `{}`)
	outs, err := s.Ingest(ctx, []hub.Delivery{first, dup, failed, plain})
	require.NoError(t, err)
	require.Equal(t, []hub.Status{hub.Pending, hub.Skipped, hub.Failed, hub.Pending},
		[]hub.Status{outs[0].Status, outs[1].Status, outs[2].Status, outs[3].Status})
	// A later duplicate in its own batch.
	_, err = s.Ingest(ctx, []hub.Delivery{withEntities(delivery("evt_1", `{}`), cus)})
	require.NoError(t, err)

	require.Equal(t, 2, entityIndex(t, s, "cus_1")) // evt_1 and evt_2
	require.Equal(t, 1, entityIndex(t, s, "sub:with:colons"))
	var archived []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT entities FROM webhook_events WHERE id = $1`, first.ArchiveID).Scan(&archived))
	require.Equal(t, []string{"customer:cus_1", "subscription:sub:with:colons", "user:cus_1"}, archived)
	var none []string
	require.NoError(t, pool.QueryRow(ctx, `SELECT entities FROM webhook_events WHERE id = $1`, plain.ArchiveID).Scan(&none))
	require.Nil(t, none)

	rows, err := s.ListArchive(ctx, hub.ArchiveFilter{Entity: "sub:with:colons", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, []hub.Entity{cus, sub, {Kind: "user", ID: "cus_1"}}, rows[0].Entities)
}

// A listing by entity is newest first, pages with the archive's cursor,
// combines with the other filters, and finds nothing for an unknown id.
func TestListArchiveByEntity(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	start := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	cus := hub.Entity{Kind: "customer", ID: "cus_page"}
	var ds []hub.Delivery
	for i := range 7 {
		d := withEntities(deliveryAt("evt_"+string(rune('a'+i)), start.Add(time.Duration(i)*time.Minute)), cus)
		if i%2 == 1 {
			d.Provider = "stripe"
		}
		ds = append(ds, d)
	}
	// Same received time, ids break the tie.
	ds[6].ReceivedAt = ds[5].ReceivedAt
	ds = append(ds, deliveryAt("evt_other", start.Add(3*time.Minute)))
	_, err := s.Ingest(ctx, ds)
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{{ArchiveID: ds[0].ArchiveID, Seq: 1}}))

	got := entityPages(t, s, "cus_page", 3)
	want := []string{"evt_g", "evt_f", "evt_e", "evt_d", "evt_c", "evt_b", "evt_a"}
	if ds[6].ArchiveID.String() < ds[5].ArchiveID.String() {
		want[0], want[1] = want[1], want[0]
	}
	require.Equal(t, want, got)

	for _, c := range []struct {
		name string
		f    hub.ArchiveFilter
		want int
	}{
		{"provider", hub.ArchiveFilter{Entity: "cus_page", Provider: "stripe"}, 3},
		{"processed", hub.ArchiveFilter{Entity: "cus_page", Status: hub.Processed}, 1},
		{"pending", hub.ArchiveFilter{Entity: "cus_page", Status: hub.Pending}, 6},
		{"skipped", hub.ArchiveFilter{Entity: "cus_page", Status: hub.Skipped}, 0},
		{"since", hub.ArchiveFilter{Entity: "cus_page", Since: start.Add(4 * time.Minute)}, 3},
		{"until", hub.ArchiveFilter{Entity: "cus_page", Until: start.Add(time.Minute)}, 1},
		{"unknown", hub.ArchiveFilter{Entity: "cus_nobody"}, 0},
		{"case-sensitive", hub.ArchiveFilter{Entity: "CUS_PAGE"}, 0},
	} {
		c.f.Limit = 100
		rows, err := s.ListArchive(ctx, c.f)
		require.NoError(t, err, c.name)
		require.Len(t, rows, c.want, c.name)
	}
}

// A purge deletes the archive rows it deletes from the entity look-up,
// and only those.
func TestPurgeDeletesEntityRows(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	cus := hub.Entity{Kind: "customer", ID: "cus_purge"}
	old := withEntities(deliveryAt("evt_old", time.Now().Add(-48*time.Hour)), cus, hub.Entity{Kind: "user", ID: "usr_1"})
	oldDup := withEntities(deliveryAt("evt_old", time.Now().Add(-47*time.Hour)), cus)
	pending := withEntities(deliveryAt("evt_pending", time.Now().Add(-48*time.Hour)), cus)
	young := withEntities(delivery("evt_young", `{}`), cus)
	_, err := s.Ingest(ctx, []hub.Delivery{old, oldDup, pending, young})
	require.NoError(t, err)
	require.NoError(t, s.RecordPublished(ctx, []hub.PublishResult{
		{ArchiveID: old.ArchiveID, Seq: 1}, {ArchiveID: young.ArchiveID, Seq: 2}}))
	require.Equal(t, 3, entityIndex(t, s, "cus_purge"))

	deleted, _ := purgeAll(t, s, time.Now().Add(-24*time.Hour), 1, false)
	require.Equal(t, int64(2), deleted) // evt_old and its duplicate; evt_pending waits
	require.Equal(t, 2, entityIndex(t, s, "cus_purge"))
	require.Zero(t, entityIndex(t, s, "usr_1"))
	rows, err := s.ListArchive(ctx, hub.ArchiveFilter{Entity: "cus_purge", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 2)
}

// ImportPublished archives and indexes entities as Ingest does.
func TestImportPublishedEntities(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	cus := hub.Entity{Kind: "customer", ID: "cus_imp"}
	first := withEntities(delivery("evt_imp", `{}`), cus, hub.Entity{Kind: "user", ID: "cus_imp"})
	dup := withEntities(delivery("evt_imp", `{}`), cus)
	_, _, err := s.ImportPublished(ctx, slices.Values([]store.ImportedEvent{{First: first, Duplicates: []hub.Delivery{dup}, StreamSeq: 9}}))
	require.NoError(t, err)
	require.Equal(t, 1, entityIndex(t, s, "cus_imp"))
	rows, err := s.ListArchive(ctx, hub.ArchiveFilter{Entity: "cus_imp", Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, hub.Processed, rows[0].Status)
	require.Equal(t, []hub.Entity{cus, {Kind: "user", ID: "cus_imp"}}, rows[0].Entities)
}

// legacyIndex writes the rows a hub of the previous release (migration
// 00002's layout) writes in webhook_event_entities beside d's archive row:
// one per distinct entity id.
func legacyIndex(t *testing.T, pool *pgxpool.Pool, d hub.Delivery) {
	t.Helper()
	for _, e := range d.Entities {
		_, err := pool.Exec(context.Background(), `INSERT INTO webhook_event_entities (entity_id, created_at, archive_id)
			VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, e.ID, d.ReceivedAt, d.ArchiveID)
		require.NoError(t, err)
	}
}

// During a rolling deploy the archive holds events written by hubs of
// the previous release (their entities on the archive row and in
// webhook_event_entities) beside this release's (on the archive row only):
// the look-up finds each once, in the archive's order, across pages and
// filters, and a purge deletes the archive rows of both with the previous
// release's index rows, and only those.
func TestEntityLookupMixedLayouts(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := context.Background()
	start := time.Now().Add(-72 * time.Hour).Truncate(time.Millisecond)
	cus := hub.Entity{Kind: "customer", ID: "cus_mixed"}
	var ds []hub.Delivery
	for i := range 8 {
		d := withEntities(deliveryAt(fmt.Sprintf("evt_%d", i), start.Add(time.Duration(i)*time.Hour)), cus,
			hub.Entity{Kind: "user", ID: "cus_mixed"}, hub.Entity{Kind: "subscription", ID: fmt.Sprintf("sub_%d", i%2)})
		ds = append(ds, d)
	}
	_, err := s.Ingest(ctx, ds)
	require.NoError(t, err)
	for i := 0; i < len(ds); i += 2 { // the previous release's hubs wrote the even ones
		legacyIndex(t, pool, ds[i])
	}
	got := entityPages(t, s, "cus_mixed", 3)
	require.Equal(t, []string{"evt_7", "evt_6", "evt_5", "evt_4", "evt_3", "evt_2", "evt_1", "evt_0"}, got)
	require.Equal(t, 4, entityIndex(t, s, "sub_1"))

	// Published, then purged up to evt_3: both layouts' rows go.
	var published []hub.PublishResult
	for i, d := range ds {
		published = append(published, hub.PublishResult{ArchiveID: d.ArchiveID, Seq: uint64(i + 1)})
	}
	require.NoError(t, s.RecordPublished(ctx, published))
	deleted, _ := purgeAll(t, s, start.Add(3*time.Hour+time.Minute), 2, false)
	require.Equal(t, int64(4), deleted)
	require.Equal(t, 4, entityIndex(t, s, "cus_mixed"))
	require.Equal(t, 2, entityIndex(t, s, "sub_0"))
	rows, err := pool.Query(ctx, `SELECT DISTINCT a.event_id FROM webhook_event_entities x JOIN webhook_events a ON a.id = x.archive_id ORDER BY 1`)
	require.NoError(t, err)
	legacy, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"evt_4", "evt_6"}, legacy)
	var orphans int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_event_entities x
		WHERE NOT EXISTS (SELECT 1 FROM webhook_events a WHERE a.id = x.archive_id)`).Scan(&orphans))
	require.Zero(t, orphans, "the purged rows' index rows are deleted with them")
}

// A payload scan by entity (ScanArchive) keeps the first deliveries that
// name the entity in any slot, under any kind, and no duplicate.
func TestScanArchiveByEntity(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	other := hub.Entity{Kind: "subscription", ID: "sub_scan"}
	a := withEntities(delivery("evt_a", `{"x":1}`), other, hub.Entity{Kind: "customer", ID: "cus_scan"})
	b := withEntities(delivery("evt_b", `{"x":2}`), hub.Entity{Kind: "user", ID: "cus_scan"})
	c := withEntities(delivery("evt_c", `{"x":1}`), other)
	aDup := withEntities(delivery("evt_a", `{"x":1}`), hub.Entity{Kind: "customer", ID: "cus_scan"})
	d := withEntities(delivery("evt_d", `{"x":1}`), hub.Entity{Kind: "user", ID: "cus_scan"})
	_, err := s.Ingest(ctx, []hub.Delivery{a, b, c, aDup, d})
	require.NoError(t, err)
	x1 := []hub.PayloadMatch{{Path: []string{"x"}, Any: []json.RawMessage{json.RawMessage(`1`)}}}
	for _, st := range []hub.Status{"", hub.Pending, hub.Skipped} {
		scan, err := s.ScanArchive(ctx, hub.ArchiveFilter{Entity: "cus_scan", Status: st, Limit: 100, MaxScan: 1000, Where: x1})
		require.NoError(t, err)
		var got []string
		for _, r := range scan.Rows {
			got = append(got, r.EventID)
		}
		want := []string{"evt_d", "evt_a"}
		if st == hub.Skipped {
			want = nil
		}
		require.Equal(t, want, got, st)
	}
}
