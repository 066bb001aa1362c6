package service_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

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
			require.Equal(t, http.StatusOK, h.deliver("paddle", "evt_entities", "subscription.created").status)
			h.waitPublished()

			var archived []string
			require.NoError(t, h.pool.QueryRow(context.Background(), `SELECT entities FROM webhook_events WHERE event_id = 'evt_entities'`).Scan(&archived))
			m := h.streamMsg(1)
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
