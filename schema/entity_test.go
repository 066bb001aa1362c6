package schema

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

func TestParseEntity(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  Entity
		ok    bool
	}{
		{"customer:cus_123", Entity{"customer", "cus_123"}, true},
		{"pull_request:octo/hello#12", Entity{"pull_request", "octo/hello#12"}, true},
		{"order:gid://shopify/Order/1", Entity{"order", "gid://shopify/Order/1"}, true},
		{"user:a:b", Entity{"user", "a:b"}, true},
		{"customer:" + strings.Repeat("é", 127), Entity{"customer", strings.Repeat("é", 127)}, true},
		{strings.Repeat("k", 32) + ":x", Entity{strings.Repeat("k", 32), "x"}, true},
		{"customer", Entity{}, false},
		{"customer:", Entity{}, false},
		{":cus_1", Entity{}, false},
		{"Customer:cus_1", Entity{}, false},
		{"check.out:cs_1", Entity{}, false},
		{strings.Repeat("k", 33) + ":x", Entity{}, false},
		{"customer:" + strings.Repeat("a", 256), Entity{}, false},
		{"customer:cus\x00", Entity{}, false},
		{"customer:cus\r\n", Entity{}, false},
		{"customer:cus\u0085", Entity{}, false},
		{"customer:\xff", Entity{}, false},
	} {
		got, ok := ParseEntity(tt.value)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseEntity(%q) = %+v, %v; want %+v, %v", tt.value, got, ok, tt.want, tt.ok)
		}
		if ok && FormatEntity(got.Kind, got.ID) != tt.value {
			t.Errorf("FormatEntity(ParseEntity(%q)) = %q", tt.value, FormatEntity(got.Kind, got.ID))
		}
	}
}

func TestEntitiesHeader(t *testing.T) {
	h := nats.Header{}
	h.Add(HeaderEntity, "customer:cus_1")
	h.Add(HeaderEntity, "bad")
	h.Add(HeaderEntity, "customer:cus_1")
	h.Add(HeaderEntity, "user:user_1")
	want := []Entity{{"customer", "cus_1"}, {"user", "user_1"}}
	if got := Entities(h); !reflect.DeepEqual(got, want) {
		t.Fatalf("Entities = %+v, want %+v", got, want)
	}
	if got := Entities(nats.Header{}); got != nil {
		t.Fatalf("no header: %+v", got)
	}
	if got := Entities(nil); got != nil {
		t.Fatalf("nil header: %+v", got)
	}
	// Bounded: at most MaxEntities, from at most the first 32 values.
	many := nats.Header{}
	for i := range 1000 {
		many.Add(HeaderEntity, fmt.Sprintf("customer:cus_%d", i))
	}
	if got := Entities(many); len(got) != MaxEntities || got[MaxEntities-1].ID != "cus_7" {
		t.Fatalf("Entities of 1000 values = %+v", got)
	}
	junk := nats.Header{}
	for range 100 {
		junk.Add(HeaderEntity, "junk")
	}
	junk.Add(HeaderEntity, "customer:cus_1")
	if got := Entities(junk); got != nil {
		t.Fatalf("a value past the first 32 was read: %+v", got)
	}
	// AddEntities writes only what Entities reads back.
	out := nats.Header{}
	list := []Entity{{"customer", "cus_1"}, {"BAD", "x"}, {"customer", "cus_1"}, {"user", "u\x00"}}
	for i := range 10 {
		list = append(list, Entity{"order", fmt.Sprint(i)})
	}
	AddEntities(out, list)
	vals := out.Values(HeaderEntity)
	if len(vals) != MaxEntities || vals[0] != "customer:cus_1" || vals[1] != "order:0" {
		t.Fatalf("AddEntities wrote %q", vals)
	}
	if got := Entities(out); len(got) != MaxEntities {
		t.Fatalf("read back %+v", got)
	}
	m := Metadata{Entities: []Entity{{"customer", "cus_1"}, {"user", "user_1"}}}
	if m.Entity("user") != "user_1" || m.Entity("customer") != "cus_1" || m.Entity("order") != "" {
		t.Fatalf("Metadata.Entity: %q %q %q", m.Entity("user"), m.Entity("customer"), m.Entity("order"))
	}
}

// FuzzEntities: Entities never panics, returns at most MaxEntities valid,
// distinct entities, and what AddEntities writes reads back as written.
func FuzzEntities(f *testing.F) {
	f.Add("customer:cus_1", "user:user_1", "bad")
	f.Add("a:\x00", ":", "k:"+strings.Repeat("x", 300))
	f.Add("pull_request:octo/hello#12", "pull_request:octo/hello#12", "order:gid://shopify/Order/1")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		h := nats.Header{HeaderEntity: {a, b, c, a}}
		got := Entities(h)
		if len(got) > MaxEntities {
			t.Fatalf("%d entities", len(got))
		}
		for i, e := range got {
			if !ValidEntity(e) || slices.Contains(got[:i], e) {
				t.Fatalf("bad or repeated entity %+v", e)
			}
			for j := 0; j < len(e.Kind); j++ {
				if c := e.Kind[j]; (c < 'a' || c > 'z') && c != '_' {
					t.Fatalf("kind %q", e.Kind)
				}
			}
			if !utf8.ValidString(e.ID) || strings.ContainsFunc(e.ID, unicode.IsControl) || len(e.ID) > MaxEntityIDLen || e.ID == "" {
				t.Fatalf("id %q", e.ID)
			}
		}
		out := nats.Header{}
		AddEntities(out, got)
		if back := Entities(out); !reflect.DeepEqual(back, got) {
			t.Fatalf("round trip %+v -> %+v", got, back)
		}
	})
}
