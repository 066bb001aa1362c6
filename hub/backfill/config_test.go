package backfill_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/backfill"
)

func TestConfigDefaultsThenValidate(t *testing.T) {
	c := backfill.Config{}.WithDefaults()
	require.Equal(t, hub.DefaultMaxBodyBytes, c.MaxBodyBytes)
	require.Equal(t, backfill.DefaultLease, c.Lease)
	require.Equal(t, backfill.DefaultMaxPages, c.MaxPages)
	require.Equal(t, backfill.DefaultMaxEvents, c.MaxEvents)
	require.Equal(t, backfill.DefaultMaxRunTime, c.MaxRunTime)
	require.NotEmpty(t, c.Owner)
	require.NotNil(t, c.Now)
	require.NotNil(t, c.Logger)
	require.EqualError(t, c.Validate(), "backfill: Store is required\nbackfill: Ingester is required")

	c.MaxBodyBytes, c.Lease = -1, -time.Second
	c.MaxPages, c.MaxEvents, c.MaxRunTime = -1, -2, -time.Minute
	require.ErrorContains(t, c.Validate(), "backfill: MaxBodyBytes must be at least 1, got -1")
	require.ErrorContains(t, c.Validate(), "backfill: Lease must be at least 3s, got -1s")
	require.ErrorContains(t, c.Validate(), "backfill: MaxPages must be at least 1, got -1")
	require.ErrorContains(t, c.Validate(), "backfill: MaxEvents must be at least 1, got -2")
	require.ErrorContains(t, c.Validate(), "backfill: MaxRunTime must be positive, got -1m0s")
	_, err := backfill.New(backfill.Config{})
	require.ErrorContains(t, err, "backfill: Store is required")
}
