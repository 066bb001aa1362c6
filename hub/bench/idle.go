package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/internal/backoff"
)

// idleSettle is how long the idle run lets the hub and the destinations
// process start up (migrations, the first scans, the consumer) before it
// measures.
const idleSettle = 5 * time.Second

// IdleRun is the hub and a destinations process on a fresh database with
// no traffic at all: what the system costs while nothing happens. CPU is
// in percent of one core over the window.
type IdleRun struct {
	Seconds    float64 `json:"seconds"`
	HubCPU     float64 `json:"hub_cpu_percent"`
	DestCPU    float64 `json:"destinations_cpu_percent"`
	PostgresDB float64 `json:"postgres_database_cpu_percent"` // the backends connected to the bench database
	// Postgres is every postgres process on the machine: the bench
	// database's backends and the server's own (checkpointer, WAL writer,
	// autovacuum launcher, …), and anything else the server runs.
	Postgres float64 `json:"postgres_cpu_percent"`
	// Total is the hub, the destinations process and every postgres
	// process: the figure the idle target judges.
	Total float64 `json:"total_cpu_percent"`
	// Transactions are the bench database's commits and rollbacks over the
	// window (pg_stat_database), per second.
	TransactionsPerSecond float64 `json:"transactions_per_second"`
}

// runIdle starts the hub and a destinations process on a fresh database,
// sends nothing, and measures their CPU and Postgres's over cfg.IdleFor
// after idleSettle.
func runIdle(ctx context.Context, cfg DestinationsConfig, srv *server, natsURL, dir string) (IdleRun, error) {
	res := IdleRun{}
	db, err := srv.create(ctx, "idle", "")
	if err != nil {
		return res, err
	}
	if !cfg.Keep {
		defer srv.drop(db.name)
	}
	hp, err := startHubRun(ctx, cfg.hubConfig(), db.url, natsURL, 64)
	if err != nil {
		return res, err
	}
	defer hp.close()
	rc, err := startReceiver(1)
	if err != nil {
		return res, err
	}
	defer rc.close()
	dp, err := startDestinations(ctx, cfg, dir, db.url, natsURL, rc.url)
	if err != nil {
		return res, err
	}
	defer dp.stop()
	if err := waitConsumer(ctx, hp.js, destName, 30*time.Second); err != nil {
		return res, err
	}
	fmt.Fprintf(cfg.Log, "idle: hub pid %d, destinations pid %d; measuring %s after %s …\n", hp.cmd.Process.Pid, dp.pid(), cfg.IdleFor, idleSettle)
	if err := backoff.Sleep(ctx, idleSettle); err != nil {
		return res, err
	}
	hubPid, destPid := hp.cmd.Process.Pid, dp.pid()
	hub0, dest0, pg0 := cpuTime(hubPid), cpuTime(destPid), postgresCPU()
	backends0, xact0, err := srv.databaseActivity(ctx, db.name)
	if err != nil {
		return res, err
	}
	start := time.Now()
	if err := backoff.Sleep(ctx, cfg.IdleFor); err != nil {
		return res, err
	}
	hub, dest, pg := cpuTime(hubPid)-hub0, cpuTime(destPid)-dest0, postgresCPU()-pg0
	backends1, xact1, err := srv.databaseActivity(ctx, db.name)
	if err != nil {
		return res, err
	}
	window := time.Since(start)
	pgDB := backendsCPU(backends0, backends1)
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / window.Seconds() }
	res.Seconds = window.Seconds()
	res.HubCPU, res.DestCPU, res.Postgres, res.PostgresDB = pct(hub), pct(dest), pct(pg), pct(pgDB)
	res.Total = pct(hub + dest + pg)
	// The bench's own reads are on the postgres database, not counted.
	res.TransactionsPerSecond = float64(xact1-xact0) / window.Seconds()
	fmt.Fprintf(cfg.Log, "idle: hub %.2f %%, destinations %.2f %%, postgres %.2f %% (the database's backends %.2f %%) of one core; %.1f transactions/s\n",
		res.HubCPU, res.DestCPU, res.Postgres, res.PostgresDB, res.TransactionsPerSecond)
	return res, nil
}

// databaseActivity is the CPU time so far of each backend connected to the
// database name, by pid, and its transactions so far (commits and
// rollbacks, pg_stat_database, as the backends last reported them).
func (s *server) databaseActivity(ctx context.Context, name string) (map[int]time.Duration, int64, error) {
	if _, err := s.conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return nil, 0, fmt.Errorf("activity: %w", err)
	}
	var xact int64
	if err := s.conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, name).Scan(&xact); err != nil {
		return nil, 0, fmt.Errorf("activity: %w", err)
	}
	rows, err := s.conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, name)
	if err != nil {
		return nil, 0, fmt.Errorf("activity: %w", err)
	}
	defer rows.Close()
	cpu := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, 0, fmt.Errorf("activity: %w", err)
		}
		cpu[pid] = cpuTime(pid)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("activity: %w", err)
	}
	return cpu, xact, nil
}

// backendsCPU is the CPU time the backends of databaseActivity's answers
// used between them: all of it for a backend born in between.
func backendsCPU(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}
