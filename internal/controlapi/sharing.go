package controlapi

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/store"
	gen "github.com/relay-llm/relay/openapi/controlgen"
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

// ListPolicyShares implements StrictServerInterface.
func (s *Server) ListPolicyShares(ctx context.Context, req gen.ListPolicySharesRequestObject) (gen.ListPolicySharesResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if _, _, err := systemRow(ctx, "policy", rbac.Read, false, func() (store.Policy, error) { return s.st.Policies().Get(ctx, req.ID) }); err != nil {
		return nil, err
	}
	rows, err := s.st.PolicyTeamShares().List(ctx, store.PolicyTeamSharesPage{AfterPolicyID: req.ID, AfterTeamID: after, PolicyID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.PolicyTeamShare) uuid.UUID { return r.TeamID })
	return gen.ListPolicyShares200JSONResponse{Items: convertAll(rows, policyShareOut), NextCursor: next}, nil
}

// SharePolicy implements StrictServerInterface. Only a system policy is
// shared: a team's policy is its team's alone.
func (s *Server) SharePolicy(ctx context.Context, req gen.SharePolicyRequestObject) (gen.SharePolicyResponseObject, error) {
	c, p, err := systemRow(ctx, "policy", rbac.Read, true, func() (store.Policy, error) { return s.st.Policies().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	team := req.Body.TeamID
	if err := s.shareTeam(ctx, team); err != nil {
		return nil, err
	}
	if p.TeamID != nil {
		return nil, invalid("a team's own policy is not shared; share a system policy", "id")
	}
	key := store.PolicyTeamShareKey{PolicyID: req.ID, TeamID: team}
	row, err := s.st.PolicyTeamShares().Create(ctx, c.actor, store.PolicyTeamShare{PolicyID: req.ID, TeamID: team})
	if errors.Is(err, store.ErrConflict) {
		row, err = s.st.PolicyTeamShares().Get(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return gen.SharePolicy201JSONResponse(policyShareOut(row)), nil
}

// UnsharePolicy implements StrictServerInterface. Rows that name the policy
// keep it; the team's admins only cannot attach it anew.
func (s *Server) UnsharePolicy(ctx context.Context, req gen.UnsharePolicyRequestObject) (gen.UnsharePolicyResponseObject, error) {
	c, _, err := systemRow(ctx, "policy", rbac.Read, true, func() (store.Policy, error) { return s.st.Policies().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	err = s.st.PolicyTeamShares().Delete(ctx, c.actor, store.PolicyTeamShareKey{PolicyID: req.ID, TeamID: req.TeamID})
	if _, err := found("policy share", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.UnsharePolicy204Response{}, nil
}

// ListHostKeyShares implements StrictServerInterface.
func (s *Server) ListHostKeyShares(ctx context.Context, req gen.ListHostKeySharesRequestObject) (gen.ListHostKeySharesResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	if _, _, err := systemRow(ctx, "host key", rbac.Read, false, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, req.ID) }); err != nil {
		return nil, err
	}
	rows, err := s.st.HostKeyTeamShares().List(ctx, store.HostKeyTeamSharesPage{AfterHostKeyID: req.ID, AfterTeamID: after, HostKeyID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.HostKeyTeamShare) uuid.UUID { return r.TeamID })
	return gen.ListHostKeyShares200JSONResponse{Items: convertAll(rows, hostKeyShareOut), NextCursor: next}, nil
}

// ShareHostKey implements StrictServerInterface.
func (s *Server) ShareHostKey(ctx context.Context, req gen.ShareHostKeyRequestObject) (gen.ShareHostKeyResponseObject, error) {
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	team := req.Body.TeamID
	if err := s.shareTeam(ctx, team); err != nil {
		return nil, err
	}
	key := store.HostKeyTeamShareKey{HostKeyID: req.ID, TeamID: team}
	row, err := s.st.HostKeyTeamShares().Create(ctx, c.actor, store.HostKeyTeamShare{HostKeyID: req.ID, TeamID: team})
	if errors.Is(err, store.ErrConflict) {
		row, err = s.st.HostKeyTeamShares().Get(ctx, key)
	}
	if err != nil {
		return nil, err
	}
	return gen.ShareHostKey201JSONResponse(hostKeyShareOut(row)), nil
}

// UnshareHostKey implements StrictServerInterface. The schema takes the host
// key out of the team's policies in the same transaction.
func (s *Server) UnshareHostKey(ctx context.Context, req gen.UnshareHostKeyRequestObject) (gen.UnshareHostKeyResponseObject, error) {
	c, _, err := systemRow(ctx, "host key", rbac.Read, true, func() (store.HostKey, error) { return s.st.HostKeys().Get(ctx, req.ID) })
	if err != nil {
		return nil, err
	}
	err = s.st.HostKeyTeamShares().Delete(ctx, c.actor, store.HostKeyTeamShareKey{HostKeyID: req.ID, TeamID: req.TeamID})
	if _, err := found("host key share", struct{}{}, err); err != nil {
		return nil, err
	}
	return gen.UnshareHostKey204Response{}, nil
}

// ListTeamHostKeyShares implements StrictServerInterface: what the team's
// own policies may list, for whoever may see the team.
func (s *Server) ListTeamHostKeyShares(ctx context.Context, req gen.ListTeamHostKeySharesRequestObject) (gen.ListTeamHostKeySharesResponseObject, error) {
	after, fetch, err := page(req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	c, err := callerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := got(s.st.Teams().Get(ctx, req.ID)).orNotFound("team"); err != nil {
		return nil, err
	}
	if !c.CanSeeTeam(req.ID) {
		return nil, notFound("team")
	}
	afterTeam := uuid.Nil // the team is fixed: a page ends at a host key, and the next one starts past it
	if after != uuid.Nil {
		afterTeam = uuid.Max
	}
	rows, err := s.st.HostKeyTeamShares().List(ctx, store.HostKeyTeamSharesPage{AfterHostKeyID: after, AfterTeamID: afterTeam, TeamID: &req.ID, Limit: fetch})
	if err != nil {
		return nil, err
	}
	rows, next := cut(rows, fetch, func(r store.HostKeyTeamShare) uuid.UUID { return r.HostKeyID })
	return gen.ListTeamHostKeyShares200JSONResponse{Items: convertAll(rows, hostKeyShareOut), NextCursor: next}, nil
}
