package ops_test

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// Every numeric and text input of every operation is checked by the
// operation itself (the command line and the admin API hand them over
// as they are): an input out of bounds is an InputError naming the field,
// never a database error or a panic.
func TestOperationsRefuseInputsOutOfBounds(t *testing.T) {
	ctx, _, _, _, o := newStreamOps(t)
	hour := time.Now().Add(-time.Hour)
	long := strings.Repeat("x", 300)

	replay := func(r ops.ReplayRequest) error {
		if r.Subscriber == "" {
			r.Subscriber = "credits"
		}
		if r.Since.IsZero() {
			r.Since = hour
		}
		_, err := o.Replay(ctx, r)
		return err
	}
	cases := []struct {
		name  string
		call  func() error
		field string
	}{
		{"limit 0", func() error { _, err := o.ListEvents(ctx, ops.EventFilter{}); return err }, "limit"},
		{"limit -1", func() error { _, err := o.ListEvents(ctx, ops.EventFilter{Limit: -1}); return err }, "limit"},
		{"limit above the cap", func() error { _, err := o.ListEvents(ctx, ops.EventFilter{Limit: ops.MaxListLimit + 1}); return err }, "limit"},
		{"provider with NUL", func() error {
			_, err := o.ListEvents(ctx, ops.EventFilter{Provider: "pad\x00dle", Limit: 1})
			return err
		}, "provider"},
		{"provider not a token", func() error { _, err := o.ListEvents(ctx, ops.EventFilter{Provider: "pad dle", Limit: 1}); return err }, "provider"},
		{"type invalid UTF-8", func() error { _, err := o.ListEvents(ctx, ops.EventFilter{Type: "a\xffb", Limit: 1}); return err }, "type"},
		{"type too long", func() error { _, err := o.ListEvents(ctx, ops.EventFilter{Type: long, Limit: 1}); return err }, "type"},
		{"ref empty", func() error { _, err := o.ShowEvent(ctx, " "); return err }, "ref"},
		{"ref with NUL", func() error { _, err := o.ShowEvent(ctx, "paddle:evt\x00"); return err }, "ref"},
		{"ref invalid UTF-8", func() error { _, err := o.ShowEvent(ctx, "paddle:\xc3\x28"); return err }, "ref"},
		{"ref too long", func() error { _, err := o.ShowEvent(ctx, "paddle:"+long); return err }, "ref"},
		{"ref provider not a token", func() error { _, err := o.ShowEvent(ctx, "pad/dle:evt_1"); return err }, "ref"},
		{"rate NaN", func() error { return replay(ops.ReplayRequest{Rate: math.NaN(), DryRun: true}) }, "rate"},
		{"rate +Inf", func() error { return replay(ops.ReplayRequest{Rate: math.Inf(1), DryRun: true}) }, "rate"},
		{"rate -Inf", func() error { return replay(ops.ReplayRequest{Rate: math.Inf(-1), DryRun: true}) }, "rate"},
		{"rate negative", func() error { return replay(ops.ReplayRequest{Rate: -1, DryRun: true}) }, "rate"},
		{"rate 1e10 (a zero ticker interval)", func() error { return replay(ops.ReplayRequest{Rate: 1e10, DryRun: true}) }, "rate"},
		{"rate 1e308", func() error { return replay(ops.ReplayRequest{Rate: 1e308, DryRun: true}) }, "rate"},
		{"rate below one a second", func() error { return replay(ops.ReplayRequest{Rate: 0.5, DryRun: true}) }, "rate"},
		{"rate 1e-300 (an overflowing interval)", func() error { return replay(ops.ReplayRequest{Rate: 1e-300, DryRun: true}) }, "rate"},
		{"wait zero", func() error { return replay(ops.ReplayRequest{}) }, "wait"},
		{"wait negative", func() error { return replay(ops.ReplayRequest{Wait: -time.Second}) }, "wait"},
		{"wait over a day", func() error { return replay(ops.ReplayRequest{Wait: 25 * time.Hour}) }, "wait"},
		{"replay without since", func() error {
			_, err := o.Replay(ctx, ops.ReplayRequest{Subscriber: "credits", DryRun: true})
			return err
		}, "since"},
		{"replay until before since", func() error { return replay(ops.ReplayRequest{Until: hour.Add(-time.Hour), DryRun: true}) }, "until"},
		{"replay subject with NUL", func() error { return replay(ops.ReplayRequest{Subject: "paddle.\x00", DryRun: true}) }, "subject"},
		{"replay subject with an empty token", func() error { return replay(ops.ReplayRequest{Subject: "paddle..created", DryRun: true}) }, "subject"},
		{"replay subject > not last", func() error { return replay(ops.ReplayRequest{Subject: "paddle.>.created", DryRun: true}) }, "subject"},
		{"replay subscriber with NUL", func() error { return replay(ops.ReplayRequest{Subscriber: "cre\x00dits", DryRun: true}) }, "subscriber"},
		{"replay subscriber too long", func() error { return replay(ops.ReplayRequest{Subscriber: long, DryRun: true}) }, "subscriber"},
		{"dead letters of a NUL name", func() error { _, err := o.DeadLetters(ctx, "\x00"); return err }, "subscriber"},
		{"dead letters without a name", func() error { _, err := o.DeadLetters(ctx, ""); return err }, "subscriber"},
		{"redrive id negative", func() error {
			_, err := o.Redrive(ctx, ops.RedriveRequest{Subscriber: "credits", ID: -1})
			return err
		}, "id"},
		{"redrive id negative with all", func() error {
			_, err := o.Redrive(ctx, ops.RedriveRequest{Subscriber: "credits", ID: -1, All: true})
			return err
		}, "id"},
		{"redrive id and all", func() error {
			_, err := o.Redrive(ctx, ops.RedriveRequest{Subscriber: "credits", ID: 1, All: true})
			return err
		}, "id"},
		{"redrive neither", func() error { _, err := o.Redrive(ctx, ops.RedriveRequest{Subscriber: "credits"}); return err }, "id"},
		{"redrive invalid UTF-8 name", func() error {
			_, err := o.Redrive(ctx, ops.RedriveRequest{Subscriber: "\xff", All: true})
			return err
		}, "subscriber"},
		{"purge 1ns", func() error {
			_, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 1, BatchSize: ops.DefaultPurgeBatch})
			return err
		}, "older_than"},
		{"purge 23h", func() error {
			_, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 23 * time.Hour, BatchSize: ops.DefaultPurgeBatch})
			return err
		}, "older_than"},
		{"purge batch 0", func() error { _, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 90 * 24 * time.Hour}); return err }, "batch"},
		{"purge batch above the cap", func() error {
			_, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: 90 * 24 * time.Hour, BatchSize: ops.MaxPurgeBatch + 1})
			return err
		}, "batch"},
		{"republish the whole archive", func() error { _, err := o.Republish(ctx, ops.RepublishFilter{DryRun: true}); return err }, "since"},
		{"republish event with NUL", func() error {
			_, err := o.Republish(ctx, ops.RepublishFilter{Event: "paddle:\x00", DryRun: true})
			return err
		}, "event"},
		{"republish event without provider", func() error {
			_, err := o.Republish(ctx, ops.RepublishFilter{Event: "evt_1", DryRun: true})
			return err
		}, "event"},
		{"republish provider invalid UTF-8", func() error {
			_, err := o.Republish(ctx, ops.RepublishFilter{Provider: "\xff", Since: hour, DryRun: true})
			return err
		}, "provider"},
		{"republish PENDING", func() error {
			_, err := o.Republish(ctx, ops.RepublishFilter{Status: "PENDING", Since: hour, DryRun: true})
			return err
		}, "status"},
		{"republish FAILED", func() error {
			_, err := o.Republish(ctx, ops.RepublishFilter{Status: "FAILED", Since: hour, DryRun: true})
			return err
		}, "status"},
		{"republish archive id not a UUID", func() error {
			_, err := o.Republish(ctx, ops.RepublishFilter{ArchiveIDs: []string{"evt_1"}, DryRun: true})
			return err
		}, "archive_ids"},
		{"list before not a cursor", func() error {
			_, err := o.ListEvents(ctx, ops.EventFilter{Before: "2026-11-30T08:00:00Z", Limit: 1})
			return err
		}, "before"},
		{"list before with NUL", func() error {
			_, err := o.ListEvents(ctx, ops.EventFilter{Before: strings.Repeat("\x00", 32), Limit: 1})
			return err
		}, "before"},
		{"list before too long", func() error {
			_, err := o.ListEvents(ctx, ops.EventFilter{Before: long, Limit: 1})
			return err
		}, "before"},
		{"reconcile until before since", func() error { _, err := o.Reconcile(ctx, hour, hour.Add(-time.Minute)); return err }, "until"},
		{"status too long", func() error { _, err := ops.ParseStatus("status", long); return err }, "status"},
		{"status unknown", func() error { _, err := ops.ParseStatus("status", "DONE"); return err }, "status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			var input *ops.InputError
			require.ErrorAs(t, err, &input)
			require.ErrorIs(t, err, ops.ErrInvalid)
			require.Equal(t, c.field, input.Field, "%v", err)
			require.Less(t, len(err.Error()), 400, "an answer never echoes a long input whole")
		})
	}
}

// A purge never deletes rows younger than the minimum age, keeps FAILED
// rows unless asked by name, never deletes PENDING rows, and reports what
// it kept.
func TestPurgeKeepsFailedAndYoungRows(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := newOps(t, pool, nil)
	ctx := context.Background()
	old := time.Now().Add(-30 * 24 * time.Hour)
	archive(t, pool, old, "evt_processed", "evt_pending")
	_, err := store.New(pool).Ingest(ctx, []hub.Delivery{{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle",
		EventID: "evt_failed", EventType: "subscription created", Body: []byte(`{}`), ReceivedAt: old,
		Error: "event type cannot form a subject"}})
	require.NoError(t, err)
	archive(t, pool, time.Now().Add(-time.Hour), "evt_young") // younger than any purge may reach
	publish(t, pool, "evt_pending")
	remaining := func() []string {
		var ids []string
		rows, err := pool.Query(ctx, `SELECT event_id FROM webhook_event_status ORDER BY event_id`)
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			ids = append(ids, id)
		}
		return ids
	}
	all := []string{"evt_failed", "evt_pending", "evt_processed", "evt_young"}

	_, err = o.Purge(ctx, ops.PurgeRequest{OlderThan: time.Nanosecond, BatchSize: 10})
	require.ErrorContains(t, err, "older_than: must be at least 1d")
	require.Equal(t, all, remaining(), "a refused purge deletes nothing")

	dry, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: ops.MinPurgeAge, BatchSize: 10, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, ops.PurgeResult{Cutoff: dry.Cutoff, OlderThan: "1d", Rows: 1, DryRun: true, PendingKept: 1, FailedKept: 1}, dry)
	require.Equal(t, all, remaining(), "a dry run deletes nothing")

	res, err := o.Purge(ctx, ops.PurgeRequest{OlderThan: ops.MinPurgeAge, BatchSize: 10})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	require.EqualValues(t, 1, res.FailedKept)
	require.Equal(t, []string{"evt_failed", "evt_pending", "evt_young"}, remaining(), "FAILED kept by default")

	res, err = o.Purge(ctx, ops.PurgeRequest{OlderThan: ops.MinPurgeAge, BatchSize: 10, IncludeFailed: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	require.Zero(t, res.FailedKept)
	require.EqualValues(t, 1, res.PendingKept)
	require.Equal(t, []string{"evt_pending", "evt_young"}, remaining(), "FAILED deleted when asked; PENDING never")
}

// The minimum purge age is never below the stream's duplicate window.
func TestPurgeMinimumAgeFollowsDuplicateWindow(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	ctx := context.Background()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: schema.DefaultStream, Subjects: []string{"paddle.>"}, Duplicates: 48 * time.Hour})
	require.NoError(t, err)
	o := newOps(t, pool, js)
	_, err = o.Purge(ctx, ops.PurgeRequest{OlderThan: 36 * time.Hour, BatchSize: 10, DryRun: true})
	require.ErrorContains(t, err, "must be at least 2d")
	_, err = o.Purge(ctx, ops.PurgeRequest{OlderThan: 48 * time.Hour, BatchSize: 10, DryRun: true})
	require.NoError(t, err)
}

// Status lists the subscribers' durable consumers only; the ordered
// consumers with which replay and reconcile scan the stream are counted
// apart, not shown as subscribers.
func TestStatusListsDurableConsumersOnly(t *testing.T) {
	ctx, _, js, st, o := newStreamOps(t)
	_, err := js.Publish(ctx, "paddle.subscription.created", []byte(`{}`))
	require.NoError(t, err)
	_, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "credits", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	// A scan in progress, as replay and reconcile read the stream.
	scan, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	_, err = scan.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)

	status, err := o.Status(ctx)
	require.NoError(t, err)
	require.Len(t, status.Consumers, 1, "%+v", status.Consumers)
	require.Equal(t, "credits", status.Consumers[0].Name)
	require.Equal(t, 1, status.ScanConsumers)
}

// A redrive is one dead letter (id), every one waiting (all) or a plan's
// ids; anything else is refused, naming the field.
func TestDecodeRedrive(t *testing.T) {
	for _, c := range []struct {
		v    ops.Values
		want []int64
		all  bool
		err  string
	}{
		{v: ops.Values{"id": {"7"}}, want: []int64{7}},
		{v: ops.Values{"all": {"true"}}, want: []int64{0}, all: true},
		{v: ops.Values{"ids": {"3,1,2"}}, want: []int64{3, 1, 2}},
		{v: ops.Values{}, err: "id: give exactly one"},
		{v: ops.Values{"id": {"0"}, "all": {"false"}}, err: "id: give exactly one"},
		{v: ops.Values{"id": {"1"}, "ids": {"2"}}, err: "id: give exactly one"},
		{v: ops.Values{"id": {"1"}, "all": {"true"}}, err: "id: give exactly one"},
		{v: ops.Values{"id": {"x"}}, err: "id: must be a dead letter's id"},
		{v: ops.Values{"id": {"-1"}, "all": {"true"}}, err: "id: must be a dead letter's id"},
		{v: ops.Values{"all": {"yes"}}, err: "all: not true or false"},
		{v: ops.Values{"ids": {"1,1"}}, err: "ids: 1 is given twice"},
		{v: ops.Values{"ids": {"1,-2"}}, err: "ids: must be dead letter ids"},
		{v: ops.Values{"ids": {"9"}}, want: []int64{9}},
		{v: ops.Values{"ids": {manyIDs(ops.MaxRedrivePlan + 1)}}, err: "ids: more than 500 dead letters"},
	} {
		c.v.Set("subscriber", "credits")
		reqs, err := ops.DecodeRedrive(c.v)
		if c.err != "" {
			require.ErrorIs(t, err, ops.ErrInvalid, c.v)
			require.ErrorContains(t, err, c.err, c.v)
			continue
		}
		require.NoError(t, err, c.v)
		require.Len(t, reqs, len(c.want))
		for i, r := range reqs {
			require.Equal(t, ops.RedriveRequest{Subscriber: "credits", ID: c.want[i], All: c.all}, r)
		}
	}
}

// manyIDs is n distinct ids, comma-separated.
func manyIDs(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(ids, ",")
}
