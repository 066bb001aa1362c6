package ops_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/subscribers/destination"
	"github.com/hookhub/hookhub/subscribers/destination/deststate"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// TestShowEventRedactsAttempts: what a receiver echoed into the attempt
// log (a bearer credential, a Slack-style path token, a query token, a
// signature), in a row written by this version or an older one, never
// reaches the event view nor the entity timeline that the admin API and
// the console serve to every role.
func TestShowEventRedactsAttempts(t *testing.T) {
	t.Parallel()
	pool, _ := hubtest.Pool(t)
	o := newOps(t, pool, nil)
	ctx := context.Background()
	cus := hub.Entity{Kind: "customer", ID: "cus_red"}
	_, err := store.New(pool).Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "stripe", EventID: "evt_red",
		EventType: "customer.updated", Body: []byte(`{}`), ReceivedAt: time.Now(), Entities: []hub.Entity{cus}}})
	require.NoError(t, err)
	require.NoError(t, subscriber.Migrate(ctx, pool, "billing", destination.Migrations("billing")))
	const (
		bearer = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig"
		path   = "a1B2c3D4e5F6g7H8i9J0k1L2"
		query  = "qs3cr3tt0ken99"
		sig    = "K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="
	)
	echo := `{"authorization":"Bearer ` + bearer + `","url":"https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/` + path + `?access=` + query + `","webhook-signature":"v1,` + sig + `"}`
	require.NoError(t, deststate.RecordAttempt(ctx, pool, deststate.Attempt{Destination: "billing", Provider: "stripe", EventID: "evt_red",
		At: time.Now().Add(-time.Minute), Status: 500, Outcome: deststate.OutcomeFailed, Response: echo, Error: "HTTP 500: Bearer " + bearer}))
	// A row as an older version wrote it, unredacted.
	_, err = pool.Exec(ctx, `INSERT INTO billing.attempts (provider, event_id, attempted_at, status, latency_ms, outcome, error, response)
		VALUES ('stripe', 'evt_red', now(), 500, 1, 'failed', '', $1)`, echo)
	require.NoError(t, err)

	d, err := o.ShowEvent(ctx, "stripe:evt_red")
	require.NoError(t, err)
	tl, err := o.EntityTimeline(ctx, ops.TimelineQuery{Entity: "cus_red", Limit: 5})
	require.NoError(t, err)
	for what, v := range map[string]any{"event view": d, "entity timeline": tl} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		require.Contains(t, string(b), "authorization", "%s shows the attempts", what)
		for _, secret := range []string{bearer, path, query, sig[:20]} {
			require.False(t, strings.Contains(string(b), secret), "%s shows %q: %s", what, secret, b)
		}
	}
}
