package controlapi

import (
	"context"
	"strings"

	gen "github.com/relay-llm/relay/openapi/controlgen"
	"github.com/relay-llm/relay/openapi/models"
)

// The strict server's handlers of the operations the Service serves: each
// passes the request's parameters to the Service method of the same name and
// wraps its answer in the operation's success variant. Errors go to
// writeError unchanged (server.go), so the answers are the Service's.

// ListHosts implements StrictServerInterface.
func (s *Server) ListHosts(ctx context.Context, req gen.ListHostsRequestObject) (gen.ListHostsResponseObject, error) {
	out, err := s.svc.ListHosts(ctx, req.Params)
	return gen.ListHosts200JSONResponse(out), err
}

// CreateHost implements StrictServerInterface.
func (s *Server) CreateHost(ctx context.Context, req gen.CreateHostRequestObject) (gen.CreateHostResponseObject, error) {
	out, err := s.svc.CreateHost(ctx, req.Body)
	return gen.CreateHost201JSONResponse(out), err
}

// GetHost implements StrictServerInterface.
func (s *Server) GetHost(ctx context.Context, req gen.GetHostRequestObject) (gen.GetHostResponseObject, error) {
	out, err := s.svc.GetHost(ctx, req.ID)
	return gen.GetHost200JSONResponse(out), err
}

// UpdateHost implements StrictServerInterface.
func (s *Server) UpdateHost(ctx context.Context, req gen.UpdateHostRequestObject) (gen.UpdateHostResponseObject, error) {
	out, err := s.svc.UpdateHost(ctx, req.ID, req.Body)
	return gen.UpdateHost200JSONResponse(out), err
}

// DeleteHost implements StrictServerInterface.
func (s *Server) DeleteHost(ctx context.Context, req gen.DeleteHostRequestObject) (gen.DeleteHostResponseObject, error) {
	return gen.DeleteHost204Response{}, s.svc.DeleteHost(ctx, req.ID)
}

// ListModels implements StrictServerInterface.
func (s *Server) ListModels(ctx context.Context, req gen.ListModelsRequestObject) (gen.ListModelsResponseObject, error) {
	out, err := s.svc.ListModels(ctx, req.Params)
	return gen.ListModels200JSONResponse(out), err
}

// CreateModel implements StrictServerInterface.
func (s *Server) CreateModel(ctx context.Context, req gen.CreateModelRequestObject) (gen.CreateModelResponseObject, error) {
	out, err := s.svc.CreateModel(ctx, req.Body)
	return gen.CreateModel201JSONResponse(out), err
}

// GetModel implements StrictServerInterface.
func (s *Server) GetModel(ctx context.Context, req gen.GetModelRequestObject) (gen.GetModelResponseObject, error) {
	out, err := s.svc.GetModel(ctx, req.ID)
	return gen.GetModel200JSONResponse(out), err
}

// UpdateModel implements StrictServerInterface.
func (s *Server) UpdateModel(ctx context.Context, req gen.UpdateModelRequestObject) (gen.UpdateModelResponseObject, error) {
	out, err := s.svc.UpdateModel(ctx, req.ID, req.Body)
	return gen.UpdateModel200JSONResponse(out), err
}

// DeleteModel implements StrictServerInterface.
func (s *Server) DeleteModel(ctx context.Context, req gen.DeleteModelRequestObject) (gen.DeleteModelResponseObject, error) {
	return gen.DeleteModel204Response{}, s.svc.DeleteModel(ctx, req.ID)
}

// ListBindings implements StrictServerInterface.
func (s *Server) ListBindings(ctx context.Context, req gen.ListBindingsRequestObject) (gen.ListBindingsResponseObject, error) {
	out, err := s.svc.ListBindings(ctx, req.Params)
	return gen.ListBindings200JSONResponse(out), err
}

// CreateBinding implements StrictServerInterface.
func (s *Server) CreateBinding(ctx context.Context, req gen.CreateBindingRequestObject) (gen.CreateBindingResponseObject, error) {
	out, err := s.svc.CreateBinding(ctx, req.Body)
	return gen.CreateBinding201JSONResponse(out), err
}

// GetBinding implements StrictServerInterface.
func (s *Server) GetBinding(ctx context.Context, req gen.GetBindingRequestObject) (gen.GetBindingResponseObject, error) {
	out, err := s.svc.GetBinding(ctx, req.ID)
	return gen.GetBinding200JSONResponse(out), err
}

// UpdateBinding implements StrictServerInterface.
func (s *Server) UpdateBinding(ctx context.Context, req gen.UpdateBindingRequestObject) (gen.UpdateBindingResponseObject, error) {
	out, err := s.svc.UpdateBinding(ctx, req.ID, req.Body)
	return gen.UpdateBinding200JSONResponse(out), err
}

// DeleteBinding implements StrictServerInterface.
func (s *Server) DeleteBinding(ctx context.Context, req gen.DeleteBindingRequestObject) (gen.DeleteBindingResponseObject, error) {
	return gen.DeleteBinding204Response{}, s.svc.DeleteBinding(ctx, req.ID)
}

// ListHostKeys implements StrictServerInterface.
func (s *Server) ListHostKeys(ctx context.Context, req gen.ListHostKeysRequestObject) (gen.ListHostKeysResponseObject, error) {
	out, err := s.svc.ListHostKeys(ctx, req.Params)
	return gen.ListHostKeys200JSONResponse(out), err
}

// CreateHostKey implements StrictServerInterface.
func (s *Server) CreateHostKey(ctx context.Context, req gen.CreateHostKeyRequestObject) (gen.CreateHostKeyResponseObject, error) {
	out, err := s.svc.CreateHostKey(ctx, req.Body)
	return gen.CreateHostKey201JSONResponse(out), err
}

// GetHostKey implements StrictServerInterface.
func (s *Server) GetHostKey(ctx context.Context, req gen.GetHostKeyRequestObject) (gen.GetHostKeyResponseObject, error) {
	out, err := s.svc.GetHostKey(ctx, req.ID)
	return gen.GetHostKey200JSONResponse(out), err
}

// UpdateHostKey implements StrictServerInterface.
func (s *Server) UpdateHostKey(ctx context.Context, req gen.UpdateHostKeyRequestObject) (gen.UpdateHostKeyResponseObject, error) {
	out, err := s.svc.UpdateHostKey(ctx, req.ID, req.Body)
	return gen.UpdateHostKey200JSONResponse(out), err
}

// DeleteHostKey implements StrictServerInterface.
func (s *Server) DeleteHostKey(ctx context.Context, req gen.DeleteHostKeyRequestObject) (gen.DeleteHostKeyResponseObject, error) {
	return gen.DeleteHostKey204Response{}, s.svc.DeleteHostKey(ctx, req.ID)
}

// TestHostKey implements StrictServerInterface.
func (s *Server) TestHostKey(ctx context.Context, req gen.TestHostKeyRequestObject) (gen.TestHostKeyResponseObject, error) {
	out, err := s.svc.TestHostKey(ctx, req.ID)
	return gen.TestHostKey200JSONResponse(out), err
}

// ListRateLimits implements StrictServerInterface.
func (s *Server) ListRateLimits(ctx context.Context, req gen.ListRateLimitsRequestObject) (gen.ListRateLimitsResponseObject, error) {
	out, err := s.svc.ListRateLimits(ctx, req.Params)
	return gen.ListRateLimits200JSONResponse(out), err
}

// CreateRateLimit implements StrictServerInterface.
func (s *Server) CreateRateLimit(ctx context.Context, req gen.CreateRateLimitRequestObject) (gen.CreateRateLimitResponseObject, error) {
	out, err := s.svc.CreateRateLimit(ctx, req.Body)
	return gen.CreateRateLimit201JSONResponse(out), err
}

// GetRateLimit implements StrictServerInterface.
func (s *Server) GetRateLimit(ctx context.Context, req gen.GetRateLimitRequestObject) (gen.GetRateLimitResponseObject, error) {
	out, err := s.svc.GetRateLimit(ctx, req.ID)
	return gen.GetRateLimit200JSONResponse(out), err
}

// UpdateRateLimit implements StrictServerInterface.
func (s *Server) UpdateRateLimit(ctx context.Context, req gen.UpdateRateLimitRequestObject) (gen.UpdateRateLimitResponseObject, error) {
	out, err := s.svc.UpdateRateLimit(ctx, req.ID, req.Body)
	return gen.UpdateRateLimit200JSONResponse(out), err
}

// DeleteRateLimit implements StrictServerInterface.
func (s *Server) DeleteRateLimit(ctx context.Context, req gen.DeleteRateLimitRequestObject) (gen.DeleteRateLimitResponseObject, error) {
	return gen.DeleteRateLimit204Response{}, s.svc.DeleteRateLimit(ctx, req.ID)
}

// ListRateLimitRules implements StrictServerInterface.
func (s *Server) ListRateLimitRules(ctx context.Context, req gen.ListRateLimitRulesRequestObject) (gen.ListRateLimitRulesResponseObject, error) {
	out, err := s.svc.ListRateLimitRules(ctx, req.ID, req.Params)
	return gen.ListRateLimitRules200JSONResponse(out), err
}

// CreateRateLimitRule implements StrictServerInterface.
func (s *Server) CreateRateLimitRule(ctx context.Context, req gen.CreateRateLimitRuleRequestObject) (gen.CreateRateLimitRuleResponseObject, error) {
	out, err := s.svc.CreateRateLimitRule(ctx, req.ID, req.Body)
	return gen.CreateRateLimitRule201JSONResponse(out), err
}

// GetRateLimitRule implements StrictServerInterface.
func (s *Server) GetRateLimitRule(ctx context.Context, req gen.GetRateLimitRuleRequestObject) (gen.GetRateLimitRuleResponseObject, error) {
	out, err := s.svc.GetRateLimitRule(ctx, req.ID, req.RuleID)
	return gen.GetRateLimitRule200JSONResponse(out), err
}

// UpdateRateLimitRule implements StrictServerInterface.
func (s *Server) UpdateRateLimitRule(ctx context.Context, req gen.UpdateRateLimitRuleRequestObject) (gen.UpdateRateLimitRuleResponseObject, error) {
	out, err := s.svc.UpdateRateLimitRule(ctx, req.ID, req.RuleID, req.Body)
	return gen.UpdateRateLimitRule200JSONResponse(out), err
}

// DeleteRateLimitRule implements StrictServerInterface.
func (s *Server) DeleteRateLimitRule(ctx context.Context, req gen.DeleteRateLimitRuleRequestObject) (gen.DeleteRateLimitRuleResponseObject, error) {
	return gen.DeleteRateLimitRule204Response{}, s.svc.DeleteRateLimitRule(ctx, req.ID, req.RuleID)
}

// ListPolicies implements StrictServerInterface.
func (s *Server) ListPolicies(ctx context.Context, req gen.ListPoliciesRequestObject) (gen.ListPoliciesResponseObject, error) {
	out, err := s.svc.ListPolicies(ctx, req.Params)
	return gen.ListPolicies200JSONResponse(out), err
}

// CreatePolicy implements StrictServerInterface.
func (s *Server) CreatePolicy(ctx context.Context, req gen.CreatePolicyRequestObject) (gen.CreatePolicyResponseObject, error) {
	out, err := s.svc.CreatePolicy(ctx, req.Body)
	return gen.CreatePolicy201JSONResponse(out), err
}

// GetPolicy implements StrictServerInterface.
func (s *Server) GetPolicy(ctx context.Context, req gen.GetPolicyRequestObject) (gen.GetPolicyResponseObject, error) {
	out, err := s.svc.GetPolicy(ctx, req.ID)
	return gen.GetPolicy200JSONResponse(out), err
}

// UpdatePolicy implements StrictServerInterface.
func (s *Server) UpdatePolicy(ctx context.Context, req gen.UpdatePolicyRequestObject) (gen.UpdatePolicyResponseObject, error) {
	out, err := s.svc.UpdatePolicy(ctx, req.ID, req.Body)
	return gen.UpdatePolicy200JSONResponse(out), err
}

// DeletePolicy implements StrictServerInterface.
func (s *Server) DeletePolicy(ctx context.Context, req gen.DeletePolicyRequestObject) (gen.DeletePolicyResponseObject, error) {
	return gen.DeletePolicy204Response{}, s.svc.DeletePolicy(ctx, req.ID)
}

// ListPolicyModelGrants implements StrictServerInterface.
func (s *Server) ListPolicyModelGrants(ctx context.Context, req gen.ListPolicyModelGrantsRequestObject) (gen.ListPolicyModelGrantsResponseObject, error) {
	out, err := s.svc.ListPolicyModelGrants(ctx, req.ID, req.Params)
	return gen.ListPolicyModelGrants200JSONResponse(out), err
}

// CreatePolicyModelGrant implements StrictServerInterface.
func (s *Server) CreatePolicyModelGrant(ctx context.Context, req gen.CreatePolicyModelGrantRequestObject) (gen.CreatePolicyModelGrantResponseObject, error) {
	out, err := s.svc.CreatePolicyModelGrant(ctx, req.ID, req.Body)
	return gen.CreatePolicyModelGrant201JSONResponse(out), err
}

// DeletePolicyModelGrant implements StrictServerInterface.
func (s *Server) DeletePolicyModelGrant(ctx context.Context, req gen.DeletePolicyModelGrantRequestObject) (gen.DeletePolicyModelGrantResponseObject, error) {
	return gen.DeletePolicyModelGrant204Response{}, s.svc.DeletePolicyModelGrant(ctx, req.ID, req.ModelID)
}

// ListPolicyHostKeyGrants implements StrictServerInterface.
func (s *Server) ListPolicyHostKeyGrants(ctx context.Context, req gen.ListPolicyHostKeyGrantsRequestObject) (gen.ListPolicyHostKeyGrantsResponseObject, error) {
	out, err := s.svc.ListPolicyHostKeyGrants(ctx, req.ID, req.Params)
	return gen.ListPolicyHostKeyGrants200JSONResponse(out), err
}

// CreatePolicyHostKeyGrant implements StrictServerInterface.
func (s *Server) CreatePolicyHostKeyGrant(ctx context.Context, req gen.CreatePolicyHostKeyGrantRequestObject) (gen.CreatePolicyHostKeyGrantResponseObject, error) {
	out, err := s.svc.CreatePolicyHostKeyGrant(ctx, req.ID, req.Body)
	return gen.CreatePolicyHostKeyGrant201JSONResponse(out), err
}

// DeletePolicyHostKeyGrant implements StrictServerInterface.
func (s *Server) DeletePolicyHostKeyGrant(ctx context.Context, req gen.DeletePolicyHostKeyGrantRequestObject) (gen.DeletePolicyHostKeyGrantResponseObject, error) {
	return gen.DeletePolicyHostKeyGrant204Response{}, s.svc.DeletePolicyHostKeyGrant(ctx, req.ID, req.HostKeyID)
}

// ListPolicyModelRateLimits implements StrictServerInterface.
func (s *Server) ListPolicyModelRateLimits(ctx context.Context, req gen.ListPolicyModelRateLimitsRequestObject) (gen.ListPolicyModelRateLimitsResponseObject, error) {
	out, err := s.svc.ListPolicyModelRateLimits(ctx, req.ID, req.Params)
	return gen.ListPolicyModelRateLimits200JSONResponse(out), err
}

// CreatePolicyModelRateLimit implements StrictServerInterface.
func (s *Server) CreatePolicyModelRateLimit(ctx context.Context, req gen.CreatePolicyModelRateLimitRequestObject) (gen.CreatePolicyModelRateLimitResponseObject, error) {
	out, err := s.svc.CreatePolicyModelRateLimit(ctx, req.ID, req.Body)
	return gen.CreatePolicyModelRateLimit201JSONResponse(out), err
}

// GetPolicyModelRateLimit implements StrictServerInterface.
func (s *Server) GetPolicyModelRateLimit(ctx context.Context, req gen.GetPolicyModelRateLimitRequestObject) (gen.GetPolicyModelRateLimitResponseObject, error) {
	out, err := s.svc.GetPolicyModelRateLimit(ctx, req.ID, req.ModelID)
	return gen.GetPolicyModelRateLimit200JSONResponse(out), err
}

// UpdatePolicyModelRateLimit implements StrictServerInterface.
func (s *Server) UpdatePolicyModelRateLimit(ctx context.Context, req gen.UpdatePolicyModelRateLimitRequestObject) (gen.UpdatePolicyModelRateLimitResponseObject, error) {
	out, err := s.svc.UpdatePolicyModelRateLimit(ctx, req.ID, req.ModelID, req.Body)
	return gen.UpdatePolicyModelRateLimit200JSONResponse(out), err
}

// DeletePolicyModelRateLimit implements StrictServerInterface.
func (s *Server) DeletePolicyModelRateLimit(ctx context.Context, req gen.DeletePolicyModelRateLimitRequestObject) (gen.DeletePolicyModelRateLimitResponseObject, error) {
	return gen.DeletePolicyModelRateLimit204Response{}, s.svc.DeletePolicyModelRateLimit(ctx, req.ID, req.ModelID)
}

// ListPolicyShares implements StrictServerInterface.
func (s *Server) ListPolicyShares(ctx context.Context, req gen.ListPolicySharesRequestObject) (gen.ListPolicySharesResponseObject, error) {
	out, err := s.svc.ListPolicyShares(ctx, req.ID, req.Params)
	return gen.ListPolicyShares200JSONResponse(out), err
}

// SharePolicy implements StrictServerInterface.
func (s *Server) SharePolicy(ctx context.Context, req gen.SharePolicyRequestObject) (gen.SharePolicyResponseObject, error) {
	out, err := s.svc.SharePolicy(ctx, req.ID, req.Body)
	return gen.SharePolicy201JSONResponse(out), err
}

// UnsharePolicy implements StrictServerInterface.
func (s *Server) UnsharePolicy(ctx context.Context, req gen.UnsharePolicyRequestObject) (gen.UnsharePolicyResponseObject, error) {
	return gen.UnsharePolicy204Response{}, s.svc.UnsharePolicy(ctx, req.ID, req.TeamID)
}

// ListHostKeyShares implements StrictServerInterface.
func (s *Server) ListHostKeyShares(ctx context.Context, req gen.ListHostKeySharesRequestObject) (gen.ListHostKeySharesResponseObject, error) {
	out, err := s.svc.ListHostKeyShares(ctx, req.ID, req.Params)
	return gen.ListHostKeyShares200JSONResponse(out), err
}

// ShareHostKey implements StrictServerInterface.
func (s *Server) ShareHostKey(ctx context.Context, req gen.ShareHostKeyRequestObject) (gen.ShareHostKeyResponseObject, error) {
	out, err := s.svc.ShareHostKey(ctx, req.ID, req.Body)
	return gen.ShareHostKey201JSONResponse(out), err
}

// UnshareHostKey implements StrictServerInterface.
func (s *Server) UnshareHostKey(ctx context.Context, req gen.UnshareHostKeyRequestObject) (gen.UnshareHostKeyResponseObject, error) {
	return gen.UnshareHostKey204Response{}, s.svc.UnshareHostKey(ctx, req.ID, req.TeamID)
}

// ListTeamHostKeyShares implements StrictServerInterface.
func (s *Server) ListTeamHostKeyShares(ctx context.Context, req gen.ListTeamHostKeySharesRequestObject) (gen.ListTeamHostKeySharesResponseObject, error) {
	out, err := s.svc.ListTeamHostKeyShares(ctx, req.ID, req.Params)
	return gen.ListTeamHostKeyShares200JSONResponse(out), err
}

// ListTeams implements StrictServerInterface.
func (s *Server) ListTeams(ctx context.Context, req gen.ListTeamsRequestObject) (gen.ListTeamsResponseObject, error) {
	out, err := s.svc.ListTeams(ctx, req.Params)
	return gen.ListTeams200JSONResponse(out), err
}

// CreateTeam implements StrictServerInterface.
func (s *Server) CreateTeam(ctx context.Context, req gen.CreateTeamRequestObject) (gen.CreateTeamResponseObject, error) {
	out, err := s.svc.CreateTeam(ctx, req.Body)
	return gen.CreateTeam201JSONResponse(out), err
}

// GetTeam implements StrictServerInterface.
func (s *Server) GetTeam(ctx context.Context, req gen.GetTeamRequestObject) (gen.GetTeamResponseObject, error) {
	out, err := s.svc.GetTeam(ctx, req.ID)
	return gen.GetTeam200JSONResponse(out), err
}

// UpdateTeam implements StrictServerInterface.
func (s *Server) UpdateTeam(ctx context.Context, req gen.UpdateTeamRequestObject) (gen.UpdateTeamResponseObject, error) {
	out, err := s.svc.UpdateTeam(ctx, req.ID, req.Body)
	return gen.UpdateTeam200JSONResponse(out), err
}

// DeleteTeam implements StrictServerInterface.
func (s *Server) DeleteTeam(ctx context.Context, req gen.DeleteTeamRequestObject) (gen.DeleteTeamResponseObject, error) {
	return gen.DeleteTeam204Response{}, s.svc.DeleteTeam(ctx, req.ID)
}

// ListProjects implements StrictServerInterface.
func (s *Server) ListProjects(ctx context.Context, req gen.ListProjectsRequestObject) (gen.ListProjectsResponseObject, error) {
	out, err := s.svc.ListProjects(ctx, req.Params)
	return gen.ListProjects200JSONResponse(out), err
}

// CreateProject implements StrictServerInterface.
func (s *Server) CreateProject(ctx context.Context, req gen.CreateProjectRequestObject) (gen.CreateProjectResponseObject, error) {
	out, err := s.svc.CreateProject(ctx, req.Body)
	return gen.CreateProject201JSONResponse(out), err
}

// GetProject implements StrictServerInterface.
func (s *Server) GetProject(ctx context.Context, req gen.GetProjectRequestObject) (gen.GetProjectResponseObject, error) {
	out, err := s.svc.GetProject(ctx, req.ID)
	return gen.GetProject200JSONResponse(out), err
}

// UpdateProject implements StrictServerInterface.
func (s *Server) UpdateProject(ctx context.Context, req gen.UpdateProjectRequestObject) (gen.UpdateProjectResponseObject, error) {
	out, err := s.svc.UpdateProject(ctx, req.ID, req.Body)
	return gen.UpdateProject200JSONResponse(out), err
}

// DeleteProject implements StrictServerInterface.
func (s *Server) DeleteProject(ctx context.Context, req gen.DeleteProjectRequestObject) (gen.DeleteProjectResponseObject, error) {
	return gen.DeleteProject204Response{}, s.svc.DeleteProject(ctx, req.ID)
}

// ListServiceAccounts implements StrictServerInterface.
func (s *Server) ListServiceAccounts(ctx context.Context, req gen.ListServiceAccountsRequestObject) (gen.ListServiceAccountsResponseObject, error) {
	out, err := s.svc.ListServiceAccounts(ctx, req.Params)
	return gen.ListServiceAccounts200JSONResponse(out), err
}

// CreateServiceAccount implements StrictServerInterface.
func (s *Server) CreateServiceAccount(ctx context.Context, req gen.CreateServiceAccountRequestObject) (gen.CreateServiceAccountResponseObject, error) {
	out, err := s.svc.CreateServiceAccount(ctx, req.Body)
	return gen.CreateServiceAccount201JSONResponse(out), err
}

// GetServiceAccount implements StrictServerInterface.
func (s *Server) GetServiceAccount(ctx context.Context, req gen.GetServiceAccountRequestObject) (gen.GetServiceAccountResponseObject, error) {
	out, err := s.svc.GetServiceAccount(ctx, req.ID)
	return gen.GetServiceAccount200JSONResponse(out), err
}

// UpdateServiceAccount implements StrictServerInterface.
func (s *Server) UpdateServiceAccount(ctx context.Context, req gen.UpdateServiceAccountRequestObject) (gen.UpdateServiceAccountResponseObject, error) {
	out, err := s.svc.UpdateServiceAccount(ctx, req.ID, req.Body)
	return gen.UpdateServiceAccount200JSONResponse(out), err
}

// DeleteServiceAccount implements StrictServerInterface.
func (s *Server) DeleteServiceAccount(ctx context.Context, req gen.DeleteServiceAccountRequestObject) (gen.DeleteServiceAccountResponseObject, error) {
	return gen.DeleteServiceAccount204Response{}, s.svc.DeleteServiceAccount(ctx, req.ID)
}

// ListPolicyBindings implements StrictServerInterface.
func (s *Server) ListPolicyBindings(ctx context.Context, req gen.ListPolicyBindingsRequestObject) (gen.ListPolicyBindingsResponseObject, error) {
	out, err := s.svc.ListPolicyBindings(ctx, req.Params)
	return gen.ListPolicyBindings200JSONResponse(out), err
}

// CreatePolicyBinding implements StrictServerInterface.
func (s *Server) CreatePolicyBinding(ctx context.Context, req gen.CreatePolicyBindingRequestObject) (gen.CreatePolicyBindingResponseObject, error) {
	out, err := s.svc.CreatePolicyBinding(ctx, req.Body)
	return gen.CreatePolicyBinding201JSONResponse(out), err
}

// GetPolicyBinding implements StrictServerInterface.
func (s *Server) GetPolicyBinding(ctx context.Context, req gen.GetPolicyBindingRequestObject) (gen.GetPolicyBindingResponseObject, error) {
	out, err := s.svc.GetPolicyBinding(ctx, req.ID)
	return gen.GetPolicyBinding200JSONResponse(out), err
}

// UpdatePolicyBinding implements StrictServerInterface.
func (s *Server) UpdatePolicyBinding(ctx context.Context, req gen.UpdatePolicyBindingRequestObject) (gen.UpdatePolicyBindingResponseObject, error) {
	out, err := s.svc.UpdatePolicyBinding(ctx, req.ID, req.Body)
	return gen.UpdatePolicyBinding200JSONResponse(out), err
}

// DeletePolicyBinding implements StrictServerInterface.
func (s *Server) DeletePolicyBinding(ctx context.Context, req gen.DeletePolicyBindingRequestObject) (gen.DeletePolicyBindingResponseObject, error) {
	return gen.DeletePolicyBinding204Response{}, s.svc.DeletePolicyBinding(ctx, req.ID)
}

// ListBudgets implements StrictServerInterface.
func (s *Server) ListBudgets(ctx context.Context, req gen.ListBudgetsRequestObject) (gen.ListBudgetsResponseObject, error) {
	out, err := s.svc.ListBudgets(ctx, req.Params)
	return gen.ListBudgets200JSONResponse(out), err
}

// CreateBudget implements StrictServerInterface.
func (s *Server) CreateBudget(ctx context.Context, req gen.CreateBudgetRequestObject) (gen.CreateBudgetResponseObject, error) {
	out, err := s.svc.CreateBudget(ctx, req.Body)
	return gen.CreateBudget201JSONResponse(out), err
}

// GetBudget implements StrictServerInterface.
func (s *Server) GetBudget(ctx context.Context, req gen.GetBudgetRequestObject) (gen.GetBudgetResponseObject, error) {
	out, err := s.svc.GetBudget(ctx, req.ID)
	return gen.GetBudget200JSONResponse(out), err
}

// UpdateBudget implements StrictServerInterface.
func (s *Server) UpdateBudget(ctx context.Context, req gen.UpdateBudgetRequestObject) (gen.UpdateBudgetResponseObject, error) {
	out, err := s.svc.UpdateBudget(ctx, req.ID, req.Body)
	return gen.UpdateBudget200JSONResponse(out), err
}

// DeleteBudget implements StrictServerInterface.
func (s *Server) DeleteBudget(ctx context.Context, req gen.DeleteBudgetRequestObject) (gen.DeleteBudgetResponseObject, error) {
	return gen.DeleteBudget204Response{}, s.svc.DeleteBudget(ctx, req.ID)
}

// ListUsers implements StrictServerInterface.
func (s *Server) ListUsers(ctx context.Context, req gen.ListUsersRequestObject) (gen.ListUsersResponseObject, error) {
	out, err := s.svc.ListUsers(ctx, req.Params)
	return gen.ListUsers200JSONResponse(out), err
}

// CreateUser implements StrictServerInterface.
func (s *Server) CreateUser(ctx context.Context, req gen.CreateUserRequestObject) (gen.CreateUserResponseObject, error) {
	out, err := s.svc.CreateUser(ctx, req.Body)
	return gen.CreateUser201JSONResponse(out), err
}

// GetUser implements StrictServerInterface.
func (s *Server) GetUser(ctx context.Context, req gen.GetUserRequestObject) (gen.GetUserResponseObject, error) {
	out, err := s.svc.GetUser(ctx, req.ID)
	return gen.GetUser200JSONResponse(out), err
}

// UpdateUser implements StrictServerInterface.
func (s *Server) UpdateUser(ctx context.Context, req gen.UpdateUserRequestObject) (gen.UpdateUserResponseObject, error) {
	out, err := s.svc.UpdateUser(ctx, req.ID, req.Body)
	return gen.UpdateUser200JSONResponse(out), err
}

// DeleteUser implements StrictServerInterface.
func (s *Server) DeleteUser(ctx context.Context, req gen.DeleteUserRequestObject) (gen.DeleteUserResponseObject, error) {
	return gen.DeleteUser204Response{}, s.svc.DeleteUser(ctx, req.ID)
}

// ListGroups implements StrictServerInterface.
func (s *Server) ListGroups(ctx context.Context, req gen.ListGroupsRequestObject) (gen.ListGroupsResponseObject, error) {
	out, err := s.svc.ListGroups(ctx, req.Params)
	return gen.ListGroups200JSONResponse(out), err
}

// CreateGroup implements StrictServerInterface.
func (s *Server) CreateGroup(ctx context.Context, req gen.CreateGroupRequestObject) (gen.CreateGroupResponseObject, error) {
	out, err := s.svc.CreateGroup(ctx, req.Body)
	return gen.CreateGroup201JSONResponse(out), err
}

// GetGroup implements StrictServerInterface.
func (s *Server) GetGroup(ctx context.Context, req gen.GetGroupRequestObject) (gen.GetGroupResponseObject, error) {
	out, err := s.svc.GetGroup(ctx, req.ID)
	return gen.GetGroup200JSONResponse(out), err
}

// UpdateGroup implements StrictServerInterface.
func (s *Server) UpdateGroup(ctx context.Context, req gen.UpdateGroupRequestObject) (gen.UpdateGroupResponseObject, error) {
	out, err := s.svc.UpdateGroup(ctx, req.ID, req.Body)
	return gen.UpdateGroup200JSONResponse(out), err
}

// DeleteGroup implements StrictServerInterface.
func (s *Server) DeleteGroup(ctx context.Context, req gen.DeleteGroupRequestObject) (gen.DeleteGroupResponseObject, error) {
	return gen.DeleteGroup204Response{}, s.svc.DeleteGroup(ctx, req.ID)
}

// ListGroupMembers implements StrictServerInterface.
func (s *Server) ListGroupMembers(ctx context.Context, req gen.ListGroupMembersRequestObject) (gen.ListGroupMembersResponseObject, error) {
	out, err := s.svc.ListGroupMembers(ctx, req.ID, req.Params)
	return gen.ListGroupMembers200JSONResponse(out), err
}

// CreateGroupMember implements StrictServerInterface.
func (s *Server) CreateGroupMember(ctx context.Context, req gen.CreateGroupMemberRequestObject) (gen.CreateGroupMemberResponseObject, error) {
	out, err := s.svc.CreateGroupMember(ctx, req.ID, req.Body)
	return gen.CreateGroupMember201JSONResponse(out), err
}

// DeleteGroupMember implements StrictServerInterface.
func (s *Server) DeleteGroupMember(ctx context.Context, req gen.DeleteGroupMemberRequestObject) (gen.DeleteGroupMemberResponseObject, error) {
	return gen.DeleteGroupMember204Response{}, s.svc.DeleteGroupMember(ctx, req.ID, req.UserID)
}

// ListRoleBindings implements StrictServerInterface.
func (s *Server) ListRoleBindings(ctx context.Context, req gen.ListRoleBindingsRequestObject) (gen.ListRoleBindingsResponseObject, error) {
	out, err := s.svc.ListRoleBindings(ctx, req.Params)
	return gen.ListRoleBindings200JSONResponse(out), err
}

// CreateRoleBinding implements StrictServerInterface.
func (s *Server) CreateRoleBinding(ctx context.Context, req gen.CreateRoleBindingRequestObject) (gen.CreateRoleBindingResponseObject, error) {
	out, err := s.svc.CreateRoleBinding(ctx, req.Body)
	return gen.CreateRoleBinding201JSONResponse(out), err
}

// GetRoleBinding implements StrictServerInterface.
func (s *Server) GetRoleBinding(ctx context.Context, req gen.GetRoleBindingRequestObject) (gen.GetRoleBindingResponseObject, error) {
	out, err := s.svc.GetRoleBinding(ctx, req.ID)
	return gen.GetRoleBinding200JSONResponse(out), err
}

// UpdateRoleBinding implements StrictServerInterface.
func (s *Server) UpdateRoleBinding(ctx context.Context, req gen.UpdateRoleBindingRequestObject) (gen.UpdateRoleBindingResponseObject, error) {
	out, err := s.svc.UpdateRoleBinding(ctx, req.ID, req.Body)
	return gen.UpdateRoleBinding200JSONResponse(out), err
}

// DeleteRoleBinding implements StrictServerInterface.
func (s *Server) DeleteRoleBinding(ctx context.Context, req gen.DeleteRoleBindingRequestObject) (gen.DeleteRoleBindingResponseObject, error) {
	return gen.DeleteRoleBinding204Response{}, s.svc.DeleteRoleBinding(ctx, req.ID)
}

// ListRelayKeys implements StrictServerInterface.
func (s *Server) ListRelayKeys(ctx context.Context, req gen.ListRelayKeysRequestObject) (gen.ListRelayKeysResponseObject, error) {
	out, err := s.svc.ListRelayKeys(ctx, req.Params)
	return gen.ListRelayKeys200JSONResponse(out), err
}

// CreateRelayKey implements StrictServerInterface.
func (s *Server) CreateRelayKey(ctx context.Context, req gen.CreateRelayKeyRequestObject) (gen.CreateRelayKeyResponseObject, error) {
	out, err := s.svc.CreateRelayKey(ctx, req.Body)
	return gen.CreateRelayKey201JSONResponse(out), err
}

// GetRelayKey implements StrictServerInterface.
func (s *Server) GetRelayKey(ctx context.Context, req gen.GetRelayKeyRequestObject) (gen.GetRelayKeyResponseObject, error) {
	out, err := s.svc.GetRelayKey(ctx, req.ID)
	return gen.GetRelayKey200JSONResponse(out), err
}

// UpdateRelayKey implements StrictServerInterface.
func (s *Server) UpdateRelayKey(ctx context.Context, req gen.UpdateRelayKeyRequestObject) (gen.UpdateRelayKeyResponseObject, error) {
	out, err := s.svc.UpdateRelayKey(ctx, req.ID, req.Body)
	return gen.UpdateRelayKey200JSONResponse(out), err
}

// DeleteRelayKey implements StrictServerInterface.
func (s *Server) DeleteRelayKey(ctx context.Context, req gen.DeleteRelayKeyRequestObject) (gen.DeleteRelayKeyResponseObject, error) {
	return gen.DeleteRelayKey204Response{}, s.svc.DeleteRelayKey(ctx, req.ID)
}

// RevokeRelayKey implements StrictServerInterface.
func (s *Server) RevokeRelayKey(ctx context.Context, req gen.RevokeRelayKeyRequestObject) (gen.RevokeRelayKeyResponseObject, error) {
	out, err := s.svc.RevokeRelayKey(ctx, req.ID)
	return gen.RevokeRelayKey200JSONResponse(out), err
}

// RotateRelayKey implements StrictServerInterface.
func (s *Server) RotateRelayKey(ctx context.Context, req gen.RotateRelayKeyRequestObject) (gen.RotateRelayKeyResponseObject, error) {
	out, err := s.svc.RotateRelayKey(ctx, req.ID, req.Body)
	return gen.RotateRelayKey201JSONResponse(out), err
}

// CreateInferenceToken implements StrictServerInterface.
func (s *Server) CreateInferenceToken(ctx context.Context, req gen.CreateInferenceTokenRequestObject) (gen.CreateInferenceTokenResponseObject, error) {
	out, err := s.svc.CreateInferenceToken(ctx, req.Body)
	return gen.CreateInferenceToken201JSONResponse(out), err
}

// ListInferenceTokens implements StrictServerInterface.
func (s *Server) ListInferenceTokens(ctx context.Context, req gen.ListInferenceTokensRequestObject) (gen.ListInferenceTokensResponseObject, error) {
	out, err := s.svc.ListInferenceTokens(ctx, req.Params)
	return gen.ListInferenceTokens200JSONResponse(out), err
}

// RevokeInferenceToken implements StrictServerInterface.
func (s *Server) RevokeInferenceToken(ctx context.Context, req gen.RevokeInferenceTokenRequestObject) (gen.RevokeInferenceTokenResponseObject, error) {
	return gen.RevokeInferenceToken204Response{}, s.svc.RevokeInferenceToken(ctx, req.ID)
}

// ApplyConfig implements StrictServerInterface.
func (s *Server) ApplyConfig(ctx context.Context, req gen.ApplyConfigRequestObject) (gen.ApplyConfigResponseObject, error) {
	out, err := s.svc.ApplyConfig(ctx, req.Body)
	return gen.ApplyConfig200JSONResponse(out), err
}

// ListAuditLog implements StrictServerInterface.
func (s *Server) ListAuditLog(ctx context.Context, req gen.ListAuditLogRequestObject) (gen.ListAuditLogResponseObject, error) {
	out, err := s.svc.ListAuditLog(ctx, req.Params)
	return gen.ListAuditLog200JSONResponse(out), err
}

// ListBreakers implements StrictServerInterface.
func (s *Server) ListBreakers(ctx context.Context, req gen.ListBreakersRequestObject) (gen.ListBreakersResponseObject, error) {
	out, err := s.svc.ListBreakers(ctx, req.Params)
	return gen.ListBreakers200JSONResponse(out), err
}

// ClearBreakers implements StrictServerInterface.
func (s *Server) ClearBreakers(ctx context.Context, req gen.ClearBreakersRequestObject) (gen.ClearBreakersResponseObject, error) {
	out, err := s.svc.ClearBreakers(ctx, req.Params)
	return gen.ClearBreakers200JSONResponse(out), err
}

// PurgePolicyCache implements StrictServerInterface.
func (s *Server) PurgePolicyCache(ctx context.Context, req gen.PurgePolicyCacheRequestObject) (gen.PurgePolicyCacheResponseObject, error) {
	out, err := s.svc.PurgePolicyCache(ctx, req.ID)
	return gen.PurgePolicyCache200JSONResponse(out), err
}

// PurgeRelayKeyCache implements StrictServerInterface.
func (s *Server) PurgeRelayKeyCache(ctx context.Context, req gen.PurgeRelayKeyCacheRequestObject) (gen.PurgeRelayKeyCacheResponseObject, error) {
	out, err := s.svc.PurgeRelayKeyCache(ctx, req.ID)
	return gen.PurgeRelayKeyCache200JSONResponse(out), err
}

// ListProjectObjects implements StrictServerInterface.
func (s *Server) ListProjectObjects(ctx context.Context, req gen.ListProjectObjectsRequestObject) (gen.ListProjectObjectsResponseObject, error) {
	out, err := s.svc.ListProjectObjects(ctx, req.ID, req.Params)
	return gen.ListProjectObjects200JSONResponse(out), err
}

// GetPayloadCapture implements StrictServerInterface.
func (s *Server) GetPayloadCapture(ctx context.Context, req gen.GetPayloadCaptureRequestObject) (gen.GetPayloadCaptureResponseObject, error) {
	out, err := s.svc.GetPayloadCapture(ctx, req.RequestID)
	return gen.GetPayloadCapture200JSONResponse(out), err
}

// DeletePayloadCapture implements StrictServerInterface.
func (s *Server) DeletePayloadCapture(ctx context.Context, req gen.DeletePayloadCaptureRequestObject) (gen.DeletePayloadCaptureResponseObject, error) {
	return gen.DeletePayloadCapture204Response{}, s.svc.DeletePayloadCapture(ctx, req.RequestID)
}

// DeleteProjectPayloadCaptures implements StrictServerInterface.
func (s *Server) DeleteProjectPayloadCaptures(ctx context.Context, req gen.DeleteProjectPayloadCapturesRequestObject) (gen.DeleteProjectPayloadCapturesResponseObject, error) {
	out, err := s.svc.DeleteProjectPayloadCaptures(ctx, req.ID)
	return gen.DeleteProjectPayloadCaptures200JSONResponse(out), err
}

// GetUsageSummary implements StrictServerInterface.
func (s *Server) GetUsageSummary(ctx context.Context, req gen.GetUsageSummaryRequestObject) (gen.GetUsageSummaryResponseObject, error) {
	out, err := s.svc.GetUsageSummary(ctx, req.Params)
	return gen.GetUsageSummary200JSONResponse(out), err
}

// GetUsageTimeseries implements StrictServerInterface.
func (s *Server) GetUsageTimeseries(ctx context.Context, req gen.GetUsageTimeseriesRequestObject) (gen.GetUsageTimeseriesResponseObject, error) {
	out, err := s.svc.GetUsageTimeseries(ctx, req.Params)
	return gen.GetUsageTimeseries200JSONResponse(out), err
}

// GetUsageEvent implements StrictServerInterface.
func (s *Server) GetUsageEvent(ctx context.Context, req gen.GetUsageEventRequestObject) (gen.GetUsageEventResponseObject, error) {
	out, err := s.svc.GetUsageEvent(ctx, req.RequestID)
	return gen.GetUsageEvent200JSONResponse(out), err
}

// GetStatus implements StrictServerInterface.
func (s *Server) GetStatus(ctx context.Context, _ gen.GetStatusRequestObject) (gen.GetStatusResponseObject, error) {
	out, err := s.svc.GetStatus(ctx)
	return gen.GetStatus200JSONResponse(out), err
}

// ReloadSnapshot implements StrictServerInterface.
func (s *Server) ReloadSnapshot(ctx context.Context, _ gen.ReloadSnapshotRequestObject) (gen.ReloadSnapshotResponseObject, error) {
	out, err := s.svc.ReloadSnapshot(ctx)
	return gen.ReloadSnapshot200JSONResponse(out), err
}

// Login implements StrictServerInterface.
func (s *Server) Login(ctx context.Context, req gen.LoginRequestObject) (gen.LoginResponseObject, error) {
	out, err := s.svc.Login(ctx, req.Body)
	if err != nil {
		return nil, err
	}
	return gen.Login200JSONResponse{Body: out.Session, Headers: gen.Login200ResponseHeaders{SetCookie: out.Cookie.String()}}, nil
}

// Logout implements StrictServerInterface.
func (s *Server) Logout(ctx context.Context, _ gen.LogoutRequestObject) (gen.LogoutResponseObject, error) {
	ck, err := s.svc.Logout(ctx)
	if err != nil {
		return nil, err
	}
	return gen.Logout204Response{Headers: gen.Logout204ResponseHeaders{SetCookie: ck.String()}}, nil
}

// Whoami implements StrictServerInterface.
func (s *Server) Whoami(ctx context.Context, _ gen.WhoamiRequestObject) (gen.WhoamiResponseObject, error) {
	out, err := s.svc.Whoami(ctx)
	return gen.Whoami200JSONResponse(out), err
}

// RouteExplain implements StrictServerInterface.
func (s *Server) RouteExplain(ctx context.Context, req gen.RouteExplainRequestObject) (gen.RouteExplainResponseObject, error) {
	out, err := s.svc.RouteExplain(ctx, req.Body)
	return gen.RouteExplain200JSONResponse(out), err
}

// ListUsageEvents implements StrictServerInterface: JSON, or CSV when the
// format (or, without one, the Accept header) asks for it.
func (s *Server) ListUsageEvents(ctx context.Context, req gen.ListUsageEventsRequestObject) (gen.ListUsageEventsResponseObject, error) {
	q := req.Params
	csv := q.Format != nil && *q.Format == models.UsageEventsFormatCsv
	if q.Format == nil {
		csv = strings.Contains(acceptFrom(ctx), "text/csv")
	}
	if csv {
		return s.svc.ExportUsageEvents(ctx, q)
	}
	out, err := s.svc.ListUsageEvents(ctx, q)
	return gen.ListUsageEvents200JSONResponse{Body: out}, err
}

// ListMcpServers implements StrictServerInterface.
func (s *Server) ListMcpServers(ctx context.Context, req gen.ListMcpServersRequestObject) (gen.ListMcpServersResponseObject, error) {
	out, err := s.svc.ListMcpServers(ctx, req.Params)
	return gen.ListMcpServers200JSONResponse(out), err
}

// CreateMcpServer implements StrictServerInterface.
func (s *Server) CreateMcpServer(ctx context.Context, req gen.CreateMcpServerRequestObject) (gen.CreateMcpServerResponseObject, error) {
	out, err := s.svc.CreateMcpServer(ctx, req.Body)
	return gen.CreateMcpServer201JSONResponse(out), err
}

// GetMcpServer implements StrictServerInterface.
func (s *Server) GetMcpServer(ctx context.Context, req gen.GetMcpServerRequestObject) (gen.GetMcpServerResponseObject, error) {
	out, err := s.svc.GetMcpServer(ctx, req.ID)
	return gen.GetMcpServer200JSONResponse(out), err
}

// UpdateMcpServer implements StrictServerInterface.
func (s *Server) UpdateMcpServer(ctx context.Context, req gen.UpdateMcpServerRequestObject) (gen.UpdateMcpServerResponseObject, error) {
	out, err := s.svc.UpdateMcpServer(ctx, req.ID, req.Body)
	return gen.UpdateMcpServer200JSONResponse(out), err
}

// DeleteMcpServer implements StrictServerInterface.
func (s *Server) DeleteMcpServer(ctx context.Context, req gen.DeleteMcpServerRequestObject) (gen.DeleteMcpServerResponseObject, error) {
	return gen.DeleteMcpServer204Response{}, s.svc.DeleteMcpServer(ctx, req.ID)
}

// ListMcpServerTools implements StrictServerInterface.
func (s *Server) ListMcpServerTools(ctx context.Context, req gen.ListMcpServerToolsRequestObject) (gen.ListMcpServerToolsResponseObject, error) {
	out, err := s.svc.ListMcpServerTools(ctx, req.ID)
	return gen.ListMcpServerTools200JSONResponse(out), err
}

// ApproveMcpTool implements StrictServerInterface.
func (s *Server) ApproveMcpTool(ctx context.Context, req gen.ApproveMcpToolRequestObject) (gen.ApproveMcpToolResponseObject, error) {
	out, err := s.svc.ApproveMcpTool(ctx, req.ID, req.Tool, req.Body)
	return gen.ApproveMcpTool200JSONResponse(out), err
}

// WithholdMcpTool implements StrictServerInterface.
func (s *Server) WithholdMcpTool(ctx context.Context, req gen.WithholdMcpToolRequestObject) (gen.WithholdMcpToolResponseObject, error) {
	out, err := s.svc.WithholdMcpTool(ctx, req.ID, req.Tool)
	return gen.WithholdMcpTool200JSONResponse(out), err
}

// SetPolicyMcpGrants implements StrictServerInterface.
func (s *Server) SetPolicyMcpGrants(ctx context.Context, req gen.SetPolicyMcpGrantsRequestObject) (gen.SetPolicyMcpGrantsResponseObject, error) {
	out, err := s.svc.SetPolicyMcpGrants(ctx, req.ID, req.Body)
	return gen.SetPolicyMcpGrants200JSONResponse(out), err
}
