package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/textproto"
	"slices"
	"strings"
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
	// Semantic are the domains of the semantic cache: the requests each
	// matches are also answered by the nearest earlier one whose last
	// user turn is similar enough. Empty: the cache is exact only.
	Semantic []SemanticDomainSettings `json:"semantic,omitempty"`
}

// SemanticDomainSettings is one domain of a policy's semantic cache as the
// catalog keeps it. A request is in the domain when every rule that is set
// matches: its model is one of Models, its metadata holds every pair of
// Metadata, its system prompt's SHA-256 is one of SystemSHA256.
type SemanticDomainSettings struct {
	// Name is the domain's, named on a hit's usage event.
	Name         string            `json:"name"`
	Models       []ID              `json:"models,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	SystemSHA256 []string          `json:"system_sha256,omitempty"`
	// EmbeddingsModel is the catalog model that embeds the last user
	// turn, served through Relay's own pool and billed to the caller.
	EmbeddingsModel ID `json:"embeddings_model"`
	// Threshold is the least cosine similarity that answers (0: 0.9).
	Threshold float64 `json:"threshold,omitempty"`
}

// Bounds and defaults of ResponseCacheSettings.
const (
	DefaultCacheTTL           = time.Hour
	MaxCacheTTL               = 30 * 24 * time.Hour
	DefaultCacheMaxEntryBytes = 1 << 20
	MaxCacheMaxEntryBytes     = 16 << 20
	DefaultSemanticThreshold  = 0.9
	MaxSemanticDomains        = 16
	maxDomainRules            = 64
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
	if len(s.Semantic) > MaxSemanticDomains {
		return fmt.Errorf("semantic holds at most %d domains", MaxSemanticDomains)
	}
	names := make(map[string]bool, len(s.Semantic))
	for i := range s.Semantic {
		d := &s.Semantic[i]
		if err := d.validate(); err != nil {
			return fmt.Errorf("semantic[%d]: %w", i, err)
		}
		if names[d.Name] {
			return fmt.Errorf("semantic[%d]: domain %q is named twice", i, d.Name)
		}
		names[d.Name] = true
	}
	return nil
}

func (d *SemanticDomainSettings) validate() error {
	if d.Name == "" || len(d.Name) > 64 || strings.Trim(d.Name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		return fmt.Errorf("name must be 1 to 64 of a-z, 0-9, _ and -")
	}
	if d.EmbeddingsModel == (ID{}) {
		return fmt.Errorf("embeddings_model is required")
	}
	if math.IsNaN(d.Threshold) || d.Threshold < 0 || d.Threshold > 1 {
		return fmt.Errorf("threshold must be 0 to 1")
	}
	if len(d.Models) > maxDomainRules || len(d.Metadata) > maxDomainRules || len(d.SystemSHA256) > maxDomainRules {
		return fmt.Errorf("models, metadata and system_sha256 hold at most %d each", maxDomainRules)
	}
	for _, h := range d.SystemSHA256 {
		if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("system_sha256 holds hex SHA-256 digests (64 characters)")
		}
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
	for i := range s.Semantic {
		c.Semantic = append(c.Semantic, s.Semantic[i].domain())
	}
	return c
}

func (d *SemanticDomainSettings) domain() SemanticDomain {
	out := SemanticDomain{Name: d.Name, EmbeddingsModel: d.EmbeddingsModel, Threshold: d.Threshold}
	if out.Threshold == 0 {
		out.Threshold = DefaultSemanticThreshold
	}
	if len(d.Models) > 0 {
		out.Models = make(map[ID]struct{}, len(d.Models))
		for _, id := range d.Models {
			out.Models[id] = struct{}{}
		}
	}
	if len(d.Metadata) > 0 {
		out.Metadata = maps.Clone(d.Metadata)
	}
	for _, h := range d.SystemSHA256 {
		var sum [sha256.Size]byte
		_, _ = hex.Decode(sum[:], []byte(strings.ToLower(h)))
		out.Systems = append(out.Systems, sum)
	}
	return out
}

// SemanticDomain is one domain of a policy's semantic cache
// (docs/caching.md#semantic-cache): which requests it takes, the model
// that embeds them and the similarity that answers.
type SemanticDomain struct {
	Name string
	// Models are the models the domain takes; nil: every model the cache
	// keeps.
	Models map[ID]struct{}
	// Metadata are the pairs a request's metadata must all hold.
	Metadata map[string]string
	// Systems are the SHA-256 digests of the system prompts the domain
	// takes (the text parts joined by newlines); nil: any.
	Systems         [][sha256.Size]byte
	EmbeddingsModel ID
	// Threshold is the least cosine similarity that answers.
	Threshold float64
}

// Takes reports whether a request for model with metadata md is in the
// domain, leaving the system prompt aside (TakesSystem).
func (d *SemanticDomain) Takes(model ID, md map[string]string) bool {
	if d.Models != nil {
		if _, ok := d.Models[model]; !ok {
			return false
		}
	}
	for k, v := range d.Metadata {
		if got, ok := md[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// TakesSystem reports whether a system prompt whose digest is sum is in
// the domain.
func (d *SemanticDomain) TakesSystem(sum [sha256.Size]byte) bool {
	if d.Systems == nil {
		return true
	}
	return slices.Contains(d.Systems, sum)
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
