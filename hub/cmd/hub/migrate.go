package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/hub/ops"
	"github.com/hookhub/hookhub/hub/store"
	"github.com/hookhub/hookhub/internal/migrate"
	"github.com/hookhub/hookhub/migrations"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate", `Usage: hub migrate [--json] up [--runtime-role ROLE] | down [--drop-audit] | status

  up      apply every pending migration (idempotent; safe from several replicas at once)
  down    roll back the most recent migration (drops data: the archive and the dedup rows;
          the audit trail is kept unless --drop-audit)
  status  list the migrations and whether each is applied

Uses HUB_DATABASE_URL, as the role that owns the hub's tables. With
--runtime-role, up then grants that role (the one the hub and the
subscribers connect as) what they need at run time: it can add audit
entries and finish running ones, never alter, rewrite or delete them
(docs/production.md, "Database roles").
`, stdout)
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	runtimeRole := fs.String("runtime-role", "", "up: grant this role the hub's run-time privileges (it must not be the owner)")
	dropAudit := fs.Bool("drop-audit", false, "down: rolling back the audit trail's migration drops the trail too")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr("migrate needs exactly one of up, down, status")
	}
	if *runtimeRole != "" && pos[0] != "up" {
		return usageErr("--runtime-role goes with up")
	}
	if *dropAudit && pos[0] != "down" {
		return usageErr("--drop-audit goes with down")
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	pool, err := openMigrationPool(ctx, cfg.DatabaseURL, *dropAudit)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := migrations.Hub(pool)
	if err != nil {
		return err
	}
	defer m.Close()
	switch pos[0] {
	case "up":
		return auditedMigration(ctx, pool, ops.ActionMigrateUp, map[string]any{"runtime_role": *runtimeRole}, func() (any, error) {
			return nil, applyMigrations(ctx, m, pool, *runtimeRole, *asJSON, stdout)
		})
	case "down":
		var r migrate.Result
		err := auditedMigration(ctx, pool, ops.ActionMigrateDown, map[string]any{"drop_audit": *dropAudit}, func() (any, error) {
			var err error
			r, err = m.Down(ctx)
			return r, err
		})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, r)
		}
		fmt.Fprintf(stdout, "rolled back %d %s (%s)\n", r.Version, r.Name, r.Duration)
	case "status":
		ss, err := m.Status(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			_ = printJSONLines(stdout, ss)
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED AT")
		for _, s := range ss {
			at := "pending"
			if s.Applied {
				at = s.At
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", s.Version, s.Name, at)
		}
		return tw.Flush()
	default:
		return usageErr(fmt.Sprintf("unknown migrate action %q: want up, down or status", pos[0]))
	}
	return nil
}

// openMigrationPool opens the owner's pool; with dropAudit its
// connections ask the down migration of the audit trail to drop it.
func openMigrationPool(ctx context.Context, url string, dropAudit bool) (*pgxpool.Pool, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("HUB_DATABASE_URL: %w", err)
	}
	if dropAudit {
		pcfg.ConnConfig.RuntimeParams[migrations.DropAuditParam] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("HUB_DATABASE_URL: %w", err)
	}
	return pool, nil
}

// applyMigrations applies the pending migrations, then grants runtimeRole (if
// any) the run-time privileges.
func applyMigrations(ctx context.Context, m *migrate.Migrator, pool *pgxpool.Pool, runtimeRole string, asJSON bool, stdout io.Writer) error {
	rs, err := m.Up(ctx)
	for _, r := range rs {
		if asJSON {
			_ = printJSON(stdout, r)
		} else {
			fmt.Fprintf(stdout, "applied %d %s (%s)\n", r.Version, r.Name, r.Duration)
		}
	}
	if err != nil {
		return err
	}
	if len(rs) == 0 && !asJSON {
		fmt.Fprintln(stdout, "no pending migrations: the database is current")
	}
	if runtimeRole == "" {
		return nil
	}
	if err := migrations.GrantRuntime(ctx, pool, runtimeRole); err != nil {
		return err
	}
	if !asJSON {
		fmt.Fprintf(stdout, "granted the run-time privileges to %s\n", runtimeRole)
	}
	return nil
}

// auditedMigration runs a migration command, recorded in the audit trail
// when the database has one (not before the migration that creates it;
// an entry whose table a --drop-audit rollback dropped stays unfinished,
// with the table).
func auditedMigration(ctx context.Context, pool *pgxpool.Pool, action string, params map[string]any, run func() (any, error)) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('audit_log') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		_, err := run()
		return err
	}
	return ops.New(ops.Config{Archive: store.New(pool)}).RunAudited(ctx, action, "hub schema", params, run)
}
