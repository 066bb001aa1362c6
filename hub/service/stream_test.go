package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/hookhub/hookhub/migrations"
	"github.com/hookhub/hookhub/schema"
)

// TestStreamDeletedUnderLoad deletes the hub's stream twice under steady
// load:
//  1. deleted: the hub notices (a failed publish, or its periodic check),
//     recreates it and re-queues what it held;
//  2. deleted, and another stream takes the subjects at once, so the hub
//     cannot recreate it: /readyz must say "missing" (503) meanwhile, or
//     "conflict" if both creations raced through JetStream's overlap
//     check; then the other stream goes.
//
// Every delivery is still answered 2xx (the outbox keeps them). Within 30s
// of the second loss ending, every accepted event, including those the
// deleted streams had acknowledged and lost, must be on the stream exactly
// once and nothing else, nothing PENDING, and /readyz ready again. (The
// subscribers' side: TestStreamLossSubscriberResumes.)
func TestStreamDeletedUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("stream deletion under load: about 20s")
	}
	logs := &logRecorder{start: time.Now()}
	ctx := context.Background()
	defer logs.report(t, "warnings and errors logged")
	h := newUnstartedHub(t)
	js, cfg := h.js, h.cfg
	reg := prometheus.NewRegistry()
	h.startWithDeps(service.Deps{Logger: slog.New(logs.handler("hub")), Registry: reg})
	h.waitStream()
	ready := watchReadyz(t, h.base)

	load := startFailoverLoad(h)
	defer load.stop()
	waitAccepted := func(more int) {
		t.Helper()
		target := len(load.results().accepted) + more
		require.Eventually(t, func() bool { return len(load.results().accepted) >= target }, 30*time.Second, 10*time.Millisecond)
	}
	waitAccepted(50)

	// 1. Deleted.
	logs.mark("delete", "%d accepted so far", len(load.results().accepted))
	require.NoError(t, js.DeleteStream(ctx, cfg.Stream))
	require.Eventually(t, func() bool {
		_, err := js.Stream(ctx, cfg.Stream)
		return err == nil
	}, 30*time.Second, 5*time.Millisecond, "the hub did not recreate its stream")
	logs.mark("recreated", "")
	waitAccepted(50)

	// 2. Deleted, and its subjects taken by another stream. (If the hub
	// recreates its stream between the two calls, delete it again.)
	for attempt := 0; ; attempt++ {
		require.NoError(t, js.DeleteStream(ctx, cfg.Stream))
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BLOCKER", Subjects: []string{"paddle.>"}})
		if err == nil {
			break
		}
		require.Less(t, attempt, 10, "cannot block the stream's subjects: %v", err)
	}
	logs.mark("delete+block", "%d accepted so far", len(load.results().accepted))
	// "conflict" when the hub recreated its stream at the moment BLOCKER
	// was created: both can pass JetStream's overlap check.
	require.Eventually(t, func() bool {
		return ready.saw(http.StatusServiceUnavailable, "missing") || ready.saw(http.StatusServiceUnavailable, "conflict")
	}, 30*time.Second, 5*time.Millisecond, "/readyz must fail while the stream is missing")
	waitAccepted(30) // still accepted: the outbox keeps them
	blocker, err := js.Stream(ctx, "BLOCKER")
	require.NoError(t, err)
	require.Zero(t, blocker.CachedInfo().State.Msgs, "nothing published to another stream (Nats-Expected-Stream)")
	require.NoError(t, js.DeleteStream(ctx, "BLOCKER"))
	cleared := time.Now()
	logs.mark("unblocked", "")
	waitAccepted(30)
	load.stop()
	logs.mark("load stopped", "")

	res := load.results()
	for _, r := range res.failures[:min(len(res.failures), 20)] {
		t.Errorf("delivery %s: %s", r.eventID, r.failure)
	}
	require.Empty(t, res.failures, "every delivery is answered 2xx while the stream is gone")

	// Within 30s of the second loss ending: all there, nothing pending.
	var msgs uint64
	require.Eventually(t, func() bool {
		st, err := js.Stream(ctx, cfg.Stream)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		if err != nil {
			return false
		}
		msgs = info.State.Msgs
		return msgs >= uint64(len(res.accepted)) &&
			h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PENDING'`) == 0
	}, time.Until(cleared.Add(30*time.Second)), 50*time.Millisecond,
		"not restored within 30s: %d of %d accepted events on the stream", msgs, len(res.accepted))
	restoredAfter := time.Since(cleared)
	logs.mark("restored", "")
	scan := scanStream(t, js, cfg.Stream)
	for id := range res.accepted {
		require.Equal(t, 1, scan.ids[schema.MsgID("paddle", id)], "accepted event %s must be on the stream exactly once", id)
	}
	require.Len(t, scan.ids, len(res.accepted), "the stream holds only the accepted events")
	require.Len(t, scan.times, len(res.accepted), "one message per accepted event")
	require.Equal(t, len(res.accepted), h.count(`SELECT count(*) FROM webhook_event_status WHERE processing_status = 'PROCESSED'`))

	// /readyz: 503 while missing, ready again after.
	require.Eventually(t, func() bool { return ready.last() == (readyzObs{status: http.StatusOK, stream: "ok"}) }, 10*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, gathered(t, reg, "hub_stream_lost_total"), 2.0)
	require.Positive(t, gathered(t, reg, "hub_stream_restored_events_total"))
	require.Equal(t, 1.0, gathered(t, reg, "hub_stream_present"))

	t.Logf("deliveries: %d requests, %d accepted events, %d duplicates, 0 non-2xx", res.requests, len(res.accepted), res.duplicates)
	t.Logf("every accepted event on the stream %s after the second loss ended", restoredAfter.Round(time.Millisecond))
	t.Logf("hub_stream_lost_total %.0f, hub_stream_restored_events_total %.0f; hub_publish_total: %s",
		gathered(t, reg, "hub_stream_lost_total"), gathered(t, reg, "hub_stream_restored_events_total"), publishCounts(t, reg))
	t.Logf("/readyz transitions: %s", ready.transitions(logs.start))
	t.Logf("warnings and errors logged:\n%s", logs.summary())
	t.Logf("timeline (seconds since start):\n%s", logs.timeline())
}

// TestStreamLossSubscriberResumes: the credits subscriber, whose durable
// consumer goes with a deleted stream, recreates it on the recreated stream
// and processes every event (those the hub restored included) exactly
// once. (The subscriber notices the loss even with no pull request
// waiting at that moment: subscribers/subscriber's
// TestStreamDeletedWhileWorkersAreBusy.)
func TestStreamLossSubscriberResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("stream deletion under load with a subscriber")
	}
	logs := &logRecorder{start: time.Now()}
	ctx := context.Background()
	defer logs.report(t, "warnings and errors logged")
	h := newUnstartedHub(t)
	js := h.js
	h.startWithDeps(service.Deps{Logger: slog.New(logs.handler("hub"))})
	h.waitStream()
	_, subJS := h.nats.Connect(t)
	sub := startFailoverCredits(t, h, subJS, slog.New(logs.handler("credits")))

	load := startFailoverLoad(h)
	defer load.stop()
	require.Eventually(t, func() bool { return h.count(`SELECT count(*) FROM credits.processed_messages`) >= 50 },
		30*time.Second, 10*time.Millisecond)
	logs.mark("delete", "")
	require.NoError(t, js.DeleteStream(ctx, h.cfg.Stream))
	accepted := len(load.results().accepted)
	require.Eventually(t, func() bool { return len(load.results().accepted) >= accepted+50 }, 30*time.Second, 10*time.Millisecond)
	load.stop()
	res := load.results()
	require.Empty(t, res.failures)
	h.waitPublished()
	logs.mark("restored", "")

	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM credits.processed_messages`) >= len(res.accepted)
	}, 60*time.Second, 50*time.Millisecond, "credits did not process every event after the stream was recreated (%+v)", sub.Stats())
	require.Equal(t, len(res.accepted), h.count(`SELECT count(*) FROM credits.ledger`))
	require.Zero(t, h.count(`SELECT count(*) FROM (SELECT event_id FROM credits.ledger GROUP BY event_id HAVING count(*) <> 1) x`),
		"an event granted credits more than once")
	require.Equal(t, len(res.accepted), h.count(`SELECT count(*) FROM credits.processed_messages`))
	require.Zero(t, h.count(`SELECT count(*) FROM credits.dead_letters`))
}

// TestEnsureStreamMergesSubjects: a hub joins a stream another replica
// made, with a provider it does not know; it adds its own subjects and
// takes none away, nor lowers a larger setting. A second hub with fewer
// providers removes nothing either, and a hub puts back its subjects when
// an older replica's update dropped them.
func TestEnsureStreamMergesSubjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, dbURL := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: schema.DefaultStream, Subjects: []string{"other.>"}, Duplicates: 5 * time.Minute})
	require.NoError(t, err)
	info := func() *jetstream.StreamInfo {
		t.Helper()
		st, err := js.Stream(ctx, schema.DefaultStream)
		require.NoError(t, err)
		return st.CachedInfo()
	}
	all := []string{"other.>", "paddle.>", "clerk.>", "_replay.>"}
	hasAll := func(want []string) func() bool {
		return func() bool {
			have := info().Config.Subjects
			for _, s := range want {
				if !strings.Contains(" "+strings.Join(have, " ")+" ", " "+s+" ") {
					return false
				}
			}
			return true
		}
	}

	h := &testHub{t: t, cfg: newTestConfig(t, dbURL, n.URL()), pool: pool, nats: n, js: js,
		paddle: mustSender(t, "paddle", paddleSecret), clerk: mustSender(t, "clerk", clerkSecret)}
	h.start()
	require.Eventually(t, hasAll(all), 10*time.Second, 10*time.Millisecond)
	require.ElementsMatch(t, all, info().Config.Subjects)
	require.Equal(t, 5*time.Minute, info().Config.Duplicates, "a larger duplicate window is not lowered")
	created := info().Created

	// A second hub on the same stream and database, without clerk.
	cfg2 := h.cfg
	cfg2.SetSecrets("clerk")
	h2 := &testHub{t: t, cfg: cfg2, pool: pool, nats: n, js: js, paddle: h.paddle, clerk: h.clerk}
	h2.start()
	require.Eventually(t, func() bool { return readyzOf(t, h2.base) == readyzObs{status: http.StatusOK, stream: "ok"} }, 10*time.Second, 10*time.Millisecond)
	// Both keep checking (every 2s); nothing is ever taken away.
	require.Never(t, func() bool { return !hasAll(all)() }, 5*time.Second, 50*time.Millisecond)
	require.ElementsMatch(t, all, info().Config.Subjects)
	require.Equal(t, created, info().Created, "updated in place, never recreated")

	// A hub of an older version replaces the subjects with its own: the
	// first hub puts clerk.> back.
	cfg := info().Config
	cfg.Subjects = []string{"paddle.>", "_replay.>"}
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.Eventually(t, hasAll([]string{"paddle.>", "clerk.>", "_replay.>"}), 10*time.Second, 10*time.Millisecond)
	a := h.deliver("clerk", "msg_after_merge", "user.created")
	require.Equal(t, http.StatusOK, a.status)
	h.waitPublished()
	require.Equal(t, 1, h.streamMsgIDs()["clerk:msg_after_merge"])
}

// /readyz never echoes the database's error text: it says which check
// failed in fixed words and logs the cause, at most every 30s.
func TestReadyzHidesDatabaseErrors(t *testing.T) {
	t.Parallel()
	logs := &logRecorder{start: time.Now()}
	pool, dbURL := hubdb.Pool(t)
	n := hubtest.JetStream(t)
	_, js := n.Connect(t)
	h := &testHub{t: t, cfg: newTestConfig(t, dbURL, n.URL()), pool: pool, nats: n, js: js,
		paddle: mustSender(t, "paddle", paddleSecret), clerk: mustSender(t, "clerk", clerkSecret)}
	h.startWithDeps(service.Deps{Logger: slog.New(logs.handler("hub"))})
	h.waitStream()
	require.Eventually(t, func() bool { return readyzOf(t, h.base) == readyzObs{status: http.StatusOK, stream: "ok"} }, 10*time.Second, 10*time.Millisecond)

	dbName := databaseName(t, dbURL)
	admin := adminConn(t)
	leaks := []string{dbName, "SQLSTATE", "FATAL", "accepting connections", "postgres", "127.0.0.1", "5432", "dial", "pgx"}
	for _, tc := range []struct {
		name   string
		break_ func()
		fix    func()
		want   map[string]any
	}{
		{"database refuses connections",
			func() { setConnections(t, admin, dbName, false) },
			func() { setConnections(t, admin, dbName, true) },
			map[string]any{"status": "not ready", "error": "database unavailable", "database": "unavailable", "stream": "ok"}},
		{"migrations pending",
			func() { migrateHub(t, dbURL, false) },
			func() { migrateHub(t, dbURL, true) },
			map[string]any{"status": "not ready", "error": "migrations pending", "database": "ok", "migrations": "pending", "stream": "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logged := logs.count("not ready")
			tc.break_()
			for range 3 {
				status, body, raw := getReadyz(t, h.base)
				require.Equal(t, http.StatusServiceUnavailable, status, raw)
				delete(body, "nats")
				require.Equal(t, tc.want, body, raw)
				for _, leak := range leaks {
					require.NotContains(t, strings.ToLower(raw), strings.ToLower(leak))
				}
			}
			require.LessOrEqual(t, logs.count("not ready")-logged, 1, "logged at most every 30s")
			tc.fix()
			require.Eventually(t, func() bool { return readyzOf(t, h.base) == readyzObs{status: http.StatusOK, stream: "ok"} }, 30*time.Second, 20*time.Millisecond)
		})
	}
	// The cause is in the log, for the operator.
	require.Positive(t, logs.count("not ready"))
	require.True(t, logs.contains("not ready", "SQLSTATE"), "the database's error is logged:\n%s", logs.summary())
}

// migrateHub applies every hub migration (up) or rolls back the last one,
// on a pool of its own.
func migrateHub(t *testing.T, dbURL string, up bool) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	m, err := migrations.Hub(pool)
	require.NoError(t, err)
	defer m.Close()
	if up {
		_, err = m.Up(ctx)
	} else {
		_, err = m.Down(ctx)
	}
	require.NoError(t, err)
}

// readyzObs is what /readyz answered: its status and stream state.
type readyzObs struct {
	status int
	stream string
}

func getReadyz(t *testing.T, base string) (int, map[string]any, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(base + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(raw, &body), "%s", raw)
	return resp.StatusCode, body, string(raw)
}

func readyzOf(t *testing.T, base string) readyzObs {
	status, body, _ := getReadyz(t, base)
	s, _ := body["stream"].(string)
	return readyzObs{status: status, stream: s}
}

// readyzWatch polls /readyz and keeps its transitions.
type readyzWatch struct {
	mu   sync.Mutex
	seen []readyzSeen
}

type readyzSeen struct {
	readyzObs
	at time.Time
}

func watchReadyz(t *testing.T, base string) *readyzWatch {
	w := &readyzWatch{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	go func() {
		defer close(done)
		c := &http.Client{Timeout: 5 * time.Second}
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
			resp, err := c.Do(req)
			if err != nil {
				continue
			}
			var body struct{ Stream string }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			obs := readyzObs{status: resp.StatusCode, stream: body.Stream}
			w.mu.Lock()
			if len(w.seen) == 0 || w.seen[len(w.seen)-1].readyzObs != obs {
				w.seen = append(w.seen, readyzSeen{obs, time.Now()})
			}
			w.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond): // poll interval
			}
		}
	}()
	return w
}

func (w *readyzWatch) saw(status int, stream string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.seen {
		if s.readyzObs == (readyzObs{status, stream}) {
			return true
		}
	}
	return false
}

func (w *readyzWatch) last() readyzObs {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) == 0 {
		return readyzObs{}
	}
	return w.seen[len(w.seen)-1].readyzObs
}

func (w *readyzWatch) transitions(origin time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for _, s := range w.seen {
		parts = append(parts, fmt.Sprintf("%.3fs %d %s", s.at.Sub(origin).Seconds(), s.status, s.stream))
	}
	return strings.Join(parts, ", ")
}

// gathered is the value of an unlabelled counter or gauge in reg.
func gathered(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return hubtest.RequireMetric(t, reg, name, nil)
}

// count counts the log records with message msg.
func (l *logRecorder) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.msg == msg {
			n++
		}
	}
	return n
}

// contains reports whether a record with message msg has attributes
// containing s.
func (l *logRecorder) contains(msg, s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.msg == msg && strings.Contains(r.attrs, s) {
			return true
		}
	}
	return false
}
