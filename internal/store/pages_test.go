package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// pageThrough lists every page of size 3 and returns the pages' sizes and
// the keys in the order seen; next gives the page after a row.
func pageThrough[R any, K comparable, P any](t *testing.T, tbl Table[R, K, P], first P, next func(last R) P) (sizes []int, seen []K) {
	t.Helper()
	p := first
	for range 10 {
		rows := mk[[]R](t)(tbl.List(t.Context(), p))
		sizes = append(sizes, len(rows))
		if len(rows) == 0 {
			return sizes, seen
		}
		seen = append(seen, keys(tbl.def.keyOf, rows)...)
		p = next(rows[len(rows)-1])
	}
	t.Fatal("pages do not end")
	return nil, nil
}

func TestTables_ListPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s

	var hosts []uuid.UUID
	for i := range 7 {
		hosts = append(hosts, mk[Host](t)(s.Hosts().Create(ctx, actor, hostRow(fmt.Sprintf("page-%d", i)))).ID)
	}
	sizes, seen := pageThrough(t, s.Hosts().Table, Page{Limit: 3}, func(last Host) Page {
		return Page{After: last.ID, Limit: 3}
	})
	slices.SortFunc(hosts, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	if !slices.Equal(sizes, []int{3, 3, 1, 0}) || !slices.Equal(seen, hosts) {
		t.Errorf("hosts: pages of %v holding %v, want 3, 3, 1, 0 holding %v", sizes, seen, hosts)
	}

	// Composite keys page in (policy, model) order.
	policy := mk[Policy](t)(s.Policies().Create(ctx, actor, policyRow("paged")))
	for i := range 5 {
		m := mk[Model](t)(s.Models().Create(ctx, actor, modelRow(fmt.Sprintf("paged-%d", i))))
		mk[PolicyModel](t)(s.PolicyModels().Create(ctx, actor, PolicyModel{PolicyID: policy.ID, ModelID: m.ID}))
	}
	sizes, grants := pageThrough(t, s.PolicyModels().Table, PolicyModelsPage{PolicyID: &policy.ID, Limit: 3},
		func(last PolicyModel) PolicyModelsPage {
			return PolicyModelsPage{AfterPolicyID: last.PolicyID, AfterModelID: last.ModelID, PolicyID: &policy.ID, Limit: 3}
		})
	if !slices.Equal(sizes, []int{3, 2, 0}) || len(grants) != 5 ||
		!slices.IsSortedFunc(grants, func(a, b PolicyModelKey) int { return slices.Compare(a.ModelID[:], b.ModelID[:]) }) {
		t.Errorf("policy models: pages of %v holding %v", sizes, grants)
	}

	// The audit log pages by its serial id; kind filters it.
	kind := "hosts"
	var audit []int64
	after := int64(0)
	for {
		rows := mk[[]AuditLog](t)(s.ListAuditLog(ctx, AuditLogPage{After: after, Kind: &kind, Limit: 3}))
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			audit = append(audit, r.ID)
		}
		after = rows[len(rows)-1].ID
	}
	if len(audit) != 7 || !slices.IsSorted(audit) {
		t.Errorf("audit log of hosts: %v, want 7 rows in order", audit)
	}
	who := "nobody"
	if rows := mk[[]AuditLog](t)(s.ListAuditLog(ctx, AuditLogPage{Actor: &who, Limit: 10})); len(rows) != 0 {
		t.Errorf("audit log of %s: %v", who, rows)
	}
}

func TestTables_ListFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, s := b.ctx, b.s
	a, z := newFixture(t, b, "fa"), newFixture(t, b, "fz")
	only := func(t *testing.T, got []uuid.UUID, want uuid.UUID) {
		t.Helper()
		if !slices.Equal(got, []uuid.UUID{want}) {
			t.Errorf("filtered list = %v, want only %v", got, want)
		}
	}
	only(t, keys(projectsTable.key, mk[[]Project](t)(s.Projects().List(ctx, ProjectsPage{TeamID: &a.team.ID, Limit: 10}))), a.project.ID)
	only(t, keys(serviceAccountsTable.key, mk[[]ServiceAccount](t)(s.ServiceAccounts().List(ctx, ServiceAccountsPage{ProjectID: &z.project.ID, Limit: 10}))), z.sa.ID)
	only(t, keys(hostKeysTable.key, mk[[]HostKey](t)(s.HostKeys().List(ctx, HostKeysPage{HostID: &a.host.ID, Limit: 10}))), a.hostKey.ID)
	only(t, keys(relayKeysTable.key, mk[[]RelayKey](t)(s.RelayKeys().List(ctx, RelayKeysPage{ServiceAccountID: &z.sa.ID, Limit: 10}))), z.relayKey.ID)
	if all := mk[[]Project](t)(s.Projects().List(ctx, ProjectsPage{Limit: 10})); len(all) != 2 {
		t.Errorf("unfiltered projects = %d, want 2", len(all))
	}
}
