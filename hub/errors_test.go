package hub_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
)

func TestErrorCodeWalksTheChain(t *testing.T) {
	notFound := hub.Errorf(hub.ENOTFOUND, "no event %q", "evt_1")
	require.Equal(t, `no event "evt_1"`, notFound.Error())
	for _, tc := range []struct {
		err           error
		code, message string
	}{
		{nil, "", ""},
		{notFound, hub.ENOTFOUND, `no event "evt_1"`},
		{fmt.Errorf("show: %w", notFound), hub.ENOTFOUND, `no event "evt_1"`},
		{errors.Join(errors.New("first"), fmt.Errorf("x: %w", hub.ErrUnavailable)), hub.EUNAVAILABLE, "database unavailable"},
		{errors.New("disk on fire"), hub.EINTERNAL, "internal error"},
	} {
		require.Equal(t, tc.code, hub.ErrorCode(tc.err), "%v", tc.err)
		require.Equal(t, tc.message, hub.ErrorMessage(tc.err), "%v", tc.err)
	}
	// Sentinels still match through wrapping.
	require.ErrorIs(t, fmt.Errorf("a: %w", hub.ErrUnavailable), hub.ErrUnavailable)
	require.NotErrorIs(t, hub.Errorf(hub.EUNAVAILABLE, "database unavailable"), hub.ErrUnavailable)
}
