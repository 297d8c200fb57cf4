package ratelimit

import (
	"encoding/hex"
	"strconv"
	"strings"
	"sync"

	"github.com/relay-llm/relay/internal/snapshot"
)

// keyKind says which Redis key a keyID names.
type keyKind uint8

const (
	keyPolicyWindow keyKind = iota // {pol:<policy>}:<rate limit>:<rule>:<window s>
	keyPolicyLease                 // {pol:<policy>}:<rate limit>:<rule>
	keyTierWindow                  // {key:<host key>}:<rate limit>:<rule>:<window s>
	keyTierLease                   // {key:<host key>}:<rate limit>:<rule>
	keyPace                        // {key:<host key>}:pace
	keyBudget                      // {budget:<budget>}:<period>
)

// keyID is what a counter's key and tag are made of, short of a
// principal: the same keyID always makes the same strings.
type keyID struct {
	kind      keyKind
	owner     snapshot.ID // policy, host key or budget
	rl, rule  snapshot.ID
	scope     snapshot.ID // admission.Scope.ID; uuid.Nil for a policy's own and its per-model limits
	windowSec int64       // window rules: the window; budgets: the period (YYYYMM or YYYYMMDD)
}

// counterKey is a counter's key (without a principal) and its tag.
type counterKey struct{ key, tag string }

func (id keyID) build() counterKey {
	var tag string
	switch id.kind {
	case keyPolicyWindow, keyPolicyLease:
		tag = policyTag(id.owner)
	case keyBudget:
		tag = "budget:" + id.owner.String()
		return counterKey{key: tag + ":" + strconv.FormatInt(id.windowSec, 10), tag: tag}
	default:
		tag = tierTag(id.owner)
	}
	if id.kind == keyPace {
		return counterKey{key: tag + ":pace", tag: tag}
	}
	key := tag + ":" + id.rl.String()
	if id.scope != (snapshot.ID{}) {
		key += "/" + id.scope.String()
	}
	key += ":" + id.rule.String()
	if id.kind == keyPolicyWindow || id.kind == keyTierWindow {
		key += ":" + strconv.FormatInt(id.windowSec, 10)
	}
	return counterKey{key: key, tag: tag}
}

// keyCache holds the counter keys made for one snapshot, so a request
// does not build its key strings anew.
type keyCache struct {
	snap *snapshot.Snapshot
	mu   sync.RWMutex
	m    map[keyID]counterKey
}

// counterKey returns id's key and tag, from the cache of snap when it has
// them. The cache follows the newest snapshot seen; a request on an older
// one builds its keys without caching them.
func (l *Limiter) counterKey(snap *snapshot.Snapshot, id keyID) counterKey {
	c := l.keys.Load()
	if c == nil || c.snap != snap {
		if snap == nil || (c != nil && snap.Version() < c.snap.Version()) {
			return id.build()
		}
		n := &keyCache{snap: snap, m: make(map[keyID]counterKey)}
		if l.keys.CompareAndSwap(c, n) {
			c = n
		} else if c = l.keys.Load(); c.snap != snap {
			return id.build()
		}
	}
	c.mu.RLock()
	k, ok := c.m[id]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = id.build()
	c.mu.Lock()
	c.m[id] = k
	c.mu.Unlock()
	return k
}

// withPrincipal is key + ":" + the principal, in one allocation.
func withPrincipal(key string, principal snapshot.ID) string {
	var u [36]byte
	hex.Encode(u[0:8], principal[0:4])
	u[8] = '-'
	hex.Encode(u[9:13], principal[4:6])
	u[13] = '-'
	hex.Encode(u[14:18], principal[6:8])
	u[18] = '-'
	hex.Encode(u[19:23], principal[8:10])
	u[23] = '-'
	hex.Encode(u[24:], principal[10:])
	var b strings.Builder
	b.Grow(len(key) + 1 + len(u))
	b.WriteString(key)
	b.WriteByte(':')
	b.Write(u[:])
	return b.String()
}
