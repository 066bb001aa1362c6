// Package subtest gives the subscriber tests their real components (a
// fresh Postgres database, an embedded JetStream server with the hub's
// stream) and publishes messages shaped exactly like the hub's: the
// provider's body (in the contract's shapes, package schema) as data, Nats-Msg-Id
// "<provider>:<event_id>" and the Hub-* headers of schema.Metadata.
package subtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Stream is the stream name tests use, as the hub's default.
const Stream = schema.DefaultStream

// Timeout bounds every wait in the tests: generous, the machine is shared.
const Timeout = 60 * time.Second

// Tick is how often waits poll.
const Tick = 20 * time.Millisecond

// Env is one test's Postgres database and JetStream server.
type Env struct {
	Pool  *pgxpool.Pool
	DBURL string
	NATS  *hubtest.NATS
	NC    *nats.Conn
	JS    jetstream.JetStream
}

// New creates a database and a JetStream server with the WEBHOOKS stream
// (subjects paddle.> and clerk.>, file storage), all removed when t ends.
func New(t testing.TB) *Env {
	t.Helper()
	url := hubtest.DatabaseURL(t)
	pool := hubtest.NewPool(t, url)
	n := hubtest.JetStream(t)
	nc, js := n.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     Stream,
		Subjects: []string{schema.ProviderFilter("paddle"), schema.ProviderFilter("clerk"), schema.ReplayFilter()},
		Storage:  jetstream.FileStorage,
	})
	require.NoError(t, err)
	return &Env{Pool: pool, DBURL: url, NATS: n, NC: nc, JS: js}
}

// NewParallel marks t parallel (t.Parallel) and returns New(t).
func NewParallel(t *testing.T) *Env {
	t.Helper()
	t.Parallel()
	return New(t)
}

// Connect opens a separate NATS connection (closed when t ends), for a
// subscriber the test may "kill" by closing it.
func (e *Env) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return e.NATS.Connect(t)
}

// Message is one event as the hub publishes it.
type Message struct {
	Provider   string
	EventType  string
	EventID    string
	Body       []byte
	OccurredAt time.Time
	ReceivedAt time.Time
	// MsgID overrides the Nats-Msg-Id, for re-publications under a new id.
	MsgID string
	// Entities are published as Hookhub-Entity values.
	Entities []schema.Entity
}

// Publish publishes m like the hub does and returns its stream sequence.
func (e *Env) Publish(t testing.TB, m Message) uint64 {
	t.Helper()
	subject, err := schema.Subject(m.Provider, m.EventType)
	require.NoError(t, err)
	md := schema.Metadata{
		MsgID:      schema.MsgID(m.Provider, m.EventID),
		EventID:    m.EventID,
		Provider:   m.Provider,
		EventType:  m.EventType,
		ArchiveID:  uuid.NewString(),
		ReceivedAt: m.ReceivedAt,
		OccurredAt: m.OccurredAt,
		Entities:   m.Entities,
	}
	if md.ReceivedAt.IsZero() {
		md.ReceivedAt = time.Now()
	}
	h := md.Header()
	if m.MsgID != "" {
		h.Set(schema.HeaderMsgID, m.MsgID)
		h.Set(schema.HeaderRepublish, md.MsgID)
	}
	return e.PublishRaw(t, &nats.Msg{Subject: subject, Data: m.Body, Header: h})
}

// PublishRaw publishes msg as is (for malformed messages).
func (e *Env) PublishRaw(t testing.TB, msg *nats.Msg) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	ack, err := e.JS.PublishMsg(ctx, msg, jetstream.WithExpectStream(Stream))
	require.NoError(t, err)
	require.False(t, ack.Duplicate, "message id %s already in the stream", msg.Header.Get(schema.HeaderMsgID))
	return ack.Sequence
}

// Republish publishes m again n times under new message ids
// ("<provider>:<event_id>:replay:<i>"), as an operator re-publish does.
func (e *Env) Republish(t testing.TB, m Message, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		m.MsgID = fmt.Sprintf("%s:replay:%d", schema.MsgID(m.Provider, m.EventID), i)
		e.Publish(t, m)
	}
}

// PublishReplayCopy publishes a copy of stream sequence seq for subscriber
// sub alone, as the hub's replay does: on schema.ReplaySubject, with the
// original's headers, Hub-Replay-Of and a message id of the replay run.
func (e *Env) PublishReplayCopy(t testing.TB, sub string, seq uint64, run string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	stream, err := e.JS.Stream(ctx, Stream)
	require.NoError(t, err)
	orig, err := stream.GetMsg(ctx, seq)
	require.NoError(t, err)
	md, err := schema.ParseMetadata(orig.Header)
	require.NoError(t, err)
	h := nats.Header{}
	for k, v := range orig.Header {
		h[k] = append([]string(nil), v...)
	}
	h.Set(schema.HeaderMsgID, schema.MsgID(md.Provider, md.EventID)+":replay:"+sub+":"+run)
	h.Set(schema.HeaderReplayOf, strconv.FormatUint(seq, 10))
	e.PublishRaw(t, &nats.Msg{Subject: schema.ReplaySubject(sub, orig.Subject), Data: orig.Data, Header: h})
}

// Rewind resets the durable consumer to the stream's first message, as an
// operator replay does: every message is delivered again.
func (e *Env) Rewind(t testing.TB, consumer string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	_, err := e.JS.ResetConsumerToSequence(ctx, Stream, consumer, 1)
	require.NoError(t, err)
}

// ConsumerInfo returns the durable consumer's state.
func (e *Env) ConsumerInfo(t testing.TB, consumer string) *jetstream.ConsumerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	c, err := e.JS.Consumer(ctx, Stream, consumer)
	require.NoError(t, err)
	info, err := c.Info(ctx)
	require.NoError(t, err)
	return info
}

// WaitAllAcked waits until the consumer has delivered and acked every
// message of the stream.
func (e *Env) WaitAllAcked(t testing.TB, consumer string) {
	t.Helper()
	require.Eventually(t, func() bool {
		info := e.ConsumerInfo(t, consumer)
		return info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0 &&
			info.AckFloor.Stream == info.Delivered.Stream
	}, Timeout, Tick)
}

// Count runs a SELECT count(*) query.
func (e *Env) Count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.Pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// PaddleBody returns a Paddle Billing notification body (the contract's
// schema.PaddleEvent) carrying data.
func PaddleBody(t testing.TB, eventID, eventType string, occurredAt time.Time, data any) []byte {
	t.Helper()
	d, err := json.Marshal(data)
	require.NoError(t, err)
	b, err := json.Marshal(schema.PaddleEvent{EventID: eventID, EventType: eventType,
		OccurredAt: occurredAt.UTC().Truncate(time.Microsecond), NotificationID: "ntf_" + eventID, Data: d})
	require.NoError(t, err)
	return b
}

// PaddleSubscription returns a Paddle subscription.* event.
func PaddleSubscription(t testing.TB, eventID, eventType string, occurredAt time.Time, subID, customerID string, custom map[string]any) Message {
	t.Helper()
	status := "active"
	if eventType == schema.PaddleSubscriptionCanceled {
		status = "canceled"
	}
	data := map[string]any{
		"id":            subID,
		"status":        status,
		"customer_id":   customerID,
		"currency_code": "USD",
		"custom_data":   custom,
	}
	return Message{
		Provider:   "paddle",
		EventType:  eventType,
		EventID:    eventID,
		Body:       PaddleBody(t, eventID, eventType, occurredAt, data),
		OccurredAt: occurredAt,
	}
}

// ClerkUserCreated returns a Clerk user.created event (the event id is the
// svix-id, as the hub sets it).
func ClerkUserCreated(t testing.TB, svixID, userID, email string, at time.Time) Message {
	t.Helper()
	emailID := "idn_" + userID
	data := map[string]any{
		"id":                       userID,
		"object":                   "user",
		"first_name":               "Ada",
		"last_name":                "Lovelace",
		"primary_email_address_id": emailID,
		"email_addresses": []any{
			map[string]any{"id": "idn_other", "email_address": "other@example.com"},
			map[string]any{"id": emailID, "email_address": email},
		},
	}
	if email == "" {
		data["primary_email_address_id"] = nil
		data["email_addresses"] = []any{}
	}
	d, err := json.Marshal(data)
	require.NoError(t, err)
	body, err := json.Marshal(schema.ClerkEvent{Type: schema.ClerkUserCreated, Object: "event",
		Timestamp: at.UnixMilli(), InstanceID: "ins_subtest", Data: d})
	require.NoError(t, err)
	return Message{Provider: "clerk", EventType: schema.ClerkUserCreated, EventID: svixID, Body: body, OccurredAt: at.Truncate(time.Millisecond)}
}

// Logger returns a logger for tests: quiet unless HOOKHUB_TEST_LOG is set.
func Logger(t testing.TB) *slog.Logger {
	if os.Getenv("HOOKHUB_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Config returns a subscriber.Config on env with test-friendly timings:
// short backoff, AckWait and redrive interval.
func (e *Env) Config(t testing.TB, name string) subscriber.Config {
	return subscriber.Config{
		Name:            name,
		Pool:            e.Pool,
		JetStream:       e.JS,
		Stream:          Stream,
		Concurrency:     4,
		MaxDeliver:      3,
		Backoff:         []time.Duration{50 * time.Millisecond, 100 * time.Millisecond},
		AckWait:         2 * time.Second,
		ShutdownTimeout: 30 * time.Second,
		RedriveInterval: 50 * time.Millisecond,
		Logger:          Logger(t),
	}
}

// OneDelivery makes cfg's AckWait Timeout, for a test that counts
// attempts: on a loaded machine a message pulled and not yet handled (or
// whose InProgress is late) may wait past the short default AckWait, and
// JetStream would deliver it again, counting one more attempt.
func OneDelivery(cfg *subscriber.Config) { cfg.AckWait = Timeout }

// Running is a subscriber running in the background.
type Running struct {
	Sub    *subscriber.Subscriber
	cancel context.CancelFunc
	done   chan error
	err    atomic.Pointer[error]
}

// Start runs sub until t ends (or Stop) and waits until it consumes.
func Start(t testing.TB, sub *subscriber.Subscriber) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{Sub: sub, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- sub.Run(ctx) }()
	t.Cleanup(func() { _ = r.Stop() })
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(Tick)
	defer tick.Stop()
	for sub.Healthy() != nil {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("subscriber stopped while starting: %v", err)
		case <-deadline.C:
			t.Fatalf("subscriber not consuming after %s: %v", Timeout, sub.Healthy())
		case <-tick.C:
		}
	}
	return r
}

// Stop cancels the subscriber and returns what Run returned.
func (r *Running) Stop() error {
	r.cancel()
	return r.Wait()
}

// Wait waits for Run to return (without cancelling it) and returns its
// error; later calls return the same error.
func (r *Running) Wait() error {
	if p := r.err.Load(); p != nil {
		return *p
	}
	select {
	case err := <-r.done:
		r.err.Store(&err)
		return err
	case <-time.After(2 * Timeout):
		return errors.New("subtest: subscriber did not stop")
	}
}

// settled counts the deliveries sub has settled without failing.
func settled(sub *subscriber.Subscriber) uint64 {
	s := sub.Stats()
	return s.Processed + s.SkippedDuplicate + s.SkippedStale
}

// DeliverTenTimes delivers every message to the running sub 10 times: the
// original publication, 4 re-publications under new Nats-Msg-Ids (as an
// operator re-publish does), then a rewind of the durable consumer to the
// stream's start, which delivers those 5 stream messages again. The stream
// must hold only these messages. It returns once all are settled and acked.
func (e *Env) DeliverTenTimes(t testing.TB, sub *subscriber.Subscriber, msgs ...Message) {
	t.Helper()
	base := settled(sub)
	for _, m := range msgs {
		e.Publish(t, m)
	}
	for _, m := range msgs {
		e.Republish(t, m, 4)
	}
	n := uint64(len(msgs))
	require.Eventually(t, func() bool { return settled(sub)-base == 5*n }, Timeout, Tick, "first 5 deliveries")
	e.WaitAllAcked(t, sub.Name())
	e.Rewind(t, sub.Name())
	require.Eventually(t, func() bool { return settled(sub)-base == 10*n }, Timeout, Tick, "10 deliveries")
	e.WaitAllAcked(t, sub.Name())
	require.Zero(t, sub.Stats().Failed)
}
