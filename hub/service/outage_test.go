package service_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// commitWithoutPublishing archives a first delivery exactly as the HTTP
// handler does, then stops: the state a hub killed between COMMIT and
// PubAck leaves behind.
func commitWithoutPublishing(t *testing.T, h *testHub, eventID string) {
	t.Helper()
	body, err := samples.Body(h.paddle.Name(), eventID, "subscription.created", nil, time.Now())
	require.NoError(t, err)
	outs, err := store.New(h.pool).Ingest(context.Background(), []hub.Delivery{{
		ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
		EventType: "subscription.created", Body: body, ReceivedAt: time.Now(),
	}})
	require.NoError(t, err)
	require.Equal(t, hub.Pending, outs[0].Status)
}

func TestCommittedButUnpublishedIsPublishedAfterRestart(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	h.stop() // the hub is down

	// Killed after COMMIT, before any publish.
	commitWithoutPublishing(t, h, "evt_crash_before_publish")
	// Killed after JetStream stored the message, before the row was marked:
	// the PubAck was lost.
	commitWithoutPublishing(t, h, "evt_crash_after_puback")
	msg := nats.NewMsg("paddle.subscription.created")
	msg.Data = []byte(`{}`)
	msg.Header = schema.Metadata{MsgID: "paddle:evt_crash_after_puback", EventID: "evt_crash_after_puback",
		Provider: "paddle", EventType: "subscription.created", ReceivedAt: time.Now()}.Header()
	ack, err := h.js.PublishMsg(context.Background(), msg)
	require.NoError(t, err)

	h.start() // restart
	h.waitPublished()
	require.Equal(t, map[string]int{
		"paddle:evt_crash_before_publish": 1,
		"paddle:evt_crash_after_puback":   1,
	}, h.streamMsgIDs())
	var seq uint64
	require.NoError(t, h.pool.QueryRow(context.Background(),
		`SELECT stream_seq FROM webhook_event_status WHERE event_id = 'evt_crash_after_puback'`).Scan(&seq))
	require.Equal(t, ack.Sequence, seq, "a duplicate PubAck records the original sequence")
}

func TestNATSOutage(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	// The stream exists once the first event is through.
	require.Equal(t, http.StatusOK, h.deliver("paddle", "evt_before_outage", "subscription.created").status)
	h.waitPublished()

	h.nats.Stop()
	for i := range 100 {
		a := h.deliver("paddle", fmt.Sprintf("evt_outage_%03d", i), "subscription.created")
		require.Equal(t, http.StatusOK, a.status, "delivery %d during the NATS outage", i)
		require.Equal(t, false, a.body["idempotent"])
	}
	require.Equal(t, 100, h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`))
	h.nats.Start()

	h.waitPublished()
	ids := h.streamMsgIDs()
	require.Len(t, ids, 101)
	for id, n := range ids {
		require.Equal(t, 1, n, "message %s", id)
	}
	require.Equal(t, 101, h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED'`))
}

func TestHubStartsWhileNATSIsDown(t *testing.T) {
	t.Parallel()
	pool, url := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	natsURL := n.URL()
	n.Stop()
	h := &testHub{t: t, pool: pool, nats: n, paddle: mustSender(t, "paddle", paddleSecret), clerk: mustSender(t, "clerk", clerkSecret)}
	h.cfg = newTestConfig(t, url, natsURL)
	h.start()
	for i := range 5 {
		require.Equal(t, http.StatusOK, h.deliver("paddle", fmt.Sprintf("evt_nonats_%d", i), "subscription.created").status)
	}
	n.Start()
	_, h.js = n.Connect(t)
	h.waitPublished()
	require.Len(t, h.streamMsgIDs(), 5)
}

func TestPostgresUnavailable(t *testing.T) {
	t.Parallel()
	h := newTestHub(t, func(c *service.Config) { c.CommitTimeout = 2 * time.Second })
	require.Equal(t, http.StatusOK, h.deliver("paddle", "evt_pg_before", "subscription.created").status)
	h.waitPublished()

	dbName := databaseName(t, h.cfg.DatabaseURL)
	admin := adminConn(t)
	setConnections(t, admin, dbName, false)

	for i := range 5 {
		a := h.deliver("paddle", fmt.Sprintf("evt_pg_down_%d", i), "subscription.created")
		require.Equal(t, http.StatusServiceUnavailable, a.status, "%v", a.body)
	}
	resp, err := http.Get(h.base + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, map[string]int{"paddle:evt_pg_before": 1}, h.streamMsgIDs(), "nothing may be published without a commit")

	setConnections(t, admin, dbName, true)
	a := h.deliver("paddle", "evt_pg_down_0", "subscription.created")
	require.Equal(t, http.StatusOK, a.status, "the provider's retry succeeds once Postgres is back")
	require.Equal(t, false, a.body["idempotent"], "the failed attempt left no trace")
	h.waitPublished()
	require.Len(t, h.streamMsgIDs(), 2)
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	h := newTestHub(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]bool{}
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("evt_shutdown_%d_%d", w, i)
				a, err := h.tryDeliver("paddle", id, "subscription.created")
				if err != nil {
					return // the listener is closed
				}
				if a == http.StatusOK {
					mu.Lock()
					accepted[id] = true
					mu.Unlock()
				}
				if i > 200 {
					return
				}
			}
		})
	}
	// Stop under load: once some deliveries are accepted, with others in
	// flight.
	hubtest.Eventually(t, 60*time.Second, "8 deliveries accepted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= 8
	})
	h.stop() // Run must return nil
	wg.Wait()
	require.NotEmpty(t, accepted)
	// Every accepted delivery was committed, and the relay drained before
	// exit: nothing is left PENDING.
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`))
	ids := h.streamMsgIDs()
	for id := range accepted {
		require.Equal(t, 1, ids["paddle:"+id], "accepted event %s must be on the stream once", id)
	}
	require.Len(t, ids, h.count(`SELECT count(*) FROM processed_webhook_events`))
}

// tryDeliver is deliver without failing the test on a transport error.
func (h *testHub) tryDeliver(name, eventID, eventType string) (int, error) {
	s := h.sender(name)
	body, err := samples.Body(s.Name(), eventID, eventType, nil, time.Now())
	if err != nil {
		return 0, err
	}
	hdr, _, err := s.Sign(eventID, "", body, time.Now())
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, h.base+"/webhooks/"+name, bytesReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func databaseName(t *testing.T, url string) string {
	cfg, err := pgx.ParseConfig(url)
	require.NoError(t, err)
	return cfg.Database
}

func adminConn(t *testing.T) *pgx.Conn {
	c, err := pgx.Connect(context.Background(), hubtest.AdminURL())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// setConnections makes a database refuse (or accept) connections and, when
// refusing, terminates the existing ones: to the hub, Postgres is down.
func setConnections(t *testing.T, admin *pgx.Conn, db string, allow bool) {
	ctx := context.Background()
	_, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{db}.Sanitize(), allow))
	require.NoError(t, err)
	if !allow {
		_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, db)
		require.NoError(t, err)
	}
}
