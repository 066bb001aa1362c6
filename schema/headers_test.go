package schema

import (
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestMetadataRoundTrip(t *testing.T) {
	m := Metadata{MsgID: "paddle:evt_1", EventID: "evt_1", Provider: "paddle", EventType: "subscription.created",
		ArchiveID: "0193", ReceivedAt: time.Date(2026, 11, 30, 8, 0, 0, 123, time.UTC), OccurredAt: time.Date(2026, 11, 30, 7, 59, 0, 0, time.UTC),
		Entities: []Entity{{"subscription", "sub_01h"}, {"customer", "ctm_01h"}, {"user", "user:with:colons"}}}
	got, err := ParseMetadata(m.Header())
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("ParseMetadata(Header()) = %+v, %v; want %+v", got, err, m)
	}
	for _, missing := range []string{HeaderEventID, HeaderProvider, HeaderEventType} {
		h := m.Header()
		h.Del(missing)
		if _, err := ParseMetadata(h); err == nil {
			t.Errorf("accepted headers without %s", missing)
		}
	}
}

func TestPlausibleOccurredAt(t *testing.T) {
	received := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		occurred time.Time
		received time.Time
		want     bool
	}{
		{"a minute before receipt", received.Add(-time.Minute), received, true},
		{"at receipt", received, received, true},
		{"the floor, 2000-01-01", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), received, true},
		{"a nanosecond before the floor", time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC), received, false},
		{"the floor in another zone, earlier in UTC", time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("+01", 3600)), received, false},
		{"a day ahead", received.Add(24 * time.Hour), received, true},
		{"a day and a nanosecond ahead", received.Add(24*time.Hour + 1), received, false},
		{"zero", time.Time{}, received, false},
		{"unix 0", time.Unix(0, 0), received, false},
		{"negative", time.Unix(-1, 0), received, false},
		{"seconds read as milliseconds", time.UnixMilli(1700000000), received, false},
		{"3e14 ms (year 11476)", time.UnixMilli(3e14), received, false},
		{"1e16 ms", time.UnixMilli(1e16), received, false},
		{"3e11 s", time.Unix(3e11, 0), received, false},
		{"year 9999", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), received, false},
		{"receipt unknown: 2026", received, time.Time{}, true},
		{"receipt unknown: year 9999", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Time{}, true},
		{"receipt unknown: year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}, false},
		{"receipt unknown: 1999", time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}, false},
		{"receipt in year 9999: capped by what RFC 3339 writes", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 12, 0, 0, 0, time.UTC), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlausibleOccurredAt(tt.occurred, tt.received); got != tt.want {
				t.Fatalf("PlausibleOccurredAt(%v, %v) = %v, want %v", tt.occurred, tt.received, got, tt.want)
			}
		})
	}
}

// Header never writes a time its own parser cannot read back, and leaves
// out an implausible occurred-at.
func TestHeaderTimes(t *testing.T) {
	received := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name                   string
		received, occurred     time.Time
		wantReceived, wantOccd string // "" when the header must be absent
	}{
		{"plain", received, received.Add(-time.Second), "2026-11-30T08:00:00Z", "2026-11-30T07:59:59Z"},
		{"other zone, nanoseconds", received.In(time.FixedZone("-05", -5*3600)), received.Add(-time.Nanosecond), "2026-11-30T08:00:00Z", "2026-11-30T07:59:59.999999999Z"},
		{"no occurred-at", received, time.Time{}, "2026-11-30T08:00:00Z", ""},
		{"occurred-at year 11476", received, time.UnixMilli(3e14), "2026-11-30T08:00:00Z", ""},
		{"occurred-at 1e16 ms", received, time.UnixMilli(1e16), "2026-11-30T08:00:00Z", ""},
		{"occurred-at year -1", received, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), "2026-11-30T08:00:00Z", ""},
		{"occurred-at 1970", received, time.Unix(0, 0), "2026-11-30T08:00:00Z", ""},
		{"occurred-at two days ahead", received, received.Add(48 * time.Hour), "2026-11-30T08:00:00Z", ""},
		{"received-at year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), received, "", "2026-11-30T08:00:00Z"},
		{"received-at year -1: occurred-at after it by more than a day", time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), received, "", ""},
		{"received-at year 0", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), received, "0000-01-01T00:00:00Z", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Metadata{MsgID: "p:e", EventID: "e", Provider: "p", EventType: "x", ReceivedAt: tt.received, OccurredAt: tt.occurred}
			h := m.Header()
			if got := h.Get(HeaderReceivedAt); got != tt.wantReceived {
				t.Errorf("%s = %q, want %q", HeaderReceivedAt, got, tt.wantReceived)
			}
			if got := h.Get(HeaderOccurredAt); got != tt.wantOccd {
				t.Errorf("%s = %q, want %q", HeaderOccurredAt, got, tt.wantOccd)
			}
			if _, err := ParseMetadata(h); err != nil {
				t.Fatalf("ParseMetadata(Header()): %v", err)
			}
		})
	}
}

// An optional Hub-Occurred-At that cannot be read, or is implausible,
// reads as absent; an unreadable Hub-Received-At still fails.
func TestParseMetadataTimes(t *testing.T) {
	tests := []struct {
		name, received, occurred string
		wantErr                  bool
		wantOccurred             time.Time
	}{
		{"both readable", "2026-11-30T08:00:00Z", "2026-11-30T07:00:00+01:00", false, time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)},
		{"occurred-at absent", "2026-11-30T08:00:00Z", "", false, time.Time{}},
		{"occurred-at year 11476 (older hubs wrote it)", "2026-11-30T08:00:00Z", "11476-08-15T05:20:00Z", false, time.Time{}},
		{"occurred-at garbage", "2026-11-30T08:00:00Z", "yesterday", false, time.Time{}},
		{"occurred-at a date only", "2026-11-30T08:00:00Z", "2026-11-30", false, time.Time{}},
		{"occurred-at in 1970", "2026-11-30T08:00:00Z", "1970-01-01T00:00:00Z", false, time.Time{}},
		{"occurred-at in year 9000", "2026-11-30T08:00:00Z", "9000-01-01T00:00:00Z", false, time.Time{}},
		{"received-at absent: occurred-at kept", "", "2026-11-30T07:00:00Z", false, time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)},
		{"received-at garbage", "yesterday", "2026-11-30T07:00:00Z", true, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := nats.Header{}
			h.Set(HeaderEventID, "evt_1")
			h.Set(HeaderProvider, "paddle")
			h.Set(HeaderEventType, "subscription.created")
			if tt.received != "" {
				h.Set(HeaderReceivedAt, tt.received)
			}
			if tt.occurred != "" {
				h.Set(HeaderOccurredAt, tt.occurred)
			}
			m, err := ParseMetadata(h)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("accepted %s %q", HeaderReceivedAt, tt.received)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !m.OccurredAt.Equal(tt.wantOccurred) {
				t.Fatalf("OccurredAt = %v, want %v", m.OccurredAt, tt.wantOccurred)
			}
		})
	}
}

// Messages on the stream are written by the hub, but a subscriber must
// survive anything a misconfigured publisher puts there.
func FuzzParseMetadata(f *testing.F) {
	f.Add("evt_1", "paddle", "subscription.created", "2026-11-30T08:00:00Z", "")
	f.Add("", "", "", "not a time", "2026-11-30")
	f.Add("evt_1", "paddle", "x", "2026-11-30T08:00:00Z", "11476-08-15T05:20:00Z")
	f.Add("evt_1", "paddle", "x", "", "0000-01-01T00:00:00Z")
	f.Fuzz(func(t *testing.T, id, provider, typ, received, occurred string) {
		h := nats.Header{}
		h.Set(HeaderEventID, id)
		h.Set(HeaderProvider, provider)
		h.Set(HeaderEventType, typ)
		h.Set(HeaderReceivedAt, received)
		h.Set(HeaderOccurredAt, occurred)
		m, err := ParseMetadata(h)
		if err != nil {
			return
		}
		if m.EventID == "" || m.Provider == "" || m.EventType == "" {
			t.Fatalf("accepted empty required headers: %+v", m)
		}
		if !m.OccurredAt.IsZero() && !PlausibleOccurredAt(m.OccurredAt, m.ReceivedAt) {
			t.Fatalf("kept an implausible occurred-at: %+v", m)
		}
		back, err := ParseMetadata(m.Header())
		if err != nil || !back.ReceivedAt.Equal(m.ReceivedAt) || !back.OccurredAt.Equal(m.OccurredAt) || back.EventID != m.EventID {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, m)
		}
	})
}

// FuzzMetadataTimes: every time Header writes parses back to the same
// instant, whatever the times it is given; a time it leaves out is one
// the parser could not read, or an implausible occurred-at.
func FuzzMetadataTimes(f *testing.F) {
	f.Add(int64(1764489600), int64(0), int64(1764489540), int64(123))
	f.Add(int64(1764489600), int64(0), int64(3e11), int64(0))
	f.Add(int64(1e16), int64(0), int64(1e13), int64(0))
	f.Add(int64(-62167219200), int64(0), int64(-62167219201), int64(999999999))
	f.Add(int64(253402300799), int64(999999999), int64(253402300800), int64(0))
	f.Add(int64(-1<<63), int64(-1), int64(1<<63-1), int64(1<<62))
	f.Fuzz(func(t *testing.T, recvSec, recvNsec, occSec, occNsec int64) {
		received, occurred := time.Unix(recvSec, recvNsec), time.Unix(occSec, occNsec)
		m := Metadata{MsgID: "p:e", EventID: "e", Provider: "p", EventType: "x", ReceivedAt: received, OccurredAt: occurred}
		h := m.Header()
		back, err := ParseMetadata(h)
		if err != nil {
			t.Fatalf("ParseMetadata(Header()) of %v, %v: %v (headers %v)", received, occurred, err, h)
		}
		if v := h.Get(HeaderReceivedAt); v != "" {
			if !back.ReceivedAt.Equal(received) {
				t.Fatalf("received-at %v written as %q, read as %v", received, v, back.ReceivedAt)
			}
		} else if y := received.UTC().Year(); y >= 0 && y <= 9999 {
			t.Fatalf("left out a writable received-at %v", received)
		}
		if v := h.Get(HeaderOccurredAt); v != "" {
			if !back.OccurredAt.Equal(occurred) {
				t.Fatalf("occurred-at %v written as %q, read as %v", occurred, v, back.OccurredAt)
			}
		} else if back.OccurredAt != (time.Time{}) {
			t.Fatalf("occurred-at absent, read as %v", back.OccurredAt)
		} else if y := occurred.UTC().Year(); y >= 0 && y <= 9999 && PlausibleOccurredAt(occurred, received) {
			t.Fatalf("left out a plausible occurred-at %v (received %v)", occurred, received)
		}
	})
}

func TestIsServerMarker(t *testing.T) {
	cases := []struct {
		name string
		h    nats.Header
		want bool
	}{
		{"nil", nil, false},
		{"hub event", Metadata{MsgID: "paddle:evt_1", EventID: "evt_1", Provider: "paddle", EventType: "subscription.created"}.Header(), false},
		{"max age marker", nats.Header{"Nats-Marker-Reason": {"MaxAge"}, "Nats-TTL": {"1s"}, "Nats-Rollup": {"sub"}}, true},
		{"purge marker", nats.Header{"Nats-Marker-Reason": {"Purge"}}, true},
		{"empty reason", nats.Header{"Nats-Marker-Reason": {""}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := IsServerMarker(c.h); got != c.want {
				t.Errorf("IsServerMarker(%v) = %v, want %v", c.h, got, c.want)
			}
		})
	}
}
