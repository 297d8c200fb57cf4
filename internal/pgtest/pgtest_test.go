package pgtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func tableExists(t *testing.T, conn *pgx.Conn, table string) bool {
	t.Helper()
	var ok bool
	if err := conn.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func databaseGone(t *testing.T, name string) bool {
	t.Helper()
	conn := connect(t, ServerURL(t))
	ok, err := databaseExists(t.Context(), conn, name)
	if err != nil {
		t.Fatal(err)
	}
	return !ok
}

func TestNewDB_IsolatedAndMigrated(t *testing.T) {
	t.Parallel()
	a, b := connect(t, NewDB(t)), connect(t, NewDB(t))
	for _, conn := range []*pgx.Conn{a, b} {
		if !tableExists(t, conn, "hosts") {
			t.Fatalf("database %s has no table hosts", conn.Config().Database)
		}
	}
	if a.Config().Database == b.Config().Database {
		t.Fatalf("both calls returned database %s", a.Config().Database)
	}
	if _, err := a.Exec(t.Context(), "CREATE TABLE only_in_a (id int)"); err != nil {
		t.Fatal(err)
	}
	if tableExists(t, b, "only_in_a") {
		t.Error("a table made in one database shows up in the other")
	}
}

func TestNewDB_SessionTimeZone(t *testing.T) {
	t.Parallel()
	conn := connect(t, NewDB(t))
	var tz string
	if err := conn.QueryRow(t.Context(), "SHOW TimeZone").Scan(&tz); err != nil {
		t.Fatal(err)
	}
	if tz != TimeZone {
		t.Errorf("TimeZone = %q, want %q", tz, TimeZone)
	}
}

func TestNewDB_ParallelCallers(t *testing.T) {
	t.Parallel()
	for i := range 6 {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			t.Parallel()
			if conn := connect(t, NewDB(t)); !tableExists(t, conn, "hosts") {
				t.Error("no table hosts")
			}
		})
	}
}

func TestNewDB_DroppedWhenTestEnds(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("user", func(t *testing.T) {
		conn := connect(t, NewDB(t)) // its cleanup closes it before the drop
		name = conn.Config().Database
	})
	if !strings.HasPrefix(name, testDBPrefix) {
		t.Fatalf("database name %q lacks prefix %q", name, testDBPrefix)
	}
	if !databaseGone(t, name) {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestServerURL_CanCreateDatabases(t *testing.T) {
	t.Parallel()
	conn := connect(t, ServerURL(t))
	var ok bool
	if err := conn.QueryRow(t.Context(), "SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&ok); err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Error("the server URL's role cannot create databases")
	}
}

func TestTemplateName_StableAndValid(t *testing.T) {
	a, err := templateName()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := templateName()
	if a != b || !strings.HasPrefix(a, templatePrefix) || len(a) > 63 {
		t.Errorf("templateName() = %q then %q; want one stable name of at most 63 bytes", a, b)
	}
}

func TestWithDatabase(t *testing.T) {
	got, err := withDatabase("postgres://u:p@127.0.0.1:5432/test?sslmode=disable", "relay_t_1")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database != "relay_t_1" || cfg.RuntimeParams["timezone"] != TimeZone || cfg.TLSConfig != nil {
		t.Errorf("withDatabase = %q: database %q, timezone %q, tls %v", got, cfg.Database, cfg.RuntimeParams["timezone"], cfg.TLSConfig != nil)
	}
	if _, err := withDatabase("host=127.0.0.1 dbname=test", "x"); err == nil {
		t.Error("a keyword/value DSN was accepted; want an error that asks for a URL")
	}
}

// TestServerDir_PerRun: RELAY_TEST_PG_DIR gives a run (make test) its own
// server directory, so concurrent runs neither share nor stop one server;
// unset, every test process of the user shares one.
func TestServerDir_PerRun(t *testing.T) {
	t.Setenv(EnvDir, "")
	shared := serverDir()
	if !strings.HasPrefix(filepath.Base(shared), "relay-pgtest-") {
		t.Fatalf("shared dir %q", shared)
	}
	a, b := filepath.Join(t.TempDir(), "run-a"), filepath.Join(t.TempDir(), "run-b")
	t.Setenv(EnvDir, a)
	if got := serverDir(); got != a {
		t.Fatalf("serverDir() = %q, want %q", got, a)
	}
	t.Setenv(EnvDir, b)
	if got := serverDir(); got != b || got == shared {
		t.Fatalf("serverDir() = %q, want %q", got, b)
	}
}
