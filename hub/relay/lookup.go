package relay

import (
	"context"
	"slices"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/schema"
)

// findInStream reads the stream's headers on the rows' subjects from the
// earliest first attempt on (less a minute of clock skew), and returns the
// stream sequence of each wanted message id it finds. One scan serves a
// whole batch.
func (r *Relay) findInStream(ctx context.Context, rows []hub.OutboxRow, subjects []string, idx []int) (map[string]uint64, error) {
	want := make(map[string]bool, len(idx))
	var filters []string
	since := rows[idx[0]].FirstAttemptAt
	for _, i := range idx {
		want[schema.MsgID(rows[i].Provider, rows[i].EventID)] = true
		if !slices.Contains(filters, subjects[i]) {
			filters = append(filters, subjects[i])
		}
		if rows[i].FirstAttemptAt.Before(since) {
			since = rows[i].FirstAttemptAt
		}
	}
	found := make(map[string]uint64, len(idx))
	scan := Scan{Stream: r.cfg.Stream, Subjects: filters, StartTime: since.Add(-time.Minute), HeadersOnly: true}
	_, err := scan.Run(ctx, r.js, func(m ScanMsg) error {
		if id := m.Msg.Headers().Get(schema.HeaderMsgID); want[id] {
			found[id] = m.Meta.Sequence.Stream
			if len(found) == len(want) {
				return ErrStopScan
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}
