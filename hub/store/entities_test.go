package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

func withEntities(d hub.Delivery, es ...hub.Entity) hub.Delivery {
	d.Entities = es
	return d
}

func entityIndex(t *testing.T, s *store.Store, id string) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM webhook_event_entities WHERE entity_id = $1`, id).Scan(&n))
	return n
}

// Ingest archives each delivery's entities and indexes those of first
// deliveries (not duplicates, also not within a batch), once per id; an
// entity that breaks the rules or repeats is left out, never failing the
// delivery.
func TestIngestEntities(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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

	var got []string
	f := hub.ArchiveFilter{Entity: "cus_page", Limit: 3}
	for page := 0; page < 10; page++ {
		rows, err := s.ListArchive(ctx, f)
		require.NoError(t, err)
		for _, r := range rows {
			got = append(got, r.EventID)
		}
		if len(rows) < f.Limit {
			break
		}
		f.Before = rows[len(rows)-1].Cursor()
	}
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

// A purge deletes the entity index's rows of the archive rows it deletes,
// and only those.
func TestPurgeDeletesEntityRows(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
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
