package bench

import (
	"cmp"
	"slices"
)

// medianRound sets Ingest, IngestMedianRound and IngestP99Ratio from
// IngestRounds: the round of the median ratio, both of its runs.
func (rep *DestinationsReport) medianRound() {
	if len(rep.IngestRounds) == 0 {
		return
	}
	order := make([]int, len(rep.IngestRounds))
	for i := range order {
		order[i] = i
	}
	roundRatio := func(i int) float64 { return Ratio(rep.IngestRounds[i][1].P99ms, rep.IngestRounds[i][0].P99ms) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(roundRatio(a), roundRatio(b)) })
	m := order[(len(order)-1)/2]
	rep.Ingest = slices.Clone(rep.IngestRounds[m])
	rep.IngestMedianRound = m + 1
	rep.IngestP99Ratio = roundRatio(m)
}
