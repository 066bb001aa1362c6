package hubtest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookhub/hookhub/internal/pgurl"
)

// PoolMaxConns bounds the pools Pool and NewPool open: with the hubs and
// subscribers a test runs on its database, a test holds a handful of the
// server's connections, never more.
const PoolMaxConns = 4

// DefaultDatabases is how many test databases live at once on the
// server, across every test process, unless HUB_TEST_DATABASES says
// otherwise.
const DefaultDatabases = 6

// Bounds of the waits on the server.
const (
	// slotWait bounds how long a test waits for a slot; past it, it
	// goes on without one (a test that needs databases beyond its
	// first never waits for itself).
	slotWait = 2 * time.Minute
	// copyWait bounds how long a copy of a template is retried while
	// Postgres says the template is in use.
	copyWait = time.Minute
	// adminWait bounds each statement on the admin database; building a
	// template waits up to templateWait for another process building it.
	adminWait    = 30 * time.Second
	templateWait = 3 * time.Minute
)

// Classes of the session advisory locks the test processes share.
const (
	lockTemplate int32 = 0x68756201 // building a template
	lockSlot     int32 = 0x68756202 // the slots, one key each
)

// Schema is what a test database is migrated to.
type Schema struct {
	// Name names the schema in the template's name and in errors.
	Name string
	// Files are the migrations: a hash of their names and contents names
	// the template, so a changed migration makes a new template.
	Files fs.FS
	// Migrate applies the migrations on pool.
	Migrate func(ctx context.Context, pool *pgxpool.Pool) error
}

// AdminURL is the URL of the database tests create their databases from.
func AdminURL() string {
	if u := os.Getenv("HUB_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Pool creates a database for the calling test migrated to schema (a copy
// of the schema's template, dropped when the test ends) and returns a pool
// on it (NewPool) and its URL.
//
// The template is migrated once: its name carries a hash of the
// migrations, every test process on the server copies it, and it is kept
// for the next run (templates of old migrations can be dropped at any
// time: DROP DATABASE, after ALTER DATABASE ... IS_TEMPLATE false).
func Pool(t testing.TB, schema Schema) (*pgxpool.Pool, string) {
	t.Helper()
	tmpl, err := testServer.template(schema)
	if err != nil {
		t.Fatalf("hubtest: template of the %s schema: %v", schema.Name, err)
	}
	url := testServer.database(t, tmpl)
	return NewPool(t, url), url
}

// DatabaseURL creates an empty database for the calling test (dropped when
// it ends) and returns its URL.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	return testServer.database(t, "")
}

// Slot holds one of the test database slots for the calling test until it
// ends, for a test that makes its databases another way (hub bench's
// own), so that they count against HUB_TEST_DATABASES too.
func Slot(t testing.TB) {
	t.Helper()
	testServer.acquire(t)
}

// NewPool opens a pool of at most PoolMaxConns connections on url, closed
// when the test ends.
func NewPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	return NewPoolOf(t, url, PoolMaxConns)
}

// NewPoolOf opens a pool of at most maxConns connections on url, closed
// when the test ends.
func NewPoolOf(t testing.TB, url string, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("hubtest: pool: %v", err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("hubtest: pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// postgres is this process's side of the test server: the templates it
// found or built, and the slots its tests hold. A slot is one of
// HUB_TEST_DATABASES session advisory locks, shared by every test process
// on the server (the packages go test runs at once, a second suite
// beside): a test takes one, on a connection to the admin database kept
// until its last database is dropped, before it creates a database. So the
// connections tests open stay bounded, whatever runs beside them. The
// subtests of a test share its slot.
type postgres struct {
	mu        sync.Mutex
	templates map[string]*templateOnce
	slots     map[string]*slot // by top-level test name
}

type templateOnce struct {
	once sync.Once
	err  error
}

type slot struct {
	once  sync.Once
	mu    sync.Mutex // serializes use of conn
	conn  *pgx.Conn
	err   error
	users int
}

// testServer is per process, as the test binary's tests share it.
var testServer = &postgres{templates: map[string]*templateOnce{}, slots: map[string]*slot{}}

// database creates a database for t, a copy of template (or empty when
// template is ""), dropped when t ends, and returns its URL.
func (p *postgres) database(t testing.TB, template string) string {
	t.Helper()
	s := p.acquire(t)
	name := "hookhub_test_" + randomSuffix()
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		stmt += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if err := s.create(stmt); err != nil {
		t.Fatalf("hubtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := s.exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
			t.Errorf("hubtest: drop database %s: %v", name, err)
		}
	})
	url, err := pgurl.WithDatabase(AdminURL(), name)
	if err != nil {
		t.Fatalf("hubtest: HUB_TEST_DATABASE_URL: %v", err)
	}
	return url
}

// acquire returns t's slot, taking one for its top-level test unless it
// holds one already; it is given back when t ends.
func (p *postgres) acquire(t testing.TB) *slot {
	t.Helper()
	root, _, _ := strings.Cut(t.Name(), "/")
	p.mu.Lock()
	s := p.slots[root]
	if s == nil {
		s = &slot{}
		p.slots[root] = s
	}
	s.users++
	p.mu.Unlock()
	t.Cleanup(func() { p.release(root, s) })
	s.once.Do(func() { s.conn, s.err = takeSlot(t) })
	if s.err != nil {
		t.Fatalf("hubtest: %v (is Postgres running?)", s.err)
	}
	return s
}

func (p *postgres) release(root string, s *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.users--; s.users > 0 {
		return
	}
	delete(p.slots, root)
	if s.conn != nil {
		_ = s.conn.Close(context.Background())
	}
}

// takeSlot connects to the admin database and takes a free slot on that
// connection, waiting for one up to slotWait.
func takeSlot(t testing.TB) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminWait)
	defer cancel()
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", AdminURL(), err)
	}
	try := func(slot int) (ok bool, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), adminWait)
		defer cancel()
		err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, lockSlot, int32(slot)).Scan(&ok)
		return ok, err
	}
	n, deadline := databases(), time.Now().Add(slotWait)
	for first := rand.IntN(n); ; {
		for i := range n {
			ok, err := try((first + i) % n)
			if err != nil {
				_ = conn.Close(context.Background())
				return nil, fmt.Errorf("take a test database slot: %w", err)
			}
			if ok {
				return conn, nil
			}
		}
		if time.Now().After(deadline) {
			t.Logf("hubtest: the %d test database slots stayed busy for %s; going on without one", n, slotWait)
			return conn, nil
		}
		time.Sleep(time.Duration(50+rand.IntN(100)) * time.Millisecond)
	}
}

// databases is HUB_TEST_DATABASES, or DefaultDatabases.
func databases() int {
	if n, err := strconv.Atoi(os.Getenv("HUB_TEST_DATABASES")); err == nil && n > 0 {
		return n
	}
	return DefaultDatabases
}

func (s *slot) exec(stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminWait)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.conn.Exec(ctx, stmt)
	return err
}

// create runs a CREATE DATABASE, again while its template is in use: an
// autovacuum worker, or a session of the build not gone yet, may be
// connected to it for a moment.
func (s *slot) create(stmt string) error {
	deadline := time.Now().Add(copyWait)
	for {
		err := s.exec(stmt)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Duration(100+rand.IntN(200)) * time.Millisecond)
	}
}

// template returns the name of schema's template, built unless it exists.
func (p *postgres) template(schema Schema) (string, error) {
	name, err := templateName(schema)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	o := p.templates[name]
	if o == nil {
		o = &templateOnce{}
		p.templates[name] = o
	}
	p.mu.Unlock()
	o.once.Do(func() { o.err = buildTemplate(name, schema) })
	return name, o.err
}

// templateName is "hookhub_tmpl_<schema>_<hash of the migrations>".
func templateName(schema Schema) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(schema.Files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(schema.Files, path)
		fmt.Fprintf(h, "%s\x00%d\x00%s", path, len(b), b)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("hash the migrations: %w", err)
	}
	return fmt.Sprintf("hookhub_tmpl_%s_%x", schema.Name, h.Sum(nil)[:8]), nil
}

// buildTemplate creates and migrates the template name, under an advisory
// lock so that one process builds it while the others wait, unless it
// exists. The finished template is marked so (IS_TEMPLATE) and accepts no
// connections, so copying it never finds a session on it; a database of
// that name not so marked is a build that did not finish, and is rebuilt.
func buildTemplate(name string, schema Schema) error {
	ctx, cancel := context.WithTimeout(context.Background(), templateWait)
	defer cancel()
	conn, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return fmt.Errorf("connect to %s: %w", AdminURL(), err)
	}
	defer conn.Close(context.Background()) // and so unlock
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, 0)`, lockTemplate); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var done bool
	switch err := conn.QueryRow(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, name).Scan(&done); {
	case err == nil && done:
		return nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	id := pgx.Identifier{name}.Sanitize()
	for _, stmt := range []string{"DROP DATABASE IF EXISTS " + id + " WITH (FORCE)", "CREATE DATABASE " + id} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	if err := migrateTemplate(ctx, name, schema); err != nil {
		_, _ = conn.Exec(ctx, "DROP DATABASE "+id+" WITH (FORCE)")
		return err
	}
	_, err = conn.Exec(ctx, "ALTER DATABASE "+id+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
	return err
}

func migrateTemplate(ctx context.Context, name string, schema Schema) error {
	url, err := pgurl.WithDatabase(AdminURL(), name)
	if err != nil {
		return err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := schema.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Role creates a login role of its own in the test's cluster, has grant
// (run by the owner, on the database at ownerURL) give it its privileges,
// and returns the URL of that database for the role. The role is dropped
// when the test ends.
func Role(t testing.TB, ownerURL string, grant func(ctx context.Context, owner *pgxpool.Pool, role string) error) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), adminWait)
	defer cancel()
	owner := NewPool(t, ownerURL)
	role := fmt.Sprintf("hookhub_rt_%012x", rand.Uint64()>>16)
	if _, err := owner.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
		t.Fatalf("hubtest: create role: %v", err)
	}
	t.Cleanup(func() { dropRole(t, owner, role) })
	if err := grant(ctx, owner, role); err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	u, err := url.Parse(ownerURL)
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	u.User = url.User(role)
	return u.String()
}

// dropRole drops role and its grants in the owner's database (the only
// one it has any in).
func dropRole(t testing.TB, owner *pgxpool.Pool, role string) {
	ctx, cancel := context.WithTimeout(context.Background(), adminWait)
	defer cancel()
	for _, sql := range []string{"DROP OWNED BY " + pgx.Identifier{role}.Sanitize(), "DROP ROLE " + pgx.Identifier{role}.Sanitize()} {
		if _, err := owner.Exec(ctx, sql); err != nil {
			t.Errorf("hubtest: drop role %s: %v", role, err)
			return
		}
	}
}

func randomSuffix() string {
	return fmt.Sprintf("%s_%012x", time.Now().UTC().Format("20060102_150405"), rand.Uint64()>>16)
}
