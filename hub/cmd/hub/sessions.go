package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

const sessionsUsage = `Usage: hub sessions list [--name NAME] [--limit N] [--before CURSOR] [--json]
       hub sessions revoke (ID | --id ID | --name NAME | --all) [--json]

The web console's signed-in sessions, on every replica (they are kept in the hub's database).

  list    the live sessions, newest first: id, who signed in (an operator's e-mail, or
          "token 1a2b3c4d": the token's fingerprint), the role it had at its last request,
          when it signed in, was last seen and expires
  revoke  end one session (its ID), every session of one operator or token (--name), or
          all of them (--all): each is refused at its next request, on every replica.
          Recorded in the audit trail (action session.revoke) with who revoked.

A session also ends by itself at its next request when the credential it signed in with
no longer grants a role on the replica serving it: its token was rotated out of the
configuration, or the OIDC role rules no longer match its operator.
`

func runSessions(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runAction(ctx, args, "sessions", sessionsUsage, []command{{name: "list", run: runSessionsList}, {name: "revoke", run: runSessionsRevoke}}, stdout, stderr)
}

func runSessionsList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("sessions list", sessionsUsage, stdout)
	fs.String("name", "", `only the sessions of this name, exactly as listed ("alice@example.com", "token 1a2b3c4d")`)
	fs.Int("limit", ops.DefaultSessionLimit, fmt.Sprintf("at most this many sessions (1..%d)", ops.MaxSessionLimit))
	fs.String("before", "", "the next page: sessions after the one of this cursor (printed at the end of a full page)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseNoArgs(fs, args, "sessions list takes no arguments; filters are flags"); err != nil {
		return err
	}
	f, err := ops.DecodeSessions(flagValues(fs))
	if err != nil {
		return err
	}
	list, err := opsCall(ctx, natsOptional, io.Discard, func(o *ops.Ops) ([]hub.SessionInfo, error) { return o.ListSessions(ctx, f) })
	if err != nil {
		return err
	}
	err = printRows(stdout, *asJSON, list, "no console sessions", "ID\tKIND\tNAME\tROLE\tSIGNED IN\tLAST SEEN\tEXPIRES", func(tw io.Writer, s hub.SessionInfo) {
		id := s.ID
		if !s.Bound {
			id = "-" // an older hub's: ended at its next request; revoke it by name
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", id, s.Kind, oneLine(s.Name, 60), s.Role,
			s.CreatedAt.UTC().Format(time.RFC3339), s.LastSeen.UTC().Format(time.RFC3339), s.ExpiresAt.UTC().Format(time.RFC3339))
	})
	if err != nil || *asJSON || len(list) == 0 {
		return err
	}
	if len(list) == f.Limit {
		fmt.Fprintf(stdout, "\nmore may follow: add --before %s\n", ops.SessionCursor(list[len(list)-1]))
	}
	return nil
}

func runSessionsRevoke(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("sessions revoke", sessionsUsage, stdout)
	id := fs.String("id", "", "the session of this id, as listed (or give it as the argument)")
	name := fs.String("name", "", `every session of this name, exactly as listed ("alice@example.com", "token 1a2b3c4d")`)
	all := fs.Bool("all", false, "every session")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErr("sessions revoke takes at most one session ID")
	}
	sel := hub.SessionSelector{ID: *id, Name: *name, All: *all}
	if len(pos) == 1 {
		if sel.ID != "" {
			return usageErr("give the session ID once: as the argument or with --id")
		}
		sel.ID = pos[0]
	}
	res, err := opsCall(ctx, natsOptional, io.Discard, func(o *ops.Ops) (ops.RevokeResult, error) { return o.RevokeSessions(ctx, sel) })
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "revoked %d console session(s); each is refused at its next request, on every replica\n", res.Revoked)
	return nil
}
