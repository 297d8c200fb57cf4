package snapshot

import (
	"encoding/json"
	"fmt"
	"net/textproto"
	"time"
)

// ResponseCacheSettings is a policy's response cache as the catalog keeps
// it (policies.response_cache, migration 00014) and the control API
// speaks it; the loader turns it into a ResponseCache.
type ResponseCacheSettings struct {
	// Models are the models cached; empty: every model the policy grants.
	Models      []ID       `json:"models,omitempty"`
	Scope       CacheScope `json:"scope,omitempty"`
	ScopeHeader string     `json:"scope_header,omitempty"`
	// TTLSeconds is an entry's lifetime (0: 3600).
	TTLSeconds int `json:"ttl_seconds,omitempty"`
	// MaxEntryBytes is the largest answer kept (0: 1 MiB).
	MaxEntryBytes    int  `json:"max_entry_bytes,omitempty"`
	Nondeterministic bool `json:"nondeterministic,omitempty"`
}

// Bounds and defaults of ResponseCacheSettings.
const (
	DefaultCacheTTL           = time.Hour
	MaxCacheTTL               = 30 * 24 * time.Hour
	DefaultCacheMaxEntryBytes = 1 << 20
	MaxCacheMaxEntryBytes     = 16 << 20
)

// Validate reports the first setting out of bounds, naming it.
func (s *ResponseCacheSettings) Validate() error {
	switch s.Scope {
	case "", CacheScopeProject, CacheScopeRelayKey:
		if s.ScopeHeader != "" {
			return fmt.Errorf("scope_header is only for scope header")
		}
	case CacheScopeHeader:
		if s.ScopeHeader == "" || !validHeaderName(s.ScopeHeader) {
			return fmt.Errorf("scope header needs scope_header, a header name")
		}
	default:
		return fmt.Errorf("scope must be project, relay_key or header")
	}
	if s.TTLSeconds < 0 || time.Duration(s.TTLSeconds)*time.Second > MaxCacheTTL {
		return fmt.Errorf("ttl_seconds must be 0 to %d", int(MaxCacheTTL/time.Second))
	}
	if s.MaxEntryBytes < 0 || s.MaxEntryBytes > MaxCacheMaxEntryBytes {
		return fmt.Errorf("max_entry_bytes must be 0 to %d", MaxCacheMaxEntryBytes)
	}
	return nil
}

func validHeaderName(s string) bool {
	if len(s) > 128 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ResponseCache returns the snapshot's form, defaults applied.
func (s *ResponseCacheSettings) ResponseCache() *ResponseCache {
	c := &ResponseCache{
		Scope: s.Scope, ScopeHeader: textproto.CanonicalMIMEHeaderKey(s.ScopeHeader),
		TTL: time.Duration(s.TTLSeconds) * time.Second, MaxEntryBytes: s.MaxEntryBytes, Nondeterministic: s.Nondeterministic,
	}
	if c.Scope == "" {
		c.Scope = CacheScopeProject
	}
	if c.TTL == 0 {
		c.TTL = DefaultCacheTTL
	}
	if c.MaxEntryBytes == 0 {
		c.MaxEntryBytes = DefaultCacheMaxEntryBytes
	}
	if len(s.Models) > 0 {
		c.Models = make(map[ID]struct{}, len(s.Models))
		for _, id := range s.Models {
			c.Models[id] = struct{}{}
		}
	}
	return c
}

// ParseResponseCache reads a stored policies.response_cache: nil (or JSON
// null) is off.
func ParseResponseCache(raw json.RawMessage) (*ResponseCacheSettings, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s ResponseCacheSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("parse response_cache: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("response_cache: %w", err)
	}
	return &s, nil
}
