package embeddedpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// serverUserName is the system user created to run postgres when Relay runs
// as root and the machine has no suitable user.
const serverUserName = "relay-postgres"

// account is the unprivileged user that runs initdb and postgres when Relay
// runs as root. A nil *account means "this process's user".
type account struct {
	name     string
	uid, gid uint32
	groups   []uint32 // supplementary groups
}

func (a *account) String() string {
	if a != nil {
		return a.name
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return strconv.Itoa(os.Geteuid())
}

// serverAccount picks the user that runs the server: the owner of an existing
// cluster, else relay-postgres, else postgres, else a newly created
// relay-postgres.
func serverAccount(ctx context.Context, cluster string, logger *slog.Logger) (*account, error) {
	if fi, err := os.Stat(cluster); err == nil {
		if uid, gid, ok := fileOwner(fi); ok && uid != 0 {
			u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
			if err != nil {
				// The owner has no passwd entry (say, a rebuilt container): run as the ids.
				id := strconv.FormatUint(uint64(uid), 10)
				return &account{name: id, uid: uid, gid: gid}, nil
			}
			return accountOf(u)
		}
	}
	for _, name := range []string{serverUserName, "postgres"} {
		u, err := user.Lookup(name)
		if err == nil {
			return accountOf(u)
		}
		if !errors.As(err, new(user.UnknownUserError)) {
			return nil, fmt.Errorf("look up user %s: %w", name, err)
		}
	}
	if err := createSystemUser(ctx, serverUserName); err != nil {
		return nil, fmt.Errorf("postgres refuses to run as root and no unprivileged user could be made (%v); create a system user %s, run Relay as a non-root user, or set RELAY_DATABASE_URL", err, serverUserName)
	}
	logger.Info("created a system user to run postgres", "user", serverUserName)
	u, err := user.Lookup(serverUserName)
	if err != nil {
		return nil, fmt.Errorf("look up user %s: %w", serverUserName, err)
	}
	return accountOf(u)
}

func accountOf(u *user.User) (*account, error) {
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse uid of %s: %w", u.Username, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse gid of %s: %w", u.Username, err)
	}
	a := &account{name: u.Username, uid: uint32(uid), gid: uint32(gid)}
	ids, _ := u.GroupIds() // without them the user only loses group access
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil && uint32(g) != a.gid {
			a.groups = append(a.groups, uint32(g))
		}
	}
	return a, nil
}

// createSystemUser adds a system user without home or login shell, with
// useradd, or BusyBox's adduser where there is no useradd (Alpine).
func createSystemUser(ctx context.Context, name string) error {
	var cmd *exec.Cmd
	if path, err := exec.LookPath("useradd"); err == nil {
		cmd = exec.CommandContext(ctx, path, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name)
	} else if path, err := exec.LookPath("adduser"); err == nil {
		cmd = exec.CommandContext(ctx, path, "-S", "-D", "-H", "-s", "/sbin/nologin", name)
	} else {
		return errors.New("neither useradd nor adduser is installed")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("run %s: %w: %s", filepath.Base(cmd.Path), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// checkTraversable fails with one actionable line when acct cannot enter dir
// or one of its parents.
func checkTraversable(dir string, acct *account) error {
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check access to %s: %w", p, err)
		}
		if !mayEnter(fi, acct) {
			return fmt.Errorf("postgres cannot run as root, and the user %s that runs it cannot enter %s: allow it (chmod o+x %s), choose another RELAY_DATA_DIR, or set RELAY_DATABASE_URL", acct.name, p, p)
		}
		if filepath.Dir(p) == p {
			return nil
		}
	}
}

// mayEnter applies the permission bits of a directory to acct. (ACLs are not
// consulted; a directory they open up is reported as closed.)
func mayEnter(fi fs.FileInfo, acct *account) bool {
	uid, gid, ok := fileOwner(fi)
	if !ok {
		return true // cannot tell; let postgres report it
	}
	perm := fi.Mode().Perm()
	switch {
	case uid == acct.uid:
		return perm&0o100 != 0
	case gid == acct.gid || slices.Contains(acct.groups, gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
