package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A second `hub dev` on one HUB_DATA_DIR is refused at once, naming the
// running one's pid, before it opens anything (here the database is
// unreachable: it never gets that far). A crashed run's lock file does
// not block the next run.
func TestDevRefusesASecondRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HUB_DATA_DIR", dir)
	t.Setenv("HUB_DATABASE_URL", "postgres://postgres@127.0.0.1:1/hub_devlock?connect_timeout=1")
	t.Setenv("HUB_HTTP_ADDR", freeAddr(t))

	unlock, err := lockDevDir(dir) // the running `hub dev`
	require.NoError(t, err)
	code, stdout, stderr := runCmd(t, "dev", "--no-subscribers")
	require.Equal(t, 1, code, stdout+stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	require.True(t, strings.HasPrefix(stderr, "hub dev: another `hub dev` is running (pid "+strconv.Itoa(os.Getpid())+") with HUB_DATA_DIR "+dir), stderr)
	require.Contains(t, stderr, "give this one another HUB_DATA_DIR")
	require.Empty(t, stdout)
	unlock()

	// A crashed run leaves its file, not its lock.
	require.NoError(t, os.WriteFile(filepath.Join(dir, devLockFile), []byte("999999\n"), 0o600))
	unlock, err = lockDevDir(dir)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, devLockFile))
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(b))
	unlock()
}

// `hub dev` listens on loopback unless HUB_HTTP_ADDR asks for another
// address; one that reaches beyond this machine is flagged for a warning.
func TestDevListenAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		asked  bool
		want   string
		public bool
	}{
		{":8080", false, "127.0.0.1:8080", false}, // the default
		{":8080", true, ":8080", true},
		{"0.0.0.0:9000", true, "0.0.0.0:9000", true},
		{"127.0.0.1:9000", true, "127.0.0.1:9000", false},
		{"[::1]:9000", true, "[::1]:9000", false},
		{"localhost:9000", true, "localhost:9000", false},
		{"192.168.1.5:8080", true, "192.168.1.5:8080", true},
	} {
		got, public := devListenAddr(tc.addr, tc.asked)
		require.Equal(t, tc.want, got, tc.addr)
		require.Equal(t, tc.public, public, tc.addr)
	}
}
