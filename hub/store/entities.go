package store

import (
	"strconv"
	"strings"

	"github.com/hookhub/hookhub/hub"
)

// The entity look-up. An event's entities are its archive row's entities
// column, "<kind>:<id>" in slots 1 to hub.MaxEntities, and each slot has a
// partial expression index of its own (migrations/00007_entity_slots.sql):
// the slot's id, then the archive's cursor (created_at, id), for first
// deliveries only. A look-up by id walks the eight indexes newest first
// and merges them; an event that names the id in two slots (under two
// kinds) is found twice and kept once.

// entitySlotID is the id in slot k (1-based) of the entities of the
// archive row a, exactly as the slot's index computes it.
func entitySlotID(k int) string {
	s := "a.entities[" + strconv.Itoa(k) + "]"
	return "substr(" + s + ", strpos(" + s + ", ':') + 1)"
}

// entitySlotRow is the condition on the archive row a that the index of
// slot k holds it, under which the planner uses that index.
func entitySlotRow(k int) string {
	return "a.entities[" + strconv.Itoa(k) + "] IS NOT NULL AND a.processing_status IS DISTINCT FROM 'SKIPPED'"
}

// entityCandidates is the query of up to limit archive ids about entity
// (a placeholder), newest first, among the rows that meet cond (on a, and
// on p, the dedup row joined for the status): one ordered scan per slot,
// each stopped at limit, merged. The caller orders and limits the union.
func entityCandidates(entity, cond, limit string) string {
	var b strings.Builder
	for k := 1; k <= hub.MaxEntities; k++ {
		if k > 1 {
			b.WriteString("\n    UNION ALL\n    ")
		}
		b.WriteString(`(SELECT a.id FROM webhook_events a
     LEFT JOIN processed_webhook_events p ON p.id = a.id AND a.processing_status IS NULL
     WHERE ` + entitySlotID(k) + ` = ` + entity + ` AND ` + entitySlotRow(k) + ` AND ` + cond + `
     ORDER BY a.created_at DESC, a.id DESC LIMIT ` + limit + `)`)
	}
	return b.String()
}

// entityRow is the condition that the archive row a is found by entity
// (a placeholder): a first delivery that names it in any slot.
func entityRow(entity string) string {
	return `a.processing_status IS DISTINCT FROM 'SKIPPED' AND EXISTS (
        SELECT 1 FROM unnest(a.entities) AS e WHERE substr(e, strpos(e, ':') + 1) = ` + entity + `)`
}
