package admin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubhttp"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/relay"
)

func TestOpsErrorStatus(t *testing.T) {
	t.Parallel()
	scan := &relay.ScanError{Stream: "WEBHOOKS", Reached: 500, End: 1240, Err: relay.ErrScanStalled}
	for _, tc := range []struct {
		err    error
		status int
	}{
		{fmt.Errorf("%w: 4 replays running", ops.ErrBusy), http.StatusTooManyRequests},
		{fmt.Errorf("%w: %w", ops.ErrIncompleteRead, scan), http.StatusServiceUnavailable},
		{fmt.Errorf("%w: nothing", ops.ErrNotFound), http.StatusNotFound},
		{fmt.Errorf("held: stream WEBHOOKS: %w: subject_transform", ops.ErrStreamMisconfigured), http.StatusServiceUnavailable},
		{fmt.Errorf("%w \"x\" (known: a)", ops.ErrUnknownSubscriber), http.StatusNotFound},
		{&ops.InputError{Field: "limit", Reason: "not a whole number"}, http.StatusBadRequest},
		{fmt.Errorf("since: %w: \"yesterday\"", ops.ErrBadTime), http.StatusBadRequest},
		{fmt.Errorf("replay: %w", ops.ErrNoStream), http.StatusServiceUnavailable},
		{hub.Errorf(hub.ECONFLICT, "already running"), http.StatusConflict},
		{hub.Errorf(hub.EUNAUTHORIZED, "no"), http.StatusUnauthorized},
		{errors.New("other"), http.StatusInternalServerError},
	} {
		status, msg := hubhttp.ErrorStatus(tc.err)
		require.Equal(t, tc.status, status, "%v", tc.err)
		if tc.status != http.StatusInternalServerError {
			require.Equal(t, tc.err.Error(), msg, "the operator reads why")
		} else {
			require.Equal(t, "internal error", msg)
		}
	}
}

// An error wrapping hub.ErrUnavailable names hosts in its causes: the
// answer is a fixed text.
func TestUnavailableHidesItsCause(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		fmt.Errorf("%w: dial tcp db.internal:5432: refused", hub.ErrUnavailable),
		errors.Join(hub.ErrUnavailable, context.DeadlineExceeded),
	} {
		status, msg := hubhttp.ErrorStatus(err)
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.Equal(t, "unavailable: the event was not stored, retry later", msg)
	}
}
