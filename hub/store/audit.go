package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookhub/hookhub/hub"
)

// The audit trail (audit_log, migrations/00004_audit.sql): hub/ops is its
// only caller. A row is inserted when an action starts (BeginAudit) and
// finished once when it ends (FinishAudit); the table's trigger refuses
// every other change.

// BeginAudit records that an action starts: e with outcome running. It
// returns the entry's id, for FinishAudit. Texts longer than the table's
// bounds are cut; params must be a JSON object of at most
// hub.MaxAuditJSON bytes: the column keeps those exact bytes (json, not
// jsonb), and its CHECK measures them as hub/ops did.
func (s *Store) BeginAudit(ctx context.Context, e hub.AuditEntry) (int64, error) {
	params := e.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	var id int64
	err := s.pool.QueryRow(ctx, `
INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, target, params)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json) RETURNING id`,
		e.At, clipText(e.Actor.Kind, 16), clipText(e.Actor.Name, hub.MaxAuditActorName), clipText(e.Actor.Role, 32),
		clipText(e.Actor.Via, 16), clipText(e.Action, 64), clipText(e.Target, hub.MaxAuditTarget), string(params)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record audit entry: %w", err)
	}
	return id, nil
}

// FinishAudit records how the action of entry id ended: its outcome (not
// running), result (a JSON object, or nil), error and duration. A
// finished entry cannot be finished again (the trigger refuses it).
func (s *Store) FinishAudit(ctx context.Context, id int64, outcome string, result json.RawMessage, errText string, took time.Duration) error {
	var res any
	if len(result) > 0 {
		res = string(result)
	}
	tag, err := s.pool.Exec(ctx, `
UPDATE audit_log SET outcome = $2, result = $3::json, error = NULLIF($4, ''), duration_ms = $5, finished_at = now()
WHERE id = $1`, id, outcome, res, clipText(errText, hub.MaxAuditError), took.Milliseconds())
	if err != nil {
		return fmt.Errorf("finish audit entry %d: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("finish audit entry %d: no such entry", id)
	}
	return nil
}

// RefuseAudit records an action refused before it started (by
// validation, a limit, an authorization check): e, finished at once with
// outcome refused and errText as its reason.
func (s *Store) RefuseAudit(ctx context.Context, e hub.AuditEntry, errText string) (int64, error) {
	params := e.Params
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	var id int64
	err := s.pool.QueryRow(ctx, `
INSERT INTO audit_log (at, actor_kind, actor_name, actor_role, via, action, target, params, outcome, error, duration_ms, finished_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::json, 'refused', NULLIF($9, ''), 0, now()) RETURNING id`,
		e.At, clipText(e.Actor.Kind, 16), clipText(e.Actor.Name, hub.MaxAuditActorName), clipText(e.Actor.Role, 32),
		clipText(e.Actor.Via, 16), clipText(e.Action, 64), clipText(e.Target, hub.MaxAuditTarget), string(params),
		clipText(errText, hub.MaxAuditError)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record refused action: %w", err)
	}
	return id, nil
}

// HeartbeatAudit renews the heartbeat of running entry id: its process
// still runs the action (hub.AuditHeartbeat).
func (s *Store) HeartbeatAudit(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE audit_log SET heartbeat_at = now() WHERE id = $1 AND outcome = 'running'`, id); err != nil {
		return fmt.Errorf("renew audit entry %d: %w", id, err)
	}
	return nil
}

// InterruptStaleAudit marks interrupted the running entries whose
// heartbeat is older than hub.AuditStale: their process died (or lost the
// database for that long) before it could finish them. A live process's
// entry, renewed every hub.AuditHeartbeat, is never taken (the trigger
// refuses it too). It returns how many it marked.
func (s *Store) InterruptStaleAudit(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
UPDATE audit_log SET outcome = 'interrupted', finished_at = now(),
       duration_ms = GREATEST(0, (extract(epoch FROM heartbeat_at - at) * 1000)::bigint),
       error = 'interrupted: the process running it stopped (it last reported at ' || to_char(heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ')'
WHERE outcome = 'running' AND heartbeat_at < now() - make_interval(secs => $1)`, hub.AuditStale.Seconds())
	if err != nil {
		return 0, fmt.Errorf("mark interrupted audit entries: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ListAudit returns the entries q selects, newest first (by id: entries
// are numbered as their actions start), at most q.Limit.
func (s *Store) ListAudit(ctx context.Context, q hub.AuditQuery) ([]hub.AuditEntry, error) {
	if q.Limit < 1 {
		return nil, errors.New("list audit entries: limit must be at least 1")
	}
	var where []string
	var args queryArgs
	if !q.Since.IsZero() {
		where = append(where, "at >= "+args.add(q.Since))
	}
	if !q.Until.IsZero() {
		where = append(where, "at < "+args.add(q.Until))
	}
	if q.Actor != "" {
		where = append(where, "actor_name = "+args.add(q.Actor))
	}
	if q.Action != "" {
		where = append(where, "action = "+args.add(q.Action))
	}
	if q.Before > 0 {
		where = append(where, "id < "+args.add(q.Before))
	}
	sql := `SELECT id, at, actor_kind, actor_name, actor_role, via, action, target, params, result, outcome,
       COALESCE(error, ''), COALESCE(duration_ms, 0), finished_at FROM audit_log`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY id DESC LIMIT " + args.add(q.Limit)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	out := make([]hub.AuditEntry, 0, q.Limit)
	var e hub.AuditEntry
	var params, result []byte
	var finished *time.Time
	_, err = pgx.ForEachRow(rows, []any{&e.ID, &e.At, &e.Actor.Kind, &e.Actor.Name, &e.Actor.Role, &e.Actor.Via, &e.Action,
		&e.Target, &params, &result, &e.Outcome, &e.Error, &e.DurationMS, &finished}, func() error {
		x := e
		x.Params = append(json.RawMessage(nil), params...)
		if result != nil {
			x.Result = append(json.RawMessage(nil), result...)
		}
		if finished != nil {
			x.FinishedAt = *finished
		}
		out = append(out, x)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list audit entries: %w", err)
	}
	return out, nil
}

// clipText cuts s to at most n bytes on a rune boundary, without NUL
// (which Postgres text cannot hold).
func clipText(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
