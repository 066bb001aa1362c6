package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/internal/pgurl"
	"github.com/hookhub/hookhub/subscribers/destination"
)

// checkNamesTimeout bounds `destinations check`'s look at Postgres.
const checkNamesTimeout = 5 * time.Second

// checkNames checks the set's names against the database's schemas
// (destination.CheckName: a schema holding another subscriber's tables,
// the hub's, anything that is not a destination's). A database it cannot
// reach is a note on w, not an error: check validates a file offline too.
func checkNames(ctx context.Context, dbURL string, set []destination.Destination, w io.Writer) error {
	if len(set) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkNamesTimeout)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return fmt.Errorf("%s_DATABASE_URL: %s", prefix, pgurl.Redact(dbURL))
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		defer pool.Close()
		err = pool.Ping(ctx)
	}
	if err != nil {
		fmt.Fprintf(w, "note: Postgres (%s) not reachable, the names were not checked against its schemas\n", pgurl.Redact(dbURL))
		return nil
	}
	var errs []error
	for _, d := range set {
		if err := destination.CheckName(ctx, pool, d.Name); errors.Is(err, destination.ErrNotDestination) {
			errs = append(errs, &destination.FieldError{Destination: d.Name, Field: "name",
				Reason: fmt.Sprintf("%q is a schema of this database holding tables that are not a destination's (another subscriber's): a destination's name must be its own", d.Name)})
		} else if err != nil {
			fmt.Fprintf(w, "note: destination %q: the name could not be checked: %v\n", d.Name, err)
		}
	}
	return errors.Join(errs...)
}
