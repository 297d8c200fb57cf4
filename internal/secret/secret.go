// Package secret seals and opens host keys with AES-256-GCM under the master
// key (RELAY_MASTER_KEY) and resolves "env:NAME" references. It owns the only
// code that turns stored credentials into plaintext; it never logs.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the master key length: 32 bytes, AES-256.
const KeySize = 32

// ErrNoMasterKey is returned when a sealed value must be opened or made without a master key.
var ErrNoMasterKey = errors.New("no master key configured")

// Box seals and opens values under one master key.
type Box struct {
	aead     cipher.AEAD   // nil without a master key
	previous []cipher.AEAD // older master keys, tried by Open after aead (key rotation)
	refs     EnvRefs       // which variables env: references may name
}

// WithEnvRefs returns a copy of b that resolves and accepts only the
// env: references r allows.
func (b *Box) WithEnvRefs(r EnvRefs) *Box {
	c := *b
	c.refs = r
	return &c
}

// CheckRef returns nil when a host key may be stored with the reference
// ref; otherwise an error that names the variable and why not.
func (b *Box) CheckRef(ref string) error {
	_, err := b.refs.ParseRef(ref)
	return err
}

// NewBox makes a Box from a 32-byte key; a nil key makes a Box that can only
// resolve environment references.
func NewBox(key []byte) (*Box, error) { return NewRotatingBox(key) }

// NewRotatingBox makes a Box that seals under key and opens values sealed
// under key or any of previous: pods run with both during a master key
// rotation, so no host key becomes unreadable while `relay
// rotate-master-key` reseals them.
func NewRotatingBox(key []byte, previous ...[]byte) (*Box, error) {
	if key == nil {
		return &Box{}, nil
	}
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	b := &Box{aead: aead}
	for _, p := range previous {
		a, err := newAEAD(p)
		if err != nil {
			return nil, fmt.Errorf("previous %w", err)
		}
		b.previous = append(b.previous, a)
	}
	return b, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("master key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("create cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("create gcm: %w", err)
	}
	return aead, nil
}

// ParseKey decodes a base64 (standard or URL alphabet, padded or not) master key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("decodes to %d bytes, want %d", len(b), KeySize)
			}
			return b, nil
		}
	}
	return nil, errors.New("not valid base64")
}

// NewKey returns a fresh random master key, base64-encoded.
func NewKey() string {
	b := make([]byte, KeySize)
	rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return base64.StdEncoding.EncodeToString(b)
}

// Seal encrypts plaintext; the result is nonce || ciphertext.
func (b *Box) Seal(plaintext string) ([]byte, error) {
	if b.aead == nil {
		return nil, ErrNoMasterKey
	}
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	rand.Read(nonce) // see NewKey
	return b.aead.Seal(nonce, nonce, []byte(plaintext), nil), nil
}

// Open decrypts a value made by Seal.
func (b *Box) Open(sealed []byte) (string, error) {
	if b.aead == nil {
		return "", ErrNoMasterKey
	}
	n := b.aead.NonceSize()
	if len(sealed) < n+b.aead.Overhead() {
		return "", errors.New("open secret: ciphertext too short")
	}
	for _, a := range append([]cipher.AEAD{b.aead}, b.previous...) {
		if pt, err := a.Open(nil, sealed[:n], sealed[n:], nil); err == nil {
			return string(pt), nil
		}
	}
	return "", errors.New("open secret: wrong master key or corrupted value")
}

// Resolve returns the plaintext of a host key stored either as an "env:NAME"
// reference (looked up with getenv) or as a sealed value. Errors name the
// variable or the cause, never the value. A reference the rule refuses
// (one stored before the rule, or before the operator narrowed it) is not
// looked up at all.
func (b *Box) Resolve(ref *string, sealed []byte, getenv func(string) string) (string, error) {
	if ref != nil {
		name, err := b.refs.ParseRef(*ref)
		if err != nil {
			return "", err
		}
		v := getenv(name)
		if v == "" {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		return v, nil
	}
	if len(sealed) == 0 {
		return "", errors.New("host key has no secret")
	}
	return b.Open(sealed)
}
