package controlapi

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

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
	rand.Read(salt) //nolint:errcheck // crypto/rand.Read never fails on supported platforms
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

var errBadHash = errors.New("stored password hash is not argon2id")

// checkPassword reports whether password matches the PHC string encoded.
func checkPassword(encoded, password string) (bool, error) {
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
	got := argon2.IDKey([]byte(password), salt, passes, mem, lanes, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// dummyHash is checked against when a sign-in names no usable user, so that
// the answer takes as long as for a wrong password. Made on first use, not
// when the package loads.
var dummyHash = sync.OnceValue(func() string { return hashPassword("relay: no such user") })
