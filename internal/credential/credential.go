// Package credential mints and hashes the credentials callers present to the
// inference plane: relay keys (sk-wr-…, long-lived) and inference tokens
// (short-lived). Only hashes are stored; the plaintext exists once, in the
// response that mints it.
package credential

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
)

// Prefixes of minted credentials.
const (
	RelayKeyPrefix       = "sk-wr-"
	InferenceTokenPrefix = "rt-wr-"
	// DisplayLen is how much of a credential is kept for display: the prefix
	// and a few characters, not enough to guess the rest.
	DisplayLen = 12
)

// Minted is a new credential: its plaintext (show once), hash and display prefix.
type Minted struct {
	Plaintext     string
	Hash          [32]byte
	DisplayPrefix string
}

func mint(prefix string) Minted {
	b := make([]byte, 48)
	rand.Read(b) // crypto/rand.Read never fails on supported platforms
	p := prefix + base64.RawURLEncoding.EncodeToString(b)
	return Minted{Plaintext: p, Hash: Hash(p), DisplayPrefix: p[:DisplayLen]}
}

// NewRelayKey mints "sk-wr-" + 48 random bytes, base64url.
func NewRelayKey() Minted { return mint(RelayKeyPrefix) }

// NewInferenceToken mints a token in the same way with its own prefix.
func NewInferenceToken() Minted { return mint(InferenceTokenPrefix) }

// Hash is the SHA-256 under which a credential is stored and looked up.
func Hash(plaintext string) [32]byte { return sha256.Sum256([]byte(plaintext)) }
