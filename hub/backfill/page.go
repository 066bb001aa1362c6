package backfill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/provider"
)

// failed counts an event of the page the run cannot ingest (or redeliver):
// logged with its id and the reason, listed in the Result (the first
// MaxFailuresListed), counted in hub_backfill_failed_total.
func (e *Engine) failed(res *Result, c *Counts, name, id, msg string, reason error) {
	c.Failed++
	e.cfg.Logger.Warn("backfill: "+msg, "provider", name, "event_id", id, "err", reason)
	if len(res.Failures) < MaxFailuresListed {
		res.Failures = append(res.Failures, Failure{EventID: id, Reason: msg + ": " + reason.Error()})
	}
	if e.cfg.Metrics != nil {
		e.cfg.Metrics.BackfillFailed.WithLabelValues(name).Inc()
	}
}

// page handles one page: which events of the window are missing, their
// bodies when the listing lacks them, and their ingestion in one
// transaction. It returns the page's counts and the oldest time it saw.
func (e *Engine) page(ctx context.Context, src Source, req Request, res *Result, page Page) (Counts, time.Time, error) {
	name := src.Provider()
	c := Counts{Pages: 1}
	missing, oldest, err := e.missing(ctx, name, res, page, &c)
	if err != nil {
		return c, oldest, err
	}
	switch {
	case req.DryRun:
		for _, ev := range missing {
			if req.Redeliver {
				c.WouldRedeliver++
			} else {
				c.WouldIngest++
			}
			if len(res.Missing) < req.MaxListed {
				res.Missing = append(res.Missing, MissingEvent{EventID: ev.ID, EventType: ev.Type, OccurredAt: ev.OccurredAt})
			}
		}
	case req.Redeliver:
		err = e.redeliver(ctx, src.(Redeliverer), name, missing, res, &c)
	default:
		err = e.ingestMissing(ctx, src, name, missing, res, &c)
	}
	return c, oldest, err
}

// missing returns the events of page inside res's window that the hub
// never received, counting the others in c, and the oldest time the page
// saw.
func (e *Engine) missing(ctx context.Context, name string, res *Result, page Page, c *Counts) ([]Event, time.Time, error) {
	var oldest time.Time
	inWindow := make([]Event, 0, len(page.Events))
	for _, ev := range page.Events {
		if !ev.OccurredAt.IsZero() {
			if oldest.IsZero() || ev.OccurredAt.Before(oldest) {
				oldest = ev.OccurredAt
			}
			if ev.OccurredAt.Before(res.Since) || !ev.OccurredAt.Before(res.Until) {
				continue
			}
		}
		inWindow = append(inWindow, ev)
	}
	c.Listed = int64(len(inWindow))
	ids := make([]string, 0, len(inWindow))
	for _, ev := range inWindow {
		if provider.CheckEventID(ev.ID) == nil {
			ids = append(ids, ev.ID)
		}
	}
	known, err := e.cfg.Store.KnownEvents(ctx, name, ids)
	if err != nil {
		return nil, oldest, err
	}
	var missing []Event
	for _, ev := range inWindow {
		if err := provider.CheckEventID(ev.ID); err != nil {
			if ev.Invalid != nil {
				err = ev.Invalid // the provider's own reading says why
			}
			e.failed(res, c, name, "", "an event the api listed has no usable id", err)
			continue
		}
		if known[ev.ID] {
			c.Already++
			continue
		}
		known[ev.ID] = true // listed twice: the second is present by then
		if ev.Invalid != nil {
			e.failed(res, c, name, ev.ID, "the api's copy of the event is malformed", ev.Invalid)
			continue
		}
		missing = append(missing, ev)
	}
	if e.cfg.Metrics != nil && len(missing) > 0 {
		e.cfg.Metrics.BackfillMissing.WithLabelValues(name).Add(float64(len(missing)))
	}
	if len(missing) > 0 {
		e.cfg.Logger.Warn("backfill: events the hub never received as webhooks", "provider", name, "missing", len(missing))
	}
	return missing, oldest, nil
}

// ingestMissing ingests missing, fetching the bodies the listing lacks,
// in one transaction, counting them in c.
func (e *Engine) ingestMissing(ctx context.Context, src Source, name string, missing []Event, res *Result, c *Counts) error {
	now := e.cfg.Now()
	ds := make([]hub.Delivery, 0, len(missing))
	for _, ev := range missing {
		if f, ok := src.(Fetcher); ok && len(ev.Body) == 0 {
			full, err := f.Fetch(ctx, ev)
			switch {
			case err != nil && fatal(ctx, err):
				return err
			case err != nil:
				e.failed(res, c, name, ev.ID, "fetch an event's body", err)
				continue
			}
			ev = full
		}
		d, err := e.delivery(name, ev, now)
		if err != nil {
			e.failed(res, c, name, ev.ID, "event not ingested", err)
			continue
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return nil
	}
	// Not cut off by the run being stopped (a bound, Ctrl-C): a commit
	// cancelled mid-way may still land, uncounted; the page's ingestion
	// finishes (or fails) on its own, bounded by ingestTimeout.
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ingestTimeout)
	// Committed, a publishable event is in the relay's hands.
	outs, err := e.ingest.Ingest(ictx, ds)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: ingest: %w", name, err)
	}
	for i, out := range outs {
		switch {
		case out.Duplicate:
			c.Already++ // its webhook arrived meanwhile
		case out.Status == hub.Failed:
			e.failed(res, c, name, ds[i].EventID, "event archived FAILED", errors.New(ds[i].Error))
		default:
			c.Ingested++
		}
	}
	if e.cfg.Metrics != nil {
		e.cfg.Metrics.BackfillIngested.WithLabelValues(name).Add(float64(c.Ingested))
	}
	return nil
}

// redeliver asks the provider to send each of missing's webhooks again,
// counting them in c.
func (e *Engine) redeliver(ctx context.Context, r Redeliverer, name string, missing []Event, res *Result, c *Counts) error {
	for _, ev := range missing {
		err := r.Redeliver(ctx, ev)
		switch {
		case err != nil && fatal(ctx, err):
			return err
		case err != nil:
			e.failed(res, c, name, ev.ID, "redeliver an event's webhook", err)
		default:
			c.Redelivered++
		}
	}
	if c.Redelivered > 0 {
		e.cfg.Logger.Info("backfill: the provider was asked to send missing webhooks again", "provider", name, "redelivered", c.Redelivered)
	}
	return nil
}

// fatal reports whether an error about one event ends the run: ctx done,
// refused credentials, a rate limit that outlasted the retries or a
// redirect off the API's origin (every further request would fail the
// same way).
func fatal(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRateLimited) || errors.Is(err, ErrRedirect)
}

// delivery builds the hub.Delivery of an API event (hub.NewDelivery, as
// the HTTP server builds a webhook's), with origin api and no signature,
// when its type and body are what a webhook's must be.
func (e *Engine) delivery(name string, ev Event, now time.Time) (hub.Delivery, error) {
	if err := provider.CheckEventType(ev.Type); err != nil {
		return hub.Delivery{}, err
	}
	limit := e.cfg.MaxBodyBytes
	if e.cfg.MaxPublishBytes != nil {
		if m := e.cfg.MaxPublishBytes(); m > 0 && m < limit {
			limit = m
		}
	}
	switch {
	case len(ev.Body) == 0:
		return hub.Delivery{}, errors.New("no body")
	case len(ev.Body) > limit:
		return hub.Delivery{}, fmt.Errorf("body of %d bytes, over the %d a delivery may have", len(ev.Body), limit)
	}
	occurred := ev.OccurredAt
	if ev.OccurredAtAPIOnly {
		occurred = time.Time{} // its webhook's copy has none either
	}
	return hub.NewDelivery(hub.OriginAPI, name, hub.Event{ID: ev.ID, Type: ev.Type, OccurredAt: occurred, Entities: ev.Entities}, ev.Body, now)
}
