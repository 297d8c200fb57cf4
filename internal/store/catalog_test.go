package store

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// catalogRows is a fixture plus one row of every other snapshot kind.
type catalogRows struct {
	fixture
	rule           RateLimitRule
	binding        Binding
	policyBinding  PolicyBinding
	inferenceToken InferenceToken
	budget         Budget
}

func newCatalog(t *testing.T, b *bundle, tag string) catalogRows {
	t.Helper()
	ctx, s := b.ctx, b.s
	c := catalogRows{fixture: newFixture(t, b, tag)}
	mk[GroupMembership](t)(s.GroupMemberships().Create(ctx, actor, GroupMembership{GroupID: c.group.ID, UserID: c.user.ID}))
	c.rule = mk[RateLimitRule](t)(s.RateLimitRules().Create(ctx, actor, RateLimitRule{RateLimitID: c.rateLimit.ID, Meter: "requests", Amount: 60, WindowSeconds: 60}))
	c.binding = mk[Binding](t)(s.Bindings().Create(ctx, actor, Binding{ModelID: c.model.ID, HostID: c.host.ID, Shape: "openai", UpstreamModel: "gpt-4o", Enabled: true, PriceTiers: []byte(`[]`)}))
	mk[PolicyModel](t)(s.PolicyModels().Create(ctx, actor, PolicyModel{PolicyID: c.policy.ID, ModelID: c.model.ID}))
	mk[PolicyHostKey](t)(s.PolicyHostKeys().Create(ctx, actor, PolicyHostKey{PolicyID: c.policy.ID, HostKeyID: c.hostKey.ID}))
	mk[PolicyModelRateLimit](t)(s.PolicyModelRateLimits().Create(ctx, actor, PolicyModelRateLimit{PolicyID: c.policy.ID, ModelID: c.model.ID, RateLimitID: c.rateLimit.ID}))
	c.policyBinding = mk[PolicyBinding](t)(s.PolicyBindings().Create(ctx, actor, PolicyBinding{ProjectID: c.project.ID, PolicyID: c.policy.ID, GroupID: &c.group.ID}))
	c.inferenceToken = mk[InferenceToken](t)(s.InferenceTokens().Create(ctx, actor, InferenceToken{TokenHash: hash("it-" + tag), UserID: c.user.ID, ProjectID: c.project.ID, ExpiresAt: time.Now().Add(time.Hour)}))
	c.budget = mk[Budget](t)(s.Budgets().Create(ctx, actor, Budget{RelayKeyID: &c.relayKey.ID, Period: "month", Amount: 100}))
	srv := mk[MCPServer](t)(s.MCPServers().Create(ctx, actor, MCPServer{Slug: "mcp-" + tag, URL: "http://tools.example/mcp", Enabled: true, TimeoutMs: 1000}))
	mk[MCPToolApproval](t)(s.MCPServers().Approve(ctx, actor, srv.ID, "lookup", strings.Repeat("ab", 32)))
	return c
}

func TestReadCatalog_Populated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := newCatalog(t, b, "read")
	got := mk[*Catalog](t)(b.s.ReadCatalog(b.ctx))
	v := reflect.ValueOf(got).Elem()
	for i := range v.NumField() {
		if n := v.Field(i).Len(); n != 1 {
			t.Errorf("%s: %d rows, want 1", v.Type().Field(i).Name, n)
		}
	}
	if len(got.Hosts) == 1 && !sameRow(got.Hosts[0], c.host) {
		t.Errorf("host = %+v, want %+v", got.Hosts[0], c.host)
	}
	if len(got.RelayKeys) == 1 && string(got.RelayKeys[0].KeyHash) != string(c.relayKey.KeyHash) {
		t.Error("relay key hash differs")
	}
}

func TestReadChanged_UpsertsAndDeletions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	c := newCatalog(t, b, "chg")
	renamed := mk[Host](t)(s.Hosts().Modify(ctx, actor, c.host.ID, func(h *Host) error { h.Name = "renamed"; return nil }))
	if err := s.Models().Delete(ctx, actor, c.model.ID); err != nil { // cascades to the binding and the grants
		t.Fatal(err)
	}
	changed := map[Kind][]uuid.UUID{
		"teams": {c.team.ID}, "projects": {c.project.ID}, "users": {c.user.ID}, "groups": {c.group.ID},
		"service_accounts": {c.sa.ID}, "rate_limits": {c.rateLimit.ID}, "hosts": {c.host.ID},
		"models": {c.model.ID}, "bindings": {c.binding.ID}, "host_keys": {c.hostKey.ID}, "policies": {c.policy.ID},
		"policy_bindings": {c.policyBinding.ID}, "relay_keys": {c.relayKey.ID},
		"inference_tokens": {c.inferenceToken.ID}, "budgets": {c.budget.ID},
		"sessions": {uuid.New()}, // not a snapshot kind: ignored
	}
	got, deleted, err := s.ReadChanged(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	wantDeleted := map[Kind][]uuid.UUID{"models": {c.model.ID}, "bindings": {c.binding.ID}}
	if !reflect.DeepEqual(deleted, wantDeleted) {
		t.Errorf("deleted = %v, want %v", deleted, wantDeleted)
	}
	if len(got.Hosts) != 1 || !sameRow(got.Hosts[0], renamed) {
		t.Errorf("hosts = %+v, want %+v", got.Hosts, renamed)
	}
	// Aggregates come whole: the policy with what is left of its grants, the
	// group with its members, the rate limit with its rules.
	counts := map[string]int{
		"Policies": len(got.Policies), "PolicyModels": len(got.PolicyModels), "PolicyHostKeys": len(got.PolicyHostKeys),
		"PolicyModelRateLimits": len(got.PolicyModelRateLimits), "GroupMemberships": len(got.GroupMemberships),
		"RateLimitRules": len(got.RateLimitRules), "Models": len(got.Models), "Bindings": len(got.Bindings),
		"Budgets": len(got.Budgets), "InferenceTokens": len(got.InferenceTokens),
	}
	want := map[string]int{
		"Policies": 1, "PolicyModels": 0, "PolicyHostKeys": 1, "PolicyModelRateLimits": 0, "GroupMemberships": 1,
		"RateLimitRules": 1, "Models": 0, "Bindings": 0, "Budgets": 1, "InferenceTokens": 1,
	}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("rows read = %v, want %v", counts, want)
	}
}

func TestListen_WriteNotifies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.s
	ctx, cancel := context.WithCancel(b.ctx)
	listening := make(chan struct{})
	payloads := make(chan string, 64)
	done := make(chan error, 1)
	go func() {
		done <- s.Listen(ctx, func(uint32) { close(listening) }, func(p string) {
			select {
			case payloads <- p:
			default: // never block the listener
			}
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen = %v after cancel", err)
		}
	}()
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("LISTEN not in place")
	}
	// await returns the payloads before want, failing if want never comes.
	await := func(want string) []string {
		t.Helper()
		var before []string
		deadline := time.After(10 * time.Second)
		for {
			select {
			case p := <-payloads:
				if p == want {
					return before
				}
				before = append(before, p)
			case <-deadline:
				t.Fatalf("no %q; got %v", want, before)
			}
		}
	}

	var rolledBack Host
	err := s.InTx(b.ctx, func(tx *Tx) error {
		var err error
		if rolledBack, err = tx.Hosts().Create(b.ctx, actor, hostRow("rolled-back")); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("InTx did not fail")
	}
	h := mk[Host](t)(s.Hosts().Create(b.ctx, actor, hostRow("notified")))
	if before := await("hosts:" + h.ID.String()); slices.Contains(before, "hosts:"+rolledBack.ID.String()) {
		t.Errorf("a rolled-back write notified: %v", before)
	}
	if err := s.InTx(b.ctx, func(tx *Tx) error { return tx.Notify(b.ctx, "hosts:all") }); err != nil {
		t.Fatal(err)
	}
	await("hosts:all")
}
