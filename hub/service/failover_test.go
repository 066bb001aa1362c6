package service_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/schema"
	"github.com/hookhub/hookhub/subscribers/credits"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// Failover load: workers POST at a steady rate for the whole test; every
// dupEvery-th request of a worker repeats one of its earlier events.
const (
	failoverWorkers  = 4
	failoverInterval = 40 * time.Millisecond // per worker: about 100 deliveries/s in all
	failoverDupEvery = 8
	// failoverPhase is how long the load runs between two faults (and
	// after the last): long enough that each phase receives deliveries of
	// its own (a few dozen on a loaded machine under -race) and that the
	// backlog of the previous fault is being published when the next one
	// comes. What the test proves does not grow with it: the faults and
	// the waits for each election and catch-up are the same.
	failoverPhase = 2 * time.Second
)

// TestClusterFailover runs the hub and the credits subscriber against a
// three-node in-process JetStream cluster with an R3 stream. Under steady
// load:
//  1. the stream leader, which is also the node the hub is connected to,
//     crashes (hubtest.Cluster.Crash: cut off from its peers, then shut
//     down, so no leadership hand-over reaches them and the survivors elect
//     a leader after the Raft election timeout, 4-9 s);
//  2. later a second node, the survivor the hub is not connected to, is
//     restarted (Shutdown, then started on its ports and store) while the
//     first is still down: the stream and the consumer have no quorum until
//     it is back;
//  3. the crashed node rejoins and catches up.
//
// Every delivery must be answered 2xx throughout (the outbox absorbs the
// outage); afterwards every accepted event must be in the stream exactly
// once, and nothing else, and processed by credits exactly once. The test
// logs the publish stalls and latencies it measured.
func TestClusterFailover(t *testing.T) {
	// A soak test (about a minute, and not parallel): the default run
	// proves a JetStream node's crash under load end to end with hub chaos
	// (TestChaosLocal's nats-kill: the stream leader's node SIGKILLed
	// under three hubs, hub/cmd/hub).
	hubtest.Soak(t)
	// Not parallel: it measures stalls, and a whole-package run then gives
	// it the machine (parallel tests wait until the sequential ones end).
	logs := &logRecorder{start: time.Now()}
	ctx := context.Background()
	defer logs.report(t, "warnings and errors logged (count, first-last second, source, message)")

	// Cleanups run last-in first-out: the cluster stops last, after the
	// hub and the subscriber (registered later) have stopped.
	cluster := hubtest.JetStreamCluster(t, hubtest.ClusterOptions{Logger: slog.New(logs.handler("nats"))})
	logs.mark("cluster ready", "meta leader %s", cluster.Name(cluster.MetaLeader()))
	pool, dbURL := hubdb.Pool(t)
	logs.mark("database ready", "")
	_, js := cluster.Connect(t, nats.ErrorHandler(logs.natsErrors("test-client")))

	cfg := newTestConfig(t, dbURL, cluster.URL())
	cfg.StreamReplicas = 3
	h := &testHub{t: t, cfg: cfg, pool: pool, js: js,
		paddle: mustSender(t, "paddle", paddleSecret), clerk: mustSender(t, "clerk", clerkSecret)}
	reg := prometheus.NewRegistry()
	svc := h.startWithDeps(service.Deps{Logger: slog.New(logs.handler("hub")), Registry: reg})
	_, err := cluster.WaitStreamLeader(cfg.Stream, 30*time.Second)
	require.NoError(t, err, "the hub did not create its stream")
	info, err := streamInfo(ctx, js, cfg.Stream)
	require.NoError(t, err)
	require.Equal(t, 3, info.Config.Replicas)
	logs.mark("hub serving", "stream %s R%d, leader %s, replicas %v; hub connected to %s",
		cfg.Stream, info.Config.Replicas, info.Cluster.Leader, peerNames(info), svc.NATSURL())

	// The credits subscriber, on its own connection to every node.
	_, subJS := cluster.Connect(t, nats.ErrorHandler(logs.natsErrors("credits-client")))
	sub := startFailoverCredits(t, h, subJS, slog.New(logs.handler("credits")))

	// The crash below hits the stream leader on the node the hub is
	// connected to, so that it takes the hub's connection down too (in-flight
	// PubAcks fail, the hub reconnects to a survivor and the relay makes the
	// backlog due at once). The leadership moves there before the load
	// starts: a step-down under load has effects of its own.
	hubNode := hubNodeOf(t, cluster, svc)
	require.NoError(t, cluster.MoveStreamLeader(cfg.Stream, hubNode, 30*time.Second))
	logs.mark("leader moved", "stream leader is now %s, the hub's node", cluster.Name(hubNode))

	// Steady load for the whole test.
	load := startFailoverLoad(h)
	defer load.stop() // stops the load if the test fails early
	loadStarted := time.Now()
	phases := &phaseList{}
	phases.begin("before the crash")

	// Phase 1: the stream leader crashes; the survivors elect a new one.
	time.Sleep(failoverPhase) // load on the whole cluster
	if now := hubNodeOf(t, cluster, svc); now != hubNode || cluster.StreamLeader(cfg.Stream) != hubNode {
		// A starved machine can miss Raft heartbeats or a PING: move again.
		hubNode = now
		require.NoError(t, cluster.MoveStreamLeader(cfg.Stream, hubNode, 30*time.Second))
		logs.mark("leader moved", "again, under load: stream leader is now %s, the hub's node", cluster.Name(hubNode))
	}
	first := hubNode
	logs.mark("crash", "stream leader %s (meta leader %s, hub's node %s)",
		cluster.Name(first), cluster.Name(cluster.MetaLeader()), cluster.Name(hubNode))
	phases.begin("election after the crash")
	cluster.Crash(first)
	crashedAt := time.Now()
	second, err := cluster.WaitStreamLeader(cfg.Stream, 45*time.Second)
	require.NoError(t, err)
	electedAfter := time.Since(crashedAt)
	logs.mark("elected", "stream leader %s after %s", cluster.Name(second), electedAfter.Round(time.Millisecond))
	phases.begin("two nodes")

	// Phase 2: a second node restarts while the first is still down: the
	// stream (and the credits consumer) have no quorum until it is back.
	// It is the survivor the hub is not connected to (the stream leader or
	// not, as the election went): the hub's connection stays up, only the
	// PubAcks stop.
	time.Sleep(failoverPhase) // load on two nodes
	hubNode = hubNodeOf(t, cluster, svc)
	restarted := -1
	for i := range cluster.Size() {
		if i != first && i != hubNode {
			restarted = i
		}
	}
	role := "a follower"
	if cluster.StreamLeader(cfg.Stream) == restarted {
		role = "the stream leader"
	}
	logs.mark("restart", "%s (%s; the hub is on %s), while %s is down", cluster.Name(restarted), role, cluster.Name(hubNode), cluster.Name(first))
	phases.begin("no quorum: restart")
	restartAt := time.Now()
	cluster.Stop(restarted) // nats-server's Shutdown; back on its ports and store
	cluster.Start(restarted)
	require.NoError(t, cluster.WaitReady(60*time.Second))
	third, err := cluster.WaitStreamLeader(cfg.Stream, 60*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return cluster.StreamCurrent(restarted, cfg.Stream) }, 60*time.Second, 20*time.Millisecond,
		"the restarted node did not catch up")
	reelectedAfter := time.Since(restartAt)
	logs.mark("caught up", "stream leader %s, %s current, after %s", cluster.Name(third), cluster.Name(restarted), reelectedAfter.Round(time.Millisecond))
	phases.begin("two nodes again")

	// Phase 3: the crashed node rejoins and catches up.
	time.Sleep(failoverPhase) // load on two nodes
	logs.mark("rejoin", "restarting the crashed node %s", cluster.Name(first))
	phases.begin("crashed node rejoins")
	cluster.Start(first)
	require.NoError(t, cluster.WaitReady(60*time.Second))
	require.Eventually(t, func() bool { return cluster.StreamCurrent(first, cfg.Stream) }, 60*time.Second, 20*time.Millisecond,
		"the crashed node did not catch up")
	logs.mark("rejoined", "%s is current; stream leader %s", cluster.Name(first), cluster.Name(cluster.StreamLeader(cfg.Stream)))
	phases.begin("whole cluster again")

	time.Sleep(failoverPhase) // load on the whole cluster again
	load.stop()
	loadStopped := time.Now()
	logs.mark("load stopped", "")

	// Every answer was a 2xx, and consistent.
	res := load.results()
	for _, r := range res.failures[:min(len(res.failures), 20)] {
		t.Errorf("delivery %s (duplicate %t) at %s: %s", r.eventID, r.dup, r.at.Sub(logs.start).Round(time.Millisecond), r.failure)
	}
	require.Empty(t, res.failures, "every delivery must be answered 2xx: the outbox absorbs the election")
	require.NotEmpty(t, res.accepted)

	// The outbox drains, and credits processes everything (bounded).
	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`) == 0
	}, 120*time.Second, 50*time.Millisecond, "outbox did not drain")
	logs.mark("outbox drained", "")
	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM credits.processed_messages`) >= len(res.accepted)
	}, 120*time.Second, 50*time.Millisecond, "credits did not process every event")
	logs.mark("credits caught up", "%+v", sub.Stats())

	// Exactly once in the stream, and nothing else there.
	scan := scanStream(t, js, cfg.Stream)
	for id := range res.accepted {
		require.Equal(t, 1, scan.ids[schema.MsgID("paddle", id)], "accepted event %s must be in the stream exactly once", id)
	}
	require.Len(t, scan.ids, len(res.accepted), "the stream holds only the accepted events")
	require.Len(t, scan.times, len(res.accepted), "one message per accepted event")

	// The archive agrees.
	require.Equal(t, len(res.accepted), h.count(`SELECT count(*) FROM processed_webhook_events`))
	require.Equal(t, len(res.accepted), h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED'`))
	require.Equal(t, res.duplicates, h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'SKIPPED'`))
	require.Zero(t, h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'FAILED'`))

	// Exactly once in credits: one ledger row and one processed row per
	// event, no dead letter.
	require.Zero(t, h.count(`SELECT count(*) FROM (SELECT event_id FROM credits.ledger GROUP BY event_id HAVING count(*) <> 1) x`),
		"an event granted credits more than once")
	require.Equal(t, len(res.accepted), h.count(`SELECT count(*) FROM credits.ledger`))
	require.Equal(t, len(res.accepted), h.count(`SELECT count(*) FROM credits.processed_messages`))
	require.Zero(t, h.count(`SELECT count(*) FROM credits.dead_letters`))
	ledger := map[string]bool{}
	rows, err := pool.Query(ctx, `SELECT event_id FROM credits.ledger`)
	require.NoError(t, err)
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ledger[id] = true
	}
	require.NoError(t, rows.Err())
	for id := range res.accepted {
		require.True(t, ledger[id], "accepted event %s has no ledger row", id)
	}

	// Figures.
	t.Logf("timeline (seconds since start):\n%s", logs.timeline())
	t.Logf("deliveries: %d requests, %d accepted events, %d duplicates answered idempotent, 0 non-2xx; %.0f requests/s",
		res.requests, len(res.accepted), res.duplicates, float64(res.requests)/res.span.Seconds())
	t.Logf("HTTP answer latency: p50 %s, p99 %s, max %s (at %s)",
		res.latency(0.5), res.latency(0.99), res.latency(1), res.slowestAt.Sub(logs.start).Round(time.Millisecond))
	t.Logf("elections: crash -> new stream leader %s; restart of the second node -> leader elected and the node caught up %s",
		electedAfter.Round(time.Millisecond), reelectedAfter.Round(time.Millisecond))
	gap, gapAt := scan.longestGap(loadStarted, loadStopped)
	t.Logf("longest publish stall under load (largest gap between consecutive stream timestamps): %s, from %s",
		gap.Round(time.Millisecond), gapAt.Sub(logs.start).Round(time.Millisecond))
	for _, g := range scan.gapsOver(time.Second, loadStarted, loadStopped) {
		t.Logf("  stream gap %s from %s", g.d.Round(time.Millisecond), g.at.Sub(logs.start).Round(time.Millisecond))
	}
	if n := len(scan.times); n > 0 {
		t.Logf("last message stored %s after the load stopped", scan.times[n-1].Sub(loadStopped).Round(time.Millisecond))
	}
	lat := publishLatencies(t, pool)
	t.Logf("publish latency (published_at - created_at) over %d events: p50 %s, p99 %s, max %s; %d events over 1s",
		len(lat), lat.quantile(0.5), lat.quantile(0.99), lat.quantile(1), lat.over(time.Second))
	t.Logf("publish latency by the phase the event was received in:\n%s", phases.report(lat, logs.start, loadStopped))
	var retried, maxAttempts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE publish_attempts > 1), coalesce(max(publish_attempts), 0)
		FROM webhook_event_status WHERE processing_status = 'PROCESSED'`).Scan(&retried, &maxAttempts))
	t.Logf("outbox: %d events were published by the claiming relay after a recorded failed attempt (max attempts %d)", retried, maxAttempts)
	t.Logf("hub_publish_total: %s", publishCounts(t, reg))
	t.Logf("credits: %+v", sub.Stats())
	t.Logf("warnings and errors logged (count, first-last second, source, message):\n%s", logs.summary())
}

func startFailoverCredits(t *testing.T, h *testHub, js jetstream.JetStream, log *slog.Logger) *subscriber.Subscriber {
	t.Helper()
	sub, err := subscriber.New(subscriber.Config{
		Name: credits.Name, Pool: h.pool, JetStream: js, Migrations: credits.Migrations,
		// A lost ack (likely during an election) is redelivered, and
		// skipped as a duplicate, after AckWait.
		AckWait:         5 * time.Second,
		Backoff:         []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second},
		ShutdownTimeout: 15 * time.Second,
		Logger:          log,
	})
	require.NoError(t, err)
	require.NoError(t, credits.Register(sub, credits.Options{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("credits did not stop within 30s")
		}
	})
	require.Eventually(t, func() bool { return sub.Healthy() == nil }, 30*time.Second, 10*time.Millisecond)
	return sub
}

// failoverLoad posts signed Paddle subscription.created deliveries from
// several workers at a steady rate until stopped.
type failoverLoad struct {
	h       *testHub
	client  *http.Client
	done    chan struct{}
	wg      sync.WaitGroup
	stopped sync.Once

	mu      sync.Mutex
	answers []loadAnswer
}

type loadAnswer struct {
	eventID    string
	dup        bool
	at         time.Time
	latency    time.Duration
	idempotent bool
	failure    string // empty for a consistent 2xx
}

func startFailoverLoad(h *testHub) *failoverLoad {
	l := &failoverLoad{h: h, done: make(chan struct{}), client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 2 * failoverWorkers},
	}}
	for w := range failoverWorkers {
		l.wg.Go(func() { l.worker(w) })
	}
	return l
}

func (l *failoverLoad) worker(w int) {
	tick := time.NewTicker(failoverInterval)
	defer tick.Stop()
	var sent []string // this worker's accepted first deliveries
	for i := 0; ; i++ {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		id, dup := fmt.Sprintf("evt_failover_%d_%06d", w, i), false
		if i%failoverDupEvery == failoverDupEvery-1 && len(sent) > 0 {
			id, dup = sent[rand.IntN(len(sent))], true
		}
		a := l.post(id, dup)
		if a.failure == "" && !dup {
			sent = append(sent, id)
		}
		l.mu.Lock()
		l.answers = append(l.answers, a)
		l.mu.Unlock()
	}
}

func (l *failoverLoad) post(eventID string, dup bool) loadAnswer {
	a := loadAnswer{eventID: eventID, dup: dup, at: time.Now()}
	defer func() { a.latency = time.Since(a.at) }()
	s := l.h.paddle
	body, err := samples.Body(s.Name(), eventID, "subscription.created", nil, time.Now())
	if err != nil {
		a.failure = err.Error()
		return a
	}
	hdr, _, err := s.Sign(eventID, "", body, time.Now())
	if err != nil {
		a.failure = err.Error()
		return a
	}
	status, raw, err := doPost(l.client, l.h.base+"/webhooks/paddle", hdr, body)
	a.latency = time.Since(a.at)
	switch {
	case err != nil:
		a.failure = "transport: " + err.Error()
	case status/100 != 2:
		a.failure = fmt.Sprintf("status %d: %s", status, raw)
	default:
		var b struct{ Idempotent bool }
		if err := json.Unmarshal(raw, &b); err != nil {
			a.failure = fmt.Sprintf("status %d, body %q: %v", status, raw, err)
		} else if a.idempotent = b.Idempotent; a.idempotent != dup {
			a.failure = fmt.Sprintf("status %d but idempotent=%t for a delivery with duplicate=%t", status, a.idempotent, dup)
		}
	}
	return a
}

func doPost(c *http.Client, url string, hdr http.Header, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytesReader(body))
	if err != nil {
		return 0, nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

func (l *failoverLoad) stop() {
	l.stopped.Do(func() {
		close(l.done)
		l.wg.Wait()
		l.client.CloseIdleConnections()
	})
}

type loadResults struct {
	requests   int
	accepted   map[string]bool // event ids whose first delivery got a 2xx
	duplicates int             // repeated deliveries answered 2xx
	failures   []loadAnswer
	latencies  []time.Duration // sorted
	slowestAt  time.Time
	span       time.Duration
}

func (l *failoverLoad) results() loadResults {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := loadResults{requests: len(l.answers), accepted: map[string]bool{}}
	var first, last time.Time
	var slowest time.Duration
	for _, a := range l.answers {
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		if end := a.at.Add(a.latency); end.After(last) {
			last = end
		}
		r.latencies = append(r.latencies, a.latency)
		if a.latency > slowest {
			slowest, r.slowestAt = a.latency, a.at
		}
		switch {
		case a.failure != "":
			r.failures = append(r.failures, a)
		case a.dup:
			r.duplicates++
		default:
			r.accepted[a.eventID] = true
		}
	}
	slices.Sort(r.latencies)
	r.span = last.Sub(first)
	return r
}

func (r loadResults) latency(q float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	i := min(len(r.latencies)-1, int(q*float64(len(r.latencies))))
	return r.latencies[i].Round(100 * time.Microsecond)
}

// streamScan is what the stream holds: messages by Nats-Msg-Id, and the
// stream timestamps in sequence order.
type streamScan struct {
	ids   map[string]int
	times []time.Time
}

type streamGap struct {
	d  time.Duration
	at time.Time
}

// scanStream reads every message's headers and metadata, with an ordered
// consumer that it recreates from the next sequence if a fetch fails (a
// fresh consumer of a clustered stream may not answer its first pull).
func scanStream(t *testing.T, js jetstream.JetStream, stream string) streamScan {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	require.NoError(t, err)
	info, err := st.Info(ctx)
	require.NoError(t, err)
	bySeq := map[uint64]jetstream.Msg{}
	times := map[uint64]time.Time{}
	next := info.State.FirstSeq
	var c jetstream.Consumer
	for uint64(len(bySeq)) < info.State.Msgs {
		require.NoError(t, ctx.Err(), "stream scan took more than 60s (%d of %d messages)", len(bySeq), info.State.Msgs)
		if c == nil {
			c, err = st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
				HeadersOnly: true, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: next,
			})
			if err != nil {
				t.Logf("stream scan: create consumer: %v; retrying", err)
				time.Sleep(100 * time.Millisecond)
				c = nil
				continue
			}
		}
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err == nil {
			for m := range batch.Messages() {
				md, err := m.Metadata()
				require.NoError(t, err)
				bySeq[md.Sequence.Stream] = m
				times[md.Sequence.Stream] = md.Timestamp
				next = max(next, md.Sequence.Stream+1)
			}
			err = batch.Error()
		}
		if err != nil && !errors.Is(err, nats.ErrTimeout) {
			t.Logf("stream scan: fetch: %v; recreating the consumer from sequence %d", err, next)
			c = nil
		}
	}
	scan := streamScan{ids: map[string]int{}}
	seqs := slices.Sorted(maps.Keys(bySeq))
	for _, seq := range seqs {
		scan.ids[bySeq[seq].Headers().Get(schema.HeaderMsgID)]++
		scan.times = append(scan.times, times[seq])
	}
	return scan
}

// gaps are the intervals between consecutive stream timestamps within
// from and to (the load's span: a gap then is a publish stall).
func (s streamScan) gaps(from, to time.Time) []streamGap {
	var out []streamGap
	for i := 1; i < len(s.times); i++ {
		if at := s.times[i-1]; !at.Before(from) && at.Before(to) {
			next := s.times[i]
			if next.After(to) {
				next = to
			}
			out = append(out, streamGap{d: next.Sub(at), at: at})
		}
	}
	return out
}

func (s streamScan) longestGap(from, to time.Time) (time.Duration, time.Time) {
	var g streamGap
	for _, x := range s.gaps(from, to) {
		if x.d > g.d {
			g = x
		}
	}
	return g.d, g.at
}

func (s streamScan) gapsOver(d time.Duration, from, to time.Time) []streamGap {
	var out []streamGap
	for _, x := range s.gaps(from, to) {
		if x.d > d {
			out = append(out, x)
		}
	}
	return out
}

// hubNodeOf is the index of the node the hub is connected to, waiting
// while it reconnects.
func hubNodeOf(t *testing.T, c *hubtest.Cluster, svc *service.Service) int {
	t.Helper()
	node := -1
	require.Eventually(t, func() bool {
		node = c.IndexOfURL(svc.NATSURL())
		return node >= 0 && c.Running(node)
	}, 30*time.Second, 20*time.Millisecond, "the hub is not connected to a running node")
	return node
}

// publishLatency is one published event: when the hub received it, and
// how long until its PubAck was recorded.
type publishLatency struct {
	created time.Time
	d       time.Duration
}

type latencies []publishLatency // sorted by d

func publishLatencies(t *testing.T, pool *pgxpool.Pool) latencies {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT created_at, published_at FROM webhook_event_status WHERE processing_status = 'PROCESSED'`)
	require.NoError(t, err)
	var out latencies
	for rows.Next() {
		var created, published time.Time
		require.NoError(t, rows.Scan(&created, &published))
		out = append(out, publishLatency{created: created, d: published.Sub(created)})
	}
	require.NoError(t, rows.Err())
	slices.SortFunc(out, func(a, b publishLatency) int { return cmp.Compare(a.d, b.d) })
	return out
}

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(len(l)-1, int(q*float64(len(l))))].d.Round(time.Millisecond)
}

func (l latencies) over(d time.Duration) int {
	n := 0
	for _, x := range l {
		if x.d > d {
			n++
		}
	}
	return n
}

// phaseList names the stretches of the test, for figures per phase.
type phaseList struct {
	names  []string
	starts []time.Time
}

func (p *phaseList) begin(name string) {
	p.names = append(p.names, name)
	p.starts = append(p.starts, time.Now())
}

// report gives, per phase, the events received in it and their publish
// latency.
func (p *phaseList) report(l latencies, origin, end time.Time) string {
	var b strings.Builder
	for i, name := range p.names {
		to := end
		if i+1 < len(p.starts) {
			to = p.starts[i+1]
		}
		var in latencies
		for _, x := range l {
			if !x.created.Before(p.starts[i]) && x.created.Before(to) {
				in = append(in, x)
			}
		}
		fmt.Fprintf(&b, "  %6.1f-%-6.1f %-26s %5d events  p50 %-8s max %-8s over 1s: %d\n",
			p.starts[i].Sub(origin).Seconds(), to.Sub(origin).Seconds(), name, len(in), in.quantile(0.5), in.quantile(1), in.over(time.Second))
	}
	return b.String()
}

func streamInfo(ctx context.Context, js jetstream.JetStream, name string) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return st.Info(ctx)
}

func peerNames(info *jetstream.StreamInfo) []string {
	if info.Cluster == nil {
		return nil
	}
	var out []string
	for _, p := range info.Cluster.Replicas {
		out = append(out, p.Name)
	}
	return out
}

func publishCounts(t *testing.T, reg *prometheus.Registry) string {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != "hub_publish_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				out = append(out, fmt.Sprintf("%s=%.0f", l.GetValue(), m.GetCounter().GetValue()))
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// logRecorder keeps the warnings and errors of the hub, the subscriber and
// the nats-server nodes, and the test's own timeline, for the report.
type logRecorder struct {
	start time.Time
	mu    sync.Mutex
	recs  []logRec
	marks []string
}

type logRec struct {
	at     time.Time
	source string
	level  slog.Level
	msg    string
	attrs  string
}

// report logs the timeline and the warnings and errors (under title) when
// the test failed; the tests that record their logs defer it.
func (l *logRecorder) report(t *testing.T, title string) {
	if t.Failed() {
		t.Logf("timeline (seconds since start):\n%s", l.timeline())
		t.Logf("%s:\n%s", title, l.summary())
	}
}

func (l *logRecorder) mark(what, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marks = append(l.marks, fmt.Sprintf("%7.3f %-18s %s", time.Since(l.start).Seconds(), what, fmt.Sprintf(format, args...)))
}

func (l *logRecorder) timeline() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	// Hub connection changes belong in the timeline too.
	lines := slices.Clone(l.marks)
	for _, r := range l.recs {
		if r.source == "hub" && (r.msg == "NATS connected" || r.msg == "hub listening" || strings.HasPrefix(r.msg, "NATS disconnected")) {
			lines = append(lines, fmt.Sprintf("%7.3f %-18s %s", r.at.Sub(l.start).Seconds(), "hub", r.msg+" "+r.attrs))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// summary groups the warnings and errors by source, message and error.
func (l *logRecorder) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	type group struct {
		n           int
		first, last time.Time
	}
	groups := map[string]*group{}
	var keys []string
	for _, r := range l.recs {
		if r.level < slog.LevelWarn {
			continue
		}
		key := fmt.Sprintf("%-7s %-5s %s", r.source, r.level, normalizeLog(r.msg+" "+r.attrs))
		g := groups[key]
		if g == nil {
			g = &group{first: r.at}
			groups[key] = g
			keys = append(keys, key)
		}
		g.n++
		g.last = r.at
	}
	var b strings.Builder
	for _, k := range keys {
		g := groups[k]
		fmt.Fprintf(&b, "%6d %6.1f-%-6.1f %s\n", g.n, g.first.Sub(l.start).Seconds(), g.last.Sub(l.start).Seconds(), k)
	}
	return b.String()
}

// normalizeLog blanks what varies between otherwise identical lines:
// numbers, event ids, Raft group and server ids.
func normalizeLog(s string) string {
	var b strings.Builder
	inNum := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !inNum {
				b.WriteByte('#')
			}
			inNum = true
			continue
		}
		inNum = false
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) > 300 {
		out = out[:300] + "..."
	}
	return out
}

// natsErrors records a client connection's asynchronous errors (slow
// consumers and the like).
func (l *logRecorder) natsErrors(source string) nats.ErrHandler {
	return func(_ *nats.Conn, sub *nats.Subscription, err error) {
		attrs := "err=" + err.Error()
		if sub != nil {
			attrs += " subject=" + sub.Subject
		}
		l.mu.Lock()
		l.recs = append(l.recs, logRec{at: time.Now(), source: source, level: slog.LevelError, msg: "async error", attrs: attrs})
		l.mu.Unlock()
	}
}

func (l *logRecorder) handler(source string) slog.Handler {
	return &recHandler{l: l, source: source}
}

type recHandler struct {
	l      *logRecorder
	source string
	attrs  []slog.Attr
}

func (h *recHandler) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelInfo }

func (h *recHandler) Handle(_ context.Context, r slog.Record) error {
	var parts []string
	add := func(a slog.Attr) {
		switch a.Key {
		case "provider", "event_id", "attempt", "stream_seq", "retry_in", "subject", "subscriber":
			return // varies per line; the summary groups without them
		}
		parts = append(parts, a.Key+"="+a.Value.String())
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(a); return true })
	h.l.mu.Lock()
	h.l.recs = append(h.l.recs, logRec{at: r.Time, source: h.source, level: r.Level, msg: r.Message, attrs: strings.Join(parts, " ")})
	h.l.mu.Unlock()
	return nil
}

func (h *recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recHandler{l: h.l, source: h.source, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h *recHandler) WithGroup(string) slog.Handler { return h }
