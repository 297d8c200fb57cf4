package controlapi_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/openapi/models"
	"github.com/relay-llm/relay/openapi/nullable"
)

// owners is two teams, a project in each, a policy owned by each team, an
// unshared system policy, a host key, and the admins of team A.
type owners struct {
	teamA, teamB     models.Team
	a1, b1           models.Project
	saA1             models.ServiceAccount
	policyA, policyB models.Policy
	system           models.Policy
	hostKey          models.HostKey
	padminA1         *session // project_admin on a1
	tadminA          *session // team_admin on team A
}

func buildOwners(t *testing.T, b *bundle) *owners {
	t.Helper()
	ctx, c := b.ctx, b.admin
	o := &owners{}
	o.teamA, o.teamB = b.team("own-a"), b.team("own-b")
	o.a1, o.b1 = b.project(o.teamA.ID, "a1"), b.project(o.teamB.ID, "b1")
	o.saA1 = b.serviceAccount(o.a1.ID, "sa")
	o.policyA = *call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "pol-a", TeamID: &o.teamA.ID})).want(t, http.StatusCreated).JSON201
	o.policyB = *call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "pol-b", TeamID: &o.teamB.ID})).want(t, http.StatusCreated).JSON201
	o.system = b.policy("pol-system")
	o.hostKey = b.hostKey(b.host("own-host").ID, "own-key")
	o.padminA1 = b.newUser("own-padmin")
	b.grant(o.padminA1.user.ID, models.RoleProjectAdmin, nil, &o.a1.ID)
	o.tadminA = b.newUser("own-tadmin")
	b.grant(o.tadminA.user.ID, models.RoleTeamAdmin, &o.teamA.ID, nil)
	return o
}

// TestPolicies_AnotherTeamsPolicyCannotBeAttached: team A's project admin
// naming team B's policy on a relay key, a service account or a policy
// binding gets exactly the answer a policy that does not exist gets (today's
// code attached it: 8 of 8 in the issue), and B's policy is 404 to them.
func TestPolicies_AnotherTeamsPolicyCannotBeAttached(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	o := buildOwners(t, b)
	s := o.padminA1
	keyA1 := call(s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: o.a1.ID, ServiceAccountID: &o.saA1.ID})).want(t, http.StatusCreated).JSON201.RelayKey
	bindingA1 := *call(s.CreatePolicyBindingWithResponse(ctx, models.PolicyBindingCreate{ProjectID: o.a1.ID, PolicyID: o.policyA.ID, ServiceAccountID: &o.saA1.ID})).want(t, http.StatusCreated).JSON201

	attach := []struct {
		name string
		do   func(policy uuid.UUID) (statusCoder, error)
	}{
		{"create relay key", func(p uuid.UUID) (statusCoder, error) {
			return s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: o.a1.ID, ServiceAccountID: &o.saA1.ID, PolicyID: &p})
		}},
		{"update relay key", func(p uuid.UUID) (statusCoder, error) {
			return s.UpdateRelayKeyWithResponse(ctx, keyA1.ID, models.RelayKeyUpdate{PolicyID: nullable.Value(p)})
		}},
		{"create service account", func(p uuid.UUID) (statusCoder, error) {
			return s.CreateServiceAccountWithResponse(ctx, models.ServiceAccountCreate{ProjectID: o.a1.ID, Slug: "sa-" + p.String()[:8], PolicyID: &p})
		}},
		{"update service account", func(p uuid.UUID) (statusCoder, error) {
			return s.UpdateServiceAccountWithResponse(ctx, o.saA1.ID, models.ServiceAccountUpdate{PolicyID: nullable.Value(p)})
		}},
		{"create policy binding", func(p uuid.UUID) (statusCoder, error) {
			return s.CreatePolicyBindingWithResponse(ctx, models.PolicyBindingCreate{ProjectID: o.a1.ID, PolicyID: p, ServiceAccountID: &o.saA1.ID})
		}},
		{"update policy binding", func(p uuid.UUID) (statusCoder, error) {
			return s.UpdatePolicyBindingWithResponse(ctx, bindingA1.ID, models.PolicyBindingUpdate{PolicyID: &p})
		}},
	}
	for _, a := range attach {
		missing := call(a.do(uuid.New())).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "policy_id")
		for _, p := range []models.Policy{o.policyB, o.system} {
			got := call(a.do(p.ID)).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "policy_id")
			if got.Message != missing.Message {
				t.Errorf("%s with %s: %q, want the answer of a missing policy %q", a.name, p.Slug, got.Message, missing.Message)
			}
		}
	}
	// Nothing of team A's project names B's policy afterwards.
	for _, k := range call(b.admin.ListRelayKeysWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200.Items {
		if k.PolicyID != nil && *k.PolicyID == o.policyB.ID {
			t.Errorf("relay key %s names team B's policy", k.ID)
		}
	}

	call(s.GetPolicyWithResponse(ctx, o.policyB.ID)).want(t, http.StatusNotFound)
	call(s.GetPolicyWithResponse(ctx, o.policyA.ID)).want(t, http.StatusOK)
	listed := ids(call(s.ListPoliciesWithResponse(ctx, nil)).want(t, http.StatusOK).JSON200.Items, func(p models.Policy) uuid.UUID { return p.ID })
	if slices.Contains(listed, o.policyB.ID) || !slices.Contains(listed, o.policyA.ID) || !slices.Contains(listed, o.system.ID) {
		t.Errorf("team A lists %v; want its own and the system policy, not team B's", listed)
	}

	// A system admin shares the system policy with team A: now it attaches.
	call(b.admin.SharePolicyWithResponse(ctx, o.system.ID, models.TeamShareCreate{TeamID: o.teamA.ID})).want(t, http.StatusCreated)
	call(b.admin.SharePolicyWithResponse(ctx, o.system.ID, models.TeamShareCreate{TeamID: o.teamA.ID})).want(t, http.StatusCreated) // idempotent
	call(s.UpdateRelayKeyWithResponse(ctx, keyA1.ID, models.RelayKeyUpdate{PolicyID: nullable.Value(o.system.ID)})).want(t, http.StatusOK)
	call(b.admin.SharePolicyWithResponse(ctx, o.policyB.ID, models.TeamShareCreate{TeamID: o.teamA.ID})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "")

	// A team's policy is usable only inside its team, even by a system admin.
	call(b.admin.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: o.b1.ID, ServiceAccountID: ptr(b.serviceAccount(o.b1.ID, "sa").ID), PolicyID: &o.policyA.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "policy_id")
}

// TestPolicies_TeamAdminWritesOnlyItsTeamsPolicies: a team admin creates and
// changes its team's policies (a system admin's job alone before), not
// another team's or the system's, and lists in them only host keys a system
// admin shared with the team.
func TestPolicies_TeamAdminWritesOnlyItsTeamsPolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	o := buildOwners(t, b)
	s := o.tadminA

	own := *call(s.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "tadmin-own", TeamID: &o.teamA.ID})).want(t, http.StatusCreated).JSON201
	if own.TeamID == nil || *own.TeamID != o.teamA.ID {
		t.Errorf("team_id = %v, want team A", own.TeamID)
	}
	call(s.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "tadmin-b", TeamID: &o.teamB.ID})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "team_id")
	call(s.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "tadmin-sys"})).want(t, http.StatusForbidden)
	call(s.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "tadmin-all", TeamID: &o.teamA.ID, AllHostKeys: ptr(true)})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "all_host_keys")
	call(s.UpdatePolicyWithResponse(ctx, own.ID, models.PolicyUpdate{AllHostKeys: ptr(true)})).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "all_host_keys")
	call(s.UpdatePolicyWithResponse(ctx, own.ID, models.PolicyUpdate{Name: ptr("renamed")})).want(t, http.StatusOK)
	call(s.UpdatePolicyWithResponse(ctx, o.policyB.ID, models.PolicyUpdate{Name: ptr("x")})).want(t, http.StatusNotFound)
	call(s.UpdatePolicyWithResponse(ctx, o.system.ID, models.PolicyUpdate{Name: ptr("x")})).want(t, http.StatusForbidden)
	call(o.padminA1.UpdatePolicyWithResponse(ctx, own.ID, models.PolicyUpdate{Name: ptr("x")})).want(t, http.StatusForbidden)

	grant := models.PolicyHostKeyGrantCreate{HostKeyID: o.hostKey.ID}
	call(s.CreatePolicyHostKeyGrantWithResponse(ctx, own.ID, grant)).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "host_key_id")
	call(b.admin.CreatePolicyHostKeyGrantWithResponse(ctx, own.ID, grant)).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "host_key_id")
	call(b.admin.ShareHostKeyWithResponse(ctx, o.hostKey.ID, models.TeamShareCreate{TeamID: o.teamB.ID})).want(t, http.StatusCreated)
	call(s.CreatePolicyHostKeyGrantWithResponse(ctx, own.ID, grant)).wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "host_key_id")
	call(s.ShareHostKeyWithResponse(ctx, o.hostKey.ID, models.TeamShareCreate{TeamID: o.teamA.ID})).want(t, http.StatusNotFound) // host keys are system rows
	call(b.admin.ShareHostKeyWithResponse(ctx, o.hostKey.ID, models.TeamShareCreate{TeamID: o.teamA.ID})).want(t, http.StatusCreated)
	shared := call(s.ListTeamHostKeySharesWithResponse(ctx, o.teamA.ID, nil)).want(t, http.StatusOK).JSON200.Items
	if len(shared) != 1 || shared[0].HostKeyID != o.hostKey.ID {
		t.Errorf("host keys shared with team A = %+v, want the one", shared)
	}
	call(s.ListTeamHostKeySharesWithResponse(ctx, o.teamB.ID, nil)).want(t, http.StatusNotFound)
	call(s.CreatePolicyHostKeyGrantWithResponse(ctx, own.ID, grant)).want(t, http.StatusCreated)

	// Taking the share back takes the key out of the team's policy.
	call(b.admin.UnshareHostKeyWithResponse(ctx, o.hostKey.ID, o.teamA.ID)).want(t, http.StatusNoContent)
	if got := call(s.ListPolicyHostKeyGrantsWithResponse(ctx, own.ID, nil)).want(t, http.StatusOK).JSON200.Items; len(got) != 0 {
		t.Errorf("grants after the share was taken back = %+v, want none", got)
	}
	call(b.admin.UnshareHostKeyWithResponse(ctx, o.hostKey.ID, o.teamA.ID)).want(t, http.StatusNotFound)
}

// TestRelayKeys_UserOwnerNeedsARoleInTheProject: a relay key minted for a
// user is for a user with a role in the key's project (today a manager could
// mint one in the name of anyone).
func TestRelayKeys_UserOwnerNeedsARoleInTheProject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	o := buildOwners(t, b)
	outsider := b.newUser("own-outsider")
	b.grant(outsider.user.ID, models.RoleDeveloper, nil, &o.b1.ID)
	member := b.newUser("own-member")
	b.grant(member.user.ID, models.RoleViewer, &o.teamA.ID, nil)

	for _, minter := range []struct {
		name string
		s    *session
	}{{"project admin", o.padminA1}, {"team admin", o.tadminA}} {
		call(minter.s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: o.a1.ID, UserID: &outsider.user.ID})).
			wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "user_id")
		call(minter.s.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: o.a1.ID, UserID: &member.user.ID})).want(t, http.StatusCreated)
	}
	call(b.admin.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: o.a1.ID, UserID: &outsider.user.ID})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "user_id")
}
