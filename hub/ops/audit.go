package ops

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/internal/startstop"
)

// AuditLog is where Ops records the actions it runs: hub/store's *Store.
// Ops is its only writer; the console and the admin API get ListAudit
// (through Ops), never a write.
type AuditLog interface {
	BeginAudit(ctx context.Context, e hub.AuditEntry) (int64, error)
	FinishAudit(ctx context.Context, id int64, outcome string, result json.RawMessage, errText string, took time.Duration) error
	RefuseAudit(ctx context.Context, e hub.AuditEntry, errText string) (int64, error)
	HeartbeatAudit(ctx context.Context, id int64) error
	InterruptStaleAudit(ctx context.Context) (int64, error)
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
	// ActionDestinationRetryNow ends the wait of a destination's parked
	// events (`hub destinations retry-now`).
	ActionDestinationRetryNow = "destination.retry_now"
	// The bulk actions (bulk*.go) record themselves under these names.
	ActionBulkReplay    = "bulk.replay"
	ActionBulkRepublish = "bulk.republish"
	// ActionBackfill: a `hub backfill` run; ActionBackfillRelease: its
	// lease taken back (`--release-lease`, with force or not).
	ActionBackfill        = "backfill"
	ActionBackfillRelease = "backfill.release-lease"
	// ActionBulk: a bulk request refused before its action was known;
	// ActionAdminRequest: another admin API request refused before its
	// action ran.
	ActionBulk         = "bulk"
	ActionAdminRequest = "admin.request"
	// ActionMigrateUp and ActionMigrateDown: `hub migrate up|down`, once
	// the database has an audit trail.
	ActionMigrateUp   = "migrate.up"
	ActionMigrateDown = "migrate.down"
)

// Actions lists every audited action, for the audit page's filter.
var Actions = []string{ActionReplay, ActionRepublish, ActionRedrive, ActionPurge, ActionDestinationPause,
	ActionDestinationResume, ActionBulkReplay, ActionBulkRepublish, ActionBackfill, ActionBackfillRelease,
	ActionBulk, ActionAdminRequest, ActionMigrateUp, ActionMigrateDown, ActionDestinationRetryNow, ActionSessionRevoke}

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

// actorOf is the actor ctx carries, or unknownActor.
func actorOf(ctx context.Context) hub.Actor {
	if a, ok := hub.ActorFrom(ctx); ok {
		return a
	}
	return unknownActor
}

// Refused reports whether err refuses an action rather than failing it:
// bad input, a limit, a conflict, no permission. A refused action changed
// nothing; its entry's outcome is hub.AuditRefused.
func Refused(err error) bool {
	switch hub.ErrorCode(err) {
	case hub.EINVALID, hub.EBUSY, hub.ECONFLICT, hub.EUNAUTHORIZED:
		return true
	}
	return false
}

// RunAudited is audited for the actions Ops does not run itself (a
// backfill run and its lease, `hub backfill`; a migration, `hub
// migrate`): the one writer of the audit trail records them the same way.
func (o *Ops) RunAudited(ctx context.Context, action, target string, params any, run func() (result any, err error)) error {
	return o.audited(ctx, action, target, params, run)
}

// audited records action, on target with params, in the audit trail, runs
// run, and records how it ended (its result, or its error). Every mutating
// operation of Ops runs through it; dry runs do not (they change nothing).
//
// The entry is written before run, with the actor of ctx (hub.ActorFrom;
// "unknown" when there is none): if it cannot be written, run is not
// called and the error wraps ErrAuditUnavailable. While run runs, the
// entry's heartbeat is renewed (hub.AuditHeartbeat); an entry whose
// process died is marked interrupted by the next process's first action
// (sweepInterrupted) or the hub's start. If the entry cannot be finished
// after run (the database went away meanwhile), the failure is logged and
// the entry stays "running" until it is marked interrupted; run's error is
// returned either way. An error that refuses the action (Refused) finishes
// it as refused.
//
// params and the result are marshalled to JSON objects of at most
// hub.MaxAuditJSON bytes (auditJSON: counts are kept, long lists are
// trimmed). They must hold nothing secret: an operation's filters and
// counts.
func (o *Ops) audited(ctx context.Context, action, target string, params any, run func() (result any, err error)) error {
	if o.audit == nil {
		_, err := run()
		return err
	}
	o.sweepInterrupted(ctx)
	actor := actorOf(ctx)
	id, err := o.audit.BeginAudit(ctx, hub.AuditEntry{At: o.now(), Actor: actor, Action: action,
		Target: clip(target, hub.MaxAuditTarget), Params: auditJSON(params)})
	if err != nil {
		o.log.Error("audit: cannot record an action; it was not run", "action", action, "target", target, "actor", actor.Name, "err", err)
		return fmt.Errorf("%w: %w", ErrAuditUnavailable, err)
	}
	hub.MarkAudited(ctx)
	start := time.Now()
	result, runErr := o.runAlive(ctx, id, run)
	outcome, errText := hub.AuditOK, ""
	switch {
	case runErr == nil:
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded) || ctx.Err() != nil:
		// A cancel that lands in a query or a publish ends the run with
		// that call's error, which need not wrap ctx's: the run was
		// cancelled all the same (as its job page says).
		outcome, errText = hub.AuditCancelled, runErr.Error()
		// Who or what cancelled it (hub.CancelledBy, a stopping hub).
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			errText = cause.Error() + ": " + errText
		}
	case Refused(runErr):
		outcome, errText = hub.AuditRefused, runErr.Error()
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

// Refuse records that action, on target with params, was refused before
// it ran, with the reason (an error for which Refused is true, or an
// authorization refusal of the console): an entry with outcome refused.
// It is the trail's record of refusals the caller decides itself (a
// read-only operator's action); Ops's own refusals are recorded by the
// actions. A failure to record is logged and returned.
func (o *Ops) Refuse(ctx context.Context, action, target string, params any, reason error) error {
	if o.audit == nil {
		return nil
	}
	actor := actorOf(ctx)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditFinishTimeout)
	defer cancel()
	_, err := o.audit.RefuseAudit(fctx, hub.AuditEntry{At: o.now(), Actor: actor, Action: action,
		Target: clip(target, hub.MaxAuditTarget), Params: auditJSON(params)}, reason.Error())
	if err != nil {
		o.log.Error("audit: cannot record a refused action", "action", action, "target", target, "actor", actor.Name, "reason", reason, "err", err)
		return fmt.Errorf("%w: %w", ErrAuditUnavailable, err)
	}
	hub.MarkAudited(ctx)
	return nil
}

// runAlive runs run while renewing entry id's heartbeat.
func (o *Ops) runAlive(ctx context.Context, id int64, run func() (any, error)) (any, error) {
	stop := o.heartbeat(ctx, id)
	defer stop()
	return run()
}

// heartbeat renews entry id's heartbeat every hub.AuditHeartbeat until
// the returned stop is called (it waits for the renewing goroutine).
func (o *Ops) heartbeat(ctx context.Context, id int64) (stop func()) {
	return startstop.Every(hub.AuditHeartbeat, func() {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditFinishTimeout)
		defer cancel()
		if err := o.audit.HeartbeatAudit(hctx, id); err != nil {
			o.log.Warn("audit: cannot renew a running entry's heartbeat", "audit_id", id, "err", err)
		}
	})
}

// InterruptStaleAudit marks interrupted the running entries of processes
// that died (their heartbeat is older than hub.AuditStale); the hub calls
// it as it starts, and every process calls it before its first action.
func (o *Ops) InterruptStaleAudit(ctx context.Context) (int64, error) {
	if o.audit == nil {
		return 0, nil
	}
	n, err := o.audit.InterruptStaleAudit(ctx)
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	if n > 0 {
		o.log.Warn("audit: marked the running entries of stopped processes interrupted", "entries", n)
	}
	return n, nil
}

// sweepInterrupted runs InterruptStaleAudit once per process (Ops), before
// its first action; a failure is logged and tried again next time.
func (o *Ops) sweepInterrupted(ctx context.Context) {
	if o.swept.Load() {
		return
	}
	if _, err := o.InterruptStaleAudit(ctx); err != nil {
		o.log.Warn("audit: cannot mark interrupted entries", "err", err)
		return
	}
	o.swept.Store(true)
}

// auditJSON marshals v (a struct or map of an operation's inputs or
// counts) for the audit trail: a JSON object of at most hub.MaxAuditJSON
// bytes (the bytes stored, which the table's CHECK measures), without the
// NUL escape. Past the bound its lists (a sample of events) are trimmed,
// last elements first, and "trimmed" says by how much; its top-level
// counts are always kept (fitAudit).
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
	if bytes.Contains(b, []byte(`\u0000`)) {
		b = bytes.ReplaceAll(b, []byte(`\u0000`), []byte(`\ufffd`))
	}
	if len(b) > hub.MaxAuditJSON {
		b = fitAudit(b)
	}
	return b
}

// fitAudit fits b, a JSON object over hub.MaxAuditJSON bytes, within it:
// its arrays are trimmed (the longest first, its last elements) and
// "trimmed" records each array's original length; if that is not enough,
// its nested objects and long texts go (named in "dropped"); its numbers,
// booleans and short texts (the counts) stay.
func fitAudit(b []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return tooLarge(len(b))
	}
	arrays := map[string][]json.RawMessage{}
	for k, v := range m {
		var a []json.RawMessage
		if len(v) > 0 && v[0] == '[' && json.Unmarshal(v, &a) == nil {
			arrays[k] = a
		}
	}
	orig := map[string]int{}
	for k, a := range arrays {
		orig[k] = len(a)
	}
	// First by arithmetic (dropping an element saves its bytes and a
	// comma; each trimmed list's note costs at most trimNote), then
	// measured: one or two encodings, whatever the size.
	const trimNote = 64
	for size := len(b); size > hub.MaxAuditJSON-trimNote*len(arrays); {
		k := longestArray(arrays)
		if k == "" {
			break
		}
		a := arrays[k]
		size -= len(a[len(a)-1]) + 1
		arrays[k] = a[:len(a)-1]
	}
	for {
		out := encodeFitted(m, arrays, orig)
		if len(out) <= hub.MaxAuditJSON {
			return out
		}
		k := longestArray(arrays)
		if k == "" {
			break
		}
		// Drop enough of its last elements to cover the excess, at least one.
		excess, a := len(out)-hub.MaxAuditJSON, arrays[k]
		for excess > 0 && len(a) > 0 {
			excess -= len(a[len(a)-1]) + 1
			a = a[:len(a)-1]
		}
		arrays[k] = a
	}
	var dropped []string
	for k, v := range m {
		if _, isArray := arrays[k]; isArray || (len(v) > 0 && (v[0] == '{' || (v[0] == '"' && len(v) > maxAuditParam))) {
			dropped = append(dropped, k)
			delete(m, k)
		}
	}
	slices.Sort(dropped)
	m["dropped"], _ = json.Marshal(dropped)
	if out, _ := json.Marshal(m); len(out) <= hub.MaxAuditJSON {
		return out
	}
	return tooLarge(len(b))
}

// encodeFitted is m with its arrays as trimmed, and "trimmed" naming the
// original length of each array that lost elements.
func encodeFitted(m map[string]json.RawMessage, arrays map[string][]json.RawMessage, orig map[string]int) []byte {
	out := make(map[string]json.RawMessage, len(m)+1)
	maps.Copy(out, m)
	cut := map[string]map[string]int{}
	for k, a := range arrays {
		out[k], _ = json.Marshal(a)
		if len(a) < orig[k] {
			cut[k] = map[string]int{"kept": len(a), "of": orig[k]}
		}
	}
	if len(cut) > 0 {
		out["trimmed"], _ = json.Marshal(cut)
	}
	b, _ := json.Marshal(out)
	return b
}

// longestArray is the key of the array with the most bytes left, "" when
// every array is empty.
func longestArray(arrays map[string][]json.RawMessage) string {
	best, most := "", 0
	for k, a := range arrays {
		n := 0
		for _, e := range a {
			n += len(e) + 1
		}
		if n > most || (n == most && n > 0 && k < best) {
			best, most = k, n
		}
	}
	return best
}

// tooLarge is the note of an object that could not be fitted at all.
func tooLarge(n int) []byte {
	b, _ := json.Marshal(map[string]any{"unrecorded": "larger than the audit trail keeps", "bytes": n})
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
