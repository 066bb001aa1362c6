package ops

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookhub/hookhub/hub"
)

// AuditLog is where Ops records the actions it runs: hub/store's *Store.
// Ops is its only writer; the console and the admin API get ListAudit
// (through Ops), never a write.
type AuditLog interface {
	BeginAudit(ctx context.Context, e hub.AuditEntry) (int64, error)
	FinishAudit(ctx context.Context, id int64, outcome string, result json.RawMessage, errText string, took time.Duration) error
	ListAudit(ctx context.Context, q hub.AuditQuery) ([]hub.AuditEntry, error)
}

// Audited actions, as the audit trail names them.
const (
	ActionReplay            = "replay"
	ActionRepublish         = "republish"
	ActionRedrive           = "redrive"
	ActionPurge             = "purge"
	ActionDestinationPause  = "destination.pause"
	ActionDestinationResume = "destination.resume"
	// The bulk actions (bulk*.go) record themselves under these names.
	ActionBulkReplay    = "bulk.replay"
	ActionBulkRepublish = "bulk.republish"
)

// ErrAuditUnavailable: the audit trail could not record an action as it
// started, so the action was not run (an action never runs unrecorded).
var ErrAuditUnavailable error = &hub.Error{Code: hub.EUNAVAILABLE, Message: "the audit trail cannot record the action, so it was not run"}

// unknownActor records an action whose caller put no actor in its
// context: Go code calling Ops directly. The command line, the admin API
// and the console always set one.
var unknownActor = hub.Actor{Kind: "unknown", Name: "unknown", Role: "unknown", Via: "unknown"}

// auditFinishTimeout bounds the write that finishes an entry; it runs
// even when the action's context was cancelled.
const auditFinishTimeout = 10 * time.Second

// maxAuditParam bounds each text parameter recorded: the operation checks
// its inputs after the entry is written, so the entry may hold what it
// refuses.
const maxAuditParam = 256

// audited records action, on target with params, in the audit trail, runs
// run, and records how it ended (its result, or its error). Every mutating
// operation of Ops runs through it; dry runs do not (they change nothing).
//
// The entry is written before run, with the actor of ctx (hub.ActorFrom;
// "unknown" when there is none): if it cannot be written, run is not
// called and the error wraps ErrAuditUnavailable. If the entry cannot be
// finished after run (the database went away meanwhile), the failure is
// logged and the entry stays "running": the trail still says the action
// was started, by whom, with what; run's error is returned either way.
//
// params and the result are marshalled to JSON objects (at most
// hub.MaxAuditJSON bytes; larger ones are replaced by a note of their
// size). They must hold nothing secret: an operation's filters and counts.
func (o *Ops) audited(ctx context.Context, action, target string, params any, run func() (result any, err error)) error {
	if o.audit == nil {
		_, err := run()
		return err
	}
	actor, ok := hub.ActorFrom(ctx)
	if !ok {
		actor = unknownActor
	}
	id, err := o.audit.BeginAudit(ctx, hub.AuditEntry{At: o.now(), Actor: actor, Action: action,
		Target: clip(target, hub.MaxAuditTarget), Params: auditJSON(params)})
	if err != nil {
		o.log.Error("audit: cannot record an action; it was not run", "action", action, "target", target, "actor", actor.Name, "err", err)
		return fmt.Errorf("%w: %w", ErrAuditUnavailable, err)
	}
	start := time.Now()
	result, runErr := run()
	outcome, errText := hub.AuditOK, ""
	switch {
	case runErr == nil:
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded):
		outcome, errText = hub.AuditCancelled, runErr.Error()
	default:
		outcome, errText = hub.AuditError, runErr.Error()
	}
	var res json.RawMessage
	// A refused input did nothing: no result to record. Otherwise the
	// counts so far are, error or not (how far a failed replay got).
	if result != nil && !errors.Is(runErr, ErrInvalid) {
		res = auditJSON(result)
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditFinishTimeout)
	defer cancel()
	if err := o.audit.FinishAudit(fctx, id, outcome, res, errText, time.Since(start)); err != nil {
		o.log.Error("audit: cannot record how an action ended; its entry stays running", "audit_id", id,
			"action", action, "target", target, "actor", actor.Name, "outcome", outcome, "err", err)
	}
	return runErr
}

// auditJSON marshals v (a struct or map of an operation's inputs or
// counts) for the audit trail: a JSON object of at most hub.MaxAuditJSON
// bytes, without NUL (which Postgres JSONB refuses).
func auditJSON(v any) json.RawMessage {
	if m, ok := v.(map[string]any); ok {
		for k, x := range m { // an empty text is an input not given
			if x == "" {
				delete(m, k)
			}
		}
	}
	b, err := json.Marshal(v)
	switch {
	case err != nil:
		b, _ = json.Marshal(map[string]string{"unrecorded": clip(err.Error(), maxAuditParam)})
	case len(b) == 0 || b[0] != '{':
		b, _ = json.Marshal(map[string]json.RawMessage{"value": b})
	}
	if strings.Contains(string(b), `\u0000`) {
		b = []byte(strings.ReplaceAll(string(b), `\u0000`, `\ufffd`))
	}
	if len(b) > hub.MaxAuditJSON {
		b, _ = json.Marshal(map[string]any{"unrecorded": "larger than the audit trail keeps", "bytes": len(b)})
	}
	return b
}

// clip cuts s to at most n bytes of valid UTF-8, for the audit trail.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\ufffd")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// auditTime writes a time parameter: RFC 3339, or "" when zero.
func auditTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Audit listing bounds.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// AuditFilter selects audit entries, newest first.
type AuditFilter struct {
	Since, Until time.Time // zero: unbounded
	// Actor is an actor's name exactly as listed ("alice@example.com",
	// "token 1a2b3c4d", "alice@ops-1"); "" is any.
	Actor string
	// Action is one action ("replay", "purge", ...); "" is any.
	Action string
	// Before is the cursor of the last entry listed (AuditCursor): the
	// listing continues after it.
	Before string
	Limit  int // 1..MaxAuditLimit
}

// AuditCursor is the cursor that continues a listing after e.
func AuditCursor(e hub.AuditEntry) string { return strconv.FormatInt(e.ID, 10) }

// ListAudit lists the audit trail's entries f selects, newest first.
func (o *Ops) ListAudit(ctx context.Context, f AuditFilter) ([]hub.AuditEntry, error) {
	if o.audit == nil {
		return nil, fmt.Errorf("%w: this hub keeps no audit trail", ErrNotFound)
	}
	q := hub.AuditQuery{Since: f.Since, Until: f.Until, Actor: f.Actor, Action: f.Action, Limit: f.Limit}
	if f.Limit < 1 || f.Limit > MaxAuditLimit {
		return nil, inputErr("limit", "must be within 1..%d, got %d", MaxAuditLimit, f.Limit)
	}
	if !f.Until.IsZero() && !f.Since.IsZero() && !f.Until.After(f.Since) {
		return nil, inputErr("until", "must be after since")
	}
	if err := checkText("actor", f.Actor, hub.MaxAuditActorName); err != nil {
		return nil, err
	}
	if err := checkText("action", f.Action, 64); err != nil {
		return nil, err
	}
	if f.Before != "" {
		id, err := strconv.ParseInt(f.Before, 10, 64)
		if err != nil || id < 1 {
			return nil, inputErr("before", "%s is not a cursor (pass the cursor of the last entry listed)", quote(f.Before))
		}
		q.Before = id
	}
	entries, err := o.audit.ListAudit(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return entries, nil
}

// AuditExportPage is a page of an export of the audit trail: ListAudit,
// admitted as an expensive read (admission.go) at the cost of its
// f.Limit rows, or refused with ErrBusy. An export is admitted a page at
// a time: pass it to WriteAuditJSONL as list.
func (o *Ops) AuditExportPage(ctx context.Context, f AuditFilter) ([]hub.AuditEntry, error) {
	if f.Limit < 1 || f.Limit > MaxAuditLimit {
		return o.ListAudit(ctx, f) // refused as such, not as busy
	}
	permit, err := o.admitRead(AdmitAuditExport, Cost{Rows: int64(f.Limit)})
	if err != nil {
		return nil, err
	}
	defer permit.Release()
	entries, err := o.ListAudit(ctx, f)
	permit.Scanned(int64(len(entries)))
	return entries, err
}

// MaxAuditExport bounds the entries one JSON-lines export writes; past it
// the last line is {"truncated":true,"before":cursor} to continue from.
const MaxAuditExport = 100_000

// WriteAuditJSONL writes the audit entries f selects as JSON lines, newest
// first, at most MaxAuditExport: first (the page read with f, at
// f.Limit entries, before the answer started, so that a bad filter could
// still be refused), then each next page from list. A page that cannot
// be read ends the export with {"error":…,"before":cursor}, the cursor to
// continue from.
func WriteAuditJSONL(ctx context.Context, w *bufio.Writer, list func(context.Context, AuditFilter) ([]hub.AuditEntry, error),
	f AuditFilter, first []hub.AuditEntry) {
	enc := json.NewEncoder(w)
	entries, n := first, 0
	for {
		for _, e := range entries {
			if n == MaxAuditExport {
				_ = enc.Encode(map[string]any{"truncated": true, "before": f.Before})
				_ = w.Flush()
				return
			}
			if enc.Encode(e) != nil {
				return
			}
			f.Before = AuditCursor(e)
			n++
		}
		if w.Flush() != nil || len(entries) < f.Limit {
			return
		}
		var err error
		if entries, err = list(ctx, f); err != nil {
			_ = enc.Encode(map[string]any{"error": "the export stopped early: the audit trail could not be read; continue with before", "before": f.Before})
			_ = w.Flush()
			return
		}
	}
}
