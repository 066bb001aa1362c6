package schema

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestMetadataRoundTrip(t *testing.T) {
	m := Metadata{MsgID: "paddle:evt_1", EventID: "evt_1", Provider: "paddle", EventType: "subscription.created",
		ArchiveID: "0193", ReceivedAt: time.Date(2026, 11, 30, 8, 0, 0, 123, time.UTC), OccurredAt: time.Date(2026, 11, 30, 7, 59, 0, 0, time.UTC)}
	got, err := ParseMetadata(m.Header())
	if err != nil || got != m {
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

// Messages on the stream are written by the hub, but a subscriber must
// survive anything a misconfigured publisher puts there.
func FuzzParseMetadata(f *testing.F) {
	f.Add("evt_1", "paddle", "subscription.created", "2026-11-30T08:00:00Z", "")
	f.Add("", "", "", "not a time", "2026-11-30")
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
		back, err := ParseMetadata(m.Header())
		if err != nil || !back.ReceivedAt.Equal(m.ReceivedAt) || back.EventID != m.EventID {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	})
}
