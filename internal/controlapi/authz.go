package controlapi

import (
	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
)

// The authorization layer (coder's dbauthz shape, over the operations
// rather than the queries): every operation of openapi/control.yaml has a
// rule in operationRules naming the verb it needs, and every operation runs
// through guard: every operation is a Service method, which calls enter
// first (service.go); the strict handlers only adapt them (strict.go, held
// by TestService_ServesEveryOperation):
//
//   - an operation without a rule is refused (500) before its handler runs,
//     so a new endpoint cannot be wired without deciding who may call it;
//   - a rule at system scope is checked here, before the handler, with the
//     access words of access.go (403 naming the verb);
//   - every other rule's verb depends on the row (its project, team, owner),
//     which the handler reads: the handler asks the caller (Can, Reach,
//     CanGrant …), each question is recorded, and an operation that answers
//     without having asked its rule's verb fails closed (500, logged) —
//     so a handler that forgets to authorize, or checks another verb than
//     its rule says, fails TestRBAC_EveryOperationAccounted, which sends
//     every operation as every role.

// rule is what one operation needs.
type rule struct {
	// verb: the operation must ask about at least one of these verbs (one
	// for most; the levels a row can be at, for a budget or a role
	// binding); 0: any signed-in caller, nothing to ask (whoami, logout,
	// and an apply, whose every change runs through its own operation).
	verb rbac.Verb
	// system: the verb is checked at system scope by the layer itself; the
	// operation's rows are the system's (the catalog, users, operations).
	system bool
	public bool // no caller at all (login)
}

func (c *caller) ask(v rbac.Verb) {
	if c.asked != nil {
		c.asked.Or(uint32(v))
	}
}

// The questions a handler asks the caller, recorded for guard.

func (c *caller) Can(v rbac.Verb, at rbac.Scope) bool { c.ask(v); return c.Subject.Can(v, at) }

func (c *caller) CanAnywhere(v rbac.Verb) bool { c.ask(v); return c.Subject.CanAnywhere(v) }

func (c *caller) CanSeeTeam(team uuid.UUID) bool { c.ask(rbac.Read); return c.Subject.CanSeeTeam(team) }

func (c *caller) Reach(v rbac.Verb) rbac.Reach { c.ask(v); return c.Subject.Reach(v) }

func (c *caller) Teams() (bool, []uuid.UUID) { c.ask(rbac.Read); return c.Subject.Teams() }

func (c *caller) CanGrant(role rbac.Role, at rbac.Scope) bool {
	c.ask(grantVerb(at))
	return c.Subject.CanGrant(role, at)
}

func (c *caller) CanAttach(owner uuid.UUID, at rbac.Scope, shared bool) bool {
	c.ask(rbac.ManageProject)
	return c.Subject.CanAttach(owner, at, shared)
}

// grantVerb is the manage verb of a scope's level, which granting there needs.
func grantVerb(at rbac.Scope) rbac.Verb {
	switch {
	case at.Project != uuid.Nil:
		return rbac.ManageProject
	case at.Team != uuid.Nil:
		return rbac.ManageTeam
	}
	return rbac.ManageSystem
}

// A rule naming several verbs is an operation whose rows live at several
// levels (a policy is a team's or the system's; a budget a team's or a
// project's). getUser and revokeInferenceToken have none: a user reads
// itself and revokes its own token without a role; their handlers ask for
// anyone else's.
//
// operationRules: the strict handler's operation name (the operationId,
// capitalised) → rule. TestAuthz_EveryOperationHasARule holds it to the spec.
var operationRules = map[string]rule{
	"ApproveMcpTool":               {verb: rbac.ManageSystem},
	"WithholdMcpTool":              {verb: rbac.ManageSystem},
	"CreateMcpServer":              {verb: rbac.ManageSystem, system: true},
	"DeleteMcpServer":              {verb: rbac.ManageSystem},
	"GetMcpServer":                 {verb: rbac.ReadCatalog},
	"ListMcpServerTools":           {verb: rbac.ReadCatalog},
	"ListMcpServers":               {verb: rbac.ReadCatalog},
	"SetPolicyMcpGrants":           {verb: rbac.ManageTeam | rbac.ManageSystem},
	"UpdateMcpServer":              {verb: rbac.ManageSystem},
	"ApplyConfig":                  {},
	"ClearBreakers":                {verb: rbac.ManageSystem},
	"CreateBinding":                {verb: rbac.ManageSystem, system: true},
	"CreateBudget":                 {verb: rbac.ManageProject | rbac.ManageTeam},
	"CreateGroup":                  {verb: rbac.ManageSystem, system: true},
	"CreateGroupMember":            {verb: rbac.ManageSystem},
	"CreateHost":                   {verb: rbac.ManageSystem, system: true},
	"CreateHostKey":                {verb: rbac.ManageSystem, system: true},
	"CreateInferenceToken":         {verb: rbac.MintOwn},
	"CreateModel":                  {verb: rbac.ManageSystem, system: true},
	"CreatePolicy":                 {verb: rbac.ManageTeam | rbac.ManageSystem},
	"CreatePolicyBinding":          {verb: rbac.ManageProject},
	"CreatePolicyHostKeyGrant":     {verb: rbac.ManageTeam | rbac.ManageSystem},
	"CreatePolicyModelGrant":       {verb: rbac.ManageTeam | rbac.ManageSystem},
	"CreatePolicyModelRateLimit":   {verb: rbac.ManageTeam | rbac.ManageSystem},
	"CreateProject":                {verb: rbac.ManageTeam},
	"CreateRateLimit":              {verb: rbac.ManageSystem, system: true},
	"CreateRateLimitRule":          {verb: rbac.ManageSystem},
	"CreateRelayKey":               {verb: rbac.ManageProject},
	"CreateRoleBinding":            {verb: rbac.ManageProject | rbac.ManageTeam | rbac.ManageSystem},
	"CreateServiceAccount":         {verb: rbac.ManageProject},
	"CreateTeam":                   {verb: rbac.ManageSystem, system: true},
	"CreateUser":                   {verb: rbac.ManageSystem, system: true},
	"DeleteBinding":                {verb: rbac.ManageSystem},
	"DeleteBudget":                 {verb: rbac.ManageProject | rbac.ManageTeam},
	"DeleteGroup":                  {verb: rbac.ManageSystem},
	"DeleteGroupMember":            {verb: rbac.ManageSystem},
	"DeleteHost":                   {verb: rbac.ManageSystem},
	"DeleteHostKey":                {verb: rbac.ManageSystem},
	"DeleteModel":                  {verb: rbac.ManageSystem},
	"DeletePayloadCapture":         {verb: rbac.ManageProject},
	"DeletePolicy":                 {verb: rbac.ManageTeam | rbac.ManageSystem},
	"PurgePolicyCache":             {verb: rbac.ManageTeam | rbac.ManageSystem},
	"PurgeRelayKeyCache":           {verb: rbac.ManageProject},
	"DeletePolicyBinding":          {verb: rbac.ManageProject},
	"DeletePolicyHostKeyGrant":     {verb: rbac.ManageTeam | rbac.ManageSystem},
	"DeletePolicyModelGrant":       {verb: rbac.ManageTeam | rbac.ManageSystem},
	"DeletePolicyModelRateLimit":   {verb: rbac.ManageTeam | rbac.ManageSystem},
	"DeleteProject":                {verb: rbac.ManageTeam},
	"DeleteProjectPayloadCaptures": {verb: rbac.ManageProject},
	"DeleteRateLimit":              {verb: rbac.ManageSystem},
	"DeleteRateLimitRule":          {verb: rbac.ManageSystem},
	"DeleteRelayKey":               {verb: rbac.ManageProject},
	"DeleteRoleBinding":            {verb: rbac.ManageProject | rbac.ManageTeam | rbac.ManageSystem},
	"DeleteServiceAccount":         {verb: rbac.ManageProject},
	"DeleteTeam":                   {verb: rbac.ManageSystem},
	"DeleteUser":                   {verb: rbac.ManageSystem},
	"GetBinding":                   {verb: rbac.ReadCatalog},
	"GetBudget":                    {verb: rbac.Read},
	"GetGroup":                     {verb: rbac.Read},
	"GetHost":                      {verb: rbac.ReadCatalog},
	"GetHostKey":                   {verb: rbac.Read},
	"GetModel":                     {verb: rbac.ReadCatalog},
	"GetPayloadCapture":            {verb: rbac.Read},
	"GetPolicy":                    {verb: rbac.Read | rbac.ReadCatalog},
	"GetPolicyBinding":             {verb: rbac.Read},
	"GetPolicyModelRateLimit":      {verb: rbac.Read | rbac.ReadCatalog},
	"GetProject":                   {verb: rbac.Read},
	"ListProjectObjects":           {verb: rbac.Read},
	"GetRateLimit":                 {verb: rbac.ReadCatalog},
	"GetRateLimitRule":             {verb: rbac.ReadCatalog},
	"GetRelayKey":                  {verb: rbac.Read},
	"GetRoleBinding":               {verb: rbac.Read},
	"GetServiceAccount":            {verb: rbac.Read},
	"GetStatus":                    {verb: rbac.ReadCatalog},
	"GetTeam":                      {verb: rbac.Read},
	"GetUsageEvent":                {verb: rbac.Read},
	"GetUsageSummary":              {verb: rbac.Read},
	"GetUsageTimeseries":           {verb: rbac.Read},
	"GetUser":                      {},
	"ListAuditLog":                 {verb: rbac.Read},
	"ListBindings":                 {verb: rbac.ReadCatalog},
	"ListBreakers":                 {verb: rbac.Read},
	"ListBudgets":                  {verb: rbac.Read},
	"ListGroupMembers":             {verb: rbac.Read},
	"ListGroups":                   {verb: rbac.Read},
	"ListHostKeyShares":            {verb: rbac.Read},
	"ListHostKeys":                 {verb: rbac.Read},
	"ListHosts":                    {verb: rbac.ReadCatalog},
	"ListInferenceTokens":          {verb: rbac.ManageProject},
	"ListModels":                   {verb: rbac.ReadCatalog},
	"ListPolicies":                 {verb: rbac.ReadCatalog},
	"ListPolicyBindings":           {verb: rbac.Read},
	"ListPolicyHostKeyGrants":      {verb: rbac.Read | rbac.ReadCatalog},
	"ListPolicyModelGrants":        {verb: rbac.Read | rbac.ReadCatalog},
	"ListPolicyModelRateLimits":    {verb: rbac.Read | rbac.ReadCatalog},
	"ListPolicyShares":             {verb: rbac.Read | rbac.ReadCatalog},
	"ListProjects":                 {verb: rbac.Read},
	"ListRateLimitRules":           {verb: rbac.ReadCatalog},
	"ListRateLimits":               {verb: rbac.ReadCatalog},
	"ListRelayKeys":                {verb: rbac.Read},
	"ListRoleBindings":             {verb: rbac.Read},
	"ListServiceAccounts":          {verb: rbac.Read},
	"ListTeamHostKeyShares":        {verb: rbac.Read},
	"ListTeams":                    {verb: rbac.Read},
	"ListUsageEvents":              {verb: rbac.Read},
	"ListUsers":                    {verb: rbac.Read},
	"Login":                        {public: true},
	"Logout":                       {},
	"ReloadSnapshot":               {verb: rbac.ManageSystem, system: true},
	"RevokeInferenceToken":         {},
	"RevokeRelayKey":               {verb: rbac.ManageProject},
	"RotateRelayKey":               {verb: rbac.ManageProject},
	"RouteExplain":                 {verb: 0},
	"ShareHostKey":                 {verb: rbac.ManageSystem},
	"SharePolicy":                  {verb: rbac.ManageSystem},
	"TestHostKey":                  {verb: rbac.ManageSystem},
	"UnshareHostKey":               {verb: rbac.ManageSystem},
	"UnsharePolicy":                {verb: rbac.ManageSystem},
	"UpdateBinding":                {verb: rbac.ManageSystem},
	"UpdateBudget":                 {verb: rbac.ManageProject | rbac.ManageTeam},
	"UpdateGroup":                  {verb: rbac.ManageSystem},
	"UpdateHost":                   {verb: rbac.ManageSystem},
	"UpdateHostKey":                {verb: rbac.ManageSystem},
	"UpdateModel":                  {verb: rbac.ManageSystem},
	"UpdatePolicy":                 {verb: rbac.ManageTeam | rbac.ManageSystem},
	"UpdatePolicyBinding":          {verb: rbac.ManageProject},
	"UpdatePolicyModelRateLimit":   {verb: rbac.ManageTeam | rbac.ManageSystem},
	"UpdateProject":                {verb: rbac.ManageProject},
	"UpdateRateLimit":              {verb: rbac.ManageSystem},
	"UpdateRateLimitRule":          {verb: rbac.ManageSystem},
	"UpdateRelayKey":               {verb: rbac.ManageProject},
	"UpdateRoleBinding":            {verb: rbac.ManageProject | rbac.ManageTeam | rbac.ManageSystem},
	"UpdateServiceAccount":         {verb: rbac.ManageProject},
	"UpdateTeam":                   {verb: rbac.ManageTeam},
	"UpdateUser":                   {verb: rbac.ManageSystem},
	"Whoami":                       {},
}
