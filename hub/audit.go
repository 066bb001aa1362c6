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
)

// Bounds of an audit entry's texts, as the audit_log table holds them
// (longer texts are cut, never refused: an action is not refused for the
// length of its actor's name).
const (
	MaxAuditActorName = 256
	MaxAuditTarget    = 512
	MaxAuditError     = 1024
	// MaxAuditJSON bounds an entry's params and result, each, in bytes.
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
