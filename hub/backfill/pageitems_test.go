package backfill_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/backfill"
)

// A page of millions of tiny items (a 30 MB answer, under the body bound)
// is refused as it is decoded, by every parser of a listing: decoding it
// whole would take gigabytes (one Event, one raw copy and one error per
// item) before the run's event bound is checked.
func TestParsersRefuseHugePages(t *testing.T) {
	items := func(n int) []byte {
		return append(bytes.Repeat([]byte("{},"), n-1), "{}"...)
	}
	huge := items(200_000)
	since, until := time.Unix(0, 0), time.Now()
	cases := []struct {
		name  string
		parse func(data []byte) error
		wrap  func(items []byte) []byte
	}{
		{"stripe", func(d []byte) error { _, err := backfill.ParseStripeList(d); return err },
			func(i []byte) []byte {
				return append(append([]byte(`{"object":"list","has_more":false,"data":[`), i...), "]}"...)
			}},
		{"paddle", func(d []byte) error { _, err := backfill.ParsePaddleList(d, since, until); return err },
			func(i []byte) []byte {
				return append(append([]byte(`{"meta":{"pagination":{"has_more":false}},"data":[`), i...), "]}"...)
			}},
		{"github", func(d []byte) error { _, err := backfill.ParseGitHubDeliveries(d); return err },
			func(i []byte) []byte { return append(append([]byte(`[`), i...), "]"...) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse(tc.wrap(huge))
			require.ErrorContains(t, err, "items in one page")
			// A page as large as the APIs give is still read.
			require.NoError(t, tc.parse(tc.wrap(items(backfill.MaxPageItems))))
		})
	}
}
