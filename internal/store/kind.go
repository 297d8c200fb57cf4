package store

// Kind names a kind of catalog row by its table, as audit rows and the
// NOTIFY payloads ("<table>:<id>") do.
type Kind string

// The kinds. The snapshot is built from the first sixteen; the join tables
// and rules after them come with their owner (see Kind.Owner).
const (
	KindTeams           Kind = "teams"
	KindProjects        Kind = "projects"
	KindUsers           Kind = "users"
	KindGroups          Kind = "groups"
	KindServiceAccounts Kind = "service_accounts"
	KindRateLimits      Kind = "rate_limits"
	KindHosts           Kind = "hosts"
	KindModels          Kind = "models"
	KindBindings        Kind = "bindings"
	KindHostKeys        Kind = "host_keys"
	KindPolicies        Kind = "policies"
	KindPolicyBindings  Kind = "policy_bindings"
	KindRelayKeys       Kind = "relay_keys"
	KindInferenceTokens Kind = "inference_tokens"
	KindBudgets         Kind = "budgets"
	KindMCPServers      Kind = "mcp_servers"

	KindGroupMemberships      Kind = "group_memberships"
	KindRateLimitRules        Kind = "rate_limit_rules"
	KindPolicyModels          Kind = "policy_models"
	KindPolicyHostKeys        Kind = "policy_host_keys"
	KindPolicyModelRateLimits Kind = "policy_model_rate_limits"

	KindRoleBindings    Kind = "role_bindings"
	KindSessions        Kind = "sessions"
	KindPayloadCaptures Kind = "payload_captures"

	KindPolicyTeamShares  Kind = "policy_team_shares"
	KindHostKeyTeamShares Kind = "host_key_team_shares"

	KindMCPToolApprovals Kind = "mcp_tool_approvals"
)

// Owner is the snapshot kind a change to a row of k is read as: k itself,
// or for a join table its owner (group_memberships → groups, policy_* →
// policies, rate_limit_rules → rate_limits). A notification's table goes
// through Owner before ReadChanged.
func (k Kind) Owner() Kind {
	switch k {
	case KindGroupMemberships:
		return KindGroups
	case KindPolicyModels, KindPolicyHostKeys, KindPolicyModelRateLimits:
		return KindPolicies
	case KindRateLimitRules:
		return KindRateLimits
	case KindMCPToolApprovals:
		return KindMCPServers
	}
	return k
}
