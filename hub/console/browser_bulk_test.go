package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/provider/samples"
	"github.com/hookhub/hookhub/subscribers/subscriber"
)

// bystander is a second subscriber of paddle.>: a bulk replay to flaky
// must never reach it.
const bystander = "bystander"

// startBystander runs a subscriber that records one effect row per handler
// run, until the test ends.
func startBystander(h *testHub) *subscriber.Subscriber {
	h.t.Helper()
	_, err := h.Pool().Exec(h.t.Context(), "DROP SCHEMA IF EXISTS "+bystander+" CASCADE")
	require.NoError(h.t, err)
	fsys := fstest.MapFS{"00001_effects.sql": {Data: []byte(
		"-- +goose Up\nCREATE TABLE bystander.effects (event_id TEXT NOT NULL);\n-- +goose Down\nDROP TABLE bystander.effects;\n")}}
	sub, err := subscriber.New(subscriber.Config{Name: bystander, Pool: h.Pool(), JetStream: h.JetStream(), Migrations: fsys,
		MaxDeliver: 2, Backoff: []time.Duration{50 * time.Millisecond}, AckWait: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(h.t, err)
	sub.Handle("paddle.>", func(ctx context.Context, tx pgx.Tx, ev subscriber.Event) error {
		_, err := tx.Exec(ctx, `INSERT INTO bystander.effects (event_id) VALUES ($1)`, ev.EventID)
		return err
	})
	h.run(sub, bystander)
	return sub
}

// The Events page filters on the payload; "Bulk action…" on that filter
// plans a replay to flaky (dry run: nothing published), the confirmation
// runs it as a job with progress, and then flaky has processed each event
// of the set exactly once (the one it had lost is processed, the others
// skipped) while the bystander saw none of the copies.
func testBrowserPayloadFilterBulkReplay(t *testing.T, s *browserSuite) {
	b := s.newBrowser(t)
	h := s.startHub(t)
	h.startFlaky()
	by := startBystander(h)

	var set []string
	for i := range 6 {
		id := fmt.Sprintf("evt_bulk%d", i)
		cus := "ctm_other"
		if i%2 == 0 {
			cus, set = "ctm_bulk", append(set, id)
		}
		body, err := samples.Body("paddle", id, "subscription.created", []byte(`{"id":"sub_`+id+`","customer_id":"`+cus+`"}`), time.Now())
		require.NoError(t, err)
		a := h.Post(h.SignBody("paddle", id, "subscription.created", body))
		require.Equal(t, http.StatusOK, a.Status, "%s", a.Raw)
	}
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM flaky.effects`) == 6 && h.Count(`SELECT count(*) FROM bystander.effects`) == 6
	}, "both subscribers process everything")
	// A bulk action takes published events only, and a subscriber may
	// process an event before the relay records its publication.
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM processed_webhook_events WHERE stream_seq IS NOT NULL`) == 6
	}, "every event published")
	// flaky "never processed" evt_bulk2: its effect and processed row gone.
	lost := "evt_bulk2"
	_, err := h.Pool().Exec(t.Context(), `DELETE FROM flaky.effects WHERE event_id = $1`, lost)
	require.NoError(t, err)
	_, err = h.Pool().Exec(t.Context(), `DELETE FROM flaky.processed_messages WHERE event_id = $1`, lost)
	require.NoError(t, err)
	byStats := by.Stats()

	b.signIn(consoleAdminToken, "admin")
	b.openOK("/console/events")
	b.setValue("#f-since", "1h")
	b.setValue("#f-where1", "data.customer_id=ctm_bulk")
	b.clickOK("#apply-filters")
	require.Equal(t, []string{"evt_bulk4", "evt_bulk2", "evt_bulk0"}, b.attrs("tr.event", "data-event-id"), "the payload filter, newest first")
	require.Zero(t, b.count("#scan-truncated"))
	b.screenshot("events-payload-filter")

	// A path that is not one is refused with ops' message.
	b.setValue("#f-where1", "data..customer_id=x")
	b.click("#apply-filters")
	require.Contains(t, b.errorText(), "is not a payload path")
	b.setValue("#f-where1", "data.customer_id=ctm_bulk")
	b.clickOK("#apply-filters")

	msgs := h.StreamInfo().State.Msgs
	b.clickOK("#bulk-action")
	b.setValue("#b-action", "replay")
	b.setValue("#b-subscriber", flaky)
	b.setValue("#b-rate", "20")
	b.clickOK("#bulk-plan")
	require.Equal(t, 3, b.number("#plan-matched"))
	require.Equal(t, 3, b.number("#plan-eligible"))
	require.Equal(t, 1, b.number("#plan-to-process"))
	require.Equal(t, 2, b.number("#plan-skip"))
	require.Equal(t, []string{"evt_bulk4", "evt_bulk2", "evt_bulk0"}, b.attrs("#plan-sample tr.event", "data-event-id"))
	require.Equal(t, 1, b.count("form#confirm.action #confirm-bulk"))
	b.screenshot("bulk-plan")
	require.Equal(t, msgs, h.StreamInfo().State.Msgs, "the plan published nothing")

	resp := b.click("#confirm-bulk")
	require.Equal(t, http.StatusOK, int(resp.Status), b.errorText())
	require.Contains(t, resp.URL, b.base+"/console/bulk/jobs/")
	b.waitUntil(`document.querySelector("#job") && document.querySelector("#job").dataset.state === "done"`, "the bulk job finishes")
	require.Equal(t, 3, b.number("#result-published"))
	require.Equal(t, 1, b.number("#result-processed"))
	require.Equal(t, 2, b.number("#result-skipped"))
	require.Zero(t, b.number("#result-unsettled"))
	require.Zero(t, b.count("#cancel-bulk"), "a finished job has no Cancel")
	b.screenshot("bulk-job")

	for _, id := range set {
		require.Equal(t, 1, h.effects(id), "flaky processed %s exactly once", id)
	}
	require.Equal(t, 6, h.Count(`SELECT count(*) FROM flaky.effects`), "nothing outside the set")
	require.Equal(t, msgs+3, h.StreamInfo().State.Msgs, "three copies, on flaky's replay subjects")
	h.holds(500*time.Millisecond, func() bool {
		return h.Count(`SELECT count(*) FROM bystander.effects`) == 6 && by.Stats() == byStats
	}, "the bystander saw none of the copies")

	// Cancel: a slow bulk (1 a second) stops publishing when cancelled.
	_, err = h.Pool().Exec(t.Context(), `DELETE FROM flaky.processed_messages WHERE event_id = ANY($1)`, set)
	require.NoError(t, err)
	b.openOK("/console/bulk?since=1h&where1=data.customer_id%3Dctm_bulk&action=replay&subscriber=flaky&rate=1")
	require.Equal(t, 3, b.number("#plan-to-process"))
	resp = b.click("#confirm-bulk")
	require.Equal(t, http.StatusOK, int(resp.Status), b.errorText())
	b.clickOK("#cancel-bulk")
	b.waitUntil(`document.querySelector("#job") && document.querySelector("#job").dataset.state === "cancelled"`, "the bulk job is cancelled")
	require.Less(t, b.number("#result-published"), 3)
	published := h.StreamInfo().State.Msgs
	h.holds(1500*time.Millisecond, func() bool { return h.StreamInfo().State.Msgs == published }, "nothing published after the cancel")
	require.Equal(t, byStats, by.Stats(), "the bystander still saw nothing")

	// A read-only session sees the plan but no button, and its POSTs are
	// refused.
	ro := s.newBrowser(t)
	ro.signIn(consoleReadOnlyToken, "read-only")
	msgs = h.StreamInfo().State.Msgs
	ro.openOK("/console/bulk?since=1h&where1=data.customer_id%3Dctm_bulk&action=replay&subscriber=flaky")
	require.Equal(t, 3, ro.number("#plan-matched"))
	require.Zero(t, ro.count("#confirm-bulk, #cancel-bulk"))
	csrf := ro.csrf()
	jobID := resp.URL[len(b.base+"/console/bulk/jobs/"):]
	for _, c := range []struct {
		path string
		form map[string]string
	}{
		{"/console/bulk/run", map[string]string{"since": "1h", "where1": "data.customer_id=ctm_bulk", "action": "replay", "subscriber": flaky}},
		{"/console/bulk/jobs/" + jobID + "/cancel", map[string]string{}},
	} {
		c.form["csrf"] = csrf
		p := ro.post(c.path, c.form)
		require.Equal(t, http.StatusForbidden, p.Status, "POST %s: %s", c.path, p.Error)
		require.Contains(t, p.Error, "read-only", c.path)
		ro.openOK("/console/")
	}
	require.Equal(t, msgs, h.StreamInfo().State.Msgs, "nothing published for the read-only session")

	// The trail: the cancelled run says who cancelled it (once the job
	// has stopped), and each refused POST of the read-only session is
	// there, as refused.
	cancelled := `SELECT error FROM audit_log WHERE id > $1 AND action = 'bulk.replay' AND outcome = 'cancelled'`
	h.Eventually(func() bool { return h.Count(`SELECT count(*) FROM (`+cancelled+`) c`, h.audited) == 1 }, "the cancelled run is audited")
	var cancelledBy string
	require.NoError(t, h.Pool().QueryRow(t.Context(), cancelled, h.audited).Scan(&cancelledBy))
	require.Contains(t, cancelledBy, "cancelled by token ")
	require.Contains(t, cancelledBy, "(admin, console)")
	require.Equal(t, 2, h.Count(`SELECT count(*) FROM audit_log WHERE id > $1 AND outcome = 'refused' AND actor_role = 'read-only'
		AND action = 'console.action' AND target IN ('/console/bulk/run', '/console/bulk/jobs/`+jobID+`/cancel')`, h.audited))
}
