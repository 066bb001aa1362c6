package service_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// The hub runs as the runtime role the deployments give it
// (docs/production.md, "Database roles"): it starts (schema check, the
// audit sweep, which marks a dead process's running entry interrupted),
// is ready, ingests and publishes, and records an admin
// action in the audit trail, which that role cannot rewrite; a subscriber
// as that role creates its schema.
func TestHubRunsAsTheRuntimeRole(t *testing.T) {
	t.Parallel()
	ownerURL := ""
	h := newTestHub(t, func(c *service.Config) {
		c.AdminToken = adminToken
		ownerURL = c.DatabaseURL
		c.DatabaseURL = hubdb.RuntimeRole(t, c.DatabaseURL)
		// An entry a process that died left running: marked interrupted
		// as the hub starts.
		owner, err := pgxpool.New(t.Context(), ownerURL)
		require.NoError(t, err)
		defer owner.Close()
		_, err = owner.Exec(t.Context(), `INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, heartbeat_at)
			VALUES (now() - interval '1 hour', 'cli', 'alice@ops-1', 'admin', 'cli', 'replay', now() - interval '10 minutes')`)
		require.NoError(t, err)
	})
	require.NotEqual(t, ownerURL, h.cfg.DatabaseURL)
	require.Eventually(t, func() bool {
		return h.count(`SELECT count(*) FROM audit_log WHERE actor_name = 'alice@ops-1' AND outcome = 'interrupted'`) == 1
	}, 30*time.Second, 50*time.Millisecond, "the dead process's entry is interrupted")
	a := h.deliver("paddle", "evt_runtime_role", "subscription.created")
	require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	h.waitPublished()
	code, _ := h.admin(http.MethodGet, "/readyz", "", "")
	require.Equal(t, http.StatusOK, code)

	code, body := h.admin(http.MethodPost, "/admin/purge", adminToken, `{"older_than":"30d","dry_run":false}`)
	require.Equal(t, http.StatusOK, code, body)
	require.Equal(t, 1, h.count(`SELECT count(*) FROM audit_log WHERE action = 'purge' AND outcome = 'ok' AND via = 'admin-api'`))
	rt, err := pgxpool.New(t.Context(), h.cfg.DatabaseURL)
	require.NoError(t, err)
	defer rt.Close()
	_, err = rt.Exec(t.Context(), `UPDATE audit_log SET outcome = 'error'`)
	require.Error(t, err, "the hub's role cannot rewrite a finished entry")
	_, err = rt.Exec(t.Context(), `ALTER TABLE audit_log DISABLE TRIGGER ALL`)
	require.ErrorContains(t, err, "must be owner")
	// A subscriber, as the same role, creates and migrates its own schema.
	require.NoError(t, subscriber.Migrate(t.Context(), rt, "rtsub", nil))
}
