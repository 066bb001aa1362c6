package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/internal/natsembed"
)

// PurgeConfig configures Purge: a hub at a fixed ingest rate while `hub
// purge` deletes an archive of Rows old rows.
type PurgeConfig struct {
	AdminURL   string   // a Postgres URL; bench databases are created next to it
	HubCommand []string // this binary: "serve" and "purge" are appended
	// Rows is the archive rows (old enough to purge) the database holds;
	// Duplicates the share of them that are duplicates (SKIPPED).
	Rows       int
	Duplicates float64
	// Rate is the deliveries/s sent to the hub (open loop) over Clients
	// connections: Warmup, then Before measured, then through the purge,
	// then After measured.
	Rate                  int
	Clients               int
	Warmup, Before, After time.Duration
	// PurgeArgs are the flags of `hub purge` after --older-than and --yes
	// (e.g. --batch 5000); MaxPurge bounds its run.
	PurgeArgs []string
	MaxPurge  time.Duration
	// Template is a database filled by an earlier run (kept with Keep) to
	// copy instead of filling one; "" fills one.
	Template string
	Keep     bool     // keep the databases (the template's name is reported)
	ExtraEnv []string // more HUB_* variables for the hub and the purge
	Log      io.Writer
}

// PurgeReport is the answer of Purge.
type PurgeReport struct {
	Rows         int      `json:"archive_rows"`
	Rate         int      `json:"rate"`
	PurgeArgs    []string `json:"purge_args"`
	LoadBefore   float64  `json:"load_average_before"`
	LoadAfter    float64  `json:"load_average_after"`
	FillSeconds  float64  `json:"fill_seconds,omitempty"`
	CopySeconds  float64  `json:"copy_seconds"`
	DatabaseMB   float64  `json:"database_mb"`
	Template     string   `json:"template,omitempty"` // kept for --template
	Deleted      int64    `json:"deleted"`
	Batches      int      `json:"batches"`
	PurgeSeconds float64  `json:"purge_seconds"`
	RowsPerSec   float64  `json:"purge_rows_per_second"`
	// Before, During and After are the ingest and the resources over the
	// phases: before the purge, while it runs, after it.
	Before PurgePhase `json:"before"`
	During PurgePhase `json:"during"`
	After  PurgePhase `json:"after"`
	// Windows is the ingest in 5-second windows from Before to the end.
	Windows []PhaseLoad `json:"windows"`
	// DedupKept says every dedup row of the purged events is still there.
	DedupKept bool `json:"dedup_rows_kept"`
	// LiveLost counts the deliveries answered 2xx without a dedup row.
	LiveLost int64 `json:"live_lost"`
}

// PurgePhase is one phase of a purge bench.
type PurgePhase struct {
	PhaseLoad
	WALMB float64 `json:"wal_mb"`
	// CPU in cores (CPU seconds a second): every postgres process of the
	// server (other databases' too), the backends and autovacuum workers
	// of the bench's database, the hub.
	PostgresCores float64 `json:"postgres_cores"`
	DatabaseCores float64 `json:"database_cores"`
	HubCores      float64 `json:"hub_cores"`
	// DeadTuples is the archive's dead rows at the phase's end,
	// Autovacuums the autovacuums of the archive ended in the phase.
	DeadTuples  int64 `json:"dead_tuples"`
	Autovacuums int64 `json:"autovacuums"`
}

// purgeAge is the --older-than of the bench's purge; the filled archive
// ends a month ago, the live load is younger.
const purgeAge = "7d"

// Purge runs the purge benchmark.
func Purge(ctx context.Context, cfg PurgeConfig) (rep PurgeReport, err error) {
	cfg.Log = cmp.Or(cfg.Log, io.Discard)
	if cfg.Rate < 1 || cfg.Clients < 1 || cfg.Rows < 1 || len(cfg.HubCommand) == 0 || cfg.MaxPurge <= 0 {
		return rep, errors.New("purge bench: rate, clients, rows, a purge bound and the hub command are required")
	}
	rep = PurgeReport{Rows: cfg.Rows, Rate: cfg.Rate, PurgeArgs: cfg.PurgeArgs, LoadBefore: loadAverage()}
	defer func() { rep.LoadAfter = loadAverage() }()
	srv, err := connectServer(ctx, cfg.AdminURL)
	if err != nil {
		return rep, err
	}
	defer srv.close()
	template := cfg.Template
	if template == "" {
		if template, err = fillPurgeTemplate(ctx, cfg, srv, &rep); err != nil {
			return rep, err
		}
		if cfg.Keep {
			rep.Template = template
		} else {
			defer srv.drop(template)
		}
	}
	db, err := srv.create(ctx, "purge", template)
	if err != nil {
		return rep, err
	}
	if !cfg.Keep {
		defer srv.drop(db.name)
	}
	rep.CopySeconds = db.copySeconds
	if rep.DatabaseMB, err = srv.sizeMB(ctx, db.name); err != nil {
		return rep, err
	}
	ns, stop, err := tempNATS()
	if err != nil {
		return rep, err
	}
	defer stop()
	return rep, purgeRun(ctx, cfg, srv, db, ns.ClientURL(), &rep)
}

// tempNATS starts a JetStream server storing in a new temporary directory;
// stop shuts it down and removes the directory.
func tempNATS() (ns *natsembed.Server, stop func(), err error) {
	dir, err := os.MkdirTemp("", "hub-bench-purge-")
	if err == nil {
		if ns, err = startNATS(dir); err == nil {
			return ns, func() { ns.Shutdown(); os.RemoveAll(dir) }, nil
		}
		os.RemoveAll(dir)
	}
	return nil, nil, err
}

// fillPurgeTemplate fills a template database with cfg.Rows archive rows
// received from four months to one month ago.
func fillPurgeTemplate(ctx context.Context, cfg PurgeConfig, srv *server, rep *PurgeReport) (string, error) {
	start := time.Now()
	db, err := srv.create(ctx, "purge_template", "")
	if err != nil {
		return "", err
	}
	f := purgeFill{rows: cfg.Rows, end: start.Add(-30 * 24 * time.Hour), span: 90 * 24 * time.Hour}
	if cfg.Duplicates > 0 {
		f.dupEvery = max(2, int(1/cfg.Duplicates+0.5))
	}
	fmt.Fprintf(cfg.Log, "filling %s with %d archive rows …\n", db.name, cfg.Rows)
	if err := fillArchive(ctx, db.url, f, cfg.Log); err != nil {
		srv.drop(db.name)
		return "", err
	}
	if err := srv.freeze(ctx, db.name); err != nil {
		srv.drop(db.name)
		return "", err
	}
	rep.FillSeconds = time.Since(start).Seconds()
	return db.name, nil
}

// purgeRun runs the hub under the load, the purge in the middle, and
// fills rep's phases.
func purgeRun(ctx context.Context, cfg PurgeConfig, srv *server, db database, natsURL string, rep *PurgeReport) error {
	hp, err := startHubRun(ctx, Config{HubCommand: cfg.HubCommand, ExtraEnv: cfg.ExtraEnv, Log: cfg.Log}, db.url, natsURL, 64)
	if err != nil {
		return err
	}
	defer hp.close()
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	smp := startSampler(ctx, srv, db.name)
	defer smp.stop()
	total := cfg.Warmup + cfg.Before + cfg.MaxPurge + cfg.After + 10*time.Second
	load, err := startLiveLoad(ctx, hp.base, cfg.Rate, cfg.Clients, int(float64(cfg.Rate)*total.Seconds()))
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			load.stop()
		}
	}()
	pid := hp.cmd.Process.Pid
	sleep(ctx, cfg.Warmup)
	m0 := mark(ctx, conn, smp, pid)
	fmt.Fprintf(cfg.Log, "measuring %s before the purge at %d/s …\n", cfg.Before, cfg.Rate)
	sleep(ctx, cfg.Before)
	m1 := mark(ctx, conn, smp, pid)
	fmt.Fprintf(cfg.Log, "purging: hub purge --older-than %s --yes %v …\n", purgeAge, cfg.PurgeArgs)
	res, perr := runHubPurge(ctx, cfg, db.url, natsURL)
	m2 := mark(ctx, conn, smp, pid)
	rep.Deleted, rep.Batches = res.Rows, res.Batches
	rep.PurgeSeconds = m2.t.Sub(m1.t).Seconds()
	rep.RowsPerSec = float64(res.Rows) / rep.PurgeSeconds
	fmt.Fprintf(cfg.Log, "purge: %d rows in %d batches, %.1f s, %.0f rows/s (%v); %s after …\n", res.Rows, res.Batches, rep.PurgeSeconds, rep.RowsPerSec, perr, cfg.After)
	sleep(ctx, cfg.After)
	m3 := mark(ctx, conn, smp, pid)
	load.stop()
	stopped = true
	rep.Before, rep.During, rep.After = m0.phase(m1, load), m1.phase(m2, load), m2.phase(m3, load)
	rep.Windows = load.windows(m0.t, m3.t, 5*time.Second)
	if perr != nil {
		return fmt.Errorf("purge: %w", perr)
	}
	return checkPurged(ctx, conn, load, cfg, rep)
}

// checkPurged checks that every dedup row is still there (the filled
// events' and the live deliveries').
func checkPurged(ctx context.Context, conn *pgx.Conn, load *liveLoad, cfg PurgeConfig, rep *PurgeReport) error {
	var filled, live, archived int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE event_id LIKE 'evt_purge_%'), count(*) FILTER (WHERE event_id LIKE 'evt_live_%')
		FROM processed_webhook_events`).Scan(&filled, &live); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE event_id LIKE 'evt_purge_%'`).Scan(&archived); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	events := int64(cfg.Rows)
	if cfg.Duplicates > 0 {
		k := int64(max(2, int(1/cfg.Duplicates+0.5)))
		events -= int64(cfg.Rows) / k
	}
	rep.DedupKept = filled == events
	var ok int64
	for i := range int(load.sent.Load()) {
		if load.done[i].Load() > 0 {
			ok++
		}
	}
	rep.LiveLost = max(0, ok-live)
	fmt.Fprintf(cfg.Log, "check: %d of %d filled events' dedup rows kept, %d archive rows left; %d live deliveries answered 2xx, %d dedup rows\n",
		filled, events, archived, ok, live)
	if !rep.DedupKept || archived != 0 || rep.LiveLost > 0 {
		return fmt.Errorf("check: %d of %d dedup rows kept, %d archive rows not purged, %d deliveries lost", filled, events, archived, rep.LiveLost)
	}
	return nil
}

// purgeResult is what the bench reads of `hub purge --json`.
type purgeResult struct {
	Rows    int64 `json:"rows"`
	Batches int   `json:"batches"`
}

// runHubPurge runs `hub purge --older-than purgeAge --yes --json` and
// cfg.PurgeArgs on the database dbURL, bounded by cfg.MaxPurge.
func runHubPurge(ctx context.Context, cfg PurgeConfig, dbURL, natsURL string) (purgeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.MaxPurge)
	defer cancel()
	args := append(append(cfg.HubCommand[1:len(cfg.HubCommand):len(cfg.HubCommand)], "purge", "--older-than", purgeAge, "--yes", "--json"), cfg.PurgeArgs...)
	cmd := exec.CommandContext(ctx, cfg.HubCommand[0], args...)
	cmd.Env = hubEnv(os.Environ(), dbURL, natsURL, "127.0.0.1:0", "127.0.0.1:0", 64, cfg.ExtraEnv)
	cmd.Stderr = cfg.Log
	out, err := cmd.Output()
	var res purgeResult
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("purge's answer %q: %w", out, err)
	}
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// purgeMark is what a purge bench reads at the start and end of a phase.
type purgeMark struct {
	t                 time.Time
	wal               int64
	pg, db, hub       time.Duration
	dead, autovacuums int64
}

func mark(ctx context.Context, conn *pgx.Conn, smp *sampler, hubPid int) purgeMark {
	m := purgeMark{t: time.Now(), pg: postgresCPU(), db: smp.sample(ctx), hub: cpuTime(hubPid)}
	m.wal = smp.walPosition(ctx)
	_, _ = conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`)
	_ = conn.QueryRow(ctx, `SELECT n_dead_tup, autovacuum_count FROM pg_stat_user_tables WHERE relname = 'webhook_events'`).Scan(&m.dead, &m.autovacuums)
	return m
}

// phase is the phase from m to end.
func (m purgeMark) phase(end purgeMark, load *liveLoad) PurgePhase {
	secs := end.t.Sub(m.t).Seconds()
	cores := func(d time.Duration) float64 { return d.Seconds() / secs }
	return PurgePhase{
		PhaseLoad: load.phase(m.t, end.t), WALMB: float64(end.wal-m.wal) / (1 << 20),
		PostgresCores: cores(end.pg - m.pg), DatabaseCores: cores(end.db - m.db), HubCores: cores(end.hub - m.hub),
		DeadTuples: end.dead, Autovacuums: end.autovacuums - m.autovacuums,
	}
}

// sampler follows the CPU time of the bench database's backends (and
// autovacuum workers), which come and go: every 250 ms it reads each
// one's time, and the sum over every backend seen of its last time read.
type sampler struct {
	mu    sync.Mutex
	srv   *server
	name  string
	last  map[int]time.Duration
	total time.Duration
	done  chan struct{}
	wg    sync.WaitGroup
}

func startSampler(ctx context.Context, srv *server, name string) *sampler {
	s := &sampler{srv: srv, name: name, last: map[int]time.Duration{}, done: make(chan struct{})}
	s.wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample(ctx)
			}
		}
	})
	return s
}

// sample reads the backends' times and returns the total so far.
func (s *sampler) sample(ctx context.Context) time.Duration {
	s.mu.Lock() // the server's connection is not safe for concurrent use
	defer s.mu.Unlock()
	if cpu, _, err := s.srv.databaseActivity(ctx, s.name); err == nil {
		for pid, t := range cpu {
			if t < s.last[pid] { // a new backend of a pid seen before
				s.last[pid] = 0
			}
			s.total += t - s.last[pid]
			s.last[pid] = t
		}
	}
	return s.total
}

// walPosition is the server's WAL position (walPosition), on the
// sampler's connection.
func (s *sampler) walPosition(ctx context.Context) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.srv.walPosition(ctx)
	return n
}

func (s *sampler) stop() {
	close(s.done)
	s.wg.Wait()
}

// String is a phase's line of the text report.
func (p PurgePhase) String() string {
	return p.PhaseLoad.String() + fmt.Sprintf("  WAL %7.0f MB  Postgres %.2f cores (database %.2f)  hub %.2f  dead %s  autovacuums %d",
		p.WALMB, p.PostgresCores, p.DatabaseCores, p.HubCores, strconv.FormatInt(p.DeadTuples, 10), p.Autovacuums)
}
