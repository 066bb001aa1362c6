package backfill_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
	"github.com/hookhub/hookhub/hub/backfill/fakeapi"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

// webhookArrived says which events of a githubScenario reached the hub
// as signed webhooks: seven of every ten.
func webhookArrived(i int) bool { return i%10 < 7 }

// githubScenario runs t in parallel on a started hub, with n GitHub
// deliveries whose webhooks that arrived (webhookArrived) it sends, and
// returns their guids: all, and the missing ones.
func githubScenario(t *testing.T, n int) (h *hubEnv, evs []githubEvent, all, missing []string) {
	t.Helper()
	t.Parallel()
	h = newHubEnv(t)
	h.start()
	evs = h.githubEvents(n, webhookArrived)
	for i, ev := range evs {
		all = append(all, ev.guid)
		if !webhookArrived(i) {
			missing = append(missing, ev.guid)
			continue
		}
		a := h.githubWebhook(ev.guid, ev.typ, ev.body)
		require.Equal(t, 200, a.status, a.body)
		require.Equal(t, false, a.body["idempotent"])
	}
	return h, evs, all, missing
}

// fetchedIDs returns the delivery ids the fake GitHub was asked for one by
// one (GET {hook}/deliveries/{id}).
func fetchedIDs(h *hubEnv) []int64 {
	var out []int64
	prefix := "/" + h.github.Hook + "/deliveries/"
	for _, r := range h.github.Requests() {
		var id int64
		if r.Method == http.MethodGet && len(r.Path) > len(prefix) && r.Path[:len(prefix)] == prefix {
			_, err := fmt.Sscanf(r.Path[len(prefix):], "%d", &id)
			if err == nil {
				out = append(out, id)
			}
		}
	}
	return out
}

// 100 GitHub deliveries of which 70 reached the hub as signed webhooks: the
// backfill fetches the payloads of exactly the other 30 (the listing has
// none) and ingests them; the stream holds each of the 100 once; GitHub's
// webhooks carry no time the hub reads, so neither do the backfilled
// copies. A webhook of a backfilled event arriving later (the same
// X-GitHub-Delivery) is a duplicate.
func TestGitHubBackfillIngestsOnlyTheMissing(t *testing.T) {
	h, evs, all, missing := githubScenario(t, 100)
	require.Len(t, missing, 30)
	// An earlier redelivery of a missing event, which failed as well: it
	// is listed too (101 deliveries, two pages) but is the same event.
	re := evs[9].delivery
	re.ID, re.Redelivery, re.DeliveredAt = 0, true, time.Now().Add(-time.Second)
	h.github.Add(re)

	res, err := h.engine().Run(context.Background(), h.source("github", 0), backfill.Request{Since: time.Now().Add(-72 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 2, Listed: 100, Already: 70, Ingested: 30}, res.Counts)
	require.True(t, res.Complete)

	// Bodies fetched for the missing events only, from their original
	// deliveries; nothing redelivered.
	var want []int64
	for i, ev := range evs {
		if !webhookArrived(i) {
			want = append(want, ev.delivery.ID)
		}
	}
	require.ElementsMatch(t, want, fetchedIDs(h))
	require.Empty(t, h.github.Attempts())

	// Archived from the API: origin api, no signature, the payload's JSON
	// (GitHub's API re-encodes it), the type as the webhook's, and no
	// occurred-at, like every GitHub webhook.
	require.Equal(t, 30, h.count(`SELECT count(*) FROM webhook_events WHERE provider = 'github' AND origin = 'api' AND signature IS NULL`))
	require.Equal(t, 70, h.count(`SELECT count(*) FROM webhook_events WHERE provider = 'github' AND origin = 'webhook' AND signature IS NOT NULL`))
	require.Equal(t, 0, h.count(`SELECT count(*) FROM webhook_events WHERE provider = 'github' AND occurred_at IS NOT NULL`))
	for i, ev := range evs {
		if webhookArrived(i) {
			continue
		}
		var typ string
		var body []byte
		require.NoError(t, h.pool.QueryRow(context.Background(),
			`SELECT event_type, body FROM webhook_events WHERE provider = 'github' AND event_id = $1 AND origin = 'api'`, ev.guid).Scan(&typ, &body))
		require.Equal(t, ev.typ, typ)
		require.JSONEq(t, string(ev.body), string(body))
	}
	h.waitPublished()
	h.requireEachOnce("github", all)
	for _, hdr := range h.streamHeaders() {
		require.Empty(t, hdr.Get(schema.HeaderOccurredAt), "GitHub events carry no Hub-Occurred-At")
	}

	// The late webhook of a backfilled event: a duplicate, nothing
	// published.
	late := evs[7]
	require.Equal(t, missing[0], late.guid)
	a := h.githubWebhook(late.guid, late.typ, late.body)
	require.Equal(t, 200, a.status)
	require.Equal(t, true, a.body["idempotent"])
	h.waitPublished()
	h.requireEachOnce("github", all)

	// A second run finds nothing missing and fetches nothing more.
	fetched := len(fetchedIDs(h))
	res, err = h.engine().Run(context.Background(), h.source("github", 0), backfill.Request{Since: time.Now().Add(-72 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 2, Listed: 100, Already: 100}, res.Counts)
	require.Len(t, fetchedIDs(h), fetched)
}

// With Redeliver the engine asks GitHub to send exactly the missing
// webhooks again and ingests nothing from the API: when GitHub's
// redeliveries arrive (signed, the original bytes) the hub takes them as
// webhooks, and the stream holds each event once. A dry run only lists;
// a source that cannot redeliver is refused.
func TestGitHubBackfillRedeliver(t *testing.T) {
	h, evs, all, missing := githubScenario(t, 20)
	since := time.Now().Add(-72 * time.Hour)

	dry, err := h.engine().Run(context.Background(), h.source("github", 0), backfill.Request{Since: since, Redeliver: true, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 20, Already: 14, WouldRedeliver: 6}, dry.Counts, "a dry run redelivers nothing")
	require.Len(t, dry.Missing, 6)
	require.Empty(t, h.github.Attempts(), "a dry run asks for nothing")

	res, err := h.engine().Run(context.Background(), h.source("github", 0), backfill.Request{Since: since, Redeliver: true})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 20, Already: 14, Redelivered: 6}, res.Counts)
	require.True(t, res.Complete)
	require.True(t, res.Redeliver)
	var want []int64
	for i, ev := range evs {
		if !webhookArrived(i) {
			want = append(want, ev.delivery.ID)
		}
	}
	require.ElementsMatch(t, want, h.github.Attempts(), "the original deliveries of exactly the missing events")
	require.Empty(t, fetchedIDs(h), "no payload fetched")
	require.Equal(t, 0, h.count(`SELECT count(*) FROM webhook_events WHERE origin = 'api'`), "nothing ingested from the API")
	require.Equal(t, 14, h.count(`SELECT count(*) FROM webhook_events`))
	cp, found, err := store.New(h.pool).BackfillCheckpoint(context.Background(), "github")
	require.NoError(t, err)
	require.True(t, found)
	require.True(t, cp.Done())
	require.Equal(t, int64(6), cp.Redelivered)

	// GitHub sends the redeliveries: signed webhooks with the original
	// bytes and the same X-GitHub-Delivery.
	for i, ev := range evs {
		if webhookArrived(i) {
			continue
		}
		a := h.githubWebhook(ev.guid, ev.typ, ev.body)
		require.Equal(t, 200, a.status, a.body)
		require.Equal(t, false, a.body["idempotent"])
	}
	require.Equal(t, 20, h.count(`SELECT count(*) FROM webhook_events WHERE origin = 'webhook' AND signature IS NOT NULL`))
	for _, guid := range missing {
		require.Equal(t, 1, h.count(`SELECT count(*) FROM webhook_events WHERE event_id = $1`, guid))
	}
	h.waitPublished()
	h.requireEachOnce("github", all)

	// The next run finds nothing missing (the redeliveries GitHub lists
	// are the same events) and asks for nothing more.
	res, err = h.engine().Run(context.Background(), h.source("github", 0), backfill.Request{Since: since, Redeliver: true})
	require.NoError(t, err)
	require.Equal(t, backfill.Counts{Pages: 1, Listed: 20, Already: 20}, res.Counts)
	require.Len(t, h.github.Attempts(), 6)

	// Stripe cannot be asked to send an event again.
	_, err = h.engine().Run(context.Background(), h.source("stripe", 0), backfill.Request{Since: since, Redeliver: true})
	require.ErrorIs(t, err, backfill.ErrNoRedeliver)
	require.Empty(t, h.stripe.Hits(), "refused before any request")
}

// GitHub's secondary rate limit, a 403 with Retry-After, is waited out
// (not taken for a refused token), then the backfill goes on.
func TestGitHubBackfillRateLimit(t *testing.T) {
	t.Parallel()
	h := newHubEnv(t)
	h.githubEvents(3, func(int) bool { return false })
	h.github.FailNext(fakeapi.GitHubSecondaryLimit(http.StatusForbidden, time.Second))
	start := time.Now()
	res, err := h.engine().Run(context.Background(), h.source("github", 0), backfill.Request{Since: time.Now().Add(-time.Hour), DryRun: true})
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), time.Second, "waited Retry-After")
	require.Equal(t, int64(3), res.WouldIngest)
	require.Zero(t, res.Ingested)
	reqs := h.github.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, http.StatusForbidden, reqs[0].Status)
	require.Equal(t, http.StatusOK, reqs[1].Status)
}
