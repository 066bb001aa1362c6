package service_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/schema"
)

// HUB_ENTITIES: on (the default) a Paddle delivery's entities are on its
// archive row and its message; off, on neither, and the event is
// published as before.
func TestEntitiesSetting(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			t.Parallel()
			h := newTestHub(t, func(c *service.Config) { c.Entities = on })
			body, err := samples.Body(h.paddle.Name(), "evt_entities", "subscription.created", nil, time.Now())
			require.NoError(t, err)
			hdr, _, err := h.paddle.Sign("evt_entities", "", body, time.Now())
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, h.post("paddle", hdr, body).status)
			h.waitPublished()

			ctx := context.Background()
			var archived []string
			require.NoError(t, h.pool.QueryRow(ctx, `SELECT entities FROM webhook_events WHERE event_id = 'evt_entities'`).Scan(&archived))
			st, err := h.js.Stream(ctx, schema.DefaultStream)
			require.NoError(t, err)
			m, err := st.GetMsg(ctx, 1)
			require.NoError(t, err)
			if on {
				require.NotEmpty(t, archived)
				require.Len(t, m.Header.Values(schema.HeaderEntity), len(archived))
			} else {
				require.Nil(t, archived)
				require.Empty(t, m.Header.Values(schema.HeaderEntity))
			}
		})
	}
}
