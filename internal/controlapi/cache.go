package controlapi

import (
	"context"
	"encoding/json"
	"math"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/models"
)

// The response cache (docs/caching.md) as catalog data: a policy's
// settings, kept as policies.response_cache, and purging its entries.

// CachePurger deletes response cache entries: *cache.Cache in relay
// serve, shared through Redis when Relay has one.
type CachePurger interface {
	PurgePolicy(ctx context.Context, policy uuid.UUID) (int, error)
	PurgeRelayKey(ctx context.Context, key uuid.UUID) (int, error)
}

// responseCacheIn is the stored form of a policy's cache settings: nil
// when it is off. Bounds the schema cannot say are checked here.
func responseCacheIn(b *models.ResponseCache) (json.RawMessage, error) {
	if b == nil || !b.Enabled {
		return nil, nil
	}
	s := snapshot.ResponseCacheSettings{
		ScopeHeader: deref(b.ScopeHeader, ""), TTLSeconds: deref(b.TTLSeconds, 0),
		MaxEntryBytes: deref(b.MaxEntryBytes, 0), Nondeterministic: deref(b.Nondeterministic, false),
	}
	if b.Scope != nil {
		s.Scope = snapshot.CacheScope(*b.Scope)
	}
	if b.Models != nil {
		s.Models = append([]uuid.UUID(nil), *b.Models...)
	}
	if b.Semantic != nil {
		for _, d := range *b.Semantic {
			s.Semantic = append(s.Semantic, snapshot.SemanticDomainSettings{
				Name: d.Name, EmbeddingsModel: d.EmbeddingsModel, Models: deref(d.Models, nil),
				Metadata: deref(d.Metadata, nil), SystemSHA256: deref(d.SystemSha256, nil),
				// The schema's number is a float32: kept to four places.
				Threshold: math.Round(float64(deref(d.Threshold, 0))*1e4) / 1e4,
			})
		}
	}
	if err := s.Validate(); err != nil {
		return nil, invalid("response_cache: "+err.Error(), "response_cache")
	}
	raw, err := json.Marshal(&s)
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// responseCacheOut is the API form of stored settings: enabled false when
// there are none (or they cannot be read, which the loader logs).
func responseCacheOut(raw json.RawMessage) *models.ResponseCache {
	s, err := snapshot.ParseResponseCache(raw)
	if err != nil || s == nil {
		return &models.ResponseCache{Enabled: false}
	}
	scope := models.ResponseCacheScope(s.Scope)
	if scope == "" {
		scope = models.ResponseCacheScopeProject
	}
	out := &models.ResponseCache{
		Enabled: true, Scope: &scope, TTLSeconds: &s.TTLSeconds, MaxEntryBytes: &s.MaxEntryBytes,
		Nondeterministic: &s.Nondeterministic,
	}
	if s.ScopeHeader != "" {
		out.ScopeHeader = &s.ScopeHeader
	}
	if len(s.Models) > 0 {
		ms := append([]uuid.UUID(nil), s.Models...)
		out.Models = &ms
	}
	if len(s.Semantic) > 0 {
		ds := make([]models.SemanticCacheDomain, len(s.Semantic))
		for i, d := range s.Semantic {
			th := float32(d.Threshold)
			ds[i] = models.SemanticCacheDomain{Name: d.Name, EmbeddingsModel: d.EmbeddingsModel, Threshold: &th}
			if len(d.Models) > 0 {
				ds[i].Models = &d.Models
			}
			if len(d.Metadata) > 0 {
				ds[i].Metadata = &d.Metadata
			}
			if len(d.SystemSHA256) > 0 {
				ds[i].SystemSha256 = &d.SystemSHA256
			}
		}
		out.Semantic = &ds
	}
	return out
}

// cachePurge is an audit row's account of a purge.
type cachePurge struct {
	PolicyID   *uuid.UUID `json:",omitempty"`
	RelayKeyID *uuid.UUID `json:",omitempty"`
	Deleted    int
}

// PurgePolicyCache is the operation of the same name in openapi/control.yaml.
func (v *Service) PurgePolicyCache(ctx context.Context, id uuid.UUID) (out models.CachePurge, err error) {
	s, ctx, done, err := v.enter(ctx, "PurgePolicyCache")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := s.policyRow(ctx, id, true)
	if err != nil {
		return out, err
	}
	if s.cfg.PurgeCache == nil {
		return out, noCache()
	}
	n, err := s.cfg.PurgeCache.PurgePolicy(ctx, id)
	if err != nil {
		return out, err
	}
	if err := s.auditPurge(ctx, c, id, cachePurge{PolicyID: &id, Deleted: n}); err != nil {
		return out, err
	}
	return models.CachePurge{Deleted: n}, nil
}

// PurgeRelayKeyCache is the operation of the same name in openapi/control.yaml.
func (v *Service) PurgeRelayKeyCache(ctx context.Context, id uuid.UUID) (out models.CachePurge, err error) {
	s, ctx, done, err := v.enter(ctx, "PurgeRelayKeyCache")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, _, _, err := s.relayKeyForWrite(ctx, id)
	if err != nil {
		return out, err
	}
	if s.cfg.PurgeCache == nil {
		return out, noCache()
	}
	n, err := s.cfg.PurgeCache.PurgeRelayKey(ctx, id)
	if err != nil {
		return out, err
	}
	if err := s.auditPurge(ctx, c, id, cachePurge{RelayKeyID: &id, Deleted: n}); err != nil {
		return out, err
	}
	return models.CachePurge{Deleted: n}, nil
}

// auditPurge writes the audit row of a purge: action delete, kind
// response_cache, the policy's or relay key's id.
func (s *Server) auditPurge(ctx context.Context, c *caller, id uuid.UUID, what cachePurge) error {
	return s.st.InTx(ctx, func(tx *store.Tx) error {
		return tx.Audit(ctx, c.actor, "delete", "response_cache", id.String(), nil, what)
	})
}

func noCache() error {
	return &apiError{status: 501, code: codeNotImplemented, message: "this control plane has no response cache to purge"}
}
