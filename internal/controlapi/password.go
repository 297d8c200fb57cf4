package controlapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
)

// Passwords are hashed with argon2id and stored in the PHC string format,
// $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash>, so the
// parameters can be raised later without invalidating stored hashes. The
// defaults are OWASP's minimum for argon2id (19 MiB, 2 passes, 1 lane).
const (
	argonMemory  = 19 * 1024
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

// hashPassword returns the PHC string of password under a fresh salt.
func hashPassword(password string) string {
	salt := make([]byte, argonSaltLen)
	rand.Read(salt) // crypto/rand.Read never fails on supported platforms
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

var errBadHash = errors.New("stored password hash is not argon2id")

// passwordChecker runs the argon2id of sign-ins under a cap on how many run
// at once: each takes its memory parameter (19 MiB) and tens of milliseconds
// of CPU, so unbounded concurrent sign-ins exhaust memory and starve the
// inference plane. A check that cannot start within wait is refused with
// errSignInsBusy.
type passwordChecker struct {
	slots   chan struct{}
	wait    time.Duration
	waiting atomic.Int32 // checks waiting for a slot
	// idKey is argon2.IDKey; tests count the calls in flight.
	idKey func(password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte
}

func newPasswordChecker(n int, wait time.Duration) *passwordChecker {
	return &passwordChecker{slots: make(chan struct{}, n), wait: wait, idKey: argon2.IDKey}
}

// errSignInsBusy answers a sign-in that found every hashing slot taken.
var errSignInsBusy = &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
	message: "too many sign-ins at once; try again shortly", retryAfter: 1}

// check reports whether password matches the PHC string encoded, once a
// hashing slot is free.
func (c *passwordChecker) check(ctx context.Context, encoded, password string) (bool, error) {
	if err := c.acquire(ctx); err != nil {
		return false, err
	}
	defer func() { <-c.slots }()
	return checkPassword(c.idKey, encoded, password)
}

// acquire takes a hashing slot, waiting up to c.wait for one.
func (c *passwordChecker) acquire(ctx context.Context) error {
	select {
	case c.slots <- struct{}{}:
		return nil
	default:
	}
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	t := time.NewTimer(c.wait)
	defer t.Stop()
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-t.C:
		return errSignInsBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

// checkPassword reports whether password matches the PHC string encoded,
// hashing with idKey.
func checkPassword(idKey func([]byte, []byte, uint32, uint32, uint8, uint32) []byte, encoded, password string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	var mem, passes uint32
	var lanes uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &passes, &lanes); err != nil || mem == 0 || passes == 0 || lanes == 0 {
		return false, errBadHash
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	got := idKey([]byte(password), salt, passes, mem, lanes, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// dummyHash is checked against when a sign-in names no usable user, so that
// the answer takes as long as for a wrong password. Made on first use, not
// when the package loads.
var dummyHash = sync.OnceValue(func() string { return hashPassword("relay: no such user") })
