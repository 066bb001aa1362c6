package chaos

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// pgWait bounds each wait of the pair (a node ready, streaming,
	// promoted, gone) and each command (initdb, pg_basebackup, pg_ctl),
	// whatever the context allows: generous, the machine may be loaded.
	pgWait      = 90 * time.Second
	pgPoll      = 50 * time.Millisecond // the interval of its polls
	pgSuperuser = "postgres"            // whom initdb creates and URLs name
)

// PostgresOptions configure StartPostgres.
type PostgresOptions struct {
	// Dir is the parent directory; the two clusters go in Dir/pg0 and
	// Dir/pg1 (created), each with its data directory (data), its log
	// (postgres.log) and its unix socket.
	Dir string
	// BinDir holds initdb, postgres, pg_ctl and pg_basebackup: "" is
	// `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin.
	BinDir string
	// Synchronous sets synchronous_standby_names='*' and
	// synchronous_commit=on on both nodes (so it stays in force after a
	// promotion): no commit returns before the standby flushed it. False
	// is asynchronous streaming.
	Synchronous bool
	// Logger logs each step; nil discards.
	Logger *slog.Logger
}

// PostgresPair is a Postgres primary and a streaming standby, two clusters
// of the machine's PostgreSQL on 127.0.0.1, started by StartPostgres: the
// test's stand-in for a production primary with its standby
// (CloudNativePG). Failover kills the primary like a dying machine,
// promotes the standby and rebuilds the old primary as the new standby.
//
// With Synchronous and its single standby, the pair is in "required"
// durability (CloudNativePG's): once the primary is killed and the standby
// promoted, every commit on the new primary waits for a standby, that is
// until Rebuild has finished. A commit never returns before a second node
// has it, so a promotion loses nothing acknowledged; the price is that
// writes stall from the kill until the rebuild. A client that gives up on
// such a commit (a cancelled query) may leave it committed locally:
// Postgres warns that it "might not have been replicated", and it is
// replicated once the standby streams.
//
// Its methods are safe for concurrent use, but the faults are meant to be
// injected one at a time. Stop it when done (t.Cleanup): it leaves no
// process behind.
type PostgresPair struct {
	o    PostgresOptions
	log  *slog.Logger
	bin  string
	cred *syscall.Credential // nil: the current user

	mu      sync.Mutex
	nodes   [2]*pgNode
	primary int
}

// pgNode is one cluster: its directories, its fixed port and, while it
// runs, its postmaster.
type pgNode struct {
	index int
	dir   string // Dir/pgN: the unix socket and the log
	data  string // Dir/pgN/data
	port  int
	proc  *pgProc // nil when not running
}

// pgProc is a running postmaster, leader of its children's process group.
type pgProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait returned
}

// StartPostgres creates both clusters under o.Dir and starts them: initdb
// node 0 (trust authentication, listening on 127.0.0.1 on a free port, its
// unix socket in its directory), start it, pg_basebackup -R node 1 from
// it, start node 1 and wait until pg_stat_replication shows it streaming
// (and synchronous with o.Synchronous). Node 0 is the primary. Processes
// run as the postgres OS user when the caller is root. On failure it stops
// what it started.
func StartPostgres(ctx context.Context, o PostgresOptions) (_ *PostgresPair, err error) {
	if o.Dir == "" {
		return nil, errors.New("postgres pair: Dir is empty")
	}
	p := &PostgresPair{o: o, log: cmp.Or(o.Logger, slog.New(slog.DiscardHandler))}
	if p.bin, err = binDir(ctx, o.BinDir); err != nil {
		return nil, err
	}
	if p.cred, err = pgCredential(); err != nil {
		return nil, err
	}
	if err := p.makeDirs(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = p.Stop(context.WithoutCancel(ctx))
		}
	}()
	begin := time.Now()
	if err := p.startPrimary(ctx, p.nodes[0]); err != nil {
		return nil, err
	} else if err := p.addStandby(ctx, p.nodes[1], p.nodes[0]); err != nil {
		return nil, err
	}
	p.log.Info("postgres pair started", "primary", p.nodes[0].addr(), "standby", p.nodes[1].addr(),
		"synchronous", o.Synchronous, "took", time.Since(begin).Round(time.Millisecond))
	return p, nil
}

// binDir is dir, else `pg_config --bindir`, else the newest
// /usr/lib/postgresql/*/bin; it must hold the programs the pair runs.
func binDir(ctx context.Context, dir string) (string, error) {
	if dir == "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, _ := exec.CommandContext(ctx, "pg_config", "--bindir").Output()
		cancel()
		dir = strings.TrimSpace(string(out))
	}
	if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); dir == "" && len(dirs) > 0 {
		major := func(d string) float64 { v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64); return v }
		dir = slices.MaxFunc(dirs, func(a, b string) int { return cmp.Compare(major(a), major(b)) })
	}
	if dir == "" {
		return "", errors.New("postgres pair: no PostgreSQL binaries: pg_config is not on PATH and /usr/lib/postgresql/*/bin is empty; set BinDir")
	}
	for _, prog := range []string{"initdb", "postgres", "pg_ctl", "pg_basebackup"} {
		if _, err := os.Stat(filepath.Join(dir, prog)); err != nil {
			return "", fmt.Errorf("postgres pair: BinDir %s: %w", dir, err)
		}
	}
	return dir, nil
}

// pgCredential is the postgres OS user's when running as root (Postgres
// refuses to run as root), else nil.
func pgCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgres pair: running as root, and Postgres refuses to: %w", err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres pair: user postgres: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// makeDirs creates Dir/pg0 and Dir/pg1, owned by the user the nodes run
// as, picks each node's port, and makes Dir reachable by that user.
func (p *PostgresPair) makeDirs() error {
	for i := range p.nodes {
		dir, err := filepath.Abs(filepath.Join(p.o.Dir, "pg"+strconv.Itoa(i)))
		if err != nil {
			return fmt.Errorf("postgres pair: %w", err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("postgres pair: %w", err)
		}
		if p.cred != nil {
			if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
				return fmt.Errorf("postgres pair: %w", err)
			}
		}
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		p.nodes[i] = &pgNode{index: i, dir: dir, data: filepath.Join(dir, "data"), port: ports[0]}
	}
	if p.cred == nil {
		return nil
	}
	return traversable(filepath.Dir(p.nodes[0].dir), p.cred.Uid)
}

// traversable makes dir and its parents traversable by uid: a parent that
// is not gets o+x and g+x when it is under the temporary directory (a
// test's t.TempDir is 0700, its owner root); elsewhere it is an error.
func traversable(dir string, uid uint32) error {
	tmp := filepath.Clean(os.TempDir()) + string(filepath.Separator)
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("postgres pair: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm()&0o001 != 0 || (ok && st.Uid == uid) {
			continue
		}
		if !strings.HasPrefix(d, tmp) {
			return fmt.Errorf("postgres pair: %s is not traversable by the postgres user (mode %s)", d, fi.Mode().Perm())
		}
		if err := os.Chmod(d, fi.Mode().Perm()|0o011); err != nil {
			return fmt.Errorf("postgres pair: %w", err)
		}
	}
	return nil
}

// startPrimary runs initdb for n, writes its configuration (which
// pg_basebackup copies to the standby) and starts it.
func (p *PostgresPair) startPrimary(ctx context.Context, n *pgNode) error {
	if err := p.run(ctx, "initdb", "-D", n.data, "-U", pgSuperuser, "--auth=trust", "--no-sync",
		"-E", "UTF8", "--locale=C", "--no-instructions"); err != nil {
		return err
	}
	sync := "synchronous_standby_names = ''\nsynchronous_commit = on\n"
	if p.o.Synchronous {
		sync = strings.Replace(sync, "''", "'*'", 1)
	}
	conf := "\n# hookhub chaos: a primary with a streaming standby\n" +
		"wal_level = replica\nmax_wal_senders = 8\nmax_replication_slots = 8\nhot_standby = on\n" +
		"wal_keep_size = 256MB\nmax_connections = 60\nshared_buffers = 32MB\nfsync = on\n" +
		"dynamic_shared_memory_type = mmap\nlogging_collector = off\n" +
		"log_line_prefix = '%m [%p] '\nlog_connections = off\nwal_receiver_status_interval = 1s\n" +
		// Not 5 s: a promotion waits for the standby's retry of its primary.
		"wal_retrieve_retry_interval = 200ms\n" + sync
	f, err := os.OpenFile(filepath.Join(n.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteString(conf)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		return fmt.Errorf("postgres pair: configure node %d: %w", n.index, err)
	}
	hba := "local all all trust\nhost all all 127.0.0.1/32 trust\n" +
		"local replication all trust\nhost replication all 127.0.0.1/32 trust\n"
	if err := os.WriteFile(filepath.Join(n.data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		return fmt.Errorf("postgres pair: configure node %d: %w", n.index, err)
	}
	return p.start(ctx, n)
}

// addStandby makes n a standby of primary: wipe n's data directory,
// pg_basebackup -R from the primary, start n and wait until it streams.
func (p *PostgresPair) addStandby(ctx context.Context, n, primary *pgNode) error {
	if err := os.RemoveAll(n.data); err != nil {
		return fmt.Errorf("postgres pair: wipe node %d: %w", n.index, err)
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=%s application_name=pg%d connect_timeout=5",
		primary.port, pgSuperuser, n.index)
	// --no-sync: a node is killed, never its machine: the page cache keeps
	// what was written. --no-slot: through a slot, pg_basebackup reports a
	// flush position and '*' counts it a synchronous standby: commits would
	// return with their WAL in an unfinished copy (wal_keep_size it is).
	if err := p.run(ctx, "pg_basebackup", "-D", n.data, "-R", "-X", "stream", "--checkpoint=fast",
		"--no-sync", "--no-slot", "-d", conninfo); err != nil {
		return err
	}
	if err := p.start(ctx, n); err != nil {
		return err
	}
	return p.waitStreaming(ctx, primary, n)
}

// run runs one of the PostgreSQL programs to its end, within pgWait.
func (p *PostgresPair) run(ctx context.Context, prog string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, pgWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, prog), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// initdb runs postgres: the whole group goes when ctx ends.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	home := filepath.Dir(p.nodes[0].dir)
	cmd.Env, cmd.Dir = pgEnv(home), home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("postgres pair: %s: %w\n%s", prog, err, lastLines(out.Bytes(), 15))
	}
	return nil
}

// pgEnv is the environment of the programs the pair runs: the caller's
// without its PG* variables (the pair names its hosts and ports), with
// HOME set to home (first).
func pgEnv(home string) []string {
	env := []string{"HOME=" + home}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// start starts n's postmaster, the leader of a process group of its own,
// its output appended to n's log, and waits until it accepts connections.
func (p *PostgresPair) start(ctx context.Context, n *pgNode) error {
	logf, err := os.OpenFile(n.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("postgres pair: node %d log: %w", n.index, err)
	}
	defer logf.Close() // the child has its own descriptor
	sock := n.dir
	if len(sock)+len("/.s.PGSQL.65535.lock") > 100 { // sun_path is 108 bytes
		sock = "" // TCP only
	}
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", n.data, "-p", strconv.Itoa(n.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+sock)
	// Pdeathsig: should the test process die without stopping the pair,
	// its postmasters die too, and their children after them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = pgEnv(n.dir)
	cmd.Dir = n.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("postgres pair: start node %d: %w", n.index, err)
	}
	proc := &pgProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(proc.done)
	}()
	p.mu.Lock()
	n.proc = proc
	p.mu.Unlock()
	err = p.poll(ctx, n, "accept connections", func(ctx context.Context) (bool, error) {
		return true, p.query(ctx, n, func(c *pgx.Conn) error { _, err := c.Exec(ctx, "SELECT 1"); return err })
	})
	if err != nil {
		return err
	}
	p.log.Info("postgres node started", "node", n.index, "addr", n.addr(), "pid", cmd.Process.Pid)
	return nil
}

// poll calls check every pgPoll until it reports done, within pgWait and
// ctx, while n runs (nil: whatever runs). The error, if any, carries the
// last check's error and the last lines of n's log.
func (p *PostgresPair) poll(ctx context.Context, n *pgNode, what string, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, pgWait)
	defer cancel()
	tick := time.NewTicker(pgPoll)
	defer tick.Stop()
	var last error
	for {
		if n != nil && !p.running(n) {
			return fmt.Errorf("postgres pair: node %d exited before it would %s; its log:\n%s", n.index, what, n.logTail())
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		done, err := check(cctx)
		ccancel()
		if err == nil && done {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("did not %s: %v", what, ctx.Err())
			if last != nil {
				msg += " (last: " + last.Error() + ")"
			}
			if n == nil {
				return errors.New(msg)
			}
			return fmt.Errorf("postgres pair: node %d %s; its log:\n%s", n.index, msg, n.logTail())
		case <-tick.C:
		}
	}
}

// query connects to n's postgres database and runs fn.
func (p *PostgresPair) query(ctx context.Context, n *pgNode, fn func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=postgres sslmode=disable connect_timeout=2",
		n.port, pgSuperuser))
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return fn(c)
}

// waitStreaming waits until primary's pg_stat_replication shows standby
// streaming, and synchronous when the pair is.
func (p *PostgresPair) waitStreaming(ctx context.Context, primary, standby *pgNode) error {
	app := "pg" + strconv.Itoa(standby.index)
	what := "stream from node " + strconv.Itoa(primary.index)
	if p.o.Synchronous {
		what += " synchronously"
	}
	begin := time.Now()
	err := p.poll(ctx, standby, what, func(ctx context.Context) (ok bool, err error) {
		if !p.running(primary) {
			return false, fmt.Errorf("the primary, node %d, is not running", primary.index)
		}
		err = p.query(ctx, primary, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_replication
				WHERE application_name = $1 AND state = 'streaming' AND (NOT $2 OR sync_state = 'sync')`,
				app, p.o.Synchronous).Scan(&ok)
		})
		return ok, err
	})
	if err == nil {
		p.log.Info("postgres standby streaming", "standby", standby.index, "primary", primary.index,
			"synchronous", p.o.Synchronous, "took", time.Since(begin).Round(time.Millisecond))
	}
	return err
}

// Addrs are the "127.0.0.1:<port>" addresses of node 0 and node 1. A node
// keeps its port across restarts and role changes.
func (p *PostgresPair) Addrs() []string {
	return []string{p.nodes[0].addr(), p.nodes[1].addr()}
}

// Primary is the index of the current primary.
func (p *PostgresPair) Primary() int {
	n, _ := p.roles()
	return n.index
}

// roles are the primary's node and the other.
func (p *PostgresPair) roles() (primary, other *pgNode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nodes[p.primary], p.nodes[1-p.primary]
}

// URL is a multi-host URL of database on addrs (default Addrs(); the
// chaos topology passes proxies in front of each node), for the
// superuser, that connects to whichever is read-write:
// postgres://postgres@a,b/database?target_session_attrs=read-write&connect_timeout=2&sslmode=disable.
func (p *PostgresPair) URL(database string, addrs ...string) string {
	if len(addrs) == 0 {
		addrs = p.Addrs()
	}
	return fmt.Sprintf("postgres://%s@%s/%s?target_session_attrs=read-write&connect_timeout=2&sslmode=disable",
		pgSuperuser, strings.Join(addrs, ","), url.PathEscape(database))
}

// KillPrimary SIGKILLs the primary's postmaster and every process of its
// group at once, like a machine dying, and waits until they are gone.
func (p *PostgresPair) KillPrimary(ctx context.Context) error {
	n, _ := p.roles()
	if !p.running(n) {
		return fmt.Errorf("postgres pair: the primary, node %d, is not running", n.index)
	}
	if err := p.kill(ctx, n, syscall.SIGKILL); err != nil {
		return err
	}
	p.log.Info("postgres primary killed", "node", n.index)
	return nil
}

// kill sends sig to n's process group (the postmaster alone for SIGQUIT,
// its immediate shutdown), and waits until the postmaster has exited and
// no process of its group is left.
func (p *PostgresPair) kill(ctx context.Context, n *pgNode, sig syscall.Signal) error {
	proc := p.procOf(n)
	if proc == nil {
		return nil
	}
	pid := proc.cmd.Process.Pid
	target := -pid // the group
	if sig != syscall.SIGKILL {
		target = pid
	}
	if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("postgres pair: signal node %d: %w", n.index, err)
	}
	err := p.poll(ctx, nil, "exit", func(context.Context) (bool, error) {
		select {
		case <-proc.done:
			return !groupAlive(pid), nil
		default:
			return false, nil
		}
	})
	if err != nil {
		return fmt.Errorf("postgres pair: node %d: %w", n.index, err)
	}
	if sig == syscall.SIGKILL {
		removeShm(n)
	}
	p.mu.Lock()
	n.proc = nil
	p.mu.Unlock()
	return nil
}

// removeShm removes the System V segment of n's killed postmaster (a
// shutdown removes its own): its key comes from the data directory, which
// Rebuild replaces, so no later start would reuse it.
func removeShm(n *pgNode) {
	b, _ := os.ReadFile(filepath.Join(n.data, "postmaster.pid"))
	var key, id int
	if lines := strings.Split(string(b), "\n"); len(lines) > 6 { // line 7: key, id
		if k, _ := fmt.Sscan(lines[6], &key, &id); k == 2 {
			_, _, _ = syscall.Syscall(syscall.SYS_SHMCTL, uintptr(id), 0 /* IPC_RMID */, 0)
		}
	}
}

// groupAlive reports whether a process of group pgid other than a zombie
// is left (the postmaster's children are reparented when it dies, and a
// zombie waits for whoever reaps them).
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil // no /proc: zombies count
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// Promote promotes the standby (pg_ctl promote) and waits until it accepts
// writes; Primary() then names it. The primary must be dead (KillPrimary):
// the pair never runs two primaries.
func (p *PostgresPair) Promote(ctx context.Context) error {
	old, n := p.roles()
	if p.running(old) {
		return fmt.Errorf("postgres pair: the primary, node %d, is running: kill it before promoting node %d", old.index, n.index)
	}
	if !p.running(n) {
		return fmt.Errorf("postgres pair: the standby, node %d, is not running", n.index)
	}
	if err := p.run(ctx, "pg_ctl", "promote", "-D", n.data, "-w", "-t", strconv.Itoa(int(pgWait.Seconds()))); err != nil {
		return fmt.Errorf("%w; node %d's log:\n%s", err, n.index, n.logTail())
	}
	// Writable is what target_session_attrs=read-write asks. No write is
	// tried: with Synchronous it would wait for a standby until Rebuild.
	err := p.poll(ctx, n, "accept writes", func(ctx context.Context) (ok bool, err error) {
		err = p.query(ctx, n, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'`).Scan(&ok)
		})
		return ok, err
	})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.primary = n.index
	p.mu.Unlock()
	p.log.Info("postgres standby promoted", "node", n.index)
	return nil
}

// Rebuild makes the old, dead primary the new standby: wipe its data
// directory, pg_basebackup -R from the new primary, start it and wait
// until it streams (synchronously when the pair is; commits waiting for a
// standby then return).
func (p *PostgresPair) Rebuild(ctx context.Context) error {
	primary, n := p.roles()
	if p.running(n) {
		return fmt.Errorf("postgres pair: node %d is running: only a dead node is rebuilt", n.index)
	}
	if err := p.addStandby(ctx, n, primary); err != nil {
		return err
	}
	p.log.Info("postgres old primary rebuilt as the standby", "node", n.index, "primary", primary.index)
	return nil
}

// FailoverTimes are how long after the kill of the primary the standby
// accepted writes (Promoted) and the old primary streamed as the new
// standby (Rebuilt).
type FailoverTimes struct {
	Promoted, Rebuilt time.Duration
}

// Failover kills the primary, promotes the standby and rebuilds the old
// primary as the new standby, and measures each step from the kill.
func (p *PostgresPair) Failover(ctx context.Context) (FailoverTimes, error) {
	var ft FailoverTimes
	killed := time.Now()
	if err := p.KillPrimary(ctx); err != nil {
		return ft, err
	}
	if err := p.Promote(ctx); err != nil {
		return ft, err
	}
	ft.Promoted = time.Since(killed)
	if err := p.Rebuild(ctx); err != nil {
		return ft, err
	}
	ft.Rebuilt = time.Since(killed)
	return ft, nil
}

// Stop stops both nodes (an immediate shutdown, SIGKILL after 10 s) and
// waits until no process of theirs is left. It is idempotent.
func (p *PostgresPair) Stop(ctx context.Context) error {
	var errs []error
	for _, n := range p.nodes {
		if n == nil || p.procOf(n) == nil { // never started, or its group is gone
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.kill(sctx, n, syscall.SIGQUIT)
		cancel()
		if err != nil {
			err = p.kill(context.WithoutCancel(ctx), n, syscall.SIGKILL)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// procOf is n's postmaster, nil when not running.
func (p *PostgresPair) procOf(n *pgNode) *pgProc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return n.proc
}

func (n *pgNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

func (n *pgNode) logPath() string { return filepath.Join(n.dir, "postgres.log") }

// running reports whether n's postmaster has been started and has not
// exited.
func (p *PostgresPair) running(n *pgNode) bool {
	proc := p.procOf(n)
	if proc == nil {
		return false
	}
	select {
	case <-proc.done:
		return false
	default:
		return true
	}
}

// logTail is the last lines of n's log.
func (n *pgNode) logTail() string { return fileTail(n.logPath(), 20) }

// lastLines is the last n lines of b.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
