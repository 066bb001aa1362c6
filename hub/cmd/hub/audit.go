package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/hookhub/hookhub/hub"
	"github.com/hookhub/hookhub/hub/ops"
)

// maxCLIActorPart bounds the user and the host of the command line's
// actor (user@host), each.
const maxCLIActorPart = 64

// cliActor is who runs this command, as the audit trail records its
// actions: the OS user (from the system's user database, not from the
// environment, which any caller sets) and the host, "alice@ops-1".
// Role is admin: whoever can run `hub` with HUB_DATABASE_URL holds the
// hub's database.
func cliActor() hub.Actor {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	name = cmp.Or(name, "uid "+strconv.Itoa(os.Getuid()))
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return hub.Actor{Kind: hub.ActorCLI, Name: actorPart(name) + "@" + actorPart(host), Role: "admin", Via: "cli"}
}

// actorPart is s on one line of printable text, at most maxCLIActorPart
// bytes.
func actorPart(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	for len(s) > maxCLIActorPart {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "")
}

const auditUsage = `Usage: hub audit list [--since T] [--until T] [--actor NAME] [--action A] [--limit N] [--before CURSOR] [--json]

The audit trail: every operator action (replay, republish, redrive, purge, bulk actions,
destination pause, resume and retry-now) from the console, the admin API and the command line, with
who, when, the parameters and the result. Newest first. Dry runs are not recorded.
`

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runAction(ctx, args, "audit", auditUsage, []command{{name: "list", run: runAuditList}}, stdout, stderr)
}

func runAuditList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlags("audit list", auditUsage+"\nTimes are durations before now (90m, 36h, 7d) or times (2026-11-30, RFC 3339).\n", stdout)
	fs.String("since", "", "started at or after")
	fs.String("until", "", "started before")
	fs.String("actor", "", `only this actor, exactly as listed ("alice@example.com", "token 1a2b3c4d", "alice@ops-1")`)
	fs.String("action", "", "only this action: replay, republish, redrive, purge, destination.pause, destination.resume, destination.retry_now, bulk.replay, bulk.republish")
	fs.Int("limit", ops.DefaultAuditLimit, fmt.Sprintf("at most this many entries (1..%d)", ops.MaxAuditLimit))
	fs.String("before", "", "the next page: entries after the one of this cursor (printed at the end of a full page)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if err := parseNoArgs(fs, args, "audit list takes no arguments; filters are flags"); err != nil {
		return err
	}
	f, err := ops.DecodeAudit(flagValues(fs), time.Now())
	if err != nil {
		return flagErr(err)
	}
	entries, err := opsCall(ctx, natsOptional, io.Discard, func(o *ops.Ops) ([]hub.AuditEntry, error) { return o.ListAudit(ctx, f) })
	if err != nil {
		return err
	}
	err = printRows(stdout, *asJSON, entries, "no audit entries match", "AT\tACTOR\tROLE\tVIA\tACTION\tTARGET\tOUTCOME\tTOOK\tPARAMS\tRESULT\tERROR", func(tw io.Writer, e hub.AuditEntry) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339), oneLine(e.Actor.Name, 40),
			e.Actor.Role, e.Actor.Via, e.Action, oneLine(e.Target, 40), e.Outcome, (time.Duration(e.DurationMS) * time.Millisecond).String(),
			oneLine(string(e.Params), 80), oneLine(string(e.Result), 80), oneLine(e.Error, 60))
	})
	if err != nil || *asJSON || len(entries) == 0 {
		return err
	}
	if len(entries) == f.Limit {
		fmt.Fprintf(stdout, "\nmore may follow: add --before %s\n", ops.AuditCursor(entries[len(entries)-1]))
	}
	return nil
}
