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
	require.NotEmpty(t, c.Owner)
	require.NotNil(t, c.Now)
	require.NotNil(t, c.Logger)
	require.EqualError(t, c.Validate(), "backfill: Store is required\nbackfill: Ingester is required")

	c.MaxBodyBytes, c.Lease = -1, -time.Second
	require.ErrorContains(t, c.Validate(), "backfill: MaxBodyBytes must be at least 1, got -1")
	require.ErrorContains(t, c.Validate(), "backfill: Lease must be positive, got -1s")
	_, err := backfill.New(backfill.Config{})
	require.ErrorContains(t, err, "backfill: Store is required")
}
