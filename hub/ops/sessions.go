package ops

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
)

// Sessions is where the console's sessions are kept: hub/store's *Store.
// Ops lists them and revokes them; the console opens, reads and ends its
// own through its SessionStore.
type Sessions interface {
	ListConsoleSessions(ctx context.Context, q hub.SessionQuery) ([]hub.SessionInfo, error)
	RevokeConsoleSessions(ctx context.Context, sel hub.SessionSelector) (int64, error)
}

// ActionSessionRevoke is how the audit trail names a revocation of console
// sessions.
const ActionSessionRevoke = "session.revoke"

// Session listing bounds.
const (
	DefaultSessionLimit = 100
	MaxSessionLimit     = 1000
	// maxSessionName bounds a name filter: the console keeps names of at
	// most 254 bytes.
	maxSessionName = 256
	maxSessionID   = 64
)

// SessionFilter selects console sessions, newest first.
type SessionFilter struct {
	// Name is who signed in, exactly as listed ("alice@example.com",
	// "token 1a2b3c4d"); "" is anyone.
	Name string
	// ID is one session's id, as listed; "" is any.
	ID string
	// Before is the cursor of the last session listed (SessionCursor):
	// the listing continues after it.
	Before string
	Limit  int // 1..MaxSessionLimit
}

// SessionCursor is the cursor that continues a listing after s.
func SessionCursor(s hub.SessionInfo) string {
	return strconv.FormatInt(s.CreatedAt.UnixMicro(), 10) + "." + s.ID
}

func (o *Ops) needSessions() error {
	if o.sessions == nil {
		return fmt.Errorf("%w: this hub keeps no console sessions", ErrNotFound)
	}
	return nil
}

// ListSessions lists the live console sessions f selects, newest first,
// with the role each had at its last request.
func (o *Ops) ListSessions(ctx context.Context, f SessionFilter) ([]hub.SessionInfo, error) {
	if err := o.needSessions(); err != nil {
		return nil, err
	}
	if f.Limit < 1 || f.Limit > MaxSessionLimit {
		return nil, inputErr("limit", "must be within 1..%d, got %d", MaxSessionLimit, f.Limit)
	}
	if err := checkText("name", f.Name, maxSessionName); err != nil {
		return nil, err
	}
	if err := checkText("id", f.ID, maxSessionID); err != nil {
		return nil, err
	}
	q := hub.SessionQuery{Now: o.now(), Name: f.Name, ID: f.ID, Limit: f.Limit}
	if f.Before != "" {
		us, id, ok := strings.Cut(f.Before, ".")
		n, err := strconv.ParseInt(us, 10, 64)
		if !ok || err != nil || n <= 0 || len(id) > maxSessionID {
			return nil, inputErr("before", "%s is not a cursor (pass the cursor of the last session listed)", quote(f.Before))
		}
		q.BeforeCreated, q.BeforeID = time.UnixMicro(n), id
	}
	list, err := o.sessions.ListConsoleSessions(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	return list, nil
}

// RevokeResult is what a revocation ended.
type RevokeResult struct {
	Revoked int64 `json:"revoked"`
}

// RevokeSessions ends the console sessions sel names (exactly one of an
// id, a name, all), on every replica at their next request. It is
// recorded in the audit trail, with its actor, whatever its outcome; a
// selector that names no live session is ErrNotFound.
func (o *Ops) RevokeSessions(ctx context.Context, sel hub.SessionSelector) (RevokeResult, error) {
	var res RevokeResult
	if err := o.needSessions(); err != nil {
		return res, err
	}
	target := "sessions"
	switch {
	case sel.ID != "":
		target = "session " + sel.ID
	case sel.Name != "":
		target = "sessions of " + sel.Name
	case sel.All:
		target = "all sessions"
	}
	err := o.audited(ctx, ActionSessionRevoke, target, sel, func() (any, error) {
		if err := checkSelector(sel); err != nil {
			return nil, err
		}
		n, err := o.sessions.RevokeConsoleSessions(ctx, sel)
		res.Revoked = n
		if err != nil {
			return res, err
		}
		if n == 0 {
			return res, fmt.Errorf("%w: no live console session matches (%s)", ErrNotFound, target)
		}
		return res, nil
	})
	return res, err
}

// checkSelector accepts exactly one of sel's fields, each within bounds.
func checkSelector(sel hub.SessionSelector) error {
	n := 0
	for _, set := range []bool{sel.ID != "", sel.Name != "", sel.All} {
		if set {
			n++
		}
	}
	if n != 1 {
		return inputErr("id", "name exactly one of: a session's id, a name (every session of one operator or token), or all")
	}
	if err := checkText("id", sel.ID, maxSessionID); err != nil {
		return err
	}
	return checkText("name", sel.Name, maxSessionName)
}
