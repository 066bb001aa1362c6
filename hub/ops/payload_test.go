package ops_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/schema"
)

// archiveBodies archives one first delivery per body (event ids evt_<i>)
// received at at, a microsecond apart, oldest first.
func archiveBodies(t *testing.T, pool *pgxpool.Pool, at time.Time, prefix string, bodies ...string) {
	t.Helper()
	var ds []hub.Delivery
	for i, b := range bodies {
		ds = append(ds, hub.Delivery{
			ArchiveID: uuid.Must(uuid.NewV7()), Provider: "paddle", EventID: fmt.Sprintf("%s%03d", prefix, i),
			EventType: "subscription.created", Body: []byte(b), Signature: "ts=1;h1=ab", ReceivedAt: at.Add(time.Duration(i) * time.Microsecond),
		})
	}
	_, err := store.New(pool).Ingest(context.Background(), ds)
	require.NoError(t, err)
}

func eventIDs(rows []ops.EventRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.EventID)
	}
	return out
}

func TestPayloadFilterMatches(t *testing.T) {
	ctx, pool, o := newDBOps(t)
	now := time.Now()
	archiveBodies(t, pool, now.Add(-time.Hour), "e",
		`{"data":{"object":{"customer":"cus_1","amount":10,"paid":true,"items":[{"id":"it_a"},{"id":"it_b"}]}}}`, // e000
		`{"data":{"object":{"customer":"cus_2","amount":10.0,"paid":false}}}`,                                    // e001
		`{"data":{"object":{"customer":"CUS_1","amount":"10","paid":"true"}}}`,                                   // e002
		`{"data":{"object":{"customer":{"id":"cus_1"},"amount":1e1}}}`,                                           // e003
		`{"data":{"object":{"note":null,"a.b":"dot"}}}`,                                                          // e004
		`not json at all`, // e005
	)
	since := now.Add(-2 * time.Hour)
	for _, tc := range []struct {
		where []ops.PayloadMatch
		want  []string // newest first
	}{
		{[]ops.PayloadMatch{{"data.object.customer", "cus_1"}}, []string{"e000"}}, // exact, case-sensitive; an object never matches
		{[]ops.PayloadMatch{{"data.object.amount", "10"}}, []string{"e003", "e002", "e001", "e000"}},
		{[]ops.PayloadMatch{{"data.object.amount", "10.00"}}, []string{"e003", "e001", "e000"}}, // the number, not the string "10"
		{[]ops.PayloadMatch{{"data.object.paid", "true"}}, []string{"e002", "e000"}},
		{[]ops.PayloadMatch{{"data.object.paid", "false"}}, []string{"e001"}},
		{[]ops.PayloadMatch{{"data.object.items[1].id", "it_b"}}, []string{"e000"}},
		{[]ops.PayloadMatch{{"data.object.items[2].id", "it_b"}}, nil},
		{[]ops.PayloadMatch{{"data.object.customer.id", "cus_1"}}, []string{"e003"}},
		{[]ops.PayloadMatch{{"data.object.note", "null"}}, []string{"e004"}},
		{[]ops.PayloadMatch{{"data.object.missing", ""}}, nil},
		{[]ops.PayloadMatch{{"data.object.amount", "10"}, {"data.object.paid", "true"}}, []string{"e002", "e000"}},
	} {
		p, err := o.ListEventPage(ctx, ops.EventFilter{Since: since, Where: tc.where, Limit: 100})
		require.NoError(t, err, "%v", tc.where)
		require.Equal(t, tc.want, eventIDs(p.Events), "%v", tc.where)
		require.False(t, p.Truncated)
		require.Empty(t, p.Next, "a short page that read everything is the last")
		require.Equal(t, 6, p.Scanned)
	}
	// Without Where the listing is unchanged; ListEvents refuses Where.
	_, err := o.ListEvents(ctx, ops.EventFilter{Since: since, Where: []ops.PayloadMatch{{"a", "b"}}, Limit: 10})
	require.ErrorIs(t, err, ops.ErrInvalid)
}

func TestPayloadFilterRangeBound(t *testing.T) {
	ctx, _, o := newDBOps(t)
	now := o.Now()
	w := []ops.PayloadMatch{{"data.id", "x"}}
	for _, f := range []ops.EventFilter{
		{Where: w, Since: now.Add(-8 * 24 * time.Hour), Limit: 10},
		{Where: w, Since: now.Add(-30 * 24 * time.Hour), Until: now.Add(-22 * 24 * time.Hour), Limit: 10},
	} {
		_, err := o.ListEventPage(ctx, f)
		var ie *ops.InputError
		require.True(t, errors.As(err, &ie), "%v", err)
		require.Equal(t, "since", ie.Field)
		require.Contains(t, ie.Reason, "at most 7d")
	}
	_, err := o.ListEventPage(ctx, ops.EventFilter{Where: w, Since: now.Add(-30 * 24 * time.Hour), Until: now.Add(-23 * 24 * time.Hour), Limit: 10})
	require.NoError(t, err, "7 days in the past is fine")
	// Without since: the 7 days before until (or now).
	_, err = o.ListEventPage(ctx, ops.EventFilter{Where: w, Limit: 10})
	require.NoError(t, err, "no since: the last 7 days")
	_, err = o.ListEventPage(ctx, ops.EventFilter{Where: w, Until: now.Add(-30 * 24 * time.Hour), Limit: 10})
	require.NoError(t, err, "no since: the 7 days before until")
	_, err = o.ListEventPage(ctx, ops.EventFilter{Where: []ops.PayloadMatch{{"a", "1"}, {"a", "2"}, {"a", "3"}, {"a", "4"}, {"a", "5"}}, Since: now.Add(-time.Hour), Limit: 10})
	require.ErrorContains(t, err, "at most 4 payload conditions")
}

func TestPayloadFilterScanBoundAndCursor(t *testing.T) {
	t.Parallel()
	pool, _ := hubdb.Pool(t)
	st := store.New(pool)
	o := ops.New(ops.Config{Archive: st, Subscribers: pool, Stream: schema.DefaultStream, PayloadScanRows: 10})
	ctx := context.Background()
	now := time.Now()
	// 25 events; every fifth is about cus_9 (e000, e005, ..., e020).
	var bodies []string
	for i := range 25 {
		c := "cus_0"
		if i%5 == 0 {
			c = "cus_9"
		}
		bodies = append(bodies, `{"customer":"`+c+`"}`)
	}
	archiveBodies(t, pool, now.Add(-time.Hour), "e", bodies...)
	f := ops.EventFilter{Since: now.Add(-2 * time.Hour), Where: []ops.PayloadMatch{{"customer", "cus_9"}}, Limit: 100}
	var got []string
	var pages int
	for {
		p, err := o.ListEventPage(ctx, f)
		require.NoError(t, err)
		pages++
		got = append(got, eventIDs(p.Events)...)
		require.LessOrEqual(t, p.Scanned, 10)
		if p.Next == "" {
			require.False(t, p.Truncated)
			break
		}
		require.True(t, p.Truncated, "a page that is not full continues only because the scan hit its bound")
		require.Equal(t, 10, p.Scanned)
		f.Before = p.Next
		require.Less(t, pages, 10)
	}
	require.Equal(t, []string{"e020", "e015", "e010", "e005", "e000"}, got)
	require.Equal(t, 3, pages)

	// A full page continues from its last row, not truncated.
	f = ops.EventFilter{Since: now.Add(-2 * time.Hour), Where: []ops.PayloadMatch{{"customer", "cus_0"}}, Limit: 3}
	p, err := o.ListEventPage(ctx, f)
	require.NoError(t, err)
	require.Equal(t, []string{"e024", "e023", "e022"}, eventIDs(p.Events))
	require.False(t, p.Truncated)
	require.Equal(t, p.Events[2].Cursor, p.Next)
	f.Before = p.Next
	p, err = o.ListEventPage(ctx, f)
	require.NoError(t, err)
	require.Equal(t, []string{"e021", "e019", "e018"}, eventIDs(p.Events))
}

func TestParseWhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, path, value, err string
	}{
		{in: "data.object.customer=cus_1", path: "data.object.customer", value: "cus_1"},
		{in: "a=b=c", path: "a", value: "b=c"},
		{in: "items[0].id=", path: "items[0].id", value: ""},
		{in: "m[1][2]=x", path: "m[1][2]", value: "x"},
		{in: "nope", err: "is not path=value"},
		{in: "=x", err: "empty"},
		{in: "a..b=x", err: "an empty key"},
		{in: "a[x]=1", err: "an index must be"},
		{in: "a[01]=1", err: "an index must be"},
		{in: "a[-1]=1", err: "an index must be"},
		{in: "a[1=1", err: "unclosed"},
		{in: "a[1]b=1", err: "text after an index"},
		{in: "a]=1", err: "a key with"},
		{in: strings.Repeat("a.", 17) + "a=1", err: "deeper than 16"},
		{in: strings.Repeat("a", 300) + "=1", err: "longer than 256"},
		{in: "a=" + strings.Repeat("v", 1025), err: "longer than 1024"},
		{in: "a=\x00", err: "where"},
	} {
		m, err := ops.ParseWhere("where", tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			require.ErrorIs(t, err, ops.ErrInvalid)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, ops.PayloadMatch{Path: tc.path, Value: tc.value}, m)
	}
	path, err := ops.ParsePayloadPath("where", "data.items[3][0].id")
	require.NoError(t, err)
	require.Equal(t, []string{"data", "items", "3", "0", "id"}, path)
}

func FuzzParseWhere(f *testing.F) {
	for _, s := range []string{"data.object.customer=cus_1", "a[0]=1", "a[99999].b=true", "x=", "a.b[1][2]=null", "=", "a[", "]", "a.=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ops.ParseWhere("where", s)
		if err != nil {
			var ie *ops.InputError
			if !errors.As(err, &ie) || ie.Field != "where" || len(err.Error()) > 400 {
				t.Fatalf("ParseWhere(%q): %v", s, err)
			}
			return
		}
		if m.String() != s {
			t.Fatalf("ParseWhere(%q) = %q", s, m.String())
		}
		path, err := ops.ParsePayloadPath("where", m.Path)
		if err != nil || len(path) == 0 || len(path) > ops.MaxPayloadPathDepth {
			t.Fatalf("path %q: %v %v", m.Path, path, err)
		}
		for _, k := range path {
			if k == "" {
				t.Fatalf("path %q: empty key", m.Path)
			}
		}
	})
}
