package ops

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// A run whose context is cancelled is audited as cancelled whatever error
// it returns: a cancel that lands in a query or a publish surfaces as that
// call's error, which need not wrap context.Canceled (the console's job
// page said "cancelled" while the trail said "error"). A run that fails on
// its own, its context alive, stays an error.
func TestAuditCancelledWhateverTheRunReturns(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := New(Config{Archive: store.New(pool), Subscribers: pool})
	for _, tc := range []struct {
		name   string
		cancel bool
		err    error
		want   string
	}{
		{"cancelled, the publish's own error", true, errors.New("publish: no PubAck within 10s"), hub.AuditCancelled},
		{"cancelled, a wrapped context error", true, fmt.Errorf("read page: %w", context.Canceled), hub.AuditCancelled},
		{"not cancelled, an error", false, errors.New("publish: no PubAck within 10s"), hub.AuditError},
		{"not cancelled, ok", false, nil, hub.AuditOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := o.audited(ctx, ActionReplay, "subscriber "+tc.name, nil, func() (any, error) {
				if tc.cancel {
					cancel()
				}
				return nil, tc.err
			})
			require.ErrorIs(t, err, tc.err)
			es, err := o.ListAudit(context.Background(), AuditFilter{Limit: 100})
			require.NoError(t, err)
			var got *hub.AuditEntry
			for i := range es {
				if es[i].Target == "subscriber "+tc.name {
					got = &es[i]
				}
			}
			require.NotNil(t, got, "the run is audited")
			require.Equal(t, tc.want, got.Outcome)
			require.False(t, got.FinishedAt.IsZero())
		})
	}
}
