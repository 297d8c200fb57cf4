// Package pgtest gives every test its own PostgreSQL database with Relay's
// schema, cloned from a template database that is migrated once per
// migration set. It owns test databases and templates on the test server and
// nothing in Relay's runtime: only tests import it.
//
// The server is RELAY_TEST_DATABASE_URL (a postgres:// URL of any database
// on it, as a user that may create databases; CI sets it). When that is
// unset, pgtest runs an embedded server (internal/embeddedpg) in
// os.TempDir()/relay-pgtest-<uid>, shared by every test process: `go test
// ./...` runs packages in parallel processes, and embeddedpg's lock on the
// directory lets the first one start the server while the others wait and
// reuse it. The server is detached and outlives each test process, so the
// next package starts in milliseconds. RELAY_TEST_PG_DIR names another
// directory: `make test` gives each run its own (so two runs at once never
// share a server, nor stop the other's) and stops it when the suite ends
// (make test-cleanup). It is tuned for speed, not durability
// (fsync=off), so after a machine crash delete the directory. To stop it:
//
//	kill -INT $(head -1 "${TMPDIR:-/tmp}/relay-pgtest-$(id -u)/postgres/postmaster.pid")
//
// The template is named after a hash of the files in migrations.FS, so a
// changed migration gets a fresh template; creators on several processes are
// serialised by an advisory lock on the server. Test databases are named
// relay_t_<unix time>_<random>, dropped when the test ends, and swept by a
// later NewDB if a killed test process left them behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/relay-llm/relay/internal/embeddedpg"
	"github.com/relay-llm/relay/internal/migrate"
	"github.com/relay-llm/relay/migrations"
)

const (
	// EnvURL names the variable that points pgtest at a running server.
	EnvURL = "RELAY_TEST_DATABASE_URL"
	// EnvDir names the variable that puts the embedded server in a
	// directory of the caller's choosing (one per `make test` run).
	EnvDir = "RELAY_TEST_PG_DIR"

	// TimeZone is the session time zone of every URL NewDB returns: not UTC,
	// and not a whole number of hours away from it, so that code which
	// confuses local and UTC time fails.
	TimeZone = "Asia/Kolkata"

	templatePrefix = "relay_tpl_"
	testDBPrefix   = "relay_t_"

	// templateLockKey is the pg_advisory_lock key held while a template is
	// made ("relaytpl" in ASCII).
	templateLockKey = 0x72656c617974706c
	// templateComment prefixes the creation time stored as a template's comment.
	templateComment = "relay pgtest template, created "
	// staleTemplateAge is how old another migration set's template must be
	// before a new template replaces it; younger ones may serve a concurrent
	// run from another checkout.
	staleTemplateAge = time.Hour
	// leakedAge is how old a test database must be before NewDB drops it as
	// left behind by a killed test process.
	leakedAge = 6 * time.Hour

	timeout = 2 * time.Minute
)

// ServerURL returns the admin URL of the test server (for tests that create
// databases themselves or need pg_terminate_backend).
func ServerURL(t testing.TB) string {
	t.Helper()
	u, _, err := serverURL(t.Context())
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// serverURL returns the server's URL and whether it is pgtest's own
// embedded server.
func serverURL(ctx context.Context) (u string, embedded bool, err error) {
	if u := os.Getenv(EnvURL); u != "" {
		return u, false, nil
	}
	dir := serverDir()
	if err := sharedDir(dir); err != nil {
		return "", false, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pg, err := embeddedpg.Start(ctx, embeddedpg.Config{
		DataDir: dir,
		Logger:  slog.New(slog.DiscardHandler), // it must not log into a test that ended
		Detach:  true,
		Settings: map[string]string{
			"fsync":              "off",
			"synchronous_commit": "off",
			"full_page_writes":   "off",
			"max_connections":    "300", // parallel test processes, each with pools
		},
	})
	if err != nil {
		return "", false, fmt.Errorf("start shared test postgres in %s (or set %s): %w", dir, EnvURL, err)
	}
	return pg.URL(), true, nil // never stopped: other test processes use it
}

// serverDir is where the embedded server lives: RELAY_TEST_PG_DIR, else
// the directory every test process of this user shares.
func serverDir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), "relay-pgtest-"+strconv.Itoa(os.Geteuid()))
}

// sharedDir makes dir, or checks that the existing one is ours: it sits in a
// world-writable temp dir, where another user could have planted it.
func sharedDir(dir string) error {
	mode := os.FileMode(0o700)
	if os.Geteuid() == 0 {
		mode = 0o711 // embeddedpg runs the server as an unprivileged user
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create shared test directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("check shared test directory: %w", err)
	}
	if !fi.IsDir() || !ownedByMe(fi) || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is not a directory that only this user can write; remove it or set %s", dir, EnvURL)
	}
	return nil
}

// NewDB returns the URL of a new database cloned from a migrated template;
// it is dropped when the test ends. The URL sets the session time zone to
// TimeZone.
func NewDB(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	server, embedded, err := serverURL(ctx)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	name, err := createDB(ctx, server, embedded)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := dropDB(ctx, server, name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	u, err := withDatabase(server, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// createDB clones the current template into a new database and returns its
// name. fileCopy copies the template's files instead of writing them through
// the WAL: about twice as fast on the embedded server, which runs with
// fsync=off, and no faster on a durable one.
func createDB(ctx context.Context, server string, fileCopy bool) (string, error) {
	tpl, err := templateName()
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(context.Background())
	sweepLeaked(ctx, conn)
	strategy := ""
	if fileCopy && serverMajor(conn) >= 15 { // STRATEGY is new in 15; before, it always copied files
		strategy = " STRATEGY FILE_COPY"
	}

	name := fmt.Sprintf("%s%d_%s", testDBPrefix, time.Now().Unix(), randomHex(6))
	for attempt := 1; ; attempt++ {
		if err := ensureTemplate(ctx, conn, server, tpl); err != nil {
			return "", err
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(tpl)+strategy)
		// A concurrent run with other migrations may have dropped the
		// template between the check and the copy: make it again, once.
		if pgCode(err) == "3D000" && attempt == 1 { // 3D000: invalid_catalog_name
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create test database: %w", err)
		}
		return name, nil
	}
}

// dropDB drops a test database, ending its sessions.
func dropDB(ctx context.Context, server, name string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop test database %s: %w", name, err)
	}
	return nil
}

// templateName is relay_tpl_ and a hash of the migration files' names and
// contents.
func templateName() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return templatePrefix + hex.EncodeToString(h.Sum(nil)[:8]), nil
}

// ensureTemplate makes the template tpl unless it exists. It is built under a
// temporary name and renamed when complete, so its existence means it is
// usable; it allows no connections, because CREATE DATABASE … TEMPLATE fails
// while anyone is connected to the template.
func ensureTemplate(ctx context.Context, conn *pgx.Conn, server, tpl string) error {
	if ok, err := databaseExists(ctx, conn, tpl); err != nil || ok {
		return err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(templateLockKey)); err != nil {
		return fmt.Errorf("lock template creation: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", int64(templateLockKey))
	if ok, err := databaseExists(ctx, conn, tpl); err != nil || ok {
		return err // made by another process while we waited
	}

	building := tpl + "_new"
	steps := []string{
		"DROP DATABASE IF EXISTS " + ident(building) + " WITH (FORCE)", // left by a creator that died
		"CREATE DATABASE " + ident(building) + " TEMPLATE template0 ENCODING 'UTF8'",
	}
	for _, sql := range steps {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("create template: %w", err)
		}
	}
	buildURL, err := withDatabase(server, building)
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, buildURL)
	if err != nil {
		return fmt.Errorf("connect to template: %w", err)
	}
	err = migrate.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	steps = []string{
		"ALTER DATABASE " + ident(building) + " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false",
		"COMMENT ON DATABASE " + ident(building) + " IS " + literal(templateComment+time.Now().UTC().Format(time.RFC3339)),
		"ALTER DATABASE " + ident(building) + " RENAME TO " + ident(tpl),
	}
	for _, sql := range steps {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("finish template: %w", err)
		}
	}
	dropStaleTemplates(ctx, conn, tpl)
	return nil
}

// dropStaleTemplates drops other migration sets' templates that are older
// than staleTemplateAge, and unfinished ones (the caller holds the lock that
// every creator holds, so none is being built). Failures only cost disk.
func dropStaleTemplates(ctx context.Context, conn *pgx.Conn, keep string) {
	rows, err := conn.Query(ctx, `
		SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '')
		FROM pg_database
		WHERE datname LIKE 'relay\_tpl\_%' AND datname <> $1`, keep)
	if err != nil {
		return
	}
	type tplRow struct{ name, comment string }
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tplRow])
	if err != nil {
		return
	}
	for _, r := range list {
		created, err := time.Parse(time.RFC3339, strings.TrimPrefix(r.comment, templateComment))
		if err == nil && time.Since(created) < staleTemplateAge && !strings.HasSuffix(r.name, "_new") {
			continue
		}
		_, _ = conn.Exec(ctx, "ALTER DATABASE "+ident(r.name)+" WITH IS_TEMPLATE false")
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(r.name)+" WITH (FORCE)")
	}
}

// sweepLeaked drops test databases older than leakedAge: their test process
// was killed before its cleanup ran. Failures only cost disk.
func sweepLeaked(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'relay\_t\_%'`)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range names {
		stamp, _, _ := strings.Cut(strings.TrimPrefix(name, testDBPrefix), "_")
		unix, err := strconv.ParseInt(stamp, 10, 64)
		if err != nil || time.Since(time.Unix(unix, 0)) < leakedAge {
			continue
		}
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	}
}

func databaseExists(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	var ok bool
	err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("look up database %s: %w", name, err)
	}
	return ok, nil
}

// withDatabase returns server with its database replaced by name and the
// session time zone set to TimeZone.
func withDatabase(server, name string) (string, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("%s must be a postgres:// URL", EnvURL)
	}
	u.Path = "/" + name
	u.RawPath = ""
	q := u.Query()
	q.Set("timezone", TimeZone)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// serverMajor returns the server's major version, 0 if unknown.
func serverMajor(conn *pgx.Conn) int {
	v := conn.PgConn().ParameterStatus("server_version") // "15.20 (Debian …)", "17devel"
	end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(v)
	}
	n, _ := strconv.Atoi(v[:end])
	return n
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}
