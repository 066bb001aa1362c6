package chaos

import (
	"bytes"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

// nameOnly is a Signer that is never asked to sign: the options are
// refused before.
type nameOnly string

func (n nameOnly) Name() string { return string(n) }
func (n nameOnly) Sign(string, string, []byte, time.Time) (http.Header, string, error) {
	panic("not reached")
}

// The report counts each event once, by where it is missing or twice; an
// event never acknowledged nor archived is owed nothing.
func TestReportCounts(t *testing.T) {
	subs := []Subscription{{Name: "credits", Subjects: []string{"paddle.subscription.created"}, Effects: "ledger"}}
	created := Kind{"paddle", "subscription.created"}
	updated := Kind{"paddle", "subscription.updated"}
	ev := func(k Kind, id string, acked bool) Event { return Event{Kind: k, ID: id, Acked: acked, Attempts: 1} }
	all := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m["paddle:"+id] = true
		}
		return m
	}
	cases := []struct {
		name             string
		events           []Event
		f                findings
		lost, dup, unack int
		ok               bool
		text             string
	}{
		{name: "all well", events: []Event{ev(created, "a", true), ev(updated, "b", true)},
			f: findings{archived: all("a", "b"), deduped: all("a", "b"), stream: map[string]int{"paddle:a": 1, "paddle:b": 1},
				processed: map[string]map[string]bool{"credits": all("a")}},
			ok: true, text: "OK: nothing lost"},
		{name: "acknowledged, not archived, not published", events: []Event{ev(created, "a", true)},
			f:    findings{archived: all(), deduped: all(), stream: map[string]int{}},
			lost: 1, text: "acknowledged but not archived: 1 (paddle:a)"},
		{name: "archived without a 2xx is owed", events: []Event{ev(updated, "a", false)},
			f:    findings{archived: all("a"), deduped: all("a"), stream: map[string]int{}},
			lost: 1, text: "missing on the stream: 1 (paddle:a)"},
		{name: "neither acknowledged nor archived is owed nothing", events: []Event{ev(updated, "a", false)},
			f:     findings{archived: all(), deduped: all(), stream: map[string]int{}},
			unack: 1, ok: true},
		{name: "twice on the stream", events: []Event{ev(updated, "a", true)},
			f:   findings{archived: all("a"), deduped: all("a"), stream: map[string]int{"paddle:a": 2}},
			dup: 1, text: "on the stream more than once: 1 (paddle:a)"},
		{name: "side effect twice, not processed by credits", events: []Event{ev(created, "a", true), ev(created, "b", true)},
			f: findings{archived: all("a", "b"), deduped: all("a", "b"), stream: map[string]int{"paddle:a": 1, "paddle:b": 1},
				processed: map[string]map[string]bool{"credits": all("a")}, effects: map[string]map[string]int{"credits": {"a": 2}}},
			lost: 1, dup: 1, text: "credits: side effect made twice: 1 (paddle:a)"},
		{name: "dead-lettered is not OK", events: []Event{ev(created, "a", true)},
			f: findings{archived: all("a"), deduped: all("a"), stream: map[string]int{"paddle:a": 1},
				dead: map[string]map[string]bool{"credits": all("a")}},
			text: "credits: dead-lettered: 1 (paddle:a)"},
		{name: "archive without the dedup row is not archived", events: []Event{ev(updated, "a", true)},
			f:    findings{archived: all("a"), deduped: all(), stream: map[string]int{"paddle:a": 1}},
			lost: 1, text: "of which on the stream"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := report(CheckOptions{Subscribers: subs}, c.events, c.f)
			if r.Lost != c.lost || r.Duplicated != c.dup || r.Unacknowledged.N != c.unack || r.OK() != c.ok {
				t.Fatalf("lost %d dup %d unack %d ok %v; want %d %d %d %v", r.Lost, r.Duplicated, r.Unacknowledged.N, r.OK(), c.lost, c.dup, c.unack, c.ok)
			}
			var b bytes.Buffer
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), c.text) {
				t.Fatalf("report lacks %q:\n%s", c.text, b.String())
			}
			b.Reset()
			if err := r.WriteJSON(&b); err != nil || !strings.Contains(b.String(), `"ok":`) {
				t.Fatalf("JSON: %v %s", err, b.String())
			}
		})
	}
}

// Bad options are refused with the bound named.
func TestLoadOptionsRefused(t *testing.T) {
	ok := map[string]Signer{"paddle": nameOnly("paddle")}
	mix := []Kind{{"paddle", "a"}}
	cases := []struct {
		o    LoadOptions
		want string
	}{
		{LoadOptions{}, "target"},
		{LoadOptions{Target: "http://x", Mix: []Kind{{"paddle", "a"}}}, "no signer"},
		{LoadOptions{Target: "http://x", Mix: []Kind{}}, "at least one"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, Rate: math.NaN()}, "rate"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, Rate: 1e9}, "rate"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, Events: -1}, "events"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, Events: MaxEvents + 1}, "events"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, Duration: 2 * MaxDuration}, "duration"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, RetryFor: -time.Second}, "retry-for"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, Workers: 1 << 20}, "workers"},
		{LoadOptions{Target: "http://x", Mix: mix, Signers: ok, RunID: "a b"}, "run id"},
	}
	for _, c := range cases {
		err := c.o.defaults()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.o, err, c.want)
		}
	}
	for _, id := range []string{"", "a-b", "x\x00", strings.Repeat("a", 33), "ü"} {
		if validRunID(id) {
			t.Errorf("run id %q accepted", id)
		}
	}
	for _, sub := range []Subscription{{Name: "x;drop", Subjects: []string{"a"}}, {Name: "ok", Subjects: []string{"a"}, Effects: "a.b"}, {Name: "ok"}} {
		if sub.validate() == nil {
			t.Errorf("subscription %+v accepted", sub)
		}
	}
}
