package main

import (
	"context"
	"errors"
	"flag"
	"slices"
	"time"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
)

// The command line's refusals in the audit trail: a command that changes
// state and refuses its input (a flag out of bounds, a time that does not
// parse, a contradiction) before its action recorded anything is recorded
// as refused, with the arguments, as the user running it. The actions
// themselves record their own refusals (hub/ops); this covers what the
// command refuses first.

// auditedAction is the audit action of the state-changing command args
// name, "" for a command that only reads. (A refused dry run of such a
// command is recorded too: the command cannot tell before it parsed.)
func auditedAction(args []string) string {
	sub := ""
	if len(args) > 1 {
		sub = args[1]
	}
	switch args[0] {
	case "replay":
		return ops.ActionReplay
	case "republish", "reconcile":
		return ops.ActionRepublish
	case "purge":
		return ops.ActionPurge
	case "bulk":
		return ops.ActionBulk
	case "backfill":
		if slices.Contains(args, "--release-lease") {
			return ops.ActionBackfillRelease
		}
		return ops.ActionBackfill
	case "dlq":
		if sub == "redrive" {
			return ops.ActionRedrive
		}
	case "destinations":
		switch sub {
		case "pause":
			return ops.ActionDestinationPause
		case "resume":
			return ops.ActionDestinationResume
		case "retry-now":
			return ops.ActionDestinationRetryNow
		}
	case "sessions":
		if sub == "revoke" {
			return ops.ActionSessionRevoke
		}
	}
	return ""
}

// refusalTimeout bounds recording a refusal: the command has failed
// already; a database that does not answer must not hold it up.
const refusalTimeout = 5 * time.Second

// recordRefusal records that the command args refused its input with
// err, when it changes state and err is a refusal its action did not
// record. Without a usable HUB_DATABASE_URL there is nowhere to record
// it: the command's error says what is wrong either way.
func recordRefusal(ctx context.Context, args []string, err error) {
	action := auditedAction(args)
	if action == "" || errors.Is(err, flag.ErrHelp) || !(errors.Is(err, errUsage) || ops.Refused(err)) {
		return
	}
	cfg, cerr := loadConfig()
	if cerr != nil || cfg.DatabaseURL == "" {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refusalTimeout)
	defer cancel()
	pool, perr := openDatabase(rctx, cfg.DatabaseURL)
	if perr != nil {
		return
	}
	defer pool.Close()
	// The arguments are filters and bounds, never a secret (those are
	// variables); a long list is trimmed to the trail's bound.
	_ = ops.New(ops.Config{Archive: store.New(pool)}).Refuse(rctx, action, "hub "+args[0], map[string]any{"args": args}, err)
}
