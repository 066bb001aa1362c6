package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
)

// TestVerify feeds the end-of-run check tables and streams with one thing
// wrong at a time: each must show as lost (or duplicated).
func TestVerify(t *testing.T) {
	t.Parallel()
	const events = 4
	for _, tc := range []struct {
		name       string
		onStream   []int // events published to the stream, in order
		recorded   []int // events whose publish is recorded (out of the outbox)
		gaveUp     []int // events whose publish failed for good
		ceiling    bool  // no stream: only the tables
		ingested   int   // events ingested (0..events)
		lost, dups int
	}{
		{name: "all published", onStream: []int{0, 1, 2, 3}, recorded: []int{0, 1, 2, 3}, ingested: 4},
		{name: "one left in the outbox", onStream: []int{0, 1, 2, 3}, recorded: []int{0, 1, 2}, ingested: 4, lost: 1},
		{name: "one given up", onStream: []int{0, 1, 2}, recorded: []int{0, 1, 2}, gaveUp: []int{3}, ingested: 4, lost: 2},
		{name: "one not on the stream", onStream: []int{0, 1, 3}, recorded: []int{0, 1, 2, 3}, ingested: 4, lost: 1},
		{name: "one never recorded", onStream: []int{0, 1, 2}, recorded: []int{0, 1, 2}, ingested: 3, lost: 2},
		{name: "one twice on the stream", onStream: []int{0, 1, 2, 3, 2}, recorded: []int{0, 1, 2, 3}, ingested: 4, dups: 1},
		{name: "ceiling: all recorded", ceiling: true, ingested: 4},
		{name: "ceiling: one missing", ceiling: true, ingested: 3, lost: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, _ := hubdb.Pool(t)
			st := store.New(pool)
			start := time.Now()
			// An older event, as a preload would be: never counted.
			_, err := st.Ingest(ctx, []hub.Delivery{benchDelivery("evt_preload_0", start.Add(-time.Hour))})
			require.NoError(t, err)
			ds := make([]hub.Delivery, events)
			for i := range ds {
				ds[i] = benchDelivery(eventID(i), start)
			}
			_, err = st.Ingest(ctx, append(ds[:tc.ingested:tc.ingested], benchDelivery(eventID(0), start)))
			require.NoError(t, err)

			var js jetstream.JetStream
			if !tc.ceiling {
				n := hubtest.JetStream(t)
				nc, err := nats.Connect(n.URL())
				require.NoError(t, err)
				t.Cleanup(nc.Close)
				js, err = jetstream.New(nc)
				require.NoError(t, err)
				// The shortest duplicate window: a second message of an event is
				// stored once it has passed, as a relay that lost track would store it.
				_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: schema.DefaultStream, Subjects: []string{"paddle.>"}, Duplicates: 100 * time.Millisecond})
				require.NoError(t, err)
				for k, i := range tc.onStream {
					if k > 0 && slices.Contains(tc.onStream[:k], i) {
						// Past the duplicate window of the first copy.
						require.Eventually(t, func() bool {
							_, err := js.Publish(ctx, "paddle.subscription.created", nil, jetstream.WithMsgID(fmt.Sprintf("paddle:%s", eventID(i))))
							info, ierr := js.Stream(ctx, schema.DefaultStream)
							require.NoError(t, ierr)
							state, ierr := info.Info(ctx)
							require.NoError(t, ierr)
							return err == nil && state.State.Msgs == uint64(k+1)
						}, 10*time.Second, 5*time.Millisecond)
						continue
					}
					_, err := js.Publish(ctx, "paddle.subscription.created", nil, jetstream.WithMsgID(fmt.Sprintf("paddle:%s", eventID(i))))
					require.NoError(t, err)
				}
			}
			var results []hub.PublishResult
			for _, i := range tc.recorded {
				results = append(results, hub.PublishResult{ArchiveID: ds[i].ArchiveID, Seq: uint64(i + 1)})
			}
			for _, i := range tc.gaveUp {
				results = append(results, hub.PublishResult{ArchiveID: ds[i].ArchiveID, Err: "rejected", Permanent: true})
			}
			require.NoError(t, st.RecordPublished(ctx, results))

			r := Result{Events: events}
			stored := make([]int64, events)
			require.NoError(t, verify(ctx, &r, st, start, js, stored))
			require.Equal(t, tc.lost, r.Lost, "lost")
			require.Equal(t, tc.dups, r.Duplicated, "duplicated")
			require.Equal(t, tc.ingested+1, r.ArchiveRows, "this run's rows only")
			require.Equal(t, tc.ingested, r.DedupRows)
			if !tc.ceiling {
				require.Equal(t, len(tc.onStream), r.StreamMsgs)
				for _, i := range tc.onStream {
					require.NotZero(t, stored[i], "event %d: when the stream stored it", i)
				}
			}
		})
	}
}

func benchDelivery(id string, at time.Time) hub.Delivery {
	return hub.Delivery{
		ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: id, EventType: "subscription.created",
		Body: []byte(`{"event_id":"` + id + `"}`), ReceivedAt: at,
	}
}

func TestPreloadEvents(t *testing.T) {
	t.Parallel()
	const rows = 3000
	end := time.Now()
	events, err := preloadEvents(rows, 0.10, end)
	require.NoError(t, err)
	w, err := newWorkload(50, 0)
	require.NoError(t, err)
	p, err := provider.NewPaddle([]string{benchSecret}, provider.Options{Tolerance: time.Minute})
	require.NoError(t, err)

	var n, dups int
	var last time.Time
	ids := map[string]bool{}
	for ev := range events {
		require.False(t, ids[ev.First.EventID], "event ids are unique")
		ids[ev.First.EventID] = true
		require.True(t, strings.HasPrefix(ev.First.EventID, preloadPrefix), ev.First.EventID)
		_, isWorkload := eventIndex("paddle:" + ev.First.EventID)
		require.False(t, isWorkload, "no workload event is preloaded")
		require.EqualValues(t, len(ids), ev.StreamSeq)
		require.True(t, ev.PublishedAt.After(ev.First.ReceivedAt))
		require.InDelta(t, w.bodyBytes, len(ev.First.Body), 40, "the workload's body size")
		for _, d := range append([]hub.Delivery{ev.First}, ev.Duplicates...) {
			n++
			require.Equal(t, ev.First.EventID, d.EventID)
			require.Equal(t, ev.First.Body, d.Body)
			require.True(t, d.ReceivedAt.After(last), "oldest first")
			last = d.ReceivedAt
			require.False(t, d.ReceivedAt.Before(end.Add(-preloadSpan)))
			require.True(t, d.ReceivedAt.Before(end), "every row received before end")
			require.Equal(t, uuid.Version(7), d.ArchiveID.Version())
			require.Equal(t, uuid.RFC4122, d.ArchiveID.Variant())
			sec, nsec := d.ArchiveID.Time().UnixTime()
			require.Equal(t, d.ReceivedAt.UnixMilli(), time.Unix(sec, nsec).UnixMilli(), "a UUIDv7 of the receipt")
			got, err := p.Verify(provider.Request{Header: http.Header{provider.PaddleSignatureHeader: {d.Signature}}, Body: d.Body, Now: d.SignedAt})
			require.NoError(t, err, "signed")
			require.Equal(t, d.EventID, got.ID)
		}
		dups += len(ev.Duplicates)
	}
	require.Equal(t, rows, n)
	require.InDelta(t, 0.10, float64(dups)/rows, 0.02, "about a tenth are duplicates")
	require.Less(t, end.Sub(last), 2*preloadSpan/rows, "spread up to end")
}

func TestParsePreload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "0", want: []int{0}},
		{in: "0,2000000", want: []int{0, 2000000}},
		{in: " 0 , 2_000_000 ", want: []int{0, 2000000}},
		{in: "", err: "not a number"},
		{in: "0,,1", err: "not a number"},
		{in: "-1", err: "must be within"},
		{in: "1e6", err: "not a number"},
		{in: "_1", err: "not a number"},
		{in: "99999999999999999999", err: "not a number"},
		{in: "10000001", err: "must be within"},
		{in: "1,2,3,4,5,6,7,8,9", err: "at most 8"},
		{in: "1\x00", err: "not a number"},
	} {
		got, err := ParsePreload(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got)
	}
}

func FuzzParsePreload(f *testing.F) {
	for _, s := range []string{"0", "0,2000000", "1_000", " 5 ,6", "-0", "+7", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := ParsePreload(s)
		if err != nil {
			return
		}
		require.NotEmpty(t, sizes)
		require.LessOrEqual(t, len(sizes), maxPreloadSizes)
		for _, n := range sizes {
			require.True(t, n >= 0 && n <= MaxPreloadRows, "%d", n)
		}
	})
}

// TestHubEnv: the operator's environment reaches the hub, but not in
// place of the bench's addresses, stream, database or secrets.
func TestHubEnv(t *testing.T) {
	t.Parallel()
	operator := []string{"PATH=/bin", "HUB_ADMIN_ADDR=:6060", "HUB_HTTP_ADDR=:8080", "HUB_STREAM=PROD",
		"HUB_DATABASE_URL=postgres://prod/hub", "HUB_PADDLE_SECRETS=pdl_prod", "HUB_RELAY_WORKERS=2",
		"HUB_STREAM_REPLICAS=3", "HUB_BACKFILL_INTERVAL=1h"}
	env := hubEnv(operator, "postgres://bench/db", "nats://bench", "127.0.0.1:1001", "127.0.0.1:1002", 64, []string{"HUB_RELAY_WORKERS=3"})
	require.Equal(t, operator, []string{"PATH=/bin", "HUB_ADMIN_ADDR=:6060", "HUB_HTTP_ADDR=:8080", "HUB_STREAM=PROD",
		"HUB_DATABASE_URL=postgres://prod/hub", "HUB_PADDLE_SECRETS=pdl_prod", "HUB_RELAY_WORKERS=2",
		"HUB_STREAM_REPLICAS=3", "HUB_BACKFILL_INTERVAL=1h"}, "the bench's environment is not changed")
	// What the child sees: the last value of each variable.
	cmd := exec.Command("true")
	cmd.Env = env
	seen := map[string]string{}
	for _, kv := range cmd.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		seen[k] = v
	}
	for k, want := range map[string]string{
		"PATH": "/bin", "HUB_ADMIN_ADDR": "127.0.0.1:1002", "HUB_HTTP_ADDR": "127.0.0.1:1001", "HUB_STREAM": schema.DefaultStream,
		"HUB_DATABASE_URL": "postgres://bench/db", "HUB_NATS_URL": "nats://bench", "HUB_PADDLE_SECRETS": benchSecret,
		"HUB_BATCH_MAX": "64", "HUB_RELAY_WORKERS": "3", "HUB_STREAM_REPLICAS": "1", "HUB_BACKFILL_INTERVAL": "0",
	} {
		require.Equal(t, want, seen[k], k)
	}
}

// metricsServer serves text as /metrics until the test ends, and returns
// its URL.
func metricsServer(t *testing.T, text string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, text)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestCommitBatches(t *testing.T) {
	t.Parallel()
	base := metricsServer(t, "# HELP hub_commit_batch_deliveries x\nhub_commit_batch_deliveries_bucket{le=\"1\"} 3\nhub_commit_batch_deliveries_sum 120\nhub_commit_batch_deliveries_count 4\n")
	sum, n, err := commitBatches(base)
	require.NoError(t, err)
	require.Equal(t, 120.0, sum)
	require.Equal(t, 4.0, n)
	_, _, err = commitBatches(base + "/elsewhere")
	require.Error(t, err)
	_, _, err = commitBatches(metricsServer(t, "hub_commit_batch_deliveries_count many\n"))
	require.Error(t, err, "unreadable")
}

func TestReadHubMetrics(t *testing.T) {
	t.Parallel()
	const batches = "hub_commit_batch_deliveries_sum 120\nhub_commit_batch_deliveries_count 4\n"
	cases := []struct {
		name, metrics string
		want          hubMetrics
	}{
		{"present", "# TYPE go_memstats_alloc_bytes_total counter\ngo_memstats_alloc_bytes_total 2.14241608e+08\ngo_memstats_alloc_bytes 5e+06\n" + batches,
			hubMetrics{batchSum: 120, batches: 4, alloc: 2.14241608e+08, ok: true}},
		{"no allocation", "go_memstats_alloc_bytes 5e+06\n" + batches, hubMetrics{batchSum: 120, batches: 4}},
		{"no batches", "go_memstats_alloc_bytes_total 7\n", hubMetrics{alloc: 7}},
		{"unreadable", "go_memstats_alloc_bytes_total many\n" + batches, hubMetrics{}},
	}
	for _, tc := range cases {
		got := readHubMetrics(metricsServer(t, tc.metrics))
		require.Equal(t, tc.want.ok, got.ok, tc.name)
		if tc.want.ok {
			require.Equal(t, tc.want, got, tc.name)
		}
	}
	require.False(t, readHubMetrics(metricsServer(t, batches)+"/elsewhere").ok, "no /metrics")
}

// buildHub compiles the hub binary once per test binary run.
func buildHub(t *testing.T) string { return hubtest.Build(t, "../cmd/hub") }

// TestRunPreloadedWhateverTheEnvironment runs the bench end to end with an
// empty and a preloaded archive, from an environment whose HUB_ADMIN_ADDR
// and HUB_HTTP_ADDR are taken: the hubs get their own, /metrics is read
// from their admin listeners, and the preload is in no run's counts.
func TestRunPreloadedWhateverTheEnvironment(t *testing.T) {
	hubtest.Soak(t) // six benchmark runs of the built hub binary
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := buildHub(t)
	hubtest.Slot(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	t.Setenv("HUB_ADMIN_ADDR", taken.Addr().String())
	t.Setenv("HUB_HTTP_ADDR", taken.Addr().String())

	var profiled []string
	rep, err := Run(context.Background(), Config{
		AdminURL: hubtest.AdminURL(), HubCommand: []string{bin},
		Count: 300, Warmup: 100, Concurrency: 8, Duplicates: 0.2, BatchMax: 64, Baseline: true, Ceiling: true,
		Preload: []int{0, 500}, Rounds: 1,
		Profile: func(run string) func() { profiled = append(profiled, run); return func() {} },
	})
	require.NoError(t, err)
	require.True(t, rep.NothingLostOrDuped, "%+v", rep.Runs)
	require.Len(t, rep.Runs, 6)
	require.Len(t, rep.Preloads, 2)
	require.Zero(t, rep.Preloads[0].ArchiveRows)
	require.EqualValues(t, 500, rep.Preloads[1].ArchiveRows)
	require.InDelta(t, 400, rep.Preloads[1].Events, 40, "a fifth are duplicates")
	require.Greater(t, rep.Preloads[1].FillSeconds, 0.0)
	require.Greater(t, rep.Preloads[1].CopySeconds, 0.0)
	require.Greater(t, rep.Preloads[1].ThroughputVsFirst, 0.0)
	require.Equal(t, []string{"hub (batch 64), archive 0", "hub (batch 1), archive 0", "hub (batch 64), archive 500", "hub (batch 1), archive 500"}, profiled)
	var pgCPU float64
	for k, r := range rep.Runs {
		preloaded := k >= 3
		require.Equal(t, preloaded, r.PreloadRows == 500, r.Name)
		require.Equal(t, preloaded, r.CopySeconds > 0, r.Name)
		require.Equal(t, 300, r.Deliveries, r.Name)
		require.Equal(t, 400, r.ArchiveRows, "%s: this run's rows, not the preload's", r.Name)
		require.Equal(t, r.Events, r.DedupRows, r.Name)
		require.Greater(t, r.WALBytes, 0.0, r.Name)
		// Postgres CPU is read in 10 ms clock ticks: a run this short
		// (the ceiling's 300 rows) may take less than one.
		require.GreaterOrEqual(t, r.PostgresCPUus, 0.0, r.Name)
		pgCPU += r.PostgresCPUus
	}
	require.Greater(t, pgCPU, 0.0, "Postgres CPU is measured")
	for _, k := range []int{0, 3} {
		require.Greater(t, rep.Runs[k].MeanCommitBatch, 0.0, "%s: read from the admin listener's /metrics", rep.Runs[k].Name)
		require.Equal(t, rep.Runs[k].Events, rep.Runs[k].StreamMsgs)
		require.Greater(t, rep.Runs[k].E2EP99ms, 0.0)
	}
}

// TestRunHubs runs the bench with two hubs on one database and a
// nats-server process of its own: the load is spread round robin (each
// hub answers half), both hubs' figures are reported, and the NATS
// server's CPU apart from the bench's.
func TestRunHubs(t *testing.T) {
	hubtest.Soak(t) // a benchmark run of the built binaries
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin, natsBin := buildHub(t), hubtest.Build(t, "github.com/nats-io/nats-server/v2")
	hubtest.Slot(t)
	const count, warmup = 2000, 200
	rep, err := Run(context.Background(), Config{
		AdminURL: hubtest.AdminURL(), HubCommand: []string{bin}, NATSServer: natsBin,
		Count: count, Warmup: warmup, Concurrency: 8, BatchMax: 64, Hubs: 2,
	})
	require.NoError(t, err)
	require.True(t, rep.NothingLostOrDuped, "%+v", rep.Runs)
	require.Equal(t, 2, rep.Hubs)
	require.Len(t, rep.Runs, 1)
	r := rep.Runs[0]
	require.Len(t, r.Hubs, 2)
	require.Equal(t, r.Events, r.StreamMsgs)
	var cpu float64
	for k, h := range r.Hubs {
		require.Equal(t, count/2, h.Deliveries, "hub %d: every other delivery", k+1)
		require.Greater(t, h.PerSecond, 0.0, "hub %d", k+1)
		require.Greater(t, h.MeanCommitBatch, 0.0, "hub %d: its own /metrics", k+1)
		require.Greater(t, h.PeakRSSMB, 0.0, "hub %d", k+1)
		cpu += h.CPUus * float64(h.Deliveries)
	}
	require.Greater(t, r.HubCPUus, 0.0)
	require.InDelta(t, r.HubCPUus, cpu/count, 1, "the hubs' CPU summed, per delivery")
	require.Greater(t, r.NATSCPUus, 0.0, "the nats-server process's CPU")
	require.Greater(t, r.MeanCommitBatch, 0.0)

	_, err = Run(context.Background(), Config{AdminURL: hubtest.AdminURL(), HubCommand: []string{bin}, Count: 1, Hubs: MaxHubs + 1})
	require.ErrorContains(t, err, "want 1..8")
}

// A workload's signatures age like real ones: past the hub's tolerance
// (a benchmark with a preload and rounds lasts longer) they are refused,
// and sign makes them good again at the new time.
func TestWorkloadSignaturesAreRenewed(t *testing.T) {
	w, err := newWorkload(20, 0.2)
	require.NoError(t, err)
	verifier, err := provider.NewPaddle([]string{benchSecret}, provider.Options{Tolerance: 5 * time.Minute})
	require.NoError(t, err)
	verify := func(at time.Time) error {
		for i := range w.bodies {
			h := http.Header{}
			h.Set(provider.PaddleSignatureHeader, string(w.signatures[i]))
			if _, err := verifier.Verify(provider.Request{Header: h, Body: w.bodies[i], Now: at}); err != nil {
				return err
			}
		}
		return nil
	}
	later := time.Now().Add(20 * time.Minute)
	require.NoError(t, verify(time.Now()))
	require.ErrorIs(t, verify(later), provider.ErrTimestamp)
	require.NoError(t, w.sign(later))
	require.NoError(t, verify(later))
}

func TestMain(m *testing.M) {
	code := m.Run()
	hubtest.RemoveBuilds()
	os.Exit(code)
}
