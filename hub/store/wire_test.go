package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// ingestViaPgx runs ingestSQL as ingest did before execWire: through
// pgx's Query, which encodes the arguments itself.
func (s *Store) ingestViaPgx(ctx context.Context, ds []hub.Delivery, payloads []string, bodies [][]byte) (map[uuid.UUID]hub.Status, error) {
	rows, err := s.pool.Query(ctx, ingestSQL, s.ingestArgs(ds, payloads, bodies)...)
	if err != nil {
		return nil, err
	}
	statuses := make(map[uuid.UUID]hub.Status, len(ds))
	var id uuid.UUID
	var st string
	_, err = pgx.ForEachRow(rows, []any{&id, &st}, func() error {
		statuses[id] = hub.Status(st)
		return nil
	})
	return statuses, err
}

// ingestAllViaPgx is Ingest as it was before execWire, unstorable
// payloads included.
func (s *Store) ingestAllViaPgx(ctx context.Context, ds []hub.Delivery) (map[uuid.UUID]hub.Status, error) {
	payloads, bodies := payloadViews(ds)
	out, err := s.ingestViaPgx(ctx, ds, payloads, bodies)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Code, "22") {
		if err := s.replaceUnstorable(ctx, ds, payloads, bodies); err != nil {
			return nil, err
		}
		out, err = s.ingestViaPgx(ctx, ds, payloads, bodies)
	}
	return out, err
}

func wireDelivery(eventID, body string) hub.Delivery {
	return hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID,
		EventType: "subscription.created", Body: []byte(body), Signature: "ts=1;h1=00",
		ReceivedAt: time.Now().Truncate(time.Microsecond)}
}

// tableRows reads every row the ingest statement writes, as JSON, but for
// the outbox's due time, which is now() plus a constant.
func tableRows(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT to_jsonb(w)::text FROM webhook_events w
		UNION ALL SELECT (to_jsonb(p) - 'next_attempt_at' || jsonb_build_object('due', p.next_attempt_at IS NOT NULL))::text
		FROM processed_webhook_events p
		UNION ALL SELECT to_jsonb(e)::text FROM webhook_event_entities e
		ORDER BY 1`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// TestWireWritesWhatPgxWrote ingests each batch through pgx's Query (the
// code before) and through execWire, from empty tables, and compares
// every column of every row they write and the statuses they return.
func TestWireWritesWhatPgxWrote(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := New(pool)
	s.HoldNew(time.Minute)
	huge := `{"data":"` + strings.Repeat("é0123456789", 800_000) + `"}` // ~9.6 MB
	traced := wireDelivery("evt_traced", `{"a":1}`)
	traced.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	signed := wireDelivery("evt_signed", `{"a":2}`)
	signed.SignedAt, signed.OccurredAt = time.Now().Add(-time.Minute).Truncate(time.Microsecond), time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	failed := wireDelivery("evt_failed", `{}`)
	failed.Error = "cannot publish: ünknown type ☃"
	backfilled := wireDelivery("evt_backfill", `{"b":1}`)
	backfilled.Origin = hub.OriginAPI
	withEntities := wireDelivery("evt_entities", `{"customer":"ctm_1"}`)
	withEntities.Entities = []hub.Entity{{Kind: "customer", ID: "ctm_1"}, {Kind: "subscription", ID: "sub_ü"}}
	binary := wireDelivery("evt_binary", "\x00\xff binary")
	split := wireDelivery("evt_payload", "original bytes")
	split.Payload = []byte(`{"rewritten":true}`)
	unicode := wireDelivery("évt_ü_☃", `{"name":"Zoë ☃ 𝄞","empty":""}`)
	unicode.EventType, unicode.Signature = "subscription.créée", "sig ☃"
	cases := []struct {
		name string
		ds   []hub.Delivery
	}{
		{"one delivery", []hub.Delivery{wireDelivery("evt_one", `{"n":1}`)}},
		{"duplicates in the batch", []hub.Delivery{wireDelivery("evt_d", `{"n":1}`), wireDelivery("evt_d", `{"n":1}`), wireDelivery("evt_e", `{}`)}},
		{"empty body", []hub.Delivery{wireDelivery("evt_empty", "")}},
		{"optional values", []hub.Delivery{traced, signed, failed, backfilled, wireDelivery("evt_plain", `[]`)}},
		{"entities", []hub.Delivery{withEntities, wireDelivery("evt_no_entities", `{}`)}},
		{"NULL and non-NULL bodies", []hub.Delivery{binary, split, wireDelivery("evt_text", `{"t":true}`)}},
		{"non-ASCII text", []hub.Delivery{unicode}},
		{"huge body", []hub.Delivery{wireDelivery("evt_huge", huge), wireDelivery("evt_small", `{}`)}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pool.Exec(ctx, `TRUNCATE webhook_events, processed_webhook_events, webhook_event_entities`)
			require.NoError(t, err)
			want, err := s.ingestAllViaPgx(ctx, tc.ds)
			require.NoError(t, err)
			wantRows := tableRows(t, pool)
			_, err = pool.Exec(ctx, `TRUNCATE webhook_events, processed_webhook_events, webhook_event_entities`)
			require.NoError(t, err)
			outs, err := s.Ingest(ctx, tc.ds)
			require.NoError(t, err)
			require.Len(t, outs, len(tc.ds))
			for i, o := range outs {
				require.Equal(t, want[tc.ds[i].ArchiveID], o.Status, "delivery %d", i)
			}
			got := tableRows(t, pool)
			require.Len(t, got, len(wantRows))
			for i := range got {
				require.True(t, got[i] == wantRows[i], "row %d differs:\n%.300s\n%.300s", i, got[i], wantRows[i])
			}
		})
	}
}

// TestExecWireEncodes: arguments reach the server as pgx would send them,
// NULL apart from empty, and result rows come back in binary.
func TestExecWireEncodes(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	s := New(pool)
	cases := []struct {
		name string
		sql  string
		args []any
		want string
	}{
		{"NULL and empty text", `SELECT format('%s %s %s', $1::text IS NULL, $2::text IS NULL, length($2))`, []any{nil, ""}, "t f 0"},
		{"empty and NULL arrays", `SELECT format('%s %s', cardinality($1::text[]), $2::text[] IS NULL)`, []any{[]string{}, []string(nil)}, "0 t"},
		{"NULL and empty array elements", `SELECT format('%s %s', array_to_string(array(SELECT coalesce(encode(b, 'hex'), 'null') FROM unnest($1::bytea[]) b), ','), $2::text)`,
			[]any{pgtype.FlatArray[[]byte]{nil, {}, {0, 0xff}}, "x"}, "null,,00ff x"},
		{"non-ASCII text", `SELECT $1::text || '|' || octet_length($1::text)`, []any{"Zoë ☃ 𝄞"}, "Zoë ☃ 𝄞|13"},
		{"numbers and times", `SELECT format('%s %s %s', $1::bigint, $2::timestamptz = 'epoch', $3::timestamptz AT TIME ZONE 'UTC')`,
			[]any{int64(-42), time.Unix(0, 0), time.Time{}}, "-42 t 0001-01-01 00:00:00"},
		{"uuids", `SELECT array_to_string($1::uuid[], ',')`, []any{[][16]byte{uuid.MustParse("0af76519-16cd-43dd-8448-eb211c80319c")}}, "0af76519-16cd-43dd-8448-eb211c80319c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			require.NoError(t, s.execWire(context.Background(), tc.sql, tc.args, 1, func(row [][]byte) error {
				got = append(got, string(row[0]))
				return nil
			}))
			require.Equal(t, []string{tc.want}, got)
		})
	}
}

// singleConn is a pool of one connection on the test's database.
func singleConn(t *testing.T) *pgxpool.Pool {
	t.Helper()
	_, url := hubdb.Pool(t)
	return hubtest.NewPoolOf(t, url, 1)
}

// backendPID runs execWire and returns the server process that answered.
func backendPID(ctx context.Context, s *Store) (int32, error) {
	var pid int32
	err := s.execWire(ctx, `SELECT pg_backend_pid()`, nil, 1, func(row [][]byte) error {
		if len(row) != 1 || len(row[0]) != 4 {
			return fmt.Errorf("unexpected row %v", row)
		}
		pid = int32(uint32(row[0][0])<<24 | uint32(row[0][1])<<16 | uint32(row[0][2])<<8 | uint32(row[0][3]))
		return nil
	})
	return pid, err
}

// TestExecWireFailures: a server's error is a *pgconn.PgError and leaves
// the connection in use; a statement whose answer is not read to its end
// (a timeout, too many rows, a row refused) closes it, and the pool opens
// another; a prepared statement the server lost is prepared again and
// run.
func TestExecWireFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		run     func(s *Store) error
		pgCode  string // a *pgconn.PgError of this code, else any error
		samePID bool   // the connection survives
		ok      bool   // no error
	}{
		{name: "server error", pgCode: "22012", samePID: true, run: func(s *Store) error {
			return s.execWire(ctx, `SELECT 1 / $1::int`, []any{0}, 1, func([][]byte) error { return nil })
		}},
		{name: "more parameters than arguments", samePID: true, run: func(s *Store) error {
			return s.execWire(ctx, `SELECT $1::int + $2::int`, []any{1}, 1, func([][]byte) error { return nil })
		}},
		{name: "timeout while the server runs it", run: func(s *Store) error {
			tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			return s.execWire(tctx, `SELECT pg_sleep($1)`, []any{5.0}, 1, func([][]byte) error { return nil })
		}},
		{name: "more rows than expected", run: func(s *Store) error {
			return s.execWire(ctx, `SELECT generate_series(1, 10)`, nil, 3, func([][]byte) error { return nil })
		}},
		{name: "a row refused", run: func(s *Store) error {
			return s.execWire(ctx, `SELECT generate_series(1, 10)`, nil, 10, func([][]byte) error { return errors.New("refused") })
		}},
		{name: "statement deallocated by the server", samePID: true, ok: true, run: func(s *Store) error {
			if err := s.execWire(ctx, `SELECT 1`, nil, 1, func([][]byte) error { return nil }); err != nil {
				return err
			}
			if _, err := s.pool.Exec(ctx, `DEALLOCATE ALL`); err != nil {
				return err
			}
			return s.execWire(ctx, `SELECT 1`, nil, 1, func([][]byte) error { return nil })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := New(singleConn(t))
			before, err := backendPID(ctx, s)
			require.NoError(t, err)
			err = tc.run(s)
			if tc.ok {
				require.NoError(t, err, "prepared again")
			} else {
				require.Error(t, err)
			}
			if tc.pgCode != "" {
				var pgErr *pgconn.PgError
				require.ErrorAs(t, err, &pgErr)
				require.Equal(t, tc.pgCode, pgErr.Code)
			}
			after, err := backendPID(ctx, s)
			require.NoError(t, err, "the pool answers after the failure")
			if tc.samePID {
				require.Equal(t, before, after, "the connection survives")
			} else {
				require.NotEqual(t, before, after, "the connection is replaced")
			}
			// Whatever happened, the statement works again.
			var n int
			require.NoError(t, s.execWire(ctx, `SELECT 1`, nil, 1, func(row [][]byte) error { n++; return nil }))
			require.Equal(t, 1, n)
		})
	}
}

// TestSendWireInterrupted: a write that ctx's end interrupts, or that
// starts after it, fails with ctx's cause (execWire then closes the
// connection: TestExecWireFailures).
func TestSendWireInterrupted(t *testing.T) {
	t.Parallel()
	pool := singleConn(t)
	c, err := pool.Acquire(context.Background())
	require.NoError(t, err)
	defer c.Release()
	defer func() { _ = c.Conn().Close(context.Background()) }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = sendWire(ctx, c.Conn().PgConn(), make([]byte, 1<<20))
	require.ErrorIs(t, err, context.Canceled)
}

// BenchmarkIngestStatement commits batches of 32 deliveries of the bench's
// ~2 KB Paddle body, new events each time, alternately through pgx's
// Query (before) and through execWire (now), and reports for each the
// bytes allocated and this process's CPU time (the hub's side: encoding,
// I/O, GC; not Postgres's) per delivery.
//
//	go test -run XXX -bench IngestStatement -benchtime 300x ./hub/store/
func BenchmarkIngestStatement(b *testing.B) {
	pool, _ := hubdb.Pool(b)
	s := New(pool)
	ctx := context.Background()
	const batch = 32
	body, err := samples.Body("paddle", "evt_bench", "subscription.created", nil, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	seq := 0
	next := func() []hub.Delivery {
		ds := make([]hub.Delivery, batch)
		for i := range ds {
			seq++
			ds[i] = wireDelivery(fmt.Sprintf("evt_%d_%d", time.Now().UnixNano(), seq), string(body))
			ds[i].Signature = "ts=1671552777;h1=eb4d0dc8853be92b7f063b9f3ba5233eb920a09459b6e6b2c26705b4364db151"
		}
		return ds
	}
	ways := []struct {
		name   string
		ingest func(ds []hub.Delivery, payloads []string, bodies [][]byte) error
	}{
		{"pgx", func(ds []hub.Delivery, payloads []string, bodies [][]byte) error {
			_, err := s.ingestViaPgx(ctx, ds, payloads, bodies)
			return err
		}},
		{"wire", func(ds []hub.Delivery, payloads []string, bodies [][]byte) error {
			_, err := s.ingest(ctx, ds, payloads, bodies, nil)
			return err
		}},
	}
	allocated, cpu := make([]uint64, len(ways)), make([]time.Duration, len(ways))
	var m0, m1 runtime.MemStats
	b.ReportAllocs()
	for b.Loop() {
		for k, way := range ways {
			b.StopTimer()
			ds := next()
			payloads, bodies := payloadViews(ds)
			runtime.ReadMemStats(&m0)
			cpu0 := goCPU()
			b.StartTimer()
			err := way.ingest(ds, payloads, bodies)
			b.StopTimer()
			cpu[k] += goCPU() - cpu0
			runtime.ReadMemStats(&m1)
			allocated[k] += m1.TotalAlloc - m0.TotalAlloc
			b.StartTimer()
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	deliveries := float64(b.N * batch)
	for k, way := range ways {
		b.ReportMetric(float64(allocated[k])/deliveries, way.name+"_B/delivery")
		b.ReportMetric(float64(cpu[k].Microseconds())/deliveries, way.name+"_cpu_µs/delivery")
	}
	b.ReportMetric(float64(allocated[1])/float64(allocated[0]), "wire/pgx_B")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "wire/pgx_cpu")
}

// goCPU is this process's CPU time (user + system).
func goCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// spread scrambles n (a SplitMix64 step): distinct n give distinct
// values spread over the whole range.
func spread(n int) uint64 {
	z := uint64(n) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// backendCPU is the CPU time Postgres backend pid has used, read from
// /proc (Postgres on this machine): its scheduler's run time, in
// nanoseconds (/proc/<pid>/stat counts 10 ms ticks, too coarse for a
// batch of a few milliseconds).
func backendCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	require.NoError(b, err)
	ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
	require.NoError(b, err)
	return time.Duration(ns)
}

// BenchmarkIngestEntityCost measures what entities add to the ingest
// statement: batches of 64 first deliveries (a 1 KB body) without
// entities and with three, interleaved on one connection, each batch's
// CPU counted for the Go side (this process: encoding, the hub's half) and
// for its Postgres backend (/proc: the statement's execution; the WAL
// writer's and checkpointer's work is not counted). It reports µs per
// delivery of each and the ratio with/without.
//
//	go test -run '^$' -bench IngestEntityCost -benchtime 300x ./hub/store/
func BenchmarkIngestEntityCost(b *testing.B) {
	_, url := hubdb.Pool(b)
	pool := hubtest.NewPoolOf(b, url, 1)
	ctx := context.Background()
	var pid int
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	s := New(pool)
	body := `{"event_id":"%s","event_type":"subscription.updated","occurred_at":"2026-11-30T08:00:00Z","data":{"id":"sub_01hv8x","status":"active","customer_id":"ctm_01hv8y","address_id":"add_01hv8z","business_id":null,"currency_code":"USD","items":[{"status":"active","quantity":1,"recurring":true,"price":{"id":"pri_01gsz8x8sawmvhz1pv30nge1ke","description":"Monthly","product_id":"pro_01gsz4t5hdjse780zja8vvr7jg","billing_cycle":{"interval":"month","frequency":1},"unit_price":{"amount":"3000","currency_code":"USD"}}}],"custom_data":{"plan":"pro"},"collection_mode":"automatic","current_billing_period":{"starts_at":"2026-11-30T08:00:00Z","ends_at":"2026-12-30T08:00:00Z"}},"notification_id":"ntf_01hv8x"}`
	const batch = 64
	n := 0
	mk := func(entities bool) []hub.Delivery {
		ds := make([]hub.Delivery, batch)
		for i := range ds {
			n++
			id := fmt.Sprintf("evt_cost_%09d", n)
			ds[i] = hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: id, EventType: "subscription.updated",
				Body: []byte(fmt.Sprintf(body, id)), Signature: "ts=1;h1=" + strings.Repeat("ab", 32), ReceivedAt: time.Now()}
			if entities {
				// Ids spread over the key space, as providers' are (a
				// counter's would land next to each other in the index).
				ds[i].Entities = []hub.Entity{{Kind: "subscription", ID: fmt.Sprintf("sub_%016x", spread(n%100_000))},
					{Kind: "customer", ID: fmt.Sprintf("ctm_%016x", spread(n%50_000))}, {Kind: "address", ID: fmt.Sprintf("add_%016x", spread(n%50_000+1<<40))}}
			}
		}
		return ds
	}
	var goUsed, pgUsed [2]time.Duration
	var wall [2]time.Duration
	for range 20 { // warm-up: plans, caches
		for _, with := range []bool{false, true} {
			_, err := s.Ingest(ctx, mk(with))
			require.NoError(b, err)
		}
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for _, k := range []int{i % 2, 1 - i%2} { // alternate which goes first
			ds := mk(k == 1)
			g0, p0, t0 := goCPU(), backendCPU(b, pid), time.Now()
			if _, err := s.Ingest(ctx, ds); err != nil {
				b.Fatal(err)
			}
			wall[k] += time.Since(t0)
			goUsed[k] += goCPU() - g0
			pgUsed[k] += backendCPU(b, pid) - p0
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N*batch) }
	b.ReportMetric(per(goUsed[0]), "go-µs/delivery")
	b.ReportMetric(per(pgUsed[0]), "pg-µs/delivery")
	b.ReportMetric(per(goUsed[1]), "go-µs/delivery(3-entities)")
	b.ReportMetric(per(pgUsed[1]), "pg-µs/delivery(3-entities)")
	b.ReportMetric(float64(goUsed[1]+pgUsed[1])/float64(goUsed[0]+pgUsed[0]), "cpu-ratio")
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "wall-ratio")
}
