// Package embeddedpg runs Relay's private PostgreSQL server, the "embedded
// default" used when RELAY_DATABASE_URL is unset. It finds server binaries on
// the machine (or, where none are installed, downloads them with
// github.com/fergusstrange/embedded-postgres), creates a cluster under
// Config.DataDir once, runs postgres as a child process that listens on
// 127.0.0.1 only, and hands out a pgx URL for the database "relay".
//
// It owns the entries of DataDir whose names start with "postgres" and nothing
// else: it neither applies migrations (internal/migrate does) nor knows
// Relay's schema.
//
//	DataDir/postgres/           the cluster (PGDATA), owned by the user that runs the server
//	DataDir/postgres.json       port and superuser password, mode 0600
//	DataDir/postgres.log        initdb and server output
//	DataDir/postgres.lock       serialises Start between processes
//	DataDir/postgres-binaries/  binaries downloaded where none were installed
//
// PostgreSQL refuses to run as root. When Relay's effective uid is 0, initdb
// and the server run as the system user that owns an existing cluster, else
// "relay-postgres", else "postgres"; "relay-postgres" is created with useradd
// when neither exists. That user must be able to traverse DataDir and its
// parents; Start says so in one line when it cannot.
//
// The server listens on 127.0.0.1 only, without a Unix socket, and asks for
// the generated superuser password (scram-sha-256) even there, so other local
// users cannot get in. On Linux it dies with the process that started it (a
// parent-death signal asks for a fast shutdown) unless Config.Detach is set.
//
// After a crash, the next Start lets postgres recover; a postmaster.pid whose
// pid now names an unrelated process is removed first (see reuse). A server
// that still runs on the cluster — started by another Relay process or by a
// detached caller such as internal/pgtest — is reused rather than stopped: it
// may be serving someone else, so Stop on a reused server leaves it running.
package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// superuser is the cluster's superuser; Relay connects as it.
	superuser = "relay"
	// database is the database that URL names, created at first start.
	database = "relay"

	// startTimeout bounds how long a server may take to get ready (crash
	// recovery included) when ctx sets no earlier deadline.
	startTimeout = 2 * time.Minute
	// fastStopTimeout is how long Stop waits after SIGINT before SIGQUIT.
	fastStopTimeout = 30 * time.Second
	// quitTimeout is how long Stop waits after SIGQUIT before SIGKILL.
	quitTimeout = 10 * time.Second
	// pollInterval is how often readiness is probed.
	pollInterval = 50 * time.Millisecond
	// portAttempts is how many ports Start tries when it picks the port itself.
	portAttempts = 3
	// maxLogSize is the size above which postgres.log is rotated at start.
	maxLogSize = 10 << 20
)

// Config says where and how to run the server.
type Config struct {
	// DataDir is the root directory; the cluster lives in DataDir/postgres.
	DataDir string
	// Port is the TCP port on 127.0.0.1. 0 picks a free port at the first
	// start and keeps it (persisted in DataDir) while it stays free.
	Port int
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
	// Settings are extra server settings passed as -c name=value at every
	// start of a server (not applied to a reused one).
	Settings map[string]string
	// Detach lets the server outlive this process: no parent-death signal, its
	// own session. Stop still stops it. internal/pgtest shares one server
	// between test processes this way.
	Detach bool
}

// Postgres is a running server.
type Postgres struct {
	url    string
	logger *slog.Logger
	// proc is nil when Start reused a server that was already running.
	proc *os.Process
	// exited is closed once proc has exited.
	exited <-chan struct{}
}

// layout names the files under DataDir.
type layout struct{ dir string }

func (l layout) cluster() string  { return filepath.Join(l.dir, "postgres") }
func (l layout) state() string    { return filepath.Join(l.dir, "postgres.json") }
func (l layout) logFile() string  { return filepath.Join(l.dir, "postgres.log") }
func (l layout) lockFile() string { return filepath.Join(l.dir, "postgres.lock") }
func (l layout) binaries() string { return filepath.Join(l.dir, "postgres-binaries") }
func (l layout) pidFile() string  { return filepath.Join(l.cluster(), "postmaster.pid") }

// Start runs the server for cfg.DataDir, creating the cluster and the database
// "relay" the first time, and returns once it accepts connections. If a server
// already runs on the cluster, Start reuses it.
//
// Errors are single lines that say what to do; callers add their own context
// ("start embedded postgres: %w").
func Start(ctx context.Context, cfg Config) (*Postgres, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DataDir == "" {
		return nil, errors.New("no data directory given")
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("resolve data directory: %w", err)
	}
	l := layout{dir: dir}
	asRoot := os.Geteuid() == 0
	mode := os.FileMode(0o700)
	if asRoot {
		mode = 0o711 // the server's user only needs to traverse it
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}

	ctx, cancel := context.WithCancel(ctx) // ends reuse's watcher when Start returns
	defer cancel()

	unlock, err := lockFile(ctx, l.lockFile())
	if err != nil {
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	defer unlock()

	st, err := readState(l.state())
	if err != nil {
		return nil, err
	}
	major, err := clusterVersion(l.cluster())
	if err != nil {
		return nil, err
	}
	if major != "" {
		if st.Password == "" {
			return nil, fmt.Errorf("cluster %s exists but %s holds no password; restore the file or move the cluster away", l.cluster(), l.state())
		}
		p, err := reuse(ctx, l, st, logger)
		if err != nil || p != nil {
			return p, err
		}
	}

	bin, err := defaultFinder(l).find(ctx, major)
	if errors.Is(err, errNoBinaries) {
		logger.Info("no postgres server binaries installed; downloading them", "version", major)
		var dlErr error
		if bin, dlErr = downloadBinaries(ctx, l, major, "", logger); dlErr != nil {
			return nil, fmt.Errorf("%v, and %w; install the PostgreSQL server or set RELAY_DATABASE_URL", err, dlErr)
		}
		err = nil
	}
	if err != nil {
		return nil, err
	}

	var acct *account
	if asRoot {
		if acct, err = serverAccount(ctx, l.cluster(), logger); err != nil {
			return nil, err
		}
		if err := checkTraversable(dir, acct); err != nil {
			return nil, err
		}
	}

	logf, err := openLog(l.logFile())
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child keeps its own descriptor

	if major == "" {
		if st.Password == "" {
			st.Password = randomHex(24)
		}
		// Persist the password before initdb so that a crash in between
		// cannot leave a cluster nobody can log into.
		if err := writeState(l.state(), st); err != nil {
			return nil, err
		}
		logger.Info("creating postgres cluster", "dir", l.cluster(), "version", bin.version)
		if err := initCluster(ctx, bin, l, acct, st.Password, logf); err != nil {
			return nil, err
		}
	}

	return run(ctx, l, bin, acct, st, cfg, logf, logger)
}

// run launches the server on the configured or persisted port, moving to
// another port when that is taken and waiting out a crashed server's
// lingering processes.
func run(ctx context.Context, l layout, bin binaries, acct *account, st state, cfg Config, logf *os.File, logger *slog.Logger) (*Postgres, error) {
	deadline := time.Now().Add(startTimeout)
	for portAttempt := 1; ; {
		port := cfg.Port
		if port == 0 {
			var err error
			if port, err = choosePort(st.Port); err != nil {
				return nil, err
			}
		}
		if port != st.Port && cfg.Port == 0 {
			if st.Port != 0 {
				logger.Info("persisted postgres port is taken; using another", "old", st.Port, "new", port)
			}
			st.Port = port
			if err := writeState(l.state(), st); err != nil {
				return nil, err
			}
		}
		p, err := launch(ctx, l, bin, acct, port, st.Password, cfg, logf, logger)
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, errCrashedServerLingers) && time.Now().Before(deadline):
			logger.Info("waiting for the processes of a crashed postgres to exit", "dir", l.cluster())
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(10 * pollInterval):
			}
		case cfg.Port == 0 && portAttempt < portAttempts && !portFree(port):
			portAttempt++ // someone took the port between the check and the bind
		default:
			return nil, err
		}
	}
}

// errCrashedServerLingers means postgres refused to start because processes
// of a crashed server are still attached to the cluster's shared memory.
var errCrashedServerLingers = errors.New("processes of a crashed postgres still use the cluster")

// launch starts postgres on port and waits until it accepts connections.
func launch(ctx context.Context, l layout, bin binaries, acct *account, port int, password string, cfg Config, logf *os.File, logger *slog.Logger) (*Postgres, error) {
	args := []string{
		"-D", l.cluster(),
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=", // no socket: nothing to share with other local users
	}
	names := make([]string, 0, len(cfg.Settings))
	for name := range cfg.Settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		args = append(args, "-c", name+"="+cfg.Settings[name])
	}
	logOffset := fileSize(logf)

	proc, exited, err := spawn(bin.path("postgres"), args, l.dir, acct, cfg.Detach, logf)
	if err != nil {
		return nil, err
	}
	p := &Postgres{url: connURL(port, password, database), logger: logger, proc: proc, exited: exited}
	conn, err := func() (*pgx.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		if _, err := waitListening(ctx, l, proc.Pid, exited); err != nil {
			return nil, err
		}
		return connect(ctx, connURL(port, password, "postgres"))
	}()
	if err != nil {
		stopErr := p.Stop(context.Background())
		tail := logTail(l.logFile(), logOffset)
		if strings.Contains(tail, "pre-existing shared memory block") {
			err = fmt.Errorf("%w: %w", errCrashedServerLingers, err)
		}
		if tail != "" {
			err = fmt.Errorf("%w (%s: %s)", err, l.logFile(), tail)
		}
		return nil, errors.Join(err, stopErr)
	}
	defer conn.Close(context.Background())
	if err := ensureDatabase(ctx, conn); err != nil {
		return nil, errors.Join(err, p.Stop(context.Background()))
	}
	logger.Info("embedded postgres started", "pid", proc.Pid, "port", port, "dir", l.cluster(),
		"version", bin.version, "bin", bin.dir, "user", acct.String(), "log", l.logFile())
	return p, nil
}

// spawn starts name as a child that runs as acct (nil: as this process). A
// goroutine locked to its OS thread starts and waits for the child: Linux
// sends the parent-death signal when the thread that forked the child exits,
// so that thread must live exactly as long as the child.
func spawn(name string, args []string, dir string, acct *account, detach bool, logf *os.File) (*os.Process, <-chan struct{}, error) {
	started := make(chan error, 1)
	exited := make(chan struct{})
	var proc *os.Process
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		cmd := newCommand(name, args, dir, acct, logf)
		cmd.SysProcAttr = sysProcAttr(acct, detach)
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("run %s: %w", name, err)
			return
		}
		proc = cmd.Process
		started <- nil
		_ = cmd.Wait() // the exit status is in the log; Stop only needs to know it happened
		close(exited)
	}()
	if err := <-started; err != nil {
		return nil, nil, err
	}
	return proc, exited, nil
}

// reuse returns a Postgres for a server that already runs on the cluster, or
// nil when none does. It does not connect (a password handshake costs more
// than everything else here, and pgtest reuses the server for every test
// database); the server was started, and its database created, by an earlier
// Start.
//
// A postmaster.pid whose process is dead stays: postgres replaces it itself
// after checking that no process of the crashed server still uses the
// cluster's shared memory, an interlock that deleting the file would defeat.
// One whose pid now belongs to an unrelated process (pids are reused after a
// reboot, constantly in containers) is removed, because postgres would refuse
// to start over it.
func reuse(ctx context.Context, l layout, st state, logger *slog.Logger) (*Postgres, error) {
	pf, err := readPidFile(l.pidFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !processAlive(pf.pid) {
		logger.Info("found the postmaster.pid of a postgres that did not stop cleanly; it will recover", "pid", pf.pid)
		return nil, nil
	}
	if !servesCluster(pf.pid, l.cluster()) {
		logger.Info("removing a postmaster.pid whose pid now belongs to another process", "pid", pf.pid, "file", l.pidFile())
		if err := os.Remove(l.pidFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale postmaster.pid: %w", err)
		}
		return nil, nil
	}
	gone := make(chan struct{})
	go func() { // ends with ctx, which Start cancels when it returns
		defer close(gone)
		for processAlive(pf.pid) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pollInterval):
			}
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	port, err := waitListening(wctx, l, pf.pid, gone)
	if err != nil {
		if !processAlive(pf.pid) {
			// It stopped while we waited (it was shutting down, or crashed).
			return reuse(ctx, l, st, logger)
		}
		return nil, fmt.Errorf("postgres (pid %d) runs on %s but is not ready (%w); stop it and retry", pf.pid, l.cluster(), err)
	}
	logger.Info("reusing the postgres that already runs on the cluster; Stop will leave it running", "pid", pf.pid, "port", port, "dir", l.cluster())
	return &Postgres{url: connURL(port, st.Password, database), logger: logger}, nil
}

// waitListening polls postmaster.pid until the postmaster pid says it is
// ready (as pg_ctl -w does) and its port takes TCP connections, exited is
// closed, or ctx ends. It returns the port.
func waitListening(ctx context.Context, l layout, pid int, exited <-chan struct{}) (int, error) {
	for {
		pf, err := readPidFile(l.pidFile())
		if err == nil && pf.pid == pid && pf.status == "ready" && dialable(pf.port) {
			return pf.port, nil
		}
		select {
		case <-exited:
			return 0, errors.New("postgres exited before it was ready")
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for postgres to be ready: %w", ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// connect connects to a server that is ready, retrying while it still
// answers "starting up".
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse connection url: %w", err)
	}
	cfg.ConnectTimeout = 5 * time.Second
	for {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "57P03" { // 57P03: cannot_connect_now
			if err != nil {
				return nil, fmt.Errorf("connect to postgres: %w", err)
			}
			return conn, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to postgres: %w", err)
		case <-time.After(pollInterval):
		}
	}
}

// ensureDatabase creates the database "relay" if it does not exist.
func ensureDatabase(ctx context.Context, conn *pgx.Conn) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", database).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", database, err)
	}
	if exists {
		return nil
	}
	_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{database}.Sanitize())
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") { // 42P04: duplicate_database
		return fmt.Errorf("create database %s: %w", database, err)
	}
	return nil
}

// URL returns a pgx connection URL for the database "relay" as the superuser.
func (p *Postgres) URL() string { return p.url }

// Stop shuts the server down (fast shutdown: SIGINT) and waits for it to exit;
// after a timeout, or when ctx ends, it sends SIGQUIT (immediate shutdown).
// Stop on a server that Start reused leaves it running.
func (p *Postgres) Stop(ctx context.Context) error {
	if p.proc == nil {
		p.logger.Info("leaving reused postgres running")
		return nil
	}
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.proc.Signal(sigFastShutdown); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal postgres: %w", err)
	}
	fast := time.NewTimer(fastStopTimeout)
	defer fast.Stop()
	select {
	case <-p.exited:
		p.logger.Info("embedded postgres stopped", "pid", p.proc.Pid)
		return nil
	case <-ctx.Done():
	case <-fast.C:
	}
	p.logger.Warn("postgres did not stop in time; sending SIGQUIT", "pid", p.proc.Pid)
	_ = p.proc.Signal(sigImmediateShutdown)
	quit := time.NewTimer(quitTimeout)
	defer quit.Stop()
	select {
	case <-p.exited:
		return nil
	case <-quit.C:
	}
	_ = p.proc.Kill()
	<-p.exited
	return fmt.Errorf("postgres (pid %d) ignored SIGINT and SIGQUIT and was killed", p.proc.Pid)
}

// connURL is the URL of db on the local server.
func connURL(port int, password, db string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(superuser, password),
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Path:     "/" + db,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// choosePort returns preferred if it is free, else a free port.
func choosePort(preferred int) (int, error) {
	if preferred != 0 && portFree(preferred) {
		return preferred, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// dialable reports whether something accepts TCP connections on port.
func dialable(port int) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// portFree reports whether port can be bound on 127.0.0.1.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// The signals Stop sends: fast shutdown, then immediate shutdown.
const (
	sigFastShutdown      = syscall.SIGINT
	sigImmediateShutdown = syscall.SIGQUIT
)
