package migrate_test

import (
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/internal/migrate"
)

func TestDir(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"migrations/00001_a.sql": {Data: []byte("-- +goose Up\n")}}
	names, err := fs.Glob(migrate.Dir(fsys, "migrations"), "*.sql")
	require.NoError(t, err)
	require.Equal(t, []string{"00001_a.sql"}, names)
	require.Panics(t, func() { migrate.Dir(fsys, "../migrations") })
}
