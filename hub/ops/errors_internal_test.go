package ops

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The subscriber library's "unknown subscriber" is the hub's too, with
// its text unchanged and the hub's code.
func TestSubscriberErrIsTheHubsUnknownSubscriber(t *testing.T) {
	lib := fmt.Errorf("%w: credits (no dead-letter table)", subscriber.ErrUnknownSubscriber)
	err := subscriberErr(lib)
	require.ErrorIs(t, err, ErrUnknownSubscriber)
	require.ErrorIs(t, err, subscriber.ErrUnknownSubscriber)
	require.Equal(t, lib.Error(), err.Error())
	require.Equal(t, hub.ENOTFOUND, hub.ErrorCode(err))

	other := fmt.Errorf("boom")
	require.Same(t, other, subscriberErr(other))
	require.Nil(t, subscriberErr(nil))
	own := fmt.Errorf("%w x", ErrUnknownSubscriber)
	require.Same(t, own, subscriberErr(own))
}
