package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/internal/pgurl"
	"github.com/hookhub/hookhub/migrations"
)

// server is the Postgres server the bench creates its databases on. It
// holds one connection to the server's postgres database, for what is not
// a hub table: creating, copying and dropping databases, and the WAL
// position.
type server struct {
	adminURL string
	conn     *pgx.Conn
	version  int // server_version_num
	prefix   string
	seq      atomic.Int64
}

func connectServer(ctx context.Context, adminURL string) (*server, error) {
	postgresURL, err := pgurl.WithDatabase(adminURL, "postgres")
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, postgresURL)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	s := &server{adminURL: adminURL, conn: conn, prefix: fmt.Sprintf("hub_bench_%d_%04x", time.Now().Unix(), rand.Uint32N(1<<16))}
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&s.version); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("server version: %w", err)
	}
	return s, nil
}

func (s *server) close() { _ = s.conn.Close(context.Background()) }

// name returns a database name no other database of this invocation has.
func (s *server) name(kind string) string {
	return fmt.Sprintf("%s_%d_%s", s.prefix, s.seq.Add(1), kind)
}

// database is one bench database.
type database struct {
	name string
	url  string
	// copySeconds is how long creating it from its template took; 0 for
	// a database created empty and migrated.
	copySeconds float64
}

// create creates a database: a copy of template, or else an empty one,
// migrated.
func (s *server) create(ctx context.Context, kind, template string) (database, error) {
	db := database{name: s.name(kind)}
	var err error
	if db.url, err = pgurl.WithDatabase(s.adminURL, db.name); err != nil {
		return db, err
	}
	stmt := "CREATE DATABASE " + pgx.Identifier{db.name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
		if s.version >= 150000 {
			// Copy the files. The default since Postgres 15, WAL_LOG,
			// writes every block of the template to the WAL: minutes for
			// an archive of millions of rows instead of seconds, and WAL
			// that the first run would be measured against.
			stmt += " STRATEGY FILE_COPY"
		}
	}
	start := time.Now()
	if _, err := s.conn.Exec(ctx, stmt); err != nil {
		return db, fmt.Errorf("create database: %w", err)
	}
	if template != "" {
		db.copySeconds = time.Since(start).Seconds()
		s.settle(ctx)
		return db, nil
	}
	if err := migrate(ctx, db.url); err != nil {
		s.drop(db.name)
		return db, err
	}
	return db, nil
}

func migrate(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// drop drops a database, whoever is still connected to it. It runs on a
// connection of its own when the bench's is gone (a query interrupted by
// Ctrl-C closes it), so an interrupted bench leaves no database behind.
func (s *server) drop(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	s.settle(ctx)
}

// settle lets the disk catch up after a database of gigabytes was copied
// or dropped, before anything is measured: Postgres writes its dirty
// buffers (CHECKPOINT; refused without superuser rights, then skipped) and
// the kernel its dirty pages (sync). Otherwise the write-back of a copied
// archive lands in the next measured run: seconds-long stalls, p99s of
// hundreds of milliseconds, in whichever run comes next.
func (s *server) settle(ctx context.Context) {
	s.admin(ctx, "CHECKPOINT")
	syscall.Sync()
}

// thaw lets sessions into a template again (kept with --keep, for a look).
func (s *server) thaw(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.admin(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH ALLOW_CONNECTIONS true")
}

// admin runs a clean-up statement, on a new connection when the bench's
// is closed.
func (s *server) admin(ctx context.Context, stmt string) {
	conn := s.conn
	if conn.IsClosed() {
		c, err := pgx.Connect(ctx, conn.Config().ConnString())
		if err != nil {
			return
		}
		defer c.Close(ctx)
		conn = c
	}
	_, _ = conn.Exec(ctx, stmt)
}

// freeze makes name a template no one connects to any more, so copies of
// it can be made (a copy needs its template without sessions, autovacuum
// included).
func (s *server) freeze(ctx context.Context, name string) error {
	if _, err := s.conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("template: %w", err)
	}
	return nil
}

// sizeMB is a database's size on disk.
func (s *server) sizeMB(ctx context.Context, name string) (float64, error) {
	var b int64
	if err := s.conn.QueryRow(ctx, `SELECT pg_database_size($1)`, name).Scan(&b); err != nil {
		return 0, fmt.Errorf("database size: %w", err)
	}
	return float64(b) / (1 << 20), nil
}

// walPosition is the server's current WAL insert position, in bytes. It
// counts the WAL of every database on the server: what else runs there
// while the bench measures shows in its WAL figures.
func (s *server) walPosition(ctx context.Context) (int64, error) {
	var n int64
	if err := s.conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n); err != nil {
		return 0, fmt.Errorf("WAL position: %w", err)
	}
	return n, nil
}
