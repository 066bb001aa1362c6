package subscriber

import (
	"context"
	"fmt"
	"time"
)

// A "processed already?" read asks about readBatchMax events at most,
// waiting readLinger after the first question for others to join it
// (no longer once every worker asked; not at all with one worker: an
// ordered subscriber).
const (
	readBatchMax = effectBatchMax
	readLinger   = 2 * time.Millisecond
)

// readReq asks the group reader whether one event has a processed row.
type readReq struct {
	provider, eventID string
	reply             chan readResult // buffered (1)
}

// readResult answers a readReq.
type readResult struct {
	done bool
	err  error
}

// wasProcessed reports whether ev has a processed row. The question goes
// to the group reader (readProcessed), which asks Postgres once for every
// worker waiting with the same question.
func (s *Subscriber) wasProcessed(ctx context.Context, ev Event) (bool, error) {
	req := readReq{provider: ev.Provider, eventID: ev.EventID, reply: make(chan readResult, 1)}
	select {
	case s.readQ <- req: // closed only once every worker returned
	case <-ctx.Done():
		return false, infra("check processed message: %w", ctx.Err())
	}
	r := <-req.reply // always answered: the reader drains q before it ends
	return r.done, r.err
}

// readProcessed is the group reader: it answers the questions queued on
// q with one query for up to readBatchMax of them, taking those that
// arrive within readLinger of the first, until q is closed and drained.
// At 1,000 events/s a read serves a few events instead of one; in a
// backlog, where workers wait on each other's reads, one read serves
// them all. ctx is the work context (cancelled only past
// ShutdownTimeout).
func (s *Subscriber) readProcessed(ctx context.Context, q <-chan readReq) {
	batch := make([]readReq, 0, readBatchMax)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		req, ok := <-q
		if !ok {
			return
		}
		batch = append(batch[:0], req)
		timer.Reset(readLinger)
	collect:
		for len(batch) < min(readBatchMax, s.cfg.Concurrency) {
			select {
			case req, ok := <-q:
				if !ok {
					break collect
				}
				batch = append(batch, req)
			case <-timer.C:
				break collect
			}
		}
		timer.Stop()
		done, err := s.processedOf(ctx, batch)
		for i, req := range batch {
			req.reply <- readResult{done: err == nil && done[i], err: err}
		}
	}
}

// processedOf reads which events of batch have a processed row, in one
// query.
func (s *Subscriber) processedOf(ctx context.Context, batch []readReq) ([]bool, error) {
	providers, ids := make([]string, len(batch)), make([]string, len(batch))
	for i, req := range batch {
		providers[i], ids[i] = req.provider, req.eventID
	}
	rows, err := s.cfg.Pool.Query(ctx, s.q.processedOf, s.cfg.Name, providers, ids)
	if err != nil {
		return nil, infra("check processed messages: %w", err)
	}
	defer rows.Close()
	done := make([]bool, len(batch))
	var i int64
	for rows.Next() {
		if err := rows.Scan(&i); err != nil {
			return nil, infra("check processed messages: %w", err)
		}
		if i < 1 || i > int64(len(batch)) {
			return nil, infra("check processed messages: %w", fmt.Errorf("position %d out of 1..%d", i, len(batch)))
		}
		done[i-1] = true
	}
	if err := rows.Err(); err != nil {
		return nil, infra("check processed messages: %w", err)
	}
	return done, nil
}
