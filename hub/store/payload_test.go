package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// A payload scan selects, for every status filter, exactly the rows the
// listing of that status has whose payload matches, newest first; a
// listing refuses payload conditions.
func TestScanArchiveStatesAndMatches(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := store.New(pool)
	ctx := context.Background()
	ids := archiveScenario(t, s, pool, time.Now().Add(-time.Hour).Truncate(time.Second))
	// The older_* rows' payload is {"older": true}; every other row's is
	// {"id": "<event id>"}.
	older := map[uuid.UUID]bool{ids["older_processed"]: true, ids["older_pending"]: true, ids["older_failed"]: true}
	var any []json.RawMessage
	for _, id := range []string{"new_published", "new_outbox", "new_failed", "new_given_up", "older_processed"} {
		any = append(any, json.RawMessage(`"`+id+`"`))
	}
	byID := []hub.PayloadMatch{{Path: []string{"id"}, Any: any}}
	for _, st := range []hub.Status{"", hub.Skipped, hub.Processed, hub.Pending, hub.Failed} {
		all, err := s.ListArchive(ctx, hub.ArchiveFilter{Status: st, Limit: 100})
		require.NoError(t, err)
		var want []uuid.UUID
		for _, d := range all {
			if !older[d.ArchiveID] {
				want = append(want, d.ArchiveID)
			}
		}
		scan, err := s.ScanArchive(ctx, hub.ArchiveFilter{Status: st, Limit: 100, MaxScan: 1000, Where: byID})
		require.NoError(t, err, st)
		var got []uuid.UUID
		for _, d := range scan.Rows {
			got = append(got, d.ArchiveID)
		}
		require.Equal(t, want, got, "status %q", st)
		require.False(t, scan.Truncated)
		require.True(t, scan.Resume.IsZero())

		olderOnly, err := s.ScanArchive(ctx, hub.ArchiveFilter{Status: st, Limit: 100, MaxScan: 1000,
			Where: []hub.PayloadMatch{{Path: []string{"older"}, Any: []json.RawMessage{json.RawMessage(`true`)}}}})
		require.NoError(t, err)
		for _, d := range olderOnly.Rows {
			require.True(t, older[d.ArchiveID], "status %q: %s", st, d.EventID)
		}
	}
	_, err := s.ListArchive(ctx, hub.ArchiveFilter{Limit: 10, Where: byID})
	require.ErrorContains(t, err, "ScanArchive")
	_, err = s.ScanArchive(ctx, hub.ArchiveFilter{Limit: 10, Where: byID})
	require.Error(t, err, "a scan needs its bound")
}
