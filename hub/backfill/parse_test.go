package backfill_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/backfill"
)

// listCase is an answer of a provider's list API and what its reading
// gives: the error's words, or the events' ids and the next cursor.
type listCase struct {
	name, in string
	err      string
	ids      []string
	next     string
}

func testListCases(t *testing.T, cases []listCase, parse func([]byte) (backfill.Page, error)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := parse([]byte(c.in))
			if c.err != "" {
				require.ErrorIs(t, err, backfill.ErrBadAnswer)
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.next, p.Next)
			require.Len(t, p.Events, len(c.ids))
			for i, id := range c.ids {
				require.Equal(t, id, p.Events[i].ID)
			}
		})
	}
}

func TestParseStripeList(t *testing.T) {
	ev := `{"id":"evt_1","object":"event","created":1700000000,"type":"invoice.paid","data":{"object":{"id":"in_1","object":"invoice","customer":"cus_1"}}}`
	cases := []listCase{
		{"page", `{"object":"list","data":[` + ev + `],"has_more":false}`, "", []string{"evt_1"}, ""},
		{"more", `{"object":"list","data":[` + ev + `],"has_more":true}`, "", []string{"evt_1"}, "evt_1"},
		{"event without id", `{"object":"list","data":[{"type":"x"}],"has_more":false}`, "", []string{""}, ""},
		{"more, last without id", `{"object":"list","data":[{"type":"x"}],"has_more":true}`, "no usable id", nil, ""},
		{"more without data", `{"object":"list","data":[],"has_more":true}`, "has_more without events", nil, ""},
		{"an error object", `{"error":{"type":"api_error","message":"x"}}`, "not a list", nil, ""},
		{"not json", `<html>`, "unexpected api answer", nil, ""},
	}
	testListCases(t, cases, backfill.ParseStripeList)
	p, err := backfill.ParseStripeList([]byte(`{"object":"list","data":[` + ev + `]}`))
	require.NoError(t, err)
	require.Equal(t, ev, string(p.Events[0].Body), "the event object's exact bytes")
	require.Equal(t, time.Unix(1700000000, 0), p.Events[0].OccurredAt)
	require.Equal(t, "invoice.paid", p.Events[0].Type)
	require.Equal(t, []hub.Entity{{Kind: "invoice", ID: "in_1"}, {Kind: "customer", ID: "cus_1"}}, p.Events[0].Entities, "the webhook's entities")
}

func TestParsePaddleList(t *testing.T) {
	ev := func(id, at string) string {
		return `{"event_id":"` + id + `","event_type":"subscription.created","occurred_at":"` + at + `","data":{}}`
	}
	since, until := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	meta := func(more bool, next string) string {
		m := `false`
		if more {
			m = `true`
		}
		return `,"meta":{"request_id":"r","pagination":{"per_page":2,"next":"` + next + `","has_more":` + m + `,"estimated_total":9}}}`
	}
	cases := []listCase{
		{"in the window", `{"data":[` + ev("evt_3", "2026-01-02T12:00:00Z") + `]` + meta(false, ""), "", []string{"evt_3"}, ""},
		{"next from the URL", `{"data":[` + ev("evt_3", "2026-01-02T12:00:00Z") + `]` + meta(true, "https://api.paddle.com/events?after=evt_3&order_by=id%5BDESC%5D"), "", []string{"evt_3"}, "evt_3"},
		{"next without a URL: the last id", `{"data":[` + ev("evt_3", "2026-01-02T12:00:00Z") + `]` + meta(true, ""), "", []string{"evt_3"}, "evt_3"},
		{"newer than until dropped", `{"data":[` + ev("evt_4", "2026-01-03T00:00:00Z") + `,` + ev("evt_3", "2026-01-02T12:00:00Z") + `]` + meta(true, ""), "", []string{"evt_3"}, "evt_3"},
		{"past since: stop", `{"data":[` + ev("evt_3", "2026-01-02T12:00:00Z") + `,` + ev("evt_1", "2026-01-01T12:00:00Z") + `]` + meta(true, ""), "", []string{"evt_3"}, ""},
		// order_by ignored: oldest first, the first page is all before
		// since; stopping there would call the window done unread.
		{"oldest first refused", `{"data":[` + ev("evt_1", "2025-12-01T12:00:00Z") + `,` + ev("evt_2", "2025-12-02T12:00:00Z") + `]` + meta(true, ""), "not newest first", nil, ""},
		{"no pagination", `{"data":[]}`, "no meta.pagination", nil, ""},
		{"more without data", `{"data":[]` + meta(true, ""), "has_more without events", nil, ""},
		{"bad cursor", `{"data":[` + ev("evt 3", "2026-01-02T12:00:00Z") + `]` + meta(true, ""), "no usable cursor", nil, ""},
		{"an error object", `{"error":{"type":"request_error","code":"not_found","detail":"x"}}`, "no meta.pagination", nil, ""},
	}
	testListCases(t, cases, func(in []byte) (backfill.Page, error) { return backfill.ParsePaddleList(in, since, until) })
}

// The API answers are untrusted input: the parsers never panic, and what
// they return is usable (a cursor is a printable id, bodies are the
// answer's own bytes).
func FuzzParseStripeList(f *testing.F) {
	f.Add([]byte(`{"object":"list","data":[{"id":"evt_1","created":1,"type":"a.b"}],"has_more":true}`))
	f.Add([]byte(`{"object":"list","data":[{"id":"evt_\u0000","created":"x","type":7}],"has_more":true}`))
	f.Add([]byte(`{"object":"list","data":null,"has_more":false}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := backfill.ParseStripeList(data)
		if err != nil {
			return
		}
		checkPage(t, p, len(data))
	})
}

func FuzzParsePaddleList(f *testing.F) {
	f.Add([]byte(`{"data":[{"event_id":"evt_1","event_type":"a.b","occurred_at":"2026-01-02T00:00:00Z"}],"meta":{"pagination":{"next":"https://x/events?after=evt_1","has_more":true}}}`), int64(0))
	f.Add([]byte(`{"data":[{"event_id":"evt_1"}],"meta":{"pagination":{"next":"%zz","has_more":true}}}`), int64(1767225600))
	f.Fuzz(func(t *testing.T, data []byte, since int64) {
		var s time.Time
		if since > 0 && since < 1<<40 {
			s = time.Unix(since, 0)
		}
		p, err := backfill.ParsePaddleList(data, s, time.Time{})
		if err != nil {
			return
		}
		checkPage(t, p, len(data))
	})
}

func checkPage(t *testing.T, p backfill.Page, size int) {
	t.Helper()
	if p.Next != "" && (len(p.Next) > 255 || containsSpaceOrControl(p.Next)) {
		t.Fatalf("unusable cursor %q", p.Next)
	}
	total := 0
	for _, ev := range p.Events {
		total += len(ev.Body)
	}
	if total > size {
		t.Fatalf("bodies of %d bytes from an answer of %d", total, size)
	}
}

func containsSpaceOrControl(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == 0x7f {
			return true
		}
	}
	return false
}
