package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/relay"
	"github.com/hookhub/hookhub/hub/server"
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
		{errors.New("other"), http.StatusInternalServerError},
	} {
		status, msg := server.ErrorStatus(tc.err)
		require.Equal(t, tc.status, status, "%v", tc.err)
		if tc.status != http.StatusInternalServerError {
			require.Equal(t, tc.err.Error(), msg, "the operator reads why")
		}
	}
}
