package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"
)

// errNoBinaries means no suitable server binaries are installed.
var errNoBinaries = errors.New("no postgres server binaries found")

// binaries is a directory holding initdb and postgres.
type binaries struct {
	dir     string
	version string // "15.20"
	major   string // "15"; "9.6" before PostgreSQL 10
}

func (b binaries) path(name string) string { return filepath.Join(b.dir, name) }

// finder looks for installed server binaries.
type finder struct {
	path  string   // a $PATH-style list searched for postgres, initdb and pg_config
	globs []string // patterns of bin directories; within one, the highest version wins
}

func defaultFinder(l layout) finder {
	return finder{
		path: os.Getenv("PATH"),
		globs: []string{
			"/usr/lib/postgresql/*/bin",             // Debian, Ubuntu
			filepath.Join(l.binaries(), "*", "bin"), // downloaded by an earlier start
		},
	}
}

// find returns the first binaries in $PATH, pg_config --bindir and the globs,
// in that order, whose major version is major ("" accepts any).
func (f finder) find(ctx context.Context, major string) (binaries, error) {
	var found []string
	for _, dir := range f.candidates(ctx) {
		b, err := serverVersion(ctx, dir)
		if err != nil {
			continue
		}
		if major == "" || b.major == major {
			return b, nil
		}
		found = append(found, b.version+" in "+dir)
	}
	where := "$PATH, pg_config --bindir, " + strings.Join(f.globs, ", ")
	if major != "" && len(found) > 0 {
		return binaries{}, fmt.Errorf("%w for PostgreSQL %s, which created the cluster, in %s (found %s)", errNoBinaries, major, where, strings.Join(found, ", "))
	}
	return binaries{}, fmt.Errorf("%w in %s", errNoBinaries, where)
}

// candidates lists directories that hold both initdb and postgres, without
// duplicates, in search order.
func (f finder) candidates(ctx context.Context) []string {
	var dirs []string
	add := func(dir string) {
		if dir == "" || !executable(filepath.Join(dir, "postgres")) || !executable(filepath.Join(dir, "initdb")) {
			return
		}
		// /usr/local/bin/postgres may link to /usr/lib/postgresql/15/bin;
		// initdb finds postgres next to its own resolved path, so resolve too.
		if resolved, err := filepath.EvalSymlinks(filepath.Join(dir, "postgres")); err == nil {
			dir = filepath.Dir(resolved)
		}
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range filepath.SplitList(f.path) {
		if dir != "" && filepath.IsAbs(dir) {
			add(dir)
		}
	}
	for _, dir := range filepath.SplitList(f.path) {
		if pgConfig := filepath.Join(dir, "pg_config"); filepath.IsAbs(dir) && executable(pgConfig) {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output()
			cancel()
			if err == nil {
				add(strings.TrimSpace(string(out)))
			}
			break
		}
	}
	for _, pattern := range f.globs {
		matches, _ := filepath.Glob(pattern)
		slices.SortFunc(matches, func(a, b string) int { return compareVersions(b, a) })
		for _, dir := range matches {
			add(dir)
		}
	}
	return dirs
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)(?:\.(\d+))?`)

// serverVersion asks dir/postgres for its version. postgres answers --version
// even as root.
func serverVersion(ctx context.Context, dir string) (binaries, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return binaries{}, fmt.Errorf("run postgres --version: %w", err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return binaries{}, fmt.Errorf("parse postgres version %q", strings.TrimSpace(string(out)))
	}
	b := binaries{dir: dir, version: m[1], major: m[1]}
	if m[2] != "" {
		b.version += "." + m[2]
	}
	if n, _ := strconv.Atoi(m[1]); n < 10 {
		b.major = b.version
	}
	return b, nil
}

// compareVersions orders strings by the numbers in them, so that
// /usr/lib/postgresql/10/bin sorts after /usr/lib/postgresql/9.6/bin.
func compareVersions(a, b string) int {
	na, nb := numbers(a), numbers(b)
	for i := 0; i < len(na) && i < len(nb); i++ {
		if na[i] != nb[i] {
			return na[i] - nb[i]
		}
	}
	if c := len(na) - len(nb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

var digitsRE = regexp.MustCompile(`\d+`)

func numbers(s string) []int {
	var ns []int
	for _, d := range digitsRE.FindAllString(s, -1) {
		n, _ := strconv.Atoi(d)
		ns = append(ns, n)
	}
	return ns
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// libraryVersion maps a major version to one that embedded-postgres can
// download; "" means the library's default.
func libraryVersion(major string) (embeddedpostgres.PostgresVersion, bool) {
	switch major {
	case "", "18":
		return embeddedpostgres.V18, true
	case "17":
		return embeddedpostgres.V17, true
	case "16":
		return embeddedpostgres.V16, true
	case "15":
		return embeddedpostgres.V15, true
	case "14":
		return embeddedpostgres.V14, true
	case "13":
		return embeddedpostgres.V13, true
	case "12":
		return embeddedpostgres.V12, true
	}
	return "", false
}

// downloadBinaries fetches server binaries for major ("" for the newest) into
// DataDir/postgres-binaries with embedded-postgres, which caches the archive
// in cacheDir ("" for its default, ~/.embedded-postgres-go).
//
// The library has no "download only" call, so this runs its Start against a
// placeholder cluster that holds only PG_VERSION: Start downloads and extracts
// the binaries, skips initdb for the "existing" cluster, and then fails to
// start a server on it (or refuses to run as root). What matters is whether
// the binaries arrived; everything after that (root, ports, stale pid files,
// the parent-death signal) is then handled here exactly as for installed ones.
func downloadBinaries(ctx context.Context, l layout, major, cacheDir string, logger *slog.Logger) (binaries, error) {
	v, ok := libraryVersion(major)
	if !ok {
		return binaries{}, fmt.Errorf("download postgres binaries: PostgreSQL %s is not available for download", major)
	}
	target := filepath.Join(l.binaries(), string(v))
	if executable(filepath.Join(target, "bin", "postgres")) {
		return serverVersion(ctx, filepath.Join(target, "bin"))
	}
	work := filepath.Join(l.binaries(), ".download")
	if err := os.RemoveAll(work); err != nil {
		return binaries{}, fmt.Errorf("clean download directory: %w", err)
	}
	defer os.RemoveAll(work)
	placeholder := filepath.Join(work, "data")
	if err := os.MkdirAll(placeholder, 0o755); err != nil {
		return binaries{}, fmt.Errorf("create download directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(placeholder, "PG_VERSION"), []byte(strings.SplitN(string(v), ".", 2)[0]+"\n"), 0o644); err != nil {
		return binaries{}, fmt.Errorf("create download directory: %w", err)
	}
	port, err := choosePort(0) // the library insists on a free port before it does anything
	if err != nil {
		return binaries{}, err
	}
	extract := filepath.Join(work, "extract")
	cfg := embeddedpostgres.DefaultConfig().
		Version(v).
		Port(uint32(port)).
		RuntimePath(filepath.Join(work, "runtime")).
		BinariesPath(extract).
		DataPath(placeholder).
		StartTimeout(10 * time.Second).
		Logger(io.Discard)
	if cacheDir != "" {
		cfg = cfg.CachePath(cacheDir)
	}
	db := embeddedpostgres.NewDatabase(cfg)
	done := make(chan error, 1)
	go func() { done <- db.Start() }()
	var startErr error
	select {
	case startErr = <-done:
	case <-ctx.Done():
		return binaries{}, fmt.Errorf("download postgres binaries: %w", ctx.Err())
	}
	if startErr == nil {
		_ = db.Stop() // not expected: it ran something on the placeholder
	}
	if !executable(filepath.Join(extract, "bin", "postgres")) {
		if startErr == nil {
			startErr = errors.New("the archive holds no bin/postgres")
		}
		return binaries{}, fmt.Errorf("download postgres binaries: %w", startErr)
	}
	if err := os.Rename(extract, target); err != nil {
		return binaries{}, fmt.Errorf("move downloaded binaries into place: %w", err)
	}
	logger.Info("downloaded postgres binaries", "version", string(v), "dir", target)
	return serverVersion(ctx, filepath.Join(target, "bin"))
}
