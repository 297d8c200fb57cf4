package controlapi

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// The admin bearer is one credential among many: it may expire, it can be
// rotated without a restart (RELAY_ADMIN_TOKEN_FILE is re-read when it
// changes, and the token it held before is accepted for a grace period),
// and the audit log names which token acted.

// AdminTokenActor is the audit actor of an admin token: "admin-token:" and
// the first 8 hex digits of its SHA-256, enough to tell tokens apart,
// nothing to guess one from.
func AdminTokenActor(token string) string {
	h := sha256.Sum256([]byte(token))
	return AdminActor + ":" + hex.EncodeToString(h[:4])
}

// adminToken is one admin token and when it ends (zero: never).
type adminToken struct {
	value   string
	expires time.Time
}

// adminTokens is the admin bearer of this process.
type adminTokens struct {
	file  string
	grace time.Duration

	mu        sync.Mutex
	cur       adminToken // guarded by mu
	prev      adminToken // guarded by mu: the file's token before the last change
	prevUntil time.Time  // guarded by mu
	stamp     fileStamp  // guarded by mu: the file as last read
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func newAdminTokens(token string, expires time.Time, file string, grace time.Duration) *adminTokens {
	return &adminTokens{file: file, grace: grace, cur: adminToken{value: token, expires: expires}}
}

// match returns the actor of the presented token, or the 401 to answer.
func (a *adminTokens) match(presented string, now time.Time, log *slog.Logger) (string, error) {
	a.mu.Lock()
	if a.file != "" {
		a.reload(now, log)
	}
	cur, prev, prevUntil := a.cur, a.prev, a.prevUntil
	a.mu.Unlock()
	for i, t := range []adminToken{cur, prev} {
		if t.value == "" || subtle.ConstantTimeCompare([]byte(presented), []byte(t.value)) != 1 {
			continue
		}
		if i == 1 && !now.Before(prevUntil) {
			return "", unauthenticated("the admin token was rotated; use the new one")
		}
		if !t.expires.IsZero() && !now.Before(t.expires) {
			return "", unauthenticated("the admin token expired at " + t.expires.UTC().Format(time.RFC3339))
		}
		return AdminTokenActor(t.value), nil
	}
	return "", unauthenticated("the bearer token is not the admin token")
}

// reload re-reads the token file when it changed since the last read. A
// file that cannot be read or parsed keeps the token there was (and says
// so in the log, without the content). Called with mu held.
func (a *adminTokens) reload(now time.Time, log *slog.Logger) {
	fi, err := os.Stat(a.file)
	if err != nil {
		if a.stamp != (fileStamp{}) {
			log.Warn("admin token file unreadable; keeping the token it held", "file", a.file, "err", err)
			a.stamp = fileStamp{}
		}
		return
	}
	st := fileStamp{mod: fi.ModTime(), size: fi.Size()}
	if st == a.stamp {
		return
	}
	a.stamp = st
	b, err := os.ReadFile(a.file)
	if err != nil {
		log.Warn("admin token file unreadable; keeping the token it held", "file", a.file, "err", err)
		return
	}
	t, err := parseAdminTokenFile(b)
	if err != nil {
		log.Warn("admin token file refused; keeping the token it held", "file", a.file, "err", err)
		return
	}
	if t.value == a.cur.value {
		a.cur = t
		return
	}
	if a.cur.value != "" {
		a.prev, a.prevUntil = a.cur, now.Add(a.grace)
		log.Info("admin token rotated", "file", a.file, "new", AdminTokenActor(t.value), "previous", AdminTokenActor(a.cur.value), "previous_until", a.prevUntil)
	}
	a.cur = t
}

// parseAdminTokenFile reads a token file: the token on the first line (at
// least 16 characters, no spaces), optionally its expiry as an RFC 3339
// time on the second. Errors never quote the token.
func parseAdminTokenFile(b []byte) (adminToken, error) {
	if len(b) > 4096 {
		return adminToken{}, errors.New("parse admin token file: larger than 4 KiB")
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 2 {
		return adminToken{}, errors.New("parse admin token file: want the token and, optionally, an expiry line")
	}
	tok := string(bytes.TrimSpace(lines[0]))
	if len(tok) < 16 || bytes.ContainsAny([]byte(tok), " \t\r\x00") {
		return adminToken{}, errors.New("parse admin token file: the token needs at least 16 characters and no spaces")
	}
	t := adminToken{value: tok}
	if len(lines) == 2 {
		exp, err := time.Parse(time.RFC3339, string(bytes.TrimSpace(lines[1])))
		if err != nil {
			return adminToken{}, fmt.Errorf("parse admin token file: the second line is not an RFC 3339 time: %w", err)
		}
		t.expires = exp
	}
	return t, nil
}
