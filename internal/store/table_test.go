package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// rowCase is the life of one row in one table: create, get, list, update and
// modify (when the table has mutable columns), delete, and the audit trail.
type rowCase[R any, K comparable, P any] struct {
	table Table[R, K, P]
	mut   *MutableTable[R, K, P] // nil for tables without mutable columns
	row   R                      // to create
	edit  func(*R)               // changes mutable columns only
	page  P                      // a page that holds the row
}

func mutableCase[R any, K comparable, P any](tbl MutableTable[R, K, P], row R, edit func(*R), page P) func(*testing.T, *bundle) {
	return rowCase[R, K, P]{table: tbl.Table, mut: &tbl, row: row, edit: edit, page: page}.run
}

func joinCase[R any, K comparable, P any](tbl Table[R, K, P], row R, page P) func(*testing.T, *bundle) {
	return rowCase[R, K, P]{table: tbl, row: row, page: page}.run
}

func (c rowCase[R, K, P]) run(t *testing.T, b *bundle) {
	ctx, tbl := b.ctx, c.table
	created := mk[R](t)(tbl.Create(ctx, actor, c.row))
	k := tbl.def.keyOf(created)
	if got := mk[R](t)(tbl.Get(ctx, k)); !sameRow(got, created) {
		t.Errorf("Get = %+v, want %+v", got, created)
	}
	page := mk[[]R](t)(tbl.List(ctx, c.page))
	if !slices.ContainsFunc(page, func(r R) bool { return tbl.def.keyOf(r) == k }) {
		t.Errorf("List(%+v) lacks %v", c.page, k)
	}
	rows := []R{created}
	wantActions := []string{"create"}
	if c.mut != nil {
		edited := created
		c.edit(&edited)
		if sameRow(edited, created) {
			t.Fatal("edit changes nothing")
		}
		updated := mk[R](t)(c.mut.Update(ctx, actor, edited))
		if !sameRow(updated, edited) {
			t.Errorf("Update = %+v, want %+v", updated, edited)
		}
		if got := mk[R](t)(tbl.Get(ctx, k)); !sameRow(got, updated) {
			t.Errorf("Get after Update = %+v, want %+v", got, updated)
		}
		restored := mk[R](t)(c.mut.Modify(ctx, actor, k, func(r *R) error { *r = created; return nil }))
		if !sameRow(restored, created) {
			t.Errorf("Modify back = %+v, want %+v", restored, created)
		}
		rows = append(rows, edited)
		wantActions = append(wantActions, "update", "update")
	}
	if err := tbl.Delete(ctx, actor, k); err != nil {
		t.Fatal(err)
	}
	_, err := tbl.Get(ctx, k)
	wantErr(t, err, ErrNotFound)
	wantErr(t, tbl.Delete(ctx, actor, k), ErrNotFound)

	audit := auditRows(t, b, string(tbl.def.name()), fmt.Sprint(k))
	if got, want := actions(audit), append(wantActions, "delete"); !slices.Equal(got, want) {
		t.Fatalf("audit actions = %v, want %v", got, want)
	}
	for _, a := range audit {
		if a.Actor != actor {
			t.Errorf("audit %d actor = %q", a.ID, a.Actor)
		}
		if (a.Before == nil) != (a.Action == "create") || (a.After == nil) != (a.Action == "delete") {
			t.Errorf("audit %d %s: before %s, after %s", a.ID, a.Action, a.Before, a.After)
		}
		for _, r := range rows {
			checkNoSecrets(t, a, r)
		}
	}
	var after map[string]any
	first := columnName(reflect.TypeFor[R]().Field(0).Name) // id, group_id, policy_id …
	if err := json.Unmarshal(audit[0].After, &after); err != nil || after[first] == nil {
		t.Errorf("audit after = %s (%v), want the row by column name", audit[0].After, err)
	}
}

func TestTables_CRUD(t *testing.T) {
	t.Parallel()
	b := setup(t)
	f := newFixture(t, b, "base")
	s := b.s
	expires := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	all := int32(1000)
	cases := map[string]func(*testing.T, *bundle){
		"teams": mutableCase(s.Teams().MutableTable, Team{Slug: "crud", Name: "Crud"},
			func(r *Team) { r.Slug, r.Name = "crud-2", "Crud 2" }, Page{Limit: all}),
		"projects": mutableCase(s.Projects().MutableTable, Project{TeamID: f.team.ID, Slug: "crud"},
			func(r *Project) { r.Slug, r.Name = "crud-2", "Crud 2" }, ProjectsPage{TeamID: &f.team.ID, Limit: all}),
		"users": mutableCase(s.Users().MutableTable, User{Email: "crud@example.com", PasswordHash: ptrTo("$argon2id$crud")},
			func(r *User) { r.Name, r.Disabled, r.PasswordHash = "Crud", true, ptrTo("$argon2id$crud-2") }, Page{Limit: all}),
		"groups": mutableCase(s.Groups().MutableTable, Group{Slug: "crud"},
			func(r *Group) { r.Name = "Crud" }, Page{Limit: all}),
		"group_memberships": joinCase(s.GroupMemberships().Table, GroupMembership{GroupID: f.group.ID, UserID: f.user.ID},
			GroupMembershipsPage{UserID: &f.user.ID, Limit: all}),
		"service_accounts": mutableCase(s.ServiceAccounts().MutableTable, ServiceAccount{ProjectID: f.project.ID, Slug: "crud", PolicyID: &f.policy.ID},
			func(r *ServiceAccount) { r.Name, r.PolicyID = "Crud", nil }, ServiceAccountsPage{ProjectID: &f.project.ID, Limit: all}),
		"rate_limits": mutableCase(s.RateLimits().MutableTable, RateLimit{Slug: "crud"},
			func(r *RateLimit) { r.Slug = "crud-2" }, Page{Limit: all}),
		"rate_limit_rules": mutableCase(s.RateLimitRules().MutableTable,
			RateLimitRule{RateLimitID: f.rateLimit.ID, Meter: "requests", Amount: 100, WindowSeconds: 60},
			func(r *RateLimitRule) { r.Meter, r.Amount, r.PerPrincipal = "total_tokens", 5000, true },
			RateLimitRulesPage{RateLimitID: &f.rateLimit.ID, Limit: all}),
		"hosts": mutableCase(s.Hosts().MutableTable, hostRow("crud"),
			func(r *Host) { r.BaseURL, r.Enabled, r.IdleTimeoutMs = "http://localhost:11434", false, 1000 }, Page{Limit: all}),
		"models": mutableCase(s.Models().MutableTable, modelRow("crud"),
			func(r *Model) { r.ContextWindow, r.SupportsVision, r.Kind = 200000, true, "embedding" }, Page{Limit: all}),
		"bindings": mutableCase(s.Bindings().MutableTable,
			Binding{ModelID: f.model.ID, HostID: f.host.ID, Shape: "openai", UpstreamModel: "gpt-4o", Enabled: true, PriceTiers: json.RawMessage(`[]`)},
			func(r *Binding) {
				r.Shape, r.InputPrice, r.ReasoningPrice = "openai_responses", 2500000, ptrTo(int64(7))
				r.PriceTiers = json.RawMessage(`[{"input_price": 5}]`)
			},
			BindingsPage{ModelID: &f.model.ID, HostID: &f.host.ID, Limit: all}),
		"host_keys": mutableCase(s.HostKeys().MutableTable,
			HostKey{HostID: f.host.ID, Slug: "crud", SecretCiphertext: []byte("nonce-and-sealed-secret"), Enabled: true},
			func(r *HostKey) { r.TierRateLimitID, r.Position, r.Enabled = &f.rateLimit.ID, 3, false },
			HostKeysPage{HostID: &f.host.ID, Limit: all}),
		"policies": mutableCase(s.Policies().MutableTable, policyRow("crud"),
			func(r *Policy) {
				r.AllModels, r.RateLimitID, r.KeyStrategy, r.MaxWaitMs = true, &f.rateLimit.ID, "round_robin", 500
			},
			Page{Limit: all}),
		"policy_models": joinCase(s.PolicyModels().Table, PolicyModel{PolicyID: f.policy.ID, ModelID: f.model.ID},
			PolicyModelsPage{PolicyID: &f.policy.ID, Limit: all}),
		"policy_host_keys": joinCase(s.PolicyHostKeys().Table, PolicyHostKey{PolicyID: f.policy.ID, HostKeyID: f.hostKey.ID},
			PolicyHostKeysPage{PolicyID: &f.policy.ID, Limit: all}),
		"policy_model_rate_limits": mutableCase(s.PolicyModelRateLimits().MutableTable,
			PolicyModelRateLimit{PolicyID: f.policy.ID, ModelID: f.model.ID, RateLimitID: f.rateLimit.ID},
			func(r *PolicyModelRateLimit) { r.Position = 5 },
			PolicyModelRateLimitsPage{PolicyID: &f.policy.ID, Limit: all}),
		"policy_bindings": mutableCase(s.PolicyBindings().MutableTable,
			PolicyBinding{ProjectID: f.project.ID, PolicyID: f.policy.ID, UserID: &f.user.ID},
			func(r *PolicyBinding) { r.UserID, r.GroupID, r.Position = nil, &f.group.ID, 2 },
			PolicyBindingsPage{ProjectID: &f.project.ID, PolicyID: &f.policy.ID, Limit: all}),
		"relay_keys": mutableCase(s.RelayKeys().MutableTable,
			RelayKey{KeyHash: hash("sk-wr-crud"), DisplayPrefix: "sk-wr-cr", ProjectID: f.project.ID, UserID: &f.user.ID, ExpiresAt: &expires},
			func(r *RelayKey) {
				r.Name, r.PolicyID, r.Priority, r.ExpiresAt = "ci", &f.policy.ID, ptrTo(int32(9)), nil
			},
			RelayKeysPage{ProjectID: &f.project.ID, UserID: &f.user.ID, Limit: all}),
		"inference_tokens": mutableCase(s.InferenceTokens().MutableTable,
			InferenceToken{TokenHash: hash("it-crud"), UserID: f.user.ID, ProjectID: f.project.ID, ExpiresAt: expires},
			func(r *InferenceToken) { r.ExpiresAt = r.ExpiresAt.Add(time.Hour) },
			InferenceTokensPage{UserID: &f.user.ID, ProjectID: &f.project.ID, Limit: all}),
		"budgets": mutableCase(s.Budgets().MutableTable, Budget{ProjectID: &f.project.ID, Period: "month", Amount: 1000},
			func(r *Budget) { r.Period, r.Amount = "day", 50 }, BudgetsPage{ProjectID: &f.project.ID, Limit: all}),
		"role_bindings": mutableCase(s.RoleBindings().MutableTable, RoleBinding{Role: "viewer", UserID: &f.user.ID, TeamID: &f.team.ID},
			func(r *RoleBinding) { r.Role, r.TeamID, r.ProjectID = "developer", nil, &f.project.ID },
			RoleBindingsPage{UserID: &f.user.ID, Limit: all}),
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, b)
		})
	}
}
