package controlapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/openapi/client"
	"github.com/relay-llm/relay/openapi/nullable"
)

func TestHosts_CRUDAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin

	var created []uuid.UUID
	for i := range 5 {
		h := call(c.CreateHostWithResponse(ctx, models.HostCreate{
			Slug: fmt.Sprintf("host-%d", i), Provider: models.ProviderOpenai, BaseURL: "https://api.example.com/v1",
		})).want(t, http.StatusCreated).JSON201
		if !h.Enabled || h.ConnectTimeoutMs != 5000 || h.TotalTimeoutMs != 600000 {
			t.Errorf("defaults not applied: %+v", h)
		}
		created = append(created, h.ID)
	}
	got := call(c.GetHostWithResponse(ctx, created[0])).want(t, http.StatusOK).JSON200
	if got.Slug != "host-0" || got.Provider != models.ProviderOpenai {
		t.Errorf("get = %+v", got)
	}
	upd := call(c.UpdateHostWithResponse(ctx, created[0], models.HostUpdate{
		Name: ptr("Primary"), Enabled: ptr(false),
	})).want(t, http.StatusOK).JSON200
	if upd.Name != "Primary" || upd.Enabled || upd.Slug != "host-0" {
		t.Errorf("update = %+v", upd)
	}
	wantPages(t, "hosts", created, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListHostsWithResponse(ctx, &models.ListHostsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(h models.Host) uuid.UUID { return h.ID }), r.NextCursor
	})

	call(c.CreateHostWithResponse(ctx, models.HostCreate{
		Slug: "host-1", Provider: models.ProviderOpenai, BaseURL: "https://x.example.com",
	})).wantErr(t, http.StatusConflict, "conflict", "slug")
	call(c.UpdateHostWithResponse(ctx, created[0], models.HostUpdate{Slug: ptr("host-2")})).wantErr(t, http.StatusConflict, "conflict", "slug")

	call(c.DeleteHostWithResponse(ctx, created[0])).want(t, http.StatusNoContent)
	call(c.GetHostWithResponse(ctx, created[0])).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.DeleteHostWithResponse(ctx, created[0])).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.UpdateHostWithResponse(ctx, created[0], models.HostUpdate{Name: ptr("x")})).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestValidation_NamesTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	host := func(body string) (*client.CreateHostResponse, error) {
		return c.CreateHostWithBodyWithResponse(ctx, "application/json", strings.NewReader(body))
	}
	cases := []struct {
		name  string
		call  func() (statusCoder, error)
		field string
	}{
		{"pattern", wrap(host(`{"slug":"Not A Slug","provider":"openai","base_url":"https://x"}`)), "slug"},
		{"enum", wrap(host(`{"slug":"ok","provider":"azure","base_url":"https://x"}`)), "provider"},
		{"unknown field", wrap(host(`{"slug":"ok","provider":"openai","base_url":"https://x","nmae":"typo"}`)), "nmae"},
		{"missing field", wrap(host(`{"slug":"ok","provider":"openai"}`)), "base_url"},
		{"wrong type", wrap(host(`{"slug":"ok","provider":"openai","base_url":"https://x","enabled":"yes"}`)), "enabled"},
		{"minimum", wrap(host(`{"slug":"ok","provider":"openai","base_url":"https://x","connect_timeout_ms":0}`)), "connect_timeout_ms"},
		{"url pattern", wrap(host(`{"slug":"ok","provider":"openai","base_url":"ftp://x"}`)), "base_url"},
		{"nested", wrap(c.CreateRateLimitWithBodyWithResponse(ctx, "application/json",
			strings.NewReader(`{"slug":"rl","rules":[{"meter":"requests","amount":0}]}`))), "rules.0.amount"},
		{"malformed json", wrap(host(`{"slug":`)), "body"},
		{"limit too big", wrap(c.ListHostsWithResponse(ctx, &models.ListHostsParams{Limit: ptr[int32](501)})), "limit"},
		{"bad cursor", wrap(c.ListHostsWithResponse(ctx, &models.ListHostsParams{Cursor: ptr("not-ours")})), "cursor"},
		{"bad uuid filter", wrap(c.ListBindingsWithResponse(ctx, nil, rewrite("", "model_id=nope"))), "model_id"},
		{"bad uuid in path", wrap(c.GetHostWithResponse(ctx, uuid.New(), rewrite("/api/hosts/not-a-uuid", ""))), "id"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			call(tt.call()).wantErr(t, http.StatusBadRequest, "invalid_request", tt.field)
		})
	}
}

// rewrite edits a generated request's path and/or query, to send what the
// typed client cannot.
func rewrite(path, query string) client.RequestEditorFn {
	return func(_ context.Context, r *http.Request) error {
		if path != "" {
			r.URL.Path = path
		}
		if query != "" {
			r.URL.RawQuery = query
		}
		return nil
	}
}

func wrap[R statusCoder](r R, err error) func() (statusCoder, error) {
	return func() (statusCoder, error) { return r, err }
}

// fixtures the catalog tests share.
func (b *bundle) host(slug string) models.Host {
	b.t.Helper()
	return *call(b.admin.CreateHostWithResponse(b.ctx, models.HostCreate{
		Slug: slug, Provider: models.ProviderOpenai, BaseURL: "https://" + slug + ".example.com/v1",
	})).want(b.t, http.StatusCreated).JSON201
}

func (b *bundle) model(name string) models.Model {
	b.t.Helper()
	return *call(b.admin.CreateModelWithResponse(b.ctx, models.ModelCreate{Name: name})).want(b.t, http.StatusCreated).JSON201
}

func (b *bundle) rateLimit(slug string) models.RateLimit {
	b.t.Helper()
	return *call(b.admin.CreateRateLimitWithResponse(b.ctx, models.RateLimitCreate{Slug: slug})).want(b.t, http.StatusCreated).JSON201
}

func (b *bundle) policy(slug string) models.Policy {
	b.t.Helper()
	return *call(b.admin.CreatePolicyWithResponse(b.ctx, models.PolicyCreate{Slug: slug})).want(b.t, http.StatusCreated).JSON201
}

func (b *bundle) hostKey(host uuid.UUID, slug string) models.HostKey {
	b.t.Helper()
	return *call(b.admin.CreateHostKeyWithResponse(b.ctx, models.HostKeyCreate{
		HostID: host, Slug: slug, SecretRef: ptr("env:KEY_" + strings.ToUpper(strings.ReplaceAll(slug, "-", "_"))),
	})).want(b.t, http.StatusCreated).JSON201
}

func TestModels_CRUDAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	var created []uuid.UUID
	for i := range 5 {
		m := b.model(fmt.Sprintf("vendor/model-%d", i))
		if m.Kind != models.ModelKindChat || m.MaxOutputTokens != 4096 || !m.SupportsTools || !m.SupportsJSON || m.SupportsVision {
			t.Errorf("defaults not applied: %+v", m)
		}
		created = append(created, m.ID)
	}
	upd := call(c.UpdateModelWithResponse(ctx, created[0], models.ModelUpdate{
		Kind: ptr(models.ModelKindEmbedding), ContextWindow: ptr[int32](8192),
	})).want(t, http.StatusOK).JSON200
	if upd.Kind != models.ModelKindEmbedding || upd.ContextWindow != 8192 || upd.Name != "vendor/model-0" {
		t.Errorf("update = %+v", upd)
	}
	if got := call(c.GetModelWithResponse(ctx, created[0])).want(t, http.StatusOK).JSON200; got.ContextWindow != 8192 {
		t.Errorf("get = %+v", got)
	}
	wantPages(t, "models", created, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListModelsWithResponse(ctx, &models.ListModelsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(m models.Model) uuid.UUID { return m.ID }), r.NextCursor
	})
	call(c.CreateModelWithResponse(ctx, models.ModelCreate{Name: "vendor/model-1"})).wantErr(t, http.StatusConflict, "conflict", "name")
	call(c.DeleteModelWithResponse(ctx, created[0])).want(t, http.StatusNoContent)
	call(c.GetModelWithResponse(ctx, created[0])).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestBindings_CRUDAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	h1, h2 := b.host("h1"), b.host("h2")
	var created []uuid.UUID
	var first models.Binding
	for i := range 5 {
		m := b.model(fmt.Sprintf("m-%d", i))
		bd := call(c.CreateBindingWithResponse(ctx, models.BindingCreate{
			ModelID: m.ID, HostID: h1.ID, Shape: models.ShapeOpenai, UpstreamModel: "up-" + m.Name,
			InputPrice: ptr[int64](2_500_000), PriceTiers: &[]models.PriceTier{
				{AboveInputTokens: 1000, InputPrice: 1, OutputPrice: 2},
				{AboveInputTokens: 2000, InputPrice: 3, OutputPrice: 4},
			},
		})).want(t, http.StatusCreated).JSON201
		if i == 0 {
			first = *bd
		}
		created = append(created, bd.ID)
	}
	if first.InputPrice != 2_500_000 || len(first.PriceTiers) != 2 || first.PriceTiers[1].AboveInputTokens != 2000 || first.ReasoningPrice != nil || !first.Enabled {
		t.Errorf("create = %+v", first)
	}
	// A binding on another host is only in the host filter's result when it matches.
	other := call(c.CreateBindingWithResponse(ctx, models.BindingCreate{
		ModelID: first.ModelID, HostID: h2.ID, Shape: models.ShapeAnthropic, UpstreamModel: "x",
	})).want(t, http.StatusCreated).JSON201
	wantPages(t, "bindings of h1", created, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListBindingsWithResponse(ctx, &models.ListBindingsParams{Limit: limit2, Cursor: cur, HostID: &h1.ID})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(b models.Binding) uuid.UUID { return b.ID }), r.NextCursor
	})
	if r := call(c.ListBindingsWithResponse(ctx, &models.ListBindingsParams{ModelID: &first.ModelID})).want(t, http.StatusOK).JSON200; len(r.Items) != 2 {
		t.Errorf("bindings of the model = %d, want 2", len(r.Items))
	}

	upd := call(c.UpdateBindingWithResponse(ctx, first.ID, models.BindingUpdate{
		ReasoningPrice: nullable.Value[int64](9), Enabled: ptr(false), PriceTiers: &[]models.PriceTier{},
	})).want(t, http.StatusOK).JSON200
	if upd.ReasoningPrice == nil || *upd.ReasoningPrice != 9 || upd.Enabled || len(upd.PriceTiers) != 0 || upd.InputPrice != 2_500_000 {
		t.Errorf("update = %+v", upd)
	}
	upd = call(c.UpdateBindingWithResponse(ctx, first.ID, models.BindingUpdate{ReasoningPrice: nullable.Null[int64]()})).want(t, http.StatusOK).JSON200
	if upd.ReasoningPrice != nil {
		t.Errorf("reasoning_price after null = %v", *upd.ReasoningPrice)
	}

	call(c.CreateBindingWithResponse(ctx, models.BindingCreate{
		ModelID: first.ModelID, HostID: h1.ID, Shape: models.ShapeOpenai, UpstreamModel: "again",
	})).wantErr(t, http.StatusConflict, "conflict", "host_id")
	call(c.CreateBindingWithResponse(ctx, models.BindingCreate{
		ModelID: uuid.New(), HostID: h1.ID, Shape: models.ShapeOpenai, UpstreamModel: "x",
	})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "model_id")
	call(c.CreateBindingWithResponse(ctx, models.BindingCreate{
		ModelID: first.ModelID, HostID: uuid.New(), Shape: models.ShapeOpenai, UpstreamModel: "x",
	})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "host_id")
	call(c.UpdateBindingWithResponse(ctx, first.ID, models.BindingUpdate{PriceTiers: &[]models.PriceTier{
		{AboveInputTokens: 5, InputPrice: 1, OutputPrice: 1}, {AboveInputTokens: 5, InputPrice: 1, OutputPrice: 1},
	}})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "price_tiers.1.above_input_tokens")

	call(c.DeleteBindingWithResponse(ctx, other.ID)).want(t, http.StatusNoContent)
	call(c.GetBindingWithResponse(ctx, other.ID)).wantErr(t, http.StatusNotFound, "not_found", "")
	// Deleting a host deletes its bindings.
	call(c.DeleteHostWithResponse(ctx, h1.ID)).want(t, http.StatusNoContent)
	call(c.GetBindingWithResponse(ctx, first.ID)).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestHostKeys_CRUDAndSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	h := b.host("h")
	rl := b.rateLimit("tier")
	const value = "sk-upstream-VALUE-never-shown-0001"

	sealed := call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{
		HostID: h.ID, Slug: "sealed", Secret: ptr(value), TierRateLimitID: &rl.ID,
	})).want(t, http.StatusCreated).JSON201
	if sealed.SecretSource != models.SecretSourceSealed || sealed.SecretRef != nil || sealed.SecretVersion != 1 || !sealed.Enabled {
		t.Errorf("sealed key = %+v", sealed)
	}
	row, err := b.st.HostKeys().Get(ctx, sealed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if opened, err := b.cfg.Box.Open(row.SecretCiphertext); err != nil || opened != value {
		t.Errorf("stored ciphertext opens to %q, %v", opened, err)
	}

	var created = []uuid.UUID{sealed.ID}
	for i := range 4 {
		created = append(created, b.hostKey(h.ID, fmt.Sprintf("env-%d", i)).ID)
	}
	env := call(c.GetHostKeyWithResponse(ctx, created[1])).want(t, http.StatusOK).JSON200
	if env.SecretSource != models.SecretSourceEnv || env.SecretRef == nil || *env.SecretRef != "env:KEY_ENV_0" {
		t.Errorf("env key = %+v", env)
	}
	wantPages(t, "host keys", created, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListHostKeysWithResponse(ctx, &models.ListHostKeysParams{Limit: limit2, Cursor: cur, HostID: &h.ID})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(k models.HostKey) uuid.UUID { return k.ID }), r.NextCursor
	})

	// A new value bumps the version; other fields change alongside.
	upd := call(c.UpdateHostKeyWithResponse(ctx, sealed.ID, models.HostKeyUpdate{
		Secret: ptr(value + "-2"), Position: ptr[int32](3), TierRateLimitID: nullable.Null[uuid.UUID](),
	})).want(t, http.StatusOK).JSON200
	if upd.SecretVersion != 2 || upd.Position != 3 || upd.TierRateLimitID != nil || upd.SecretSource != models.SecretSourceSealed {
		t.Errorf("update = %+v", upd)
	}
	upd = call(c.UpdateHostKeyWithResponse(ctx, sealed.ID, models.HostKeyUpdate{SecretRef: ptr("env:OTHER")})).want(t, http.StatusOK).JSON200
	if upd.SecretVersion != 3 || upd.SecretSource != models.SecretSourceEnv {
		t.Errorf("switch to env = %+v", upd)
	}
	upd = call(c.UpdateHostKeyWithResponse(ctx, sealed.ID, models.HostKeyUpdate{Enabled: ptr(false)})).want(t, http.StatusOK).JSON200
	if upd.SecretVersion != 3 || upd.Enabled {
		t.Errorf("update without secret = %+v", upd)
	}

	call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "none"})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "secret")
	call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "both", Secret: ptr("x"), SecretRef: ptr("env:X")})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "secret_ref")
	call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "badref", SecretRef: ptr("OPENAI_KEY")})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "secret_ref")
	call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: uuid.New(), Slug: "nohost", SecretRef: ptr("env:X")})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "host_id")
	call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "env-0", SecretRef: ptr("env:X")})).
		wantErr(t, http.StatusConflict, "conflict", "slug")

	call(c.TestHostKeyWithResponse(ctx, sealed.ID)).wantErr(t, http.StatusNotImplemented, "not_implemented", "")
	call(c.DeleteHostKeyWithResponse(ctx, sealed.ID)).want(t, http.StatusNoContent)
	call(c.GetHostKeyWithResponse(ctx, sealed.ID)).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestHostKeys_WithoutMasterKeyOnlyReferences(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *controlapi.Config) { cfg.Box, _ = secret.NewBox(nil) })
	h := b.host("h")
	call(b.admin.CreateHostKeyWithResponse(b.ctx, models.HostKeyCreate{HostID: h.ID, Slug: "k", Secret: ptr("value")})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "secret")
	b.hostKey(h.ID, "ref")
}

func TestHostKeys_Test(t *testing.T) {
	t.Parallel()
	var tested uuid.UUID
	b := setup(t, func(cfg *controlapi.Config) {
		cfg.HostKeyTester = func(_ context.Context, id uuid.UUID) (controlapi.HostKeyTestResult, error) {
			tested = id
			return controlapi.HostKeyTestResult{OK: false, UpstreamStatus: 401, Latency: 12 * time.Millisecond, Message: "the host refused the key"}, nil
		}
	})
	k := b.hostKey(b.host("h").ID, "k")
	r := call(b.admin.TestHostKeyWithResponse(b.ctx, k.ID)).want(t, http.StatusOK).JSON200
	if tested != k.ID || r.Ok || r.UpstreamStatus == nil || *r.UpstreamStatus != 401 || r.LatencyMs != 12 || r.Message == "" {
		t.Errorf("test = %+v (tested %s)", r, tested)
	}
	call(b.admin.TestHostKeyWithResponse(b.ctx, uuid.New())).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestRateLimits_CRUDRulesAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	rl := call(c.CreateRateLimitWithResponse(ctx, models.RateLimitCreate{Slug: "std", Rules: &[]models.RateLimitRuleCreate{
		{Meter: models.MeterRequests, Amount: 60},
		{Meter: models.MeterTotalTokens, Amount: 100000, WindowSeconds: ptr[int32](3600), PerPrincipal: ptr(true)},
	}})).want(t, http.StatusCreated).JSON201
	if len(rl.Rules) != 2 || rl.Rules[0].WindowSeconds != 60 || !rl.Rules[1].PerPrincipal {
		t.Fatalf("create = %+v", rl)
	}
	var created = []uuid.UUID{rl.ID}
	for i := range 4 {
		created = append(created, b.rateLimit(fmt.Sprintf("rl-%d", i)).ID)
	}
	wantPages(t, "rate limits", created, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListRateLimitsWithResponse(ctx, &models.ListRateLimitsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		for _, it := range r.Items {
			if it.ID == rl.ID && len(it.Rules) != 2 {
				t.Errorf("listed rate limit has %d rules", len(it.Rules))
			}
		}
		return ids(r.Items, func(r models.RateLimit) uuid.UUID { return r.ID }), r.NextCursor
	})
	upd := call(c.UpdateRateLimitWithResponse(ctx, rl.ID, models.RateLimitUpdate{Name: ptr("Standard")})).want(t, http.StatusOK).JSON200
	if upd.Name != "Standard" || len(upd.Rules) != 2 {
		t.Errorf("update = %+v", upd)
	}

	// Rules as a sub-collection.
	rules := []uuid.UUID{rl.Rules[0].ID, rl.Rules[1].ID}
	for i := range 3 {
		r := call(c.CreateRateLimitRuleWithResponse(ctx, rl.ID, models.RateLimitRuleCreate{Meter: models.MeterConcurrency, Amount: int64(i + 1)})).
			want(t, http.StatusCreated).JSON201
		rules = append(rules, r.ID)
	}
	wantPages(t, "rules", rules, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListRateLimitRulesWithResponse(ctx, rl.ID, &models.ListRateLimitRulesParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(r models.RateLimitRule) uuid.UUID { return r.ID }), r.NextCursor
	})
	ru := call(c.UpdateRateLimitRuleWithResponse(ctx, rl.ID, rules[0], models.RateLimitRuleUpdate{Amount: ptr[int64](120)})).want(t, http.StatusOK).JSON200
	if ru.Amount != 120 || ru.Meter != models.MeterRequests {
		t.Errorf("rule update = %+v", ru)
	}
	if got := call(c.GetRateLimitRuleWithResponse(ctx, rl.ID, rules[0])).want(t, http.StatusOK).JSON200; got.Amount != 120 {
		t.Errorf("rule get = %+v", got)
	}
	// A rule is addressed through its own rate limit only.
	call(c.GetRateLimitRuleWithResponse(ctx, created[1], rules[0])).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.DeleteRateLimitRuleWithResponse(ctx, rl.ID, rules[0])).want(t, http.StatusNoContent)
	call(c.GetRateLimitRuleWithResponse(ctx, rl.ID, rules[0])).wantErr(t, http.StatusNotFound, "not_found", "")

	call(c.CreateRateLimitWithResponse(ctx, models.RateLimitCreate{Slug: "std"})).wantErr(t, http.StatusConflict, "conflict", "slug")
	call(c.DeleteRateLimitWithResponse(ctx, rl.ID)).want(t, http.StatusNoContent)
	call(c.GetRateLimitWithResponse(ctx, rl.ID)).wantErr(t, http.StatusNotFound, "not_found", "")
}

func TestPolicies_CRUDGrantsAndPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	rl := b.rateLimit("rl")
	p := call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "main", RateLimitID: &rl.ID, AllModels: ptr(true)})).
		want(t, http.StatusCreated).JSON201
	if p.KeyStrategy != models.KeyStrategyPrioritized || p.MaxAttempts != 3 || p.LimiterFailureMode != models.LimiterFailureModeOpen || !p.AllModels {
		t.Errorf("defaults = %+v", p)
	}
	created := []uuid.UUID{p.ID}
	for i := range 4 {
		created = append(created, b.policy(fmt.Sprintf("p-%d", i)).ID)
	}
	wantPages(t, "policies", created, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListPoliciesWithResponse(ctx, &models.ListPoliciesParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(p models.Policy) uuid.UUID { return p.ID }), r.NextCursor
	})
	upd := call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{RateLimitID: nullable.Null[uuid.UUID](), MaxWaitMs: ptr[int32](500)})).
		want(t, http.StatusOK).JSON200
	if upd.RateLimitID != nil || upd.MaxWaitMs != 500 || !upd.AllModels {
		t.Errorf("update = %+v", upd)
	}
	call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{RateLimitID: nullable.Value(uuid.New())})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "rate_limit_id")
	call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{MaxAttempts: ptr[int32](11)})).
		wantErr(t, http.StatusBadRequest, "invalid_request", "max_attempts")

	// Model grants, host-key grants and per-model rate limits page by the second key.
	var modelIDs, keys []uuid.UUID
	h := b.host("h")
	for i := range 5 {
		m := b.model(fmt.Sprintf("m%d", i))
		modelIDs = append(modelIDs, m.ID)
		call(c.CreatePolicyModelGrantWithResponse(ctx, p.ID, models.PolicyModelGrantCreate{ModelID: m.ID})).want(t, http.StatusCreated)
		k := b.hostKey(h.ID, fmt.Sprintf("k%d", i))
		keys = append(keys, k.ID)
		call(c.CreatePolicyHostKeyGrantWithResponse(ctx, p.ID, models.PolicyHostKeyGrantCreate{HostKeyID: k.ID})).want(t, http.StatusCreated)
		call(c.CreatePolicyModelRateLimitWithResponse(ctx, p.ID, models.PolicyModelRateLimitCreate{ModelID: m.ID, RateLimitID: rl.ID, Position: ptr(int32(i))})).
			want(t, http.StatusCreated)
	}
	wantPages(t, "model grants", modelIDs, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListPolicyModelGrantsWithResponse(ctx, p.ID, &models.ListPolicyModelGrantsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(g models.PolicyModelGrant) uuid.UUID { return g.ModelID }), r.NextCursor
	})
	wantPages(t, "host key grants", keys, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListPolicyHostKeyGrantsWithResponse(ctx, p.ID, &models.ListPolicyHostKeyGrantsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(g models.PolicyHostKeyGrant) uuid.UUID { return g.HostKeyID }), r.NextCursor
	})
	wantPages(t, "per-model rate limits", modelIDs, func(cur *string) ([]uuid.UUID, *string) {
		r := call(c.ListPolicyModelRateLimitsWithResponse(ctx, p.ID, &models.ListPolicyModelRateLimitsParams{Limit: limit2, Cursor: cur})).want(t, http.StatusOK).JSON200
		return ids(r.Items, func(g models.PolicyModelRateLimit) uuid.UUID { return g.ModelID }), r.NextCursor
	})
	call(c.CreatePolicyModelGrantWithResponse(ctx, p.ID, models.PolicyModelGrantCreate{ModelID: modelIDs[0]})).wantErr(t, http.StatusConflict, "conflict", "model_id")
	call(c.CreatePolicyHostKeyGrantWithResponse(ctx, p.ID, models.PolicyHostKeyGrantCreate{HostKeyID: keys[0]})).wantErr(t, http.StatusConflict, "conflict", "host_key_id")
	call(c.CreatePolicyModelGrantWithResponse(ctx, p.ID, models.PolicyModelGrantCreate{ModelID: uuid.New()})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "model_id")
	call(c.CreatePolicyModelGrantWithResponse(ctx, uuid.New(), models.PolicyModelGrantCreate{ModelID: modelIDs[0]})).wantErr(t, http.StatusNotFound, "not_found", "")

	rl2 := b.rateLimit("rl2")
	pm := call(c.UpdatePolicyModelRateLimitWithResponse(ctx, p.ID, modelIDs[0], models.PolicyModelRateLimitUpdate{RateLimitID: &rl2.ID})).want(t, http.StatusOK).JSON200
	if pm.RateLimitID != rl2.ID || pm.Position != 0 {
		t.Errorf("per-model update = %+v", pm)
	}
	if got := call(c.GetPolicyModelRateLimitWithResponse(ctx, p.ID, modelIDs[0])).want(t, http.StatusOK).JSON200; got.RateLimitID != rl2.ID {
		t.Errorf("per-model get = %+v", got)
	}
	call(c.DeletePolicyModelRateLimitWithResponse(ctx, p.ID, modelIDs[0])).want(t, http.StatusNoContent)
	call(c.GetPolicyModelRateLimitWithResponse(ctx, p.ID, modelIDs[0])).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.DeletePolicyModelGrantWithResponse(ctx, p.ID, modelIDs[0])).want(t, http.StatusNoContent)
	call(c.DeletePolicyModelGrantWithResponse(ctx, p.ID, modelIDs[0])).wantErr(t, http.StatusNotFound, "not_found", "")
	call(c.DeletePolicyHostKeyGrantWithResponse(ctx, p.ID, keys[0])).want(t, http.StatusNoContent)

	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "main"})).wantErr(t, http.StatusConflict, "conflict", "slug")
	call(c.DeletePolicyWithResponse(ctx, p.ID)).want(t, http.StatusNoContent)
	call(c.GetPolicyWithResponse(ctx, p.ID)).wantErr(t, http.StatusNotFound, "not_found", "")
}
