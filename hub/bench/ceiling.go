package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
)

// ceilingBatch and ceilingConns define the raw ceiling: up to 64
// deliveries per commit over 2 connections, no HTTP, no publish.
const (
	ceilingBatch = 64
	ceilingConns = 2
)

// runCeiling inserts the workload's archive and dedup rows straight into
// Postgres, with the hub's own multi-row statement.
func runCeiling(ctx context.Context, cfg Config, srv *server, w *workload, pl *Preload) (Result, error) {
	db, err := srv.create(ctx, "ceiling", pl.template)
	if err != nil {
		return Result{}, err
	}
	if !cfg.Keep {
		defer srv.drop(db.name)
	}
	pcfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		return Result{}, err
	}
	pcfg.MaxConns = ceilingConns
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return Result{}, err
	}
	defer pool.Close()
	st := store.New(pool)

	now := time.Now()
	ds := make([]hub.Delivery, len(w.bodies))
	for i := range ds {
		ds[i] = hub.Delivery{
			ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: eventID(w.eventOf[i]),
			EventType: "subscription.created", Body: w.bodies[i], Signature: string(w.signatures[i]),
			SignedAt: now, ReceivedAt: now,
		}
	}
	for lo := 0; lo < w.warmup; lo += ceilingBatch {
		if _, err := st.Ingest(ctx, ds[lo:min(lo+ceilingBatch, w.warmup)]); err != nil {
			return Result{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	var next atomic.Int64
	next.Store(int64(w.warmup))
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	wal0, err := srv.walPosition(ctx)
	if err != nil {
		return Result{}, err
	}
	pg0 := postgresCPU()
	start := time.Now()
	for range ceilingConns {
		wg.Go(func() {
			for {
				lo := int(next.Add(ceilingBatch) - ceilingBatch)
				if lo >= len(ds) {
					return
				}
				hi := min(lo+ceilingBatch, len(ds))
				t0 := time.Now()
				if _, err := st.Ingest(ctx, ds[lo:hi]); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				d := time.Since(t0)
				mu.Lock()
				for range hi - lo {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	pg := postgresCPU() - pg0
	if firstErr != nil {
		return Result{}, firstErr
	}
	wal1, err := srv.walPosition(ctx)
	if err != nil {
		return Result{}, err
	}
	slices.Sort(lat)
	measured := len(ds) - w.warmup
	res := summarize(lat, elapsed, measured, w.events)
	res.PreloadRows, res.CopySeconds = pl.ArchiveRows, db.copySeconds
	res.PostgresCPUus = perDelivery(pg, measured)
	res.WALBytes = float64(wal1-wal0) / float64(measured)
	res.MeanCommitBatch = float64(measured) / float64((measured+ceilingBatch-1)/ceilingBatch)
	return res, verify(ctx, &res, st, pl.since, nil, nil)
}
