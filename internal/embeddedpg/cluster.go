package embeddedpg

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// state is what Start keeps between runs in DataDir/postgres.json.
type state struct {
	Port     int    `json:"port,omitempty"`
	Password string `json:"password,omitempty"` // the superuser's, for scram-sha-256
}

func readState(path string) (state, error) {
	var st state
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read postgres state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("parse postgres state %s: %w", path, err)
	}
	return st, nil
}

// writeState replaces the state file atomically, readable by this user only.
func writeState(path string, st state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode postgres state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write postgres state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write postgres state: %w", err)
	}
	return nil
}

// clusterVersion returns the major version in the cluster's PG_VERSION, or ""
// when the cluster has not been created.
func clusterVersion(cluster string) (string, error) {
	b, err := os.ReadFile(filepath.Join(cluster, "PG_VERSION"))
	if errors.Is(err, os.ErrNotExist) {
		if _, statErr := os.Stat(cluster); statErr == nil {
			return "", fmt.Errorf("%s exists but is not a postgres cluster (no PG_VERSION); move it away", cluster)
		}
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read cluster version: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// initCluster runs initdb into a scratch directory and renames it into place,
// so an interrupted initdb never leaves a half-made cluster behind.
func initCluster(ctx context.Context, bin binaries, l layout, acct *account, password string, logf *os.File) error {
	tmp := l.cluster() + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("remove leftover initdb directory: %w", err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create cluster directory: %w", err)
	}
	pwfile := filepath.Join(l.dir, "postgres.pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return fmt.Errorf("write password file: %w", err)
	}
	defer os.Remove(pwfile)
	if acct != nil {
		for _, p := range []string{tmp, pwfile} {
			if err := os.Chown(p, int(acct.uid), int(acct.gid)); err != nil {
				return fmt.Errorf("hand %s to user %s: %w", p, acct.name, err)
			}
		}
	}
	cmd := newCommand(bin.path("initdb"), []string{
		"-D", tmp,
		"-U", superuser,
		"--pwfile=" + pwfile,
		"--auth=scram-sha-256", // also for 127.0.0.1: other local users must not get in
		"--encoding=UTF8",
		"--locale=C", // present everywhere, and no collation-version drift across libc upgrades
	}, l.dir, acct, logf)
	cmd.SysProcAttr = sysProcAttr(acct, false) // initdb, too, must not outlive Relay
	offset := fileSize(logf)
	if err := runContext(ctx, cmd); err != nil {
		return fmt.Errorf("run initdb: %w (%s: %s)", err, l.logFile(), logTail(l.logFile(), offset))
	}
	if err := os.Rename(tmp, l.cluster()); err != nil {
		return fmt.Errorf("move cluster into place: %w", err)
	}
	return nil
}

// newCommand prepares a postgres program to run as acct in dir with output
// to logf.
func newCommand(name string, args []string, dir string, acct *account, logf *os.File) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir // the server's user may not be able to enter our working directory
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if acct != nil {
		cmd.Env = append(cmd.Env, "HOME="+dir, "USER="+acct.name, "LOGNAME="+acct.name)
	}
	return cmd
}

// runContext runs cmd and kills it when ctx ends.
func runContext(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}

// pidFile is what postmaster.pid says about a server.
type pidFile struct {
	pid    int
	port   int
	status string // "starting", "ready", "stopping", "standby"
}

// readPidFile parses postmaster.pid: line 1 is the pid, line 4 the port,
// line 8 the status (PostgreSQL 10 and later).
func readPidFile(path string) (pidFile, error) {
	var pf pidFile
	b, err := os.ReadFile(path)
	if err != nil {
		return pf, fmt.Errorf("read postmaster.pid: %w", err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		// A crash while the server was writing it; nothing can be running on it.
		return pf, nil
	}
	pf.pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	pf.port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	if len(lines) >= 8 {
		pf.status = strings.TrimSpace(lines[7])
	}
	return pf, nil
}

// openLog opens the server log for appending, rotating it to postgres.log.1
// when it has grown large.
func openLog(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open postgres log: %w", err)
	}
	return f, nil
}

func fileSize(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logTail returns the last few lines written to the log after offset, joined
// into one line.
func logTail(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const maxTail = 4 << 10
	if fi, err := f.Stat(); err == nil && fi.Size()-offset > maxTail {
		offset = fi.Size() - maxTail
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, _ := io.ReadAll(f)
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}
