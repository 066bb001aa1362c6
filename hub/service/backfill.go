package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/redact"
	"github.com/hookhub/hookhub/internal/startstop"
)

// periodicBackfillRate bounds a periodic backfill's API requests a second,
// far below every provider's documented limit.
const periodicBackfillRate = 5

// BackfillSettle is how old an event must be before a periodic backfill
// looks for it: a webhook is normally delivered within seconds of its
// event, and one still on its way is not missing (it would be ingested
// from the API, then answered as a duplicate, and counted in
// hub_backfill_missing_total, which pages). `hub backfill` (the command)
// looks up to now, or --until.
const BackfillSettle = 5 * time.Minute

// backfillRunner backfills every source at once, then every
// HUB_BACKFILL_INTERVAL, over the last HUB_BACKFILL_WINDOW up to
// BackfillSettle ago, from Start until Stop: each provider in a goroutine
// and on a schedule of its own, so one whose API is slow or never ends its
// listing (each run is bounded: HUB_BACKFILL_MAX_*) delays no other. An
// unfinished run (this hub was stopped mid-way, or a run failed) is
// continued first, at most backfill.DefaultMaxResumes times; a provider
// another hub is backfilling is skipped.
type backfillRunner struct {
	startstop.Base
	s *Service
}

// Start starts a goroutine per source.
func (r *backfillRunner) Start(ctx context.Context) error {
	runCtx, ok := r.StartInit(ctx)
	if !ok {
		return nil
	}
	s := r.s
	s.log.Info("periodic backfill", "providers", providerNames(s.backfillSources), "interval", s.cfg.BackfillInterval, "window", s.cfg.BackfillWindow)
	for _, src := range s.backfillSources {
		r.Go(func() { s.backfillEvery(runCtx, src) })
	}
	return nil
}

// Stop cancels the runs and waits for them: an unfinished run is
// continued by the next one (this hub's or another's).
func (r *backfillRunner) Stop(context.Context) error {
	r.StopWait()
	return nil
}

// backfillEvery runs src's periodic backfill until ctx is done.
func (s *Service) backfillEvery(ctx context.Context, src backfill.Source) {
	tick := time.NewTicker(s.cfg.BackfillInterval)
	defer tick.Stop()
	for {
		now := s.now()
		res, err := s.backfill.Run(ctx, src, backfill.Request{Since: now.Add(-s.cfg.BackfillWindow), Until: now.Add(-BackfillSettle),
			MaxResumes: backfill.DefaultMaxResumes})
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, store.ErrBackfillBusy) && res.Pages == 0:
			s.backfillLog.Info("backfill skipped: another hub is backfilling this provider", "provider", src.Provider())
		case err != nil:
			s.backfillLog.Error("backfill failed", "provider", src.Provider(), "err", err, "listed", res.Listed, "ingested", res.Ingested,
				"failed", res.Failed, "failures", res.Failures)
		case res.Failed > 0:
			s.backfillLog.Warn("backfill done, some missing events could not be ingested", "provider", src.Provider(), "listed", res.Listed,
				"already", res.Already, "ingested", res.Ingested, "failed", res.Failed, "failures", res.Failures, "resumed", res.Resumed)
		default:
			s.backfillLog.Info("backfill done", "provider", src.Provider(), "listed", res.Listed, "already", res.Already,
				"ingested", res.Ingested, "failed", res.Failed, "resumed", res.Resumed)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// newBackfill builds the periodic backfill when HUB_BACKFILL_INTERVAL is
// set and some provider has API credentials.
func (s *Service) newBackfill(ingester backfill.Ingester) error {
	if s.cfg.BackfillInterval <= 0 {
		return nil
	}
	srcs, err := s.cfg.BackfillSources(func() *http.Client { return backfill.RateLimited(nil, periodicBackfillRate) })
	if err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	if len(srcs) == 0 {
		s.log.Warn("HUB_BACKFILL_INTERVAL is set but no provider has API credentials (" + strings.Join(backfillCredentialVarList(), ", ") + "): no backfill runs")
		return nil
	}
	s.backfillSources = srcs
	if s.metrics != nil {
		for _, src := range srcs {
			s.metrics.BackfillInterval.WithLabelValues(src.Provider()).Set(s.cfg.BackfillInterval.Seconds())
			// The stale-success alert counts from the start until a
			// run succeeds.
			s.metrics.BackfillLastSuccess.WithLabelValues(src.Provider()).Set(float64(s.now().Unix()))
		}
	}
	// What the backfill logs carries what the providers' APIs wrote (ids,
	// errors): its logger hides the API credentials in all of it.
	s.backfillLog = slog.New(redact.Handler(s.log.Handler(), s.cfg.BackfillSecrets()...)).With("component", "backfill")
	s.backfill, err = backfill.New(backfill.Config{
		Store:        s.store,
		Ingester:     ingester,
		Relay:        s.relay,
		MaxBodyBytes: s.cfg.MaxBodyBytes,
		// The webhook's 413 bound (server.Config.MaxPublishBytes): the same
		// rule on both paths.
		MaxPublishBytes: func() int { return s.keeper.MaxPublishBytes(s.nc.MaxPayload()) },
		MaxPages:        s.cfg.BackfillMaxPages,
		MaxEvents:       s.cfg.BackfillMaxEvents,
		MaxRunTime:      s.cfg.BackfillMaxRunTime,
		Now:             s.now,
		Logger:          s.backfillLog,
		Metrics:         s.metrics,
	})
	return err
}

func providerNames(srcs []backfill.Source) []string {
	out := make([]string, len(srcs))
	for i, s := range srcs {
		out[i] = s.Provider()
	}
	slices.Sort(out)
	return out
}
