package service_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/hub/service/testhub"
	"github.com/hookhub/hookhub/hub/store"
)

// The answer a provider gets for a signed heavy body (tens of thousands
// of tiny JSON objects, past store.MaxSharedValues) is the same as for
// any other: 200 after its commit (in a transaction of its own), the
// event archived whole and published once, a retry answered as a
// duplicate. Nothing is refused.
func TestHeavyBodyIsAccepted(t *testing.T) {
	t.Parallel()
	h := testhub.New(t, service.Deps{}, func(c *service.Config) { c.WithDevSecrets() })
	var b strings.Builder
	b.WriteByte('[')
	for i := range 60_000 { // ~0.7 MB, 180,001 values and names
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"i":%d}`, i)
	}
	b.WriteString("]")
	body, err := samples.Body("paddle", "evt_heavy", "subscription.created", []byte(`{"items":`+b.String()+`}`), time.Now())
	require.NoError(t, err)
	require.True(t, store.Heavy([]hub.Delivery{{Body: body}}), "committed alone")
	w := h.SignBody("paddle", "evt_heavy", "subscription.created", body)
	a := h.Post(w)
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Raw)
	require.False(t, a.Idempotent())
	require.Equal(t, 1, h.Count(`SELECT count(*) FROM webhook_events WHERE event_id = 'evt_heavy' AND jsonb_array_length(payload->'data'->'items') = 60000`))
	h.WaitPublished()
	a = h.Post(w)
	require.Equal(t, http.StatusOK, a.Status, "%s", a.Raw)
	require.True(t, a.Idempotent(), "a retry is a duplicate")
}
