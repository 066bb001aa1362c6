package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/store"
)

// Whatever an operator types, the audit trail's parameters are a JSON
// object Postgres takes (no NUL escape), within hub.MaxAuditJSON,
// and each text is valid UTF-8 cut at its bound.
func FuzzAuditParams(f *testing.F) {
	f.Add("credits", "paddle.>", 10)
	f.Add("\x00\xff", strings.Repeat("é", 300), 300)
	f.Add(strings.Repeat("x", 9000), "\u2028<script>", 1)
	f.Fuzz(func(t *testing.T, a, b string, n int) {
		n = max(0, min(n, 1000))
		for _, s := range []string{a, b} {
			c := clip(s, n)
			if !utf8.ValidString(c) || len(c) > n+len("…") {
				t.Fatalf("clip(%q, %d) = %q", s, n, c)
			}
		}
		raw := auditJSON(map[string]any{"subscriber": clip(a, maxAuditParam), "subject": clip(b, maxAuditParam), "raw": a + b, "n": n})
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("not a JSON object: %s", raw)
		}
		if len(raw) > hub.MaxAuditJSON || strings.Contains(string(raw), `\u0000`) {
			t.Fatalf("params %d bytes, or a NUL: %s", len(raw), raw)
		}
	})
}

// The size rule at its boundary: an object of exactly hub.MaxAuditJSON
// bytes is kept byte for byte; one byte more trims its list (the last
// elements) and says so, its counts kept; an object without a list keeps
// its numbers and drops what is large. Texts jsonb would write otherwise
// (<, non-ASCII, \u2028) count as Go writes them.
func TestAuditJSONBoundary(t *testing.T) {
	type result struct {
		Matched   int      `json:"matched"`
		Published int      `json:"published"`
		Sample    []string `json:"sample"`
	}
	base := func(pad int) result {
		r := result{Matched: 12345, Published: 12000}
		for i := range 20 {
			r.Sample = append(r.Sample, "evt_<é€>\u2028_"+string(rune('a'+i)))
		}
		r.Sample[0] += strings.Repeat("x", pad)
		return r
	}
	b0, err := json.Marshal(base(0))
	if err != nil {
		t.Fatal(err)
	}
	pad := hub.MaxAuditJSON - len(b0)
	for _, tc := range []struct {
		name    string
		pad     int
		trimmed bool
	}{
		{"one under", pad - 1, false},
		{"at the bound", pad, false},
		{"one over", pad + 1, true},
		{"far over", pad + 100_000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := base(tc.pad)
			want, _ := json.Marshal(v)
			got := auditJSON(v)
			if len(got) > hub.MaxAuditJSON || !json.Valid(got) {
				t.Fatalf("%d bytes, valid %v", len(got), json.Valid(got))
			}
			if !tc.trimmed {
				if string(got) != string(want) {
					t.Fatalf("changed within the bound:\n%s\n%s", got, want)
				}
				return
			}
			var r struct {
				result
				Trimmed map[string]struct{ Kept, Of int } `json:"trimmed"`
			}
			if err := json.Unmarshal(got, &r); err != nil {
				t.Fatal(err)
			}
			if r.Matched != 12345 || r.Published != 12000 {
				t.Fatalf("counts lost: %s", got)
			}
			if r.Trimmed["sample"].Of != 20 || r.Trimmed["sample"].Kept != len(r.Sample) || len(r.Sample) >= 20 {
				t.Fatalf("trim not recorded: %s", got)
			}
			if len(r.Sample) > 0 && r.Sample[len(r.Sample)-1] != v.Sample[len(r.Sample)-1] {
				t.Fatalf("not the first elements kept: %s", got)
			}
		})
	}
	// No list to trim: the large text goes, the numbers stay.
	got := auditJSON(map[string]any{"matched": 7, "note": strings.Repeat("<", hub.MaxAuditJSON)})
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil || m["matched"] != 7.0 || m["note"] != nil || len(got) > hub.MaxAuditJSON {
		t.Fatalf("%s", got)
	}
}

// BenchmarkAuditJSON: what recording a bulk result costs, within the
// bound (the default sample of 20 events) and far over it (100 sample
// events of 2 KiB ids: trimmed).
func BenchmarkAuditJSON(b *testing.B) {
	for _, tc := range []struct {
		name         string
		events, size int
	}{{"within", DefaultBulkSample, 10}, {"trimmed", MaxBulkSample, 2048}} {
		res := BulkResult{RunID: "r", Action: BulkReplay, Matched: 10_000, Eligible: 9_999, Published: 9_999}
		for i := range tc.events {
			res.Sample = append(res.Sample, EventRow{Provider: "paddle", EventID: strings.Repeat("é", tc.size/2) + string(rune('a'+i%26)),
				EventType: "subscription.created"})
		}
		if full, _ := json.Marshal(res); (len(full) > hub.MaxAuditJSON) != (tc.name == "trimmed") {
			b.Fatalf("%s: %d bytes", tc.name, len(full))
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if out := auditJSON(res); len(out) > hub.MaxAuditJSON {
					b.Fatal(len(out))
				}
			}
		})
	}
}

// A run whose context is cancelled is audited as cancelled whatever error
// it returns: a cancel that lands in a query or a publish surfaces as that
// call's error, which need not wrap context.Canceled (the console's job
// page said "cancelled" while the trail said "error"). A run that fails on
// its own, its context alive, stays an error.
func TestAuditCancelledWhateverTheRunReturns(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	o := New(Config{Archive: store.New(pool), Subscribers: pool})
	for _, tc := range []struct {
		name   string
		cancel bool
		err    error
		want   string
	}{
		{"cancelled, the publish's own error", true, errors.New("publish: no PubAck within 10s"), hub.AuditCancelled},
		{"cancelled, a wrapped context error", true, fmt.Errorf("read page: %w", context.Canceled), hub.AuditCancelled},
		{"not cancelled, an error", false, errors.New("publish: no PubAck within 10s"), hub.AuditError},
		{"not cancelled, ok", false, nil, hub.AuditOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := o.audited(ctx, ActionReplay, "subscriber "+tc.name, nil, func() (any, error) {
				if tc.cancel {
					cancel()
				}
				return nil, tc.err
			})
			require.ErrorIs(t, err, tc.err)
			es, err := o.ListAudit(context.Background(), AuditFilter{Limit: 100})
			require.NoError(t, err)
			var got *hub.AuditEntry
			for i := range es {
				if es[i].Target == "subscriber "+tc.name {
					got = &es[i]
				}
			}
			require.NotNil(t, got, "the run is audited")
			require.Equal(t, tc.want, got.Outcome)
			require.False(t, got.FinishedAt.IsZero())
		})
	}
}
