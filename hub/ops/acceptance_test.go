package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// system is the whole thing in one test: the hub, the real credits service
// and a "flaky" subscriber whose handler can be broken and fixed, against
// real Postgres and JetStream.
type system struct {
	*testhub.Hub
	t      *testing.T
	ops    *ops.Ops
	broken atomic.Bool
	subs   map[string]*subscriber.Subscriber
}

const paddleSecret = "pdl_ntfset_01opstest00000000000000000000_OpsTestSecret00000000000"

// halfDeadLettered delivers evt_ops_0 to evt_ops_<events-1> to credits
// and to the flaky subscriber, broken (it dead-letters the odd ones), and
// waits until both settled them.
func (s *system) halfDeadLettered(events int) {
	s.t.Helper()
	s.broken.Store(true)
	s.startFlaky("flaky")
	s.startCredits()
	for i := range events {
		require.False(s.t, s.deliver(fmt.Sprintf("evt_ops_%d", i)))
	}
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM flaky.effects`) == events/2 && s.Count(`SELECT count(*) FROM flaky.dead_letters`) == events/2
	}, "half the events dead-lettered")
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM credits.ledger`) == events }, "credits processed everything")
}

func newSystem(t *testing.T) *system {
	t.Helper()
	hub := testhub.New(t, service.Deps{}, func(c *service.Config) { c.SetSecrets("paddle", paddleSecret) })
	return &system{Hub: hub, t: t, ops: newOps(t, hub.Pool(), hub.JetStream()), subs: map[string]*subscriber.Subscriber{}}
}

// startSubscriber runs a subscriber until the test ends.
func (s *system) startSubscriber(name string, register func(*subscriber.Subscriber), migrations fs.FS) *subscriber.Subscriber {
	s.t.Helper()
	cfg := subscriber.Config{Name: name, Pool: s.Pool(), JetStream: s.JetStream(), MaxDeliver: 2,
		Backoff: []time.Duration{50 * time.Millisecond}, AckWait: 2 * time.Second, RedriveInterval: 100 * time.Millisecond}
	if migrations != nil {
		cfg.Migrations = migrations
	}
	sub, err := subscriber.New(cfg)
	require.NoError(s.t, err)
	register(sub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	s.t.Cleanup(func() {
		cancel()
		require.NoError(s.t, <-done)
	})
	require.Eventually(s.t, func() bool { return sub.Healthy() == nil }, 20*time.Second, 10*time.Millisecond)
	s.subs[name] = sub
	return sub
}

// startFlaky starts a subscriber that records one effect row per handler
// run, and fails on odd-numbered events while broken is set.
func (s *system) startFlaky(name string) {
	migrations := fstest.MapFS{"00001_effects.sql": {Data: []byte(fmt.Sprintf(
		"-- +goose Up\nCREATE TABLE %[1]s.effects (event_id TEXT NOT NULL);\n-- +goose Down\nDROP TABLE %[1]s.effects;\n", name))}}
	s.startSubscriber(name, func(sub *subscriber.Subscriber) {
		sub.Handle("paddle.subscription.created", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
			var n int
			_, _ = fmt.Sscanf(ev.EventID, "evt_ops_%d", &n)
			if s.broken.Load() && n%2 == 1 {
				return fmt.Errorf("bug: cannot handle %s", ev.EventID)
			}
			_, err := tx.Exec(ctx, "INSERT INTO "+name+".effects (event_id) VALUES ($1)", ev.EventID)
			return err
		})
	}, migrations)
}

func (s *system) startCredits() {
	s.startSubscriber(credits.Name, func(sub *subscriber.Subscriber) {
		require.NoError(s.t, credits.Register(sub, credits.Options{}))
	}, credits.Migrations)
}

// deliver signs and POSTs a Paddle subscription.created event, as Paddle
// would, and returns whether the hub called it a duplicate.
func (s *system) deliver(eventID string) bool {
	s.t.Helper()
	return s.Deliver("paddle", eventID, "subscription.created").Idempotent()
}

// A subscriber whose handler failed for some events (dead-lettered), then
// fixed: a replay of the whole range processes every event exactly once,
// adds nothing for those that had succeeded, and leaves the other
// subscribers untouched.
func TestReplayAfterFix(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	const events = 10
	s.halfDeadLettered(events)
	creditsBefore := s.subs["credits"].Stats()

	ctx := context.Background()
	dry, err := s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "flaky", Since: time.Now().Add(-time.Hour), DryRun: true})
	require.NoError(t, err)
	require.Equal(t, events, dry.Matched)
	require.Equal(t, events/2, dry.Skipped)
	require.Equal(t, events/2, dry.ToProcess, "a dry run says what a run would process")

	s.broken.Store(false) // the fix
	res, err := s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "flaky", Since: time.Now().Add(-time.Hour), Wait: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, ops.ReplayResult{RunID: res.RunID, Matched: events, Delivered: events, Processed: events / 2, Skipped: events / 2,
		ToProcess: events / 2, FirstSeq: res.FirstSeq, LastSeq: res.LastSeq}, res)

	for i := range events {
		require.Equal(t, 1, s.Count(`SELECT count(*) FROM flaky.effects WHERE event_id = $1`, fmt.Sprintf("evt_ops_%d", i)), "event %d", i)
	}
	require.Equal(t, events, s.Count(`SELECT count(*) FROM credits.ledger`))
	require.Equal(t, creditsBefore, s.subs["credits"].Stats(), "the other subscriber saw nothing of the replay")

	// Operator mistakes get clear errors.
	_, err = s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "nobody", Since: time.Now().Add(-time.Hour), Wait: time.Second})
	require.ErrorIs(t, err, ops.ErrUnknownSubscriber)
	_, err = s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "flaky", Since: time.Now().Add(time.Hour), Wait: time.Second})
	require.ErrorIs(t, err, ops.ErrNotFound)
	_, err = s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "flaky", Since: time.Now().Add(-time.Hour), Subject: "clerk.user.created", Wait: time.Second})
	require.ErrorIs(t, err, ops.ErrInvalid)
	// A replay at a rate that would take longer than the caller waits is
	// refused before anything is published.
	_, err = s.ops.Replay(ctx, ops.ReplayRequest{Subscriber: "flaky", Since: time.Now().Add(-time.Hour), Wait: time.Second,
		Rate: 1, PublishWithin: 5 * time.Second})
	var input *ops.InputError
	require.ErrorAs(t, err, &input)
	require.Equal(t, "rate", input.Field)
	require.Contains(t, input.Reason, "10 events")
}

// The stream purged: republishing the range gives a new subscriber every
// event once, and the others, who had processed them, no second side
// effect. Then an archive purge: a provider retry is still a duplicate.
func TestRepublishAfterStreamLossAndArchivePurge(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.startCredits()
	const events = 8
	for i := range events {
		s.deliver(fmt.Sprintf("evt_ops_%d", i))
	}
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM credits.ledger`) == events }, "credits processed everything")
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED'`) == events
	}, "all published")

	ctx := context.Background()
	st, err := s.JetStream().Stream(ctx, schema.DefaultStream)
	require.NoError(t, err)
	require.NoError(t, st.Purge(ctx)) // the stream lost its messages

	s.startFlaky("late") // a subscriber that never saw them
	rec, err := s.ops.Reconcile(ctx, time.Now().Add(-time.Hour), time.Time{})
	require.NoError(t, err)
	require.Equal(t, events, rec.Checked)
	require.Len(t, rec.Missing, events, "the stream lost every message")
	var ids []string
	for _, m := range rec.Missing {
		ids = append(ids, m.ArchiveID)
	}
	res, err := s.ops.Republish(ctx, ops.RepublishFilter{Since: time.Now().Add(-time.Hour), ArchiveIDs: ids})
	require.NoError(t, err)
	require.Equal(t, events, res.Matched)
	require.Equal(t, events, res.Published)
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM late.effects`) == events }, "the late subscriber got every event")
	s.Eventually(func() bool { return s.subs["credits"].Stats().SkippedDuplicate == events }, "credits skipped the copies")
	require.Equal(t, events, s.Count(`SELECT count(*) FROM credits.ledger`), "no second side effect")
	rec, err = s.ops.Reconcile(ctx, time.Now().Add(-time.Hour), time.Time{})
	require.NoError(t, err)
	require.Empty(t, rec.Missing, "the republished copies count as held")
	for i := range events {
		require.Equal(t, 1, s.Count(`SELECT count(*) FROM late.effects WHERE event_id = $1`, fmt.Sprintf("evt_ops_%d", i)))
	}

	// Purge the whole archive (received two days ago, as far as the purge
	// can tell); a provider retries a purged event.
	_, err = s.Pool().Exec(ctx, `UPDATE webhook_events SET created_at = created_at - interval '2 days'`)
	require.NoError(t, err)
	purged, err := s.ops.Purge(ctx, ops.PurgeRequest{OlderThan: ops.MinPurgeAge, BatchSize: 3})
	require.NoError(t, err)
	require.EqualValues(t, events, purged.Rows)
	require.True(t, s.deliver("evt_ops_3"), "a retry after the purge is still a duplicate")
	require.Equal(t, events, s.Count(`SELECT count(*) FROM processed_webhook_events`))
}

// An event delivered 10 times: show lists the 10 deliveries and what each
// subscriber did with it.
func TestShowEventDeliveredTenTimes(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	s.startCredits()
	s.broken.Store(true)
	s.startFlaky("flaky")
	for i := range 10 {
		require.Equal(t, i > 0, s.deliver("evt_ops_1")) // odd: flaky fails on it
	}
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM credits.processed_messages`) == 1 && s.Count(`SELECT count(*) FROM flaky.dead_letters`) == 1
	}, "both subscribers settled")
	s.waitPublished(1) // its publication is recorded shortly after the subscribers may have it
	d, err := s.ops.ShowEvent(context.Background(), "paddle:evt_ops_1")
	require.NoError(t, err)
	require.Len(t, d.Deliveries, 10)
	skipped := 0
	for _, dl := range d.Deliveries {
		if dl.Status == "SKIPPED" {
			skipped++
		}
	}
	require.Equal(t, 9, skipped)
	require.Equal(t, "PROCESSED", d.Status)
	outcomes := map[string]string{}
	for _, so := range d.Subscribers {
		outcomes[so.Subscriber] = so.Outcome
	}
	require.Equal(t, map[string]string{"credits": "processed", "flaky": "dead_lettered"}, outcomes)

	// Redrive after the fix: processed once.
	s.broken.Store(false)
	rd, err := s.ops.Redrive(context.Background(), ops.RedriveRequest{Subscriber: "flaky", All: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, rd.Requested)
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM flaky.effects`) == 1 }, "redriven")
	d, err = s.ops.ShowEvent(context.Background(), "paddle:evt_ops_1")
	require.NoError(t, err)
	for _, so := range d.Subscribers {
		if so.Subscriber == "flaky" {
			require.Equal(t, "processed_after_redrive", so.Outcome)
		}
	}
	_, err = s.ops.DeadLetters(context.Background(), "nobody")
	require.ErrorIs(t, err, ops.ErrUnknownSubscriber)
}

// idleSubscriber gives a subscriber its tables and a durable consumer on
// filters (as the library makes them, replay subjects included) without
// running it: a subscriber that takes those subjects but is not consuming
// right now. Without filters it gets its tables only (no consumer).
func (s *system) idleSubscriber(name string, filters ...string) {
	s.t.Helper()
	ctx := context.Background()
	require.NoError(s.t, subscriber.Migrate(ctx, s.Pool(), name, nil))
	if len(filters) == 0 {
		return
	}
	all := slices.Clone(filters)
	for _, f := range filters {
		all = append(all, schema.ReplaySubject(name, f))
	}
	_, err := s.JetStream().CreateOrUpdateConsumer(ctx, schema.DefaultStream, jetstream.ConsumerConfig{Durable: name,
		DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy, FilterSubjects: all})
	require.NoError(s.t, err)
}

// The outcomes of an event list only the subscribers whose consumer takes
// its subject (wildcards included) or that have a record of it; a
// subscriber that takes it but has not settled it is pending ("none"),
// and an event that is not on the stream (FAILED, or PENDING in the
// outbox) is "not_published" for them, never pending.
func TestShowEventOutcomesFollowConsumerFilters(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	ctx := context.Background()
	s.startCredits()                                // paddle.subscription.created
	s.startFlaky("flaky")                           // paddle.subscription.created
	s.idleSubscriber("wild", "paddle.*.created")    // takes it, not running
	s.idleSubscriber("deep", "paddle.>")            // takes it, not running
	s.idleSubscriber("clerkonly", "clerk.>")        // never sees a paddle event
	s.idleSubscriber("updates", "paddle.*.updated") // nor a created one
	s.idleSubscriber("ghost")                       // tables, no consumer
	// A consumer without a filter takes every subject of the stream.
	require.NoError(t, subscriber.Migrate(ctx, s.Pool(), "everything", nil))
	_, err := s.JetStream().CreateOrUpdateConsumer(ctx, schema.DefaultStream, jetstream.ConsumerConfig{Durable: "everything",
		DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	outcomes := func(o *ops.Ops, ref string) (ops.EventDetail, map[string]string) {
		t.Helper()
		d, err := o.ShowEvent(ctx, ref)
		require.NoError(t, err)
		m := map[string]string{}
		for _, so := range d.Subscribers {
			m[so.Subscriber] = so.Outcome
		}
		return d, m
	}

	// Published and processed by the running subscribers.
	s.deliver("evt_ops_2")
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM credits.processed_messages`) == 1 && s.Count(`SELECT count(*) FROM flaky.effects`) == 1
	}, "both running subscribers processed evt_ops_2")
	// (A subscriber may process a message before the hub has recorded its
	// PubAck: until then the archive says PENDING.)
	s.Eventually(func() bool {
		return s.Count(`SELECT count(*) FROM webhook_event_status WHERE event_id = 'evt_ops_2' AND processing_status = 'PROCESSED'`) == 1
	}, "the hub recorded evt_ops_2 published")
	d, got := outcomes(s.ops, "paddle:evt_ops_2")
	require.True(t, d.Published)
	require.Equal(t, map[string]string{"credits": ops.OutcomeProcessed, "flaky": ops.OutcomeProcessed,
		"wild": ops.OutcomeNone, "deep": ops.OutcomeNone, "ghost": ops.OutcomeNoConsumer, "everything": ops.OutcomeNone}, got)

	// FAILED (its type cannot form a subject): never published, and no
	// subscriber can take it.
	s.Deliver("paddle", "evt_ops_failed", "subscription created")
	d, got = outcomes(s.ops, "paddle:evt_ops_failed")
	require.Equal(t, "FAILED", d.Status)
	require.False(t, d.Published)
	require.Empty(t, got, "no subscriber will ever see a FAILED event")
	raw, err := json.Marshal(d)
	require.NoError(t, err)
	require.NotContains(t, string(raw), `"outcome":"none"`)
	require.Contains(t, string(raw), `"published":false`)

	// PENDING, waiting in the outbox (its next attempt in an hour): not
	// published for those that take its subject.
	archiveState(t, s.Pool(), time.Now(), hub.Pending, "evt_ops_waiting")
	d, got = outcomes(s.ops, "paddle:evt_ops_waiting")
	require.Equal(t, "PENDING", d.Status)
	require.False(t, d.Published)
	require.Equal(t, map[string]string{"credits": ops.OutcomeNotPublished, "flaky": ops.OutcomeNotPublished,
		"wild": ops.OutcomeNotPublished, "deep": ops.OutcomeNotPublished, "ghost": ops.OutcomeNotPublished,
		"everything": ops.OutcomeNotPublished}, got)

	// Without JetStream the filters are unknown: said so, not "pending".
	_, got = outcomes(newOps(t, s.Pool(), nil), "paddle:evt_ops_2")
	require.Equal(t, map[string]string{"credits": ops.OutcomeProcessed, "flaky": ops.OutcomeProcessed,
		"wild": ops.OutcomeUnknown, "deep": ops.OutcomeUnknown, "clerkonly": ops.OutcomeUnknown,
		"updates": ops.OutcomeUnknown, "ghost": ops.OutcomeUnknown, "everything": ops.OutcomeUnknown}, got)
}

// A replay to a destination sends every event again, those it delivered
// before too (ResendReplays): the dry run says so (6 to send, 6 of them
// again, none skipped), and the run counts what was sent, as the
// receiver saw it. Before, the dry run said "0 to process" and the run "6
// skipped", while the endpoint received all 6 again.
func TestReplayToADestinationCountsWhatIsSent(t *testing.T) {
	t.Parallel()
	s := newSystem(t)
	received := testhub.StartDestination(t, s.Pool(), s.JetStream(), "billing")

	const events = 6
	for i := range events {
		require.False(t, s.deliver(fmt.Sprintf("evt_dest_%d", i)))
	}
	s.Eventually(func() bool { return s.Count(`SELECT count(*) FROM billing.processed_messages`) == events }, "the destination delivered every event")
	require.EqualValues(t, events, received.Load())

	req := ops.ReplayRequest{Subscriber: "billing", Since: time.Now().Add(-time.Hour), DryRun: true}
	plan, err := s.ops.Replay(context.Background(), req)
	require.NoError(t, err)
	require.True(t, plan.Destination)
	require.Equal(t, events, plan.Matched)
	require.Equal(t, events, plan.ToProcess, "a destination sends every event")
	require.Equal(t, events, plan.Resend, "all of them again")
	require.Zero(t, plan.Skipped)

	req.DryRun, req.Wait = false, 60*time.Second
	res, err := s.ops.Replay(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, events, res.Delivered)
	require.Equal(t, events, res.Resent, "%+v", res)
	require.Zero(t, res.Skipped)
	require.Zero(t, res.Processed)
	require.Zero(t, res.Unsettled)
	require.EqualValues(t, 2*events, received.Load(), "the endpoint received every event again")

	// A bulk replay counts the same way.
	breq := ops.BulkRequest{Action: ops.BulkReplay, Subscriber: "billing", DryRun: true, Rate: ops.MaxBulkRate, Wait: 60 * time.Second, Sample: 1,
		Filter: ops.EventFilter{Since: time.Now().Add(-time.Hour)}}
	bplan, err := s.ops.Bulk(context.Background(), breq)
	require.NoError(t, err)
	require.True(t, bplan.Destination)
	require.Equal(t, events, bplan.ToProcess)
	require.Equal(t, events, bplan.AlreadyProcessed)
	breq.DryRun = false
	bres, err := s.ops.Bulk(context.Background(), breq)
	require.NoError(t, err)
	require.Equal(t, events, bres.Resent, "%+v", bres)
	require.Zero(t, bres.Skipped)
	require.EqualValues(t, 3*events, received.Load())
}
