package controlapi

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/openapi/models"
)

// Shares: what a system admin hands to a team. A system policy shared with a
// team may be attached by the team's project and team admins; a host key
// shared with a team may be listed by the team's own policies. Sharing and
// its lists are system business (system admins write, system readers read);
// a team reads the host keys shared with it under /api/teams/{id}/host-keys.
// Sharing is idempotent (PUT); taking a share back is a DELETE.

// shareTeam checks the team named in a share's path: none is a 404.
func (s *Server) shareTeam(ctx context.Context, team uuid.UUID) error {
	_, err := got(s.st.Teams().Get(ctx, team)).orNotFound("team")
	return err
}

func policyShareOut(r store.PolicyTeamShare) models.PolicyTeamShare {
	return models.PolicyTeamShare{PolicyID: r.PolicyID, TeamID: r.TeamID, CreatedAt: r.CreatedAt}
}

func hostKeyShareOut(r store.HostKeyTeamShare) models.HostKeyTeamShare {
	return models.HostKeyTeamShare{HostKeyID: r.HostKeyID, TeamID: r.TeamID, CreatedAt: r.CreatedAt}
}

// ListPolicyShares is the operation of the same name in openapi/control.yaml.
func (v *Service) ListPolicyShares(ctx context.Context, id uuid.UUID, params models.ListPolicySharesParams) (out models.PolicyTeamShareList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListPolicyShares")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	if _, _, err := systemRow(ctx, "policy", rbac.Read, false, func() (store.Policy, error) { return s.st.Policies().Get(ctx, id) }); err != nil {
		return out, err
	}
	rows, err := s.st.PolicyTeamShares().List(ctx, store.PolicyTeamSharesPage{AfterPolicyID: id, AfterTeamID: after, PolicyID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.PolicyTeamShare) uuid.UUID { return r.TeamID }, policyShareOut)
	return out, err
}

// SharePolicy is the operation of the same name in openapi/control.yaml. Only a system policy is
// shared: a team's policy is its team's alone.
func (v *Service) SharePolicy(ctx context.Context, id uuid.UUID, body *models.TeamShareCreate) (out models.PolicyTeamShare, err error) {
	s, ctx, done, err := v.enter(ctx, "SharePolicy")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, p, err := systemRow(ctx, "policy", rbac.Read, true, func() (store.Policy, error) { return s.st.Policies().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	team := body.TeamID
	if err := s.shareTeam(ctx, team); err != nil {
		return out, err
	}
	if p.TeamID != nil {
		return out, invalid("a team's own policy is not shared; share a system policy", "id")
	}
	key := store.PolicyTeamShareKey{PolicyID: id, TeamID: team}
	row, err := s.st.PolicyTeamShares().Create(ctx, c.actor, store.PolicyTeamShare{PolicyID: id, TeamID: team})
	if errors.Is(err, store.ErrConflict) {
		row, err = s.st.PolicyTeamShares().Get(ctx, key)
	}
	if err != nil {
		return out, err
	}
	return policyShareOut(row), nil
}

// UnsharePolicy is the operation of the same name in openapi/control.yaml. Rows that name the policy
// keep it; the team's admins only cannot attach it anew.
func (v *Service) UnsharePolicy(ctx context.Context, id uuid.UUID, teamID uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "UnsharePolicy")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "policy", rbac.Read, true, func() (store.Policy, error) { return s.st.Policies().Get(ctx, id) })
	if err != nil {
		return err
	}
	return deleted("policy share", s.st.PolicyTeamShares().Delete(ctx, c.actor, store.PolicyTeamShareKey{PolicyID: id, TeamID: teamID}))
}

// ListHostKeyShares is the operation of the same name in openapi/control.yaml.
func (v *Service) ListHostKeyShares(ctx context.Context, id uuid.UUID, params models.ListHostKeySharesParams) (out models.HostKeyTeamShareList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListHostKeyShares")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	if _, _, err := systemRow(ctx, "host key", rbac.Read, false, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, id) }); err != nil {
		return out, err
	}
	rows, err := s.st.HostKeyTeamShares().List(ctx, store.HostKeyTeamSharesPage{AfterHostKeyID: id, AfterTeamID: after, HostKeyID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.HostKeyTeamShare) uuid.UUID { return r.TeamID }, hostKeyShareOut)
	return out, err
}

// ShareHostKey is the operation of the same name in openapi/control.yaml.
func (v *Service) ShareHostKey(ctx context.Context, id uuid.UUID, body *models.TeamShareCreate) (out models.HostKeyTeamShare, err error) {
	s, ctx, done, err := v.enter(ctx, "ShareHostKey")
	if err != nil {
		return out, err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, id) })
	if err != nil {
		return out, err
	}
	team := body.TeamID
	if err := s.shareTeam(ctx, team); err != nil {
		return out, err
	}
	key := store.HostKeyTeamShareKey{HostKeyID: id, TeamID: team}
	row, err := s.st.HostKeyTeamShares().Create(ctx, c.actor, store.HostKeyTeamShare{HostKeyID: id, TeamID: team})
	if errors.Is(err, store.ErrConflict) {
		row, err = s.st.HostKeyTeamShares().Get(ctx, key)
	}
	if err != nil {
		return out, err
	}
	return hostKeyShareOut(row), nil
}

// UnshareHostKey is the operation of the same name in openapi/control.yaml. The schema takes the host
// key out of the team's policies in the same transaction.
func (v *Service) UnshareHostKey(ctx context.Context, id uuid.UUID, teamID uuid.UUID) (err error) {
	s, ctx, done, err := v.enter(ctx, "UnshareHostKey")
	if err != nil {
		return err
	}
	defer done(&err)
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, id) })
	if err != nil {
		return err
	}
	return deleted("host key share", s.st.HostKeyTeamShares().Delete(ctx, c.actor, store.HostKeyTeamShareKey{HostKeyID: id, TeamID: teamID}))
}

// ListTeamHostKeyShares implements StrictServerInterface: what the team's
// own policies may list, for whoever may see the team.
func (v *Service) ListTeamHostKeyShares(ctx context.Context, id uuid.UUID, params models.ListTeamHostKeySharesParams) (out models.HostKeyTeamShareList, err error) {
	s, ctx, done, err := v.enter(ctx, "ListTeamHostKeyShares")
	if err != nil {
		return out, err
	}
	defer done(&err)
	after, fetch, err := page(params.Limit, params.Cursor)
	if err != nil {
		return out, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return out, err
	}
	if _, err := got(s.st.Teams().Get(ctx, id)).orNotFound("team"); err != nil {
		return out, err
	}
	if !c.CanSeeTeam(id) {
		return out, notFound("team")
	}
	afterTeam := uuid.Nil // the team is fixed: a page ends at a host key, and the next one starts past it
	if after != uuid.Nil {
		afterTeam = uuid.Max
	}
	rows, err := s.st.HostKeyTeamShares().List(ctx, store.HostKeyTeamSharesPage{AfterHostKeyID: after, AfterTeamID: afterTeam, TeamID: &id, Limit: fetch})
	out.Items, out.NextCursor, err = pageOf(rows, err, fetch, func(r store.HostKeyTeamShare) uuid.UUID { return r.HostKeyID }, hostKeyShareOut)
	return out, err
}
