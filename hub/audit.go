package hub

import (
	"encoding/json"
	"time"
)

// Audit outcomes: an entry is Running from the moment its action starts
// (it is written before anything changes) until the action ends.
const (
	AuditRunning   = "running"
	AuditOK        = "ok"
	AuditError     = "error"
	AuditCancelled = "cancelled"
	// AuditRefused: the action was refused before it ran (validation, a
	// limit, an authorization check, or what it needs was unavailable)
	// and changed nothing; the error says why.
	AuditRefused = "refused"
	// AuditInterrupted: the process running the action stopped before it
	// could record how it ended (marked by the next process to start).
	AuditInterrupted = "interrupted"
)

// A running entry's process renews its heartbeat every AuditHeartbeat; an
// entry whose heartbeat is older than AuditStale is interrupted (the
// table's trigger has the same 2 minutes, migrations/00005_audit_trail.sql).
const (
	AuditHeartbeat = 20 * time.Second
	AuditStale     = 2 * time.Minute
)

// Bounds of an audit entry's texts, as the audit_log table holds them
// (longer texts are cut, never refused: an action is not refused for the
// length of its actor's name).
const (
	MaxAuditActorName = 256
	MaxAuditTarget    = 512
	MaxAuditError     = 1024
	// MaxAuditJSON bounds an entry's params and result, each, in bytes:
	// the bytes of the JSON text as hub/ops writes it and as the table
	// stores it (the same bytes; its CHECK measures them).
	MaxAuditJSON = 8192
)

// AuditEntry is one operator action in the audit trail: who, when, what,
// with which parameters, and how it ended. It never holds a secret: a
// token is named by its fingerprint, and Params are the action's filters.
type AuditEntry struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  Actor     `json:"actor"`
	Action string    `json:"action"`
	Target string    `json:"target,omitempty"`
	// Params and Result are JSON objects (Result absent while running).
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result,omitempty"`
	Outcome string          `json:"outcome"`
	Error   string          `json:"error,omitempty"`
	// DurationMS is how long the action took, in milliseconds (0 while
	// running).
	DurationMS int64     `json:"duration_ms"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// AuditQuery selects audit entries, newest first (hub/store's ListAudit).
type AuditQuery struct {
	Since, Until time.Time // zero: unbounded
	Actor        string    // exact actor name; "": any
	Action       string    // exact action; "": any
	Before       int64     // entries with a smaller id only; 0: from the newest
	Limit        int
}
