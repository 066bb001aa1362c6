package store_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/chaos"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// The relay's statements run on its long-lived context: when the server
// stops answering without closing anything (its host died, a partition),
// each must still end, within relayQueryTimeout, so that the relay moves on
// to a new connection (to the new primary) instead of waiting for ever.
// The connections go through a chaos.Proxy, partitioned under them.
func TestRelayStatementsEndWhenTheServerStopsAnswering(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the relay's 10 s statement bound")
	}
	t.Parallel()
	_, dbURL := hubdb.Pool(t)
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	p, err := chaos.NewProxy("127.0.0.1:0", u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	u.Host = p.Addr()
	pool := hubtest.NewPoolOf(t, u.String(), 3)
	// Cleanups run last-in first-out: the proxy closes (and with it every
	// stalled connection) before the pool waits for its connections.
	t.Cleanup(func() { _ = p.Close() })
	st := store.New(pool)
	// Three live connections, then the partition: every byte stalls.
	ctx := context.Background()
	for range 3 {
		_, err := st.OutboxBacklog(ctx)
		require.NoError(t, err)
	}
	p.Partition()
	start := time.Now()
	calls := map[string]func() error{
		"Claim":         func() error { _, err := st.Claim(ctx, 10, time.Minute); return err },
		"RetryNow":      func() error { _, err := st.RetryNow(ctx); return err },
		"OutboxBacklog": func() error { _, err := st.OutboxBacklog(ctx); return err },
	}
	errs := make(chan error, len(calls))
	for _, call := range calls {
		go func() { errs <- call() }()
	}
	for range calls {
		select {
		case err := <-errs:
			require.Error(t, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("a relay statement still waits %s after the server stopped answering", time.Since(start).Round(time.Second))
		}
	}
	t.Logf("every relay statement ended %s after the partition", time.Since(start).Round(100*time.Millisecond))
	p.Heal()
}
