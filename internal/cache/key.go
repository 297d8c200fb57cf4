package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/snapshot"
)

// Scope is who shares an entry. Project is always part of it, so two
// projects never share an entry whatever the policy says.
type Scope struct {
	Policy  snapshot.ID
	Project snapshot.ID
	Kind    snapshot.CacheScope
	// Value is the relay key's id (CacheScopeRelayKey) or the header's
	// value (CacheScopeHeader); "" for CacheScopeProject.
	Value string
}

// keyPrefix starts every entry's key.
const keyPrefix = "relay:rc:"

// Key is the entry key of request c for the catalog model model within
// scope s: the scope in clear (so purges can match it) and the SHA-256 of
// the request's answer-changing content. Fields that do not change the
// answer are left out: stream and include_usage, metadata, user,
// prompt_cache_key, service_tier, cache hints and advisory hints. The
// model is the catalog model's id, so the names it goes by share entries.
func Key(s Scope, model snapshot.ID, c *canonical.Request) (string, error) {
	sum, err := digest(model, c)
	if err != nil {
		return "", err
	}
	return prefixOf(keyPrefix, s) + hex.EncodeToString(sum[:]), nil
}

// digest is the SHA-256 of the answer-changing content of c for model.
func digest(model snapshot.ID, c *canonical.Request) ([sha256.Size]byte, error) {
	n := *c
	n.Model = model.String()
	n.Stream, n.IncludeUsage = false, false
	n.Metadata, n.User, n.PromptCacheKey, n.ServiceTier = nil, "", "", ""
	n.Advisory, n.SentAt = nil, nil
	n.System = withoutHints(n.System)
	if hinted(n.Messages) {
		msgs := make([]canonical.Message, len(n.Messages))
		for i, m := range n.Messages {
			m.Parts = withoutHints(m.Parts)
			msgs[i] = m
		}
		n.Messages = msgs
	}
	b, err := json.Marshal(&n)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("cache key: %w", err)
	}
	return sha256.Sum256(b), nil
}

// prefixOf is the part of a key its cache (prefix) and scope decide. A
// header value is hashed: it may be long, or hold what a log should not.
func prefixOf(prefix string, s Scope) string {
	v := s.Value
	if s.Kind == snapshot.CacheScopeHeader {
		sum := sha256.Sum256([]byte(v))
		v = hex.EncodeToString(sum[:16])
	}
	kind := string(s.Kind)
	if kind == "" {
		kind = string(snapshot.CacheScopeProject)
	}
	return prefix + s.Policy.String() + ":" + s.Project.String() + ":" + kind + ":" + v + ":"
}

func hinted(msgs []canonical.Message) bool {
	for i := range msgs {
		for j := range msgs[i].Parts {
			if msgs[i].Parts[j].CacheHint != nil {
				return true
			}
		}
	}
	return false
}

// withoutHints is ps with every CacheHint cleared, copied only when one is
// set: the caller's request stays as it is.
func withoutHints(ps []canonical.Part) []canonical.Part {
	for i := range ps {
		if ps[i].CacheHint != nil {
			out := make([]canonical.Part, len(ps))
			copy(out, ps)
			for j := range out {
				out[j].CacheHint = nil
			}
			return out
		}
	}
	return ps
}

// Deterministic reports whether c asks for a repeatable answer: a
// temperature of 0, or a seed. A request that leaves temperature unset
// samples at the provider's default (1 for every provider Relay speaks).
func Deterministic(c *canonical.Request) bool {
	return c.Seed != nil || c.Temperature != nil && *c.Temperature == 0
}

// PolicyPattern matches every entry of a policy.
func PolicyPattern(policy snapshot.ID) string { return keyPrefix + policy.String() + ":*" }

// RelayKeyPattern matches every entry scoped to one relay key.
func RelayKeyPattern(key snapshot.ID) string {
	return keyPrefix + "*:*:" + string(snapshot.CacheScopeRelayKey) + ":" + key.String() + ":*"
}
