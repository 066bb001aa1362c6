package store_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// newStore is a store on a database of the calling test's own (the hub's
// schema), and the pool it runs on.
func newStore(t *testing.T) (*store.Store, *pgxpool.Pool) {
	t.Helper()
	pool, _ := hubdb.Pool(t)
	return store.New(pool), pool
}

// pageIDs reads a listing a page of limit rows at a time: next reads the
// page after the row last (nil: the first page), id names a row. It stops
// at a short page and fails past ten pages.
func pageIDs[R any](t *testing.T, limit int, next func(last *R) ([]R, error), id func(R) string) []string {
	t.Helper()
	var ids []string
	var last *R
	for range 10 {
		page, err := next(last)
		require.NoError(t, err)
		for _, r := range page {
			ids = append(ids, id(r))
		}
		if len(page) < limit {
			return ids
		}
		last = &page[len(page)-1]
	}
	t.Fatalf("more than ten pages of %d: %v", limit, ids)
	return nil
}
