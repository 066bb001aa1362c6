package jsontext

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValues(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  int
	}{
		{`1`, 10, 1},
		{` {"a":1,"b":[true,null,"x"]} `, 100, 8}, // object, 2 names, 1, array, 3 elements
		{`[]`, 10, 1},
		{`[{},{},{}]`, 10, 4},
		{`[1,2,3,4,5]`, 3, 4},  // stops past the limit
		{`{"a":1,"b":`, 10, 4}, // not JSON: what was read
		{`"a string of any length counts once"`, 10, 1},
	} {
		require.Equal(t, tc.want, Values([]byte(tc.in), tc.limit), tc.in)
	}
	// Too deep: it stops at the opener past the limit of nesting.
	deep := strings.Repeat("[", MaxDepth+5) + strings.Repeat("]", MaxDepth+5)
	require.Equal(t, MaxDepth+1, Values([]byte(deep), 1<<20))
}

// FuzzSkipValue: the scanner accepts exactly what encoding/json accepts,
// and the count of valid JSON is bounded by its length (every value or
// name takes two bytes with its separator: hub/store skips counting a
// short payload).
func FuzzSkipValue(f *testing.F) {
	for _, s := range []string{`{}`, `[1,"a",null]`, `{"a":{"b":[]}}`, `"\u00e9"`, `01`, `[1,]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		end, ok := SkipValue(b, SkipSpace(b, 0), 0)
		valid := ok && SkipSpace(b, end) == len(b)
		if valid != json.Valid(b) && !strings.Contains(s, strings.Repeat("[", 100)) {
			t.Fatalf("SkipValue %v, json.Valid %v on %q", valid, json.Valid(b), s)
		}
		if valid {
			require.LessOrEqual(t, Values(b, len(b)+1), (len(b)+1)/2)
		}
	})
}
