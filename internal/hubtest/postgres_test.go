package hubtest

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A template is named by its migrations: the same files, the same name;
// any change, another.
func TestTemplateNameFollowsTheMigrations(t *testing.T) {
	name := func(files fstest.MapFS) string {
		n, err := templateName(Schema{Name: "x", Files: files})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := fstest.MapFS{"00001_a.sql": {Data: []byte("CREATE TABLE a (id int);")}}
	same := fstest.MapFS{"00001_a.sql": {Data: []byte("CREATE TABLE a (id int);")}}
	edited := fstest.MapFS{"00001_a.sql": {Data: []byte("CREATE TABLE a (id bigint);")}}
	added := fstest.MapFS{"00001_a.sql": a["00001_a.sql"], "00002_b.sql": {Data: []byte("SELECT 1;")}}
	if name(a) != name(same) {
		t.Errorf("the same migrations name two templates: %s, %s", name(a), name(same))
	}
	for _, other := range []fstest.MapFS{edited, added} {
		if name(a) == name(other) {
			t.Errorf("changed migrations keep the template %s", name(a))
		}
	}
}

// Every test database of a schema is a copy of its migrated template,
// which accepts no connections.
func TestPoolCopiesTheTemplate(t *testing.T) {
	t.Parallel()
	schema := Schema{Name: "hubtest", Files: fstest.MapFS{"one.sql": {Data: []byte("CREATE TABLE one (id int)")}},
		Migrate: func(ctx context.Context, pool *pgxpool.Pool) error {
			_, err := pool.Exec(ctx, "CREATE TABLE one (id int)")
			return err
		}}
	for _, sub := range []string{"a", "b"} {
		t.Run(sub, func(t *testing.T) {
			pool, _ := Pool(t, schema)
			if _, err := pool.Exec(context.Background(), "INSERT INTO one VALUES (1)"); err != nil {
				t.Fatal(err)
			}
		})
	}
	tmpl, err := templateName(schema)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var isTemplate, allowConn bool
	if err := conn.QueryRow(context.Background(), `SELECT datistemplate, datallowconn FROM pg_database WHERE datname = $1`, tmpl).
		Scan(&isTemplate, &allowConn); err != nil {
		t.Fatal(err)
	}
	if !isTemplate || allowConn {
		t.Errorf("template %s: is_template %v, allow_connections %v", tmpl, isTemplate, allowConn)
	}
}
