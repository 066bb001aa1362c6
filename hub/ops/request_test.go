package ops_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/ops"
)

// A redrive is one dead letter (id), every one waiting (all) or a plan's
// ids; anything else is refused, naming the field.
func TestDecodeRedrive(t *testing.T) {
	for _, c := range []struct {
		v    ops.Values
		want []int64
		all  bool
		err  string
	}{
		{v: ops.Values{"id": {"7"}}, want: []int64{7}},
		{v: ops.Values{"all": {"true"}}, want: []int64{0}, all: true},
		{v: ops.Values{"ids": {"3,1,2"}}, want: []int64{3, 1, 2}},
		{v: ops.Values{}, err: "id: give exactly one"},
		{v: ops.Values{"id": {"0"}, "all": {"false"}}, err: "id: give exactly one"},
		{v: ops.Values{"id": {"1"}, "ids": {"2"}}, err: "id: give exactly one"},
		{v: ops.Values{"id": {"x"}}, err: "id: must be a dead letter's id"},
		{v: ops.Values{"all": {"yes"}}, err: "all: not true or false"},
		{v: ops.Values{"ids": {"1,1"}}, err: "ids: 1 is given twice"},
		{v: ops.Values{"ids": {"1,-2"}}, err: "ids: must be dead letter ids"},
		{v: ops.Values{"ids": {"9"}}, want: []int64{9}},
		{v: ops.Values{"ids": {manyIDs(ops.MaxRedrivePlan + 1)}}, err: "ids: more than 500 dead letters"},
	} {
		c.v.Set("subscriber", "credits")
		reqs, err := ops.DecodeRedrive(c.v)
		if c.err != "" {
			require.ErrorIs(t, err, ops.ErrInvalid, c.v)
			require.ErrorContains(t, err, c.err, c.v)
			continue
		}
		require.NoError(t, err, c.v)
		require.Len(t, reqs, len(c.want))
		for i, r := range reqs {
			require.Equal(t, ops.RedriveRequest{Subscriber: "credits", ID: c.want[i], All: c.all}, r)
		}
	}
}

// manyIDs is n distinct ids, comma-separated.
func manyIDs(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(ids, ",")
}
