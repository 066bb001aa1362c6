package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookhub/hookhub/internal/hubtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// startPair starts a pair in a directory of t's, stopped when t ends.
func startPair(t *testing.T, synchronous bool) *PostgresPair {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	begin := time.Now()
	p, err := StartPostgres(ctx, PostgresOptions{Dir: t.TempDir(), Synchronous: synchronous,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	t.Logf("StartPostgres (synchronous %t): %s", synchronous, time.Since(begin).Round(time.Millisecond))
	t.Cleanup(func() {
		pids := p.pids()
		require.NoError(t, p.Stop(context.Background()))
		require.NoError(t, p.Stop(context.Background()), "Stop is idempotent")
		for _, pid := range pids {
			require.False(t, groupAlive(pid), "a process of the group of %d is left", pid)
		}
	})
	return p
}

// pids are the postmasters running now.
func (p *PostgresPair) pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for _, n := range p.nodes {
		if n.proc != nil {
			out = append(out, n.proc.cmd.Process.Pid)
		}
	}
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// connect opens a connection for the test on url.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// count is the number of rows of t1 on the node at addr, read there
// (a standby answers too).
func countRows(t *testing.T, p *PostgresPair, addr string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, "postgres://postgres@"+addr+"/postgres?connect_timeout=2&sslmode=disable")
	require.NoError(t, err)
	defer c.Close(ctx)
	var n int
	require.NoError(t, c.QueryRow(ctx, `SELECT count(*) FROM t1`).Scan(&n))
	return n
}

// insert inserts n rows into t1 through url, each its own commit.
func insert(ctx context.Context, url string, n int) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	for range n {
		if _, err := c.Exec(ctx, `INSERT INTO t1 DEFAULT VALUES`); err != nil {
			return err
		}
	}
	return nil
}

// TestPostgresPairFailover starts a pair, writes through its multi-host
// URL, kills the primary, promotes the standby, checks what a commit does
// before the rebuild (with synchronous replication it waits for a
// standby), rebuilds, writes again, and fails back with Failover. Every
// committed row survives both failovers.
func TestPostgresPairFailover(t *testing.T) {
	for _, tc := range []struct {
		name        string
		synchronous bool
	}{{"synchronous", true}, {"asynchronous", false}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.synchronous {
				hubtest.Soak(t) // the synchronous pair is the one the hub's promise needs: about 20 s each
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			p := startPair(t, tc.synchronous)
			addrs := p.Addrs()
			require.Len(t, addrs, 2)
			require.NotEqual(t, addrs[0], addrs[1])
			require.Equal(t, 0, p.Primary())
			url := p.URL("postgres")
			require.Equal(t, fmt.Sprintf("postgres://postgres@%s,%s/postgres?target_session_attrs=read-write&connect_timeout=2&sslmode=disable", addrs[0], addrs[1]), url)
			require.Equal(t, "postgres://postgres@x:1,y:2/d%20b?target_session_attrs=read-write&connect_timeout=2&sslmode=disable", p.URL("d b", "x:1", "y:2"))

			_, err := connect(t, url).Exec(ctx, `CREATE TABLE t1 (id bigserial PRIMARY KEY)`)
			require.NoError(t, err)
			require.NoError(t, insert(ctx, url, 20))
			require.Eventually(t, func() bool { return countRows(t, p, addrs[1]) == 20 }, 10*time.Second, 20*time.Millisecond,
				"the standby replays the primary's commits")

			// Kill, promote: no primary runs twice.
			require.Error(t, p.Promote(ctx), "promoting while the primary runs")
			require.Error(t, p.Rebuild(ctx), "rebuilding a running node")
			require.NoError(t, p.KillPrimary(ctx))
			require.Error(t, p.KillPrimary(ctx), "the primary is dead already")
			require.NoError(t, p.Promote(ctx))
			require.Equal(t, 1, p.Primary())
			require.Equal(t, 20, countRows(t, p, addrs[1]), "the promoted standby has every commit")

			// Before the rebuild, a commit waits for a standby when
			// synchronous, and returns when not. The standby is the
			// rebuilt node, not pg_basebackup's WAL stream: when the
			// commit returns, the node is running.
			committed := make(chan bool, 1) // whether node 0 ran when the commit returned
			go func() {
				err := insert(ctx, url, 1)
				committed <- err == nil && p.running(p.nodes[0])
			}()
			select {
			case <-committed:
				require.False(t, tc.synchronous, "a synchronous commit returned without a standby")
			case <-time.After(2 * time.Second):
				require.True(t, tc.synchronous, "an asynchronous commit waited")
			}
			require.NoError(t, p.Rebuild(ctx))
			if tc.synchronous {
				require.True(t, <-committed, "the commit returned before the rebuilt standby ran")
			}
			require.NoError(t, insert(ctx, url, 20))
			require.Equal(t, 41, countRows(t, p, addrs[1]))
			require.Eventually(t, func() bool { return countRows(t, p, addrs[0]) == 41 }, 10*time.Second, 20*time.Millisecond,
				"the rebuilt node streams from the new primary")

			// Fail back, in one call.
			ft, err := p.Failover(ctx)
			require.NoError(t, err)
			t.Logf("Failover (synchronous %t): promoted %s, rebuilt %s after the kill", tc.synchronous,
				ft.Promoted.Round(time.Millisecond), ft.Rebuilt.Round(time.Millisecond))
			require.Equal(t, 0, p.Primary())
			require.Positive(t, ft.Promoted)
			require.Greater(t, ft.Rebuilt, ft.Promoted)
			require.NoError(t, insert(ctx, url, 1))
			require.Equal(t, 42, countRows(t, p, addrs[0]))
			require.Equal(t, addrs, p.Addrs(), "a node keeps its port")
		})
	}
}

// TestStartPostgresErrors: a pair that cannot start says why, and leaves
// nothing running.
func TestStartPostgresErrors(t *testing.T) {
	ctx := context.Background()
	_, err := StartPostgres(ctx, PostgresOptions{})
	require.ErrorContains(t, err, "Dir is empty")

	_, err = StartPostgres(ctx, PostgresOptions{Dir: t.TempDir(), BinDir: "/nonexistent/bin"})
	require.ErrorContains(t, err, "BinDir /nonexistent/bin")

	// A data directory initdb refuses (not empty): initdb's own words.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pg0", "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pg0", "data", "x"), nil, 0o644))
	_, err = StartPostgres(ctx, PostgresOptions{Dir: dir})
	require.ErrorContains(t, err, "initdb")
	require.ErrorContains(t, err, "not empty")
	require.False(t, errors.Is(err, context.DeadlineExceeded))
}
