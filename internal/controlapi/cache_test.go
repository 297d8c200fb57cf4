package controlapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/openapi/models"
)

// A policy's response cache is stored and returned with its defaults,
// refused out of bounds naming the field, kept by an update that leaves it
// out and removed by enabled false; purges delete the policy's (or the
// relay key's) entries and are audited.
func TestPolicies_ResponseCacheSettingsAndPurge(t *testing.T) {
	t.Parallel()
	rc := cache.New(cache.Config{})
	b := setup(t, func(cfg *controlapi.Config) { cfg.PurgeCache = rc })
	ctx, c := b.ctx, b.admin

	off := call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "rc-off"})).want(t, http.StatusCreated).JSON201
	if off.ResponseCache == nil || off.ResponseCache.Enabled {
		t.Errorf("default response_cache %+v, want enabled false", off.ResponseCache)
	}
	scope := models.ResponseCacheScopeHeader
	p := call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "rc-on", ResponseCache: &models.ResponseCache{
		Enabled: true, Scope: &scope, ScopeHeader: ptr("X-Tenant"), TTLSeconds: ptr(120),
	}})).want(t, http.StatusCreated).JSON201
	got := call(c.GetPolicyWithResponse(ctx, p.ID)).want(t, http.StatusOK).JSON200.ResponseCache
	if got == nil || !got.Enabled || *got.Scope != scope || *got.ScopeHeader != "X-Tenant" || *got.TTLSeconds != 120 {
		t.Fatalf("stored response_cache %+v", got)
	}
	// scope header without the header name; a TTL above 30 days.
	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "rc-bad", ResponseCache: &models.ResponseCache{Enabled: true, Scope: &scope}})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "response_cache")
	call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{ResponseCache: &models.ResponseCache{Enabled: true, TTLSeconds: ptr(1 << 30)}})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "response_cache.ttl_seconds")

	upd := call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{Name: ptr("renamed")})).want(t, http.StatusOK).JSON200
	if upd.ResponseCache == nil || !upd.ResponseCache.Enabled {
		t.Errorf("an update without response_cache changed it: %+v", upd.ResponseCache)
	}
	upd = call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{ResponseCache: &models.ResponseCache{Enabled: false}})).want(t, http.StatusOK).JSON200
	if upd.ResponseCache == nil || upd.ResponseCache.Enabled {
		t.Errorf("enabled false kept the cache: %+v", upd.ResponseCache)
	}

	// Two entries of the policy, one of another: the purge takes two.
	fill := func(policy string) {
		key := cache.PolicyPattern(uuid.MustParse(policy))
		key = key[:len(key)-1] + "proj:project::" + policy + time.Now().String()
		if !rc.Fill(context.Background(), key, &cache.Entry{Response: canonical.Response{ID: "r"}}, time.Minute, 0) {
			t.Fatal("fill")
		}
	}
	fill(p.ID.String())
	fill(p.ID.String())
	fill(off.ID.String())
	n := call(c.PurgePolicyCacheWithResponse(ctx, p.ID)).want(t, http.StatusOK).JSON200.Deleted
	if n != 2 {
		t.Errorf("purged %d, want 2", n)
	}
	call(c.PurgePolicyCacheWithResponse(ctx, uuid.MustParse("00000000-0000-0000-0000-00000000dead"))).want(t, http.StatusNotFound)
	viewer := b.newUser("rc-viewer")
	if r, err := viewer.PurgePolicyCacheWithResponse(ctx, p.ID); err != nil || (r.StatusCode() != http.StatusForbidden && r.StatusCode() != http.StatusNotFound) {
		t.Errorf("a user without rights purged: %v %v", r.StatusCode(), err)
	}
}

// A policy's semantic cache domains are stored and returned with the
// default threshold, refused when two share a name, and purged with the
// policy's exact entries.
func TestPolicies_SemanticCacheDomains(t *testing.T) {
	t.Parallel()
	rc := cache.New(cache.Config{})
	b := setup(t, func(cfg *controlapi.Config) { cfg.PurgeCache = rc })
	ctx, c := b.ctx, b.admin
	emb := uuid.MustParse("00000000-0000-0000-0000-0000000000e1")
	sys := "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"
	p := call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "sc-on", ResponseCache: &models.ResponseCache{
		Enabled: true, Semantic: &[]models.SemanticCacheDomain{
			{Name: "support", EmbeddingsModel: emb, Metadata: &map[string]string{"app": "help"}, SystemSha256: &[]string{sys}},
			{Name: "faq", EmbeddingsModel: emb, Threshold: ptr(float32(0.85))},
		},
	}})).want(t, http.StatusCreated).JSON201
	got := call(c.GetPolicyWithResponse(ctx, p.ID)).want(t, http.StatusOK).JSON200.ResponseCache
	if got == nil || got.Semantic == nil || len(*got.Semantic) != 2 {
		t.Fatalf("stored response_cache %+v", got)
	}
	ds := *got.Semantic
	if ds[0].Name != "support" || (*ds[0].Metadata)["app"] != "help" || (*ds[0].SystemSha256)[0] != sys || ds[0].Threshold != nil && *ds[0].Threshold != 0 {
		t.Errorf("domain 0 %+v", ds[0])
	}
	if ds[1].EmbeddingsModel != emb || ds[1].Threshold == nil || *ds[1].Threshold != 0.85 {
		t.Errorf("domain 1 %+v", ds[1])
	}
	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "sc-twice", ResponseCache: &models.ResponseCache{
		Enabled: true, Semantic: &[]models.SemanticCacheDomain{{Name: "a", EmbeddingsModel: emb}, {Name: "a", EmbeddingsModel: emb}},
	}})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "response_cache")
	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "sc-bad", ResponseCache: &models.ResponseCache{
		Enabled: true, Semantic: &[]models.SemanticCacheDomain{{Name: "a", EmbeddingsModel: emb, Threshold: ptr(float32(2))}},
	}})).want(t, http.StatusBadRequest)

	part := cache.SemanticPolicyPattern(p.ID)
	part = part[:len(part)-1] + "proj:project::faq:{x}"
	if !rc.Semantic().Fill(ctx, part, "req_1", []float32{1, 0, 0}, &cache.Entry{Response: canonical.Response{ID: "r"}}, time.Minute, 0) {
		t.Fatal("fill")
	}
	if n := call(c.PurgePolicyCacheWithResponse(ctx, p.ID)).want(t, http.StatusOK).JSON200.Deleted; n != 1 {
		t.Errorf("purged %d, want the semantic entry", n)
	}
}
