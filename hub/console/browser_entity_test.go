package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/subscribers/destination"
)

// TestBrowserEntity is the entity acceptance test, on a browser
// suite of its own: search an entity from the Events page and see its
// events from two providers, newest first, with each subscriber's outcome.
//
// The events carry their entities at ingest through the store (the hub's
// ingest API, as a provider's extraction fills hub.Delivery.Entities);
// the running hub's relay publishes them and a real subscriber consumes
// them.
func TestBrowserEntity(t *testing.T) {
	s := newBrowserSuite(t)
	b := s.newBrowser(t)
	h := s.startHub(t, b)
	h.startFlaky() // takes paddle.>
	h.failOn("evt_ent_paddle_bad", true)
	ctx := context.Background()

	cus := []hub.Entity{{Kind: "customer", ID: "cus_browser"}}
	now := time.Now()
	var ds []hub.Delivery
	for i, e := range [][2]string{
		{"paddle", "evt_ent_paddle_ok"},  // processed by flaky
		{"clerk", "evt_ent_clerk"},       // a destination's attempts; flaky does not take clerk.>
		{"paddle", "evt_ent_paddle_bad"}, // dead-lettered by flaky
	} {
		ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: e[0], EventID: e[1], EventType: "subscription.created",
			Body: []byte(`{"id":"` + e[1] + `"}`), ReceivedAt: now.Add(time.Duration(i-3) * time.Second), Entities: cus})
	}
	// Another customer's event: not on the page.
	ds = append(ds, hub.Delivery{ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: "evt_ent_other",
		EventType: "subscription.created", Body: []byte(`{}`), ReceivedAt: now, Entities: []hub.Entity{{Kind: "customer", ID: "cus_other"}}})
	_, err := store.New(h.Pool()).Ingest(ctx, ds)
	require.NoError(t, err)
	h.WaitPublished()
	h.Eventually(func() bool { return h.effects("evt_ent_paddle_ok") == 1 }, "flaky processed evt_ent_paddle_ok")
	h.Eventually(func() bool {
		return h.Count(`SELECT count(*) FROM flaky.dead_letters WHERE event_id = 'evt_ent_paddle_bad'`) == 1
	}, "flaky dead-lettered evt_ent_paddle_bad")
	addDestinationAttempts(t, h.Pool(), timelineDestination,
		destination.Attempt{Provider: "clerk", EventID: "evt_ent_clerk", At: now, Status: 503, Latency: 40 * time.Millisecond,
			Outcome: destination.OutcomeFailed})

	b.signIn(consoleReadOnlyToken, "read-only")
	b.openOK("/console/events")
	b.setValue("#e-id", "cus_browser")
	b.clickOK("#entity-find")
	require.Contains(t, b.location(), "/console/entity?id=cus_browser")
	require.Equal(t, "cus_browser", b.text("#entity-id"))

	ev := `#timeline li.timeline-event`
	require.Equal(t, []string{"paddle", "clerk", "paddle"}, b.attrs(ev, "data-provider"), "both providers, newest first")
	require.Equal(t, []string{"evt_ent_paddle_bad", "evt_ent_clerk", "evt_ent_paddle_ok"}, b.attrs(ev, "data-event-id"))
	outcome := func(eventID, sub string) string {
		return b.text(ev + `[data-event-id="` + eventID + `"] tr[data-subscriber="` + sub + `"] td.outcome`)
	}
	require.Equal(t, "processed", outcome("evt_ent_paddle_ok", flaky))
	require.Equal(t, "dead-lettered", outcome("evt_ent_paddle_bad", flaky))
	require.Contains(t, b.text(ev+`[data-event-id="evt_ent_paddle_bad"] tr[data-subscriber="flaky"]`), "bug: cannot handle evt_ent_paddle_bad")
	require.Zero(t, b.count(ev+`[data-event-id="evt_ent_clerk"] tr[data-subscriber="flaky"]`), "flaky does not take clerk events")
	require.Equal(t, "pending", outcome("evt_ent_clerk", timelineDestination))
	require.Contains(t, b.text(ev+`[data-event-id="evt_ent_clerk"] tr[data-subscriber="`+timelineDestination+`"] td.answer`), "503")
	b.screenshot("entity")

	// An event's page links back to its entity.
	b.clickOK(ev + `[data-event-id="evt_ent_clerk"] a.event-link`)
	require.Equal(t, "customer cus_browser", b.text("#entities"))
	b.clickOK("#entities a.entity-link")
	require.Equal(t, 3, b.count(ev))

	// An id nobody has, and a bad one.
	b.setValue("#e-id", "cus_nobody")
	b.clickOK("#entity-find")
	require.Equal(t, 1, b.count("#no-events"))
	resp := b.open("/console/entity?id=cus%01")
	require.Equal(t, 400, int(resp.Status))
	require.Contains(t, b.errorText(), "entity: ")
	require.Contains(t, b.errorText(), "contains control characters")
}
