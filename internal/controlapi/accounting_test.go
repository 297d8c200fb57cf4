package controlapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/openapi/controlgen"
	"github.com/relay-llm/relay/openapi/models"
)

// The RBAC accounting test: every operation of openapi/control.yaml has a
// row in accountingMatrix with its expected outcome for every role, and the
// test sends each operation, as each role, against a real server at rows of
// team B (and the system's catalog) — so a new operation without a row fails,
// and a row that stops matching what the server does fails.
//
// Outcomes, one letter per role in accountingRoles order:
//
//	A  allowed: a read answers 2xx; a write is not sent (it would change the
//	   world the other checks read; the feature tests hold the writes)
//	D  denied: 403, 404, or a 422 naming a scope field (project_id, team_id,
//	   policy_id …) — the row, or a row the body names, is out of reach; the
//	   write is sent and must change nothing
//	F  filtered: 200 with none of team B's rows in the body
//	-  not sent (login and logout, which would change the session itself)
//
// Every operation runs through the authorization layer (authz.go): one
// that answers without asking its rule's verb answers 500, which no
// outcome letter accepts — so a handler that forgets to authorize fails here.

// accountingRoles are the signed-in users of the matrix, in column order.
var accountingRoles = []string{"nobody", "viewerA1", "devA1", "padminA1", "tadminA", "sysviewer", "admin"}

// scopeFields are the body fields whose 422 means "no such row for you".
var scopeFields = []string{"project_id", "team_id", "policy_id", "service_account_id", "user_id", "group_id", "host_id", "model_id", "host_key_id", "rate_limit_id", "relay_key", "id"}

type accountingWorld struct {
	ids     map[string]uuid.UUID // by path parameter or body field name
	teamB   []string             // the ids of team B's rows, for the leak check
	byPath  map[string]uuid.UUID // the {id} of each path prefix
	cookies map[string]*http.Client
	csrf    map[string]string
}

func buildAccountingWorld(t *testing.T, b *bundle) *accountingWorld {
	t.Helper()
	ctx, c := b.ctx, b.admin
	w := &accountingWorld{ids: map[string]uuid.UUID{}, byPath: map[string]uuid.UUID{}, cookies: map[string]*http.Client{}, csrf: map[string]string{}}
	teamA, teamB := b.team("acc-a"), b.team("acc-b")
	a1, b1 := b.project(teamA.ID, "a1"), b.project(teamB.ID, "b1")
	saB1 := b.serviceAccount(b1.ID, "sa")
	if ix := b.cfg.Objects; ix != nil { // an object of b1's, named for the leak check
		if err := ix.Put(ctx, objects.Object{ID: "file-" + b1.ID.String(), Kind: objects.KindFile, ProjectID: b1.ID, HostKeyID: uuid.New(), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	host, model, rl := b.host("acc-host"), b.model("acc-model"), b.rateLimit("acc-rl")
	mcpSrv := *call(c.CreateMcpServerWithResponse(ctx, models.McpServerCreate{Slug: "acc-mcp", URL: mockMCPServer(t)})).want(t, http.StatusCreated).JSON201
	hk := b.hostKey(host.ID, "acc-key")
	binding := *call(c.CreateBindingWithResponse(ctx, models.BindingCreate{ModelID: model.ID, HostID: host.ID, Shape: models.ShapeOpenai, UpstreamModel: "m"})).want(t, http.StatusCreated).JSON201
	rule := *call(c.CreateRateLimitRuleWithResponse(ctx, rl.ID, models.RateLimitRuleCreate{Meter: models.MeterRequests, Amount: 10})).want(t, http.StatusCreated).JSON201
	call(c.ShareHostKeyWithResponse(ctx, hk.ID, models.TeamShareCreate{TeamID: teamB.ID})).want(t, http.StatusCreated)
	polB := *call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "acc-pol-b", TeamID: &teamB.ID})).want(t, http.StatusCreated).JSON201
	call(c.CreatePolicyModelGrantWithResponse(ctx, polB.ID, models.PolicyModelGrantCreate{ModelID: model.ID})).want(t, http.StatusCreated)
	call(c.CreatePolicyHostKeyGrantWithResponse(ctx, polB.ID, models.PolicyHostKeyGrantCreate{HostKeyID: hk.ID})).want(t, http.StatusCreated)
	call(c.CreatePolicyModelRateLimitWithResponse(ctx, polB.ID, models.PolicyModelRateLimitCreate{ModelID: model.ID, RateLimitID: rl.ID})).want(t, http.StatusCreated)
	keyB1 := call(c.CreateRelayKeyWithResponse(ctx, models.RelayKeyCreate{ProjectID: b1.ID, ServiceAccountID: &saB1.ID, PolicyID: &polB.ID})).want(t, http.StatusCreated).JSON201.RelayKey
	pbB1 := *call(c.CreatePolicyBindingWithResponse(ctx, models.PolicyBindingCreate{ProjectID: b1.ID, PolicyID: polB.ID, ServiceAccountID: &saB1.ID})).want(t, http.StatusCreated).JSON201
	budgetB := *call(c.CreateBudgetWithResponse(ctx, models.BudgetCreate{TeamID: &teamB.ID, Period: models.PeriodDay, Amount: 1})).want(t, http.StatusCreated).JSON201
	group := *call(c.CreateGroupWithResponse(ctx, models.GroupCreate{Slug: "acc-group"})).want(t, http.StatusCreated).JSON201
	member := b.newUser("acc-member")
	call(c.CreateGroupMemberWithResponse(ctx, group.ID, models.GroupMemberCreate{UserID: member.user.ID})).want(t, http.StatusCreated)
	rbB1 := b.grant(member.user.ID, models.RoleDeveloper, nil, &b1.ID)
	token := call(member.CreateInferenceTokenWithResponse(ctx, models.InferenceTokenCreate{ProjectID: b1.ID})).want(t, http.StatusCreated).JSON201.InferenceToken

	for _, name := range accountingRoles {
		email, pw := "acc-"+strings.ToLower(name)+"@example.com", "pw-acc-"+name+"-long-enough"
		u := *call(c.CreateUserWithResponse(ctx, models.UserCreate{Email: models.Email(email), Password: &pw})).want(t, http.StatusCreated).JSON201
		switch name {
		case "viewerA1":
			b.grant(u.ID, models.RoleViewer, nil, &a1.ID)
		case "devA1":
			b.grant(u.ID, models.RoleDeveloper, nil, &a1.ID)
		case "padminA1":
			b.grant(u.ID, models.RoleProjectAdmin, nil, &a1.ID)
		case "tadminA":
			b.grant(u.ID, models.RoleTeamAdmin, &teamA.ID, nil)
		case "sysviewer":
			b.grant(u.ID, models.RoleViewer, nil, nil)
		case "admin":
			b.grant(u.ID, models.RoleAdmin, nil, nil)
		}
		w.cookies[name], w.csrf[name] = rawLogin(t, b, email, pw)
	}

	w.ids = map[string]uuid.UUID{
		"project_id": b1.ID, "team_id": teamB.ID, "policy_id": polB.ID, "service_account_id": saB1.ID,
		"user_id": member.user.ID, "group_id": group.ID, "host_id": host.ID, "model_id": model.ID,
		"host_key_id": hk.ID, "rate_limit_id": rl.ID, "tier_rate_limit_id": rl.ID, "rule_id": rule.ID,
		"relay_key_id": keyB1.ID,
	}
	w.byPath = map[string]uuid.UUID{
		"/api/auth/tokens": token.ID, "/api/hosts": host.ID, "/api/models": model.ID, "/api/bindings": binding.ID,
		"/api/host-keys": hk.ID, "/api/rate-limits": rl.ID, "/api/projects": b1.ID, "/api/policies": polB.ID,
		"/api/policy-bindings": pbB1.ID, "/api/teams": teamB.ID, "/api/service-accounts": saB1.ID,
		"/api/users": member.user.ID, "/api/groups": group.ID, "/api/role-bindings": rbB1.ID,
		"/api/relay-keys": keyB1.ID, "/api/budgets": budgetB.ID, "/api/mcp-servers": mcpSrv.ID,
	}
	for _, id := range []uuid.UUID{teamB.ID, b1.ID, saB1.ID, polB.ID, keyB1.ID, pbB1.ID, budgetB.ID, rbB1.ID, token.ID} {
		w.teamB = append(w.teamB, id.String())
	}
	return w
}

// rawLogin signs in over plain HTTP: a client with the session cookie, and the CSRF token.
func rawLogin(t *testing.T, b *bundle, email, pw string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	body, _ := json.Marshal(map[string]string{"email": email, "password": pw})
	resp, err := hc.Post(b.srv.URL+"/api/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		CsrfToken string `json:"csrf_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("login %s: %d %v", email, resp.StatusCode, err)
	}
	return hc, out.CsrfToken
}

// synth makes a body that passes the spec's validation: the required
// properties, uuids naming team B's rows (or the system's) by field name.
func (w *accountingWorld) synth(s *openapi3.Schema, name string, n *int) any {
	*n++
	switch {
	case len(s.AllOf) > 0:
		return w.synth(s.AllOf[0].Value, name, n)
	case len(s.OneOf) > 0:
		return w.synth(s.OneOf[0].Value, name, n)
	case len(s.AnyOf) > 0:
		return w.synth(s.AnyOf[0].Value, name, n)
	case len(s.Enum) > 0:
		return s.Enum[0]
	}
	switch {
	case s.Type.Is("object"):
		out := map[string]any{}
		for _, p := range s.Required {
			out[p] = w.synth(s.Properties[p].Value, p, n)
		}
		return out
	case s.Type.Is("array"):
		items := []any{}
		for i := uint64(0); i < s.MinItems; i++ {
			items = append(items, w.synth(s.Items.Value, name, n))
		}
		return items
	case s.Type.Is("integer"), s.Type.Is("number"):
		if s.Min != nil && *s.Min > 1 {
			return *s.Min
		}
		return 1
	case s.Type.Is("boolean"):
		return false
	}
	switch s.Format {
	case "uuid":
		if id, ok := w.ids[name]; ok {
			return id.String()
		}
		return uuid.NewString()
	case "email":
		return fmt.Sprintf("acc-new-%d@example.com", *n)
	case "date-time":
		return time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	case "uri":
		return "https://example.com/v1"
	}
	if strings.Contains(s.Pattern, "https?") {
		return "https://example.com/v1"
	}
	if s.Pattern != "" || name == "slug" {
		return fmt.Sprintf("acc-new-%d", *n)
	}
	v := "acc-new-value"
	if s.MinLength > uint64(len(v)) {
		v = strings.Repeat("x", int(s.MinLength))
	}
	return v
}

type accountingOp struct {
	id, method, path string
	op               *openapi3.Operation
}

func accountingOps(t *testing.T) []accountingOp {
	t.Helper()
	doc, err := controlgen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	var ops []accountingOp
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops = append(ops, accountingOp{op.OperationID, method, path, op})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].id < ops[j].id })
	return ops
}

// outcome classifies an answer: A, D, F or what it was.
func (w *accountingWorld) outcome(method string, status int, body []byte) string {
	switch {
	case status == http.StatusForbidden || status == http.StatusNotFound:
		return "D"
	case status == http.StatusUnprocessableEntity:
		var e models.Error
		if json.Unmarshal(body, &e) == nil {
			for _, f := range fields(e.Error) {
				if slices.Contains(scopeFields, strings.SplitN(f, ".", 2)[0]) {
					return "D"
				}
			}
		}
	case status >= 200 && status < 300:
		if method == http.MethodGet {
			for _, id := range w.teamB {
				if bytes.Contains(body, []byte(id)) {
					return "A"
				}
			}
			return "F"
		}
		return "A"
	}
	return fmt.Sprint(status)
}

func (w *accountingWorld) send(t *testing.T, b *bundle, role string, o accountingOp) (int, []byte) {
	t.Helper()
	path := o.path
	prefix := path
	if i := strings.Index(path, "/{"); i >= 0 {
		prefix = path[:i]
	}
	if id, ok := w.byPath[prefix]; ok {
		path = strings.Replace(path, "{id}", id.String(), 1)
	}
	for name, id := range w.ids {
		path = strings.ReplaceAll(path, "{"+name+"}", id.String())
	}
	// No usage event or payload capture exists: every role must get the 404
	// of a missing one (a request id names no tenant by itself).
	path = strings.ReplaceAll(path, "{request_id}", "req_"+strings.Repeat("ab", 16))
	path = strings.ReplaceAll(path, "{tool}", "lookup")
	var query []string
	for _, p := range o.op.Parameters {
		if p.Value.In == "query" && p.Value.Required {
			v := w.ids[p.Value.Name].String()
			if sc := p.Value.Schema; sc != nil && sc.Value != nil && len(sc.Value.Enum) > 0 {
				v = fmt.Sprint(sc.Value.Enum[0]) // e.g. an object kind
			}
			query = append(query, p.Value.Name+"="+v)
		}
	}
	if len(query) > 0 {
		path += "?" + strings.Join(query, "&")
	}
	var rd io.Reader
	if o.op.RequestBody != nil {
		n := 0
		s := o.op.RequestBody.Value.Content.Get("application/json").Schema.Value
		data, _ := json.Marshal(w.synth(s, "", &n))
		if v, ok := accountingBodies[o.id]; ok {
			data, _ = json.Marshal(v)
		}
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequestWithContext(b.ctx, o.method, b.srv.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-CSRF-Token", w.csrf[role])
	resp, err := w.cookies[role].Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

func TestRBAC_EveryOperationAccounted(t *testing.T) {
	t.Parallel()
	b := setup(t, func(cfg *controlapi.Config) {
		cfg.PurgeCache = cache.New(cache.Config{})
		cfg.Objects = objects.NewMemory(objects.Options{})
	})
	w := buildAccountingWorld(t, b)
	ops := accountingOps(t)
	seen := map[string]bool{}
	var got []string
	for _, o := range ops {
		seen[o.id] = true
		want, ok := accountingMatrix[o.id]
		if !ok {
			t.Errorf("operation %s (%s %s) has no row in the RBAC matrix: add its expected outcome for every role", o.id, o.method, o.path)
		}
		line := ""
		for i, role := range accountingRoles {
			exp := byte('?')
			switch {
			case ok:
				exp = want[i]
			case o.id == "login" || o.id == "logout":
				exp = '-'
			case role == "admin":
				exp = 'A' // a write by the admin would change the world; a missing row is reported above
			}
			if exp == '-' || (exp == 'A' && o.method != http.MethodGet) {
				line += string(exp)
				continue
			}
			status, body := w.send(t, b, role, o)
			out := w.outcome(o.method, status, body)
			if len(out) == 1 {
				line += out
			} else {
				line += "!"
			}
			if ok && out != string(exp) {
				t.Errorf("%s as %s: %s (%d: %.200s), want %c", o.id, role, out, status, body, exp)
			}
		}
		got = append(got, fmt.Sprintf("%q: %q,", o.id, line))
	}
	for id := range accountingMatrix {
		if !seen[id] {
			t.Errorf("the RBAC matrix names %s, which control.yaml does not have", id)
		}
	}
	if os.Getenv("RELAY_PRINT_MATRIX") != "" {
		t.Log("\n" + strings.Join(got, "\n"))
	}
}

// accountingBodies are the bodies of the operations a synthesised one
// cannot exercise: an apply whose documents write into team B.
var accountingBodies = map[string]any{
	"approveMcpTool": models.McpToolApprovalCreate{Fingerprint: strings.Repeat("ab", 32)},
	"applyConfig":    models.ApplyRequest{Files: []models.ApplyFile{{Name: "acc.yaml", Content: "kind: Project\nspec: {team: acc-b, slug: acc-apply}\n"}}},
}

// accountingMatrix: operationId → outcome per role (accountingRoles order).
var accountingMatrix = map[string]string{
	"approveMcpTool":               "DDDDDDA",
	"withholdMcpTool":              "DDDDDDA",
	"createMcpServer":              "DDDDDDA",
	"deleteMcpServer":              "DDDDDDA",
	"getMcpServer":                 "DFFFFFF",
	"listMcpServerTools":           "DFFFFFF",
	"listMcpServers":               "FFFFFFF",
	"setPolicyMcpGrants":           "DDDDDDA",
	"updateMcpServer":              "DDDDDDA",
	"applyConfig":                  "DDDDDDA",
	"createBinding":                "DDDDDDA",
	"createBudget":                 "DDDDDDA",
	"createGroup":                  "DDDDDDA",
	"createGroupMember":            "DDDDDDA",
	"createHost":                   "DDDDDDA",
	"clearBreakers":                "DDDDDDA",
	"createHostKey":                "DDDDDDA",
	"createInferenceToken":         "DDDDDDA",
	"createModel":                  "DDDDDDA",
	"createPolicy":                 "DDDDDDA",
	"createPolicyBinding":          "DDDDDDA",
	"createPolicyHostKeyGrant":     "DDDDDDA",
	"createPolicyModelGrant":       "DDDDDDA",
	"createPolicyModelRateLimit":   "DDDDDDA",
	"createProject":                "DDDDDDA",
	"createRateLimit":              "DDDDDDA",
	"createRateLimitRule":          "DDDDDDA",
	"createRelayKey":               "DDDDDDA",
	"createRoleBinding":            "DDDDDDA",
	"createServiceAccount":         "DDDDDDA",
	"createTeam":                   "DDDDDDA",
	"createUser":                   "DDDDDDA",
	"deleteBinding":                "DDDDDDA",
	"deleteBudget":                 "DDDDDDA",
	"deleteGroup":                  "DDDDDDA",
	"deleteGroupMember":            "DDDDDDA",
	"deleteHost":                   "DDDDDDA",
	"deleteHostKey":                "DDDDDDA",
	"deleteModel":                  "DDDDDDA",
	"deletePayloadCapture":         "DDDDDDA",
	"deletePolicy":                 "DDDDDDA",
	"purgePolicyCache":             "DDDDDDA",
	"purgeRelayKeyCache":           "DDDDDDA",
	"deletePolicyBinding":          "DDDDDDA",
	"deletePolicyHostKeyGrant":     "DDDDDDA",
	"deletePolicyModelGrant":       "DDDDDDA",
	"deletePolicyModelRateLimit":   "DDDDDDA",
	"deleteProject":                "DDDDDDA",
	"deleteProjectPayloadCaptures": "DDDDDDA",
	"deleteRateLimit":              "DDDDDDA",
	"deleteRateLimitRule":          "DDDDDDA",
	"deleteRelayKey":               "DDDDDDA",
	"deleteRoleBinding":            "DDDDDDA",
	"deleteServiceAccount":         "DDDDDDA",
	"deleteTeam":                   "DDDDDDA",
	"deleteUser":                   "DDDDDDA",
	"getBinding":                   "DFFFFFF",
	"getBudget":                    "DDDDDAA",
	"getGroup":                     "DDDFFFF",
	"getHost":                      "DFFFFFF",
	"getHostKey":                   "DDDDDFF",
	"getModel":                     "DFFFFFF",
	"getPayloadCapture":            "DDDDDDD",
	"getPolicy":                    "DDDDDAA",
	"getPolicyBinding":             "DDDDDAA",
	"getPolicyModelRateLimit":      "DDDDDAA",
	"getProject":                   "DDDDDAA",
	"listProjectObjects":           "DDDDDAA",
	"getRateLimit":                 "DFFFFFF",
	"getRateLimitRule":             "DFFFFFF",
	"getRelayKey":                  "DDDDDAA",
	"getRoleBinding":               "DDDDDAA",
	"getServiceAccount":            "DDDDDAA",
	"getStatus":                    "DFFFFFF",
	"getTeam":                      "DDDDDAA",
	"getUsageEvent":                "DDDDDDD",
	"getUsageSummary":              "DFFFFFF",
	"getUsageTimeseries":           "DFFFFFF",
	"getUser":                      "DDDFFFF",
	"listAuditLog":                 "DDDDDAA",
	"listBindings":                 "FFFFFFF",
	"listBreakers":                 "DDDDDFF",
	"listBudgets":                  "FFFFFAA",
	"listGroupMembers":             "DDDFFFF",
	"listGroups":                   "FFFFFFF",
	"listHostKeyShares":            "DDDDDAA",
	"listHostKeys":                 "FFFFFFF",
	"listHosts":                    "FFFFFFF",
	"listInferenceTokens":          "FFFFFFA",
	"listModels":                   "FFFFFFF",
	"listPolicies":                 "FFFFFAA",
	"listPolicyBindings":           "FFFFFAA",
	"listPolicyHostKeyGrants":      "DDDDDAA",
	"listPolicyModelGrants":        "DDDDDAA",
	"listPolicyModelRateLimits":    "DDDDDAA",
	"listPolicyShares":             "DDDDDFF",
	"listProjects":                 "FFFFFAA",
	"listRateLimitRules":           "DFFFFFF",
	"listRateLimits":               "FFFFFFF",
	"listRelayKeys":                "FFFFFAA",
	"listRoleBindings":             "FFFFFAA",
	"listServiceAccounts":          "FFFFFAA",
	"listTeamHostKeyShares":        "DDDDDAA",
	"listTeams":                    "FFFFFAA",
	"listUsageEvents":              "DFFFFFF",
	"listUsers":                    "FFFFFFF",
	"login":                        "-------",
	"logout":                       "-------",
	"reloadSnapshot":               "DDDDDDA",
	"revokeInferenceToken":         "DDDDDDA",
	"revokeRelayKey":               "DDDDDDA",
	"rotateRelayKey":               "DDDDDDA",
	"routeExplain":                 "DDDDDAA",
	"shareHostKey":                 "DDDDDDA",
	"sharePolicy":                  "DDDDDDA",
	"testHostKey":                  "DDDDDDA",
	"unshareHostKey":               "DDDDDDA",
	"unsharePolicy":                "DDDDDDA",
	"updateBinding":                "DDDDDDA",
	"updateBudget":                 "DDDDDDA",
	"updateGroup":                  "DDDDDDA",
	"updateHost":                   "DDDDDDA",
	"updateHostKey":                "DDDDDDA",
	"updateModel":                  "DDDDDDA",
	"updatePolicy":                 "DDDDDDA",
	"updatePolicyBinding":          "DDDDDDA",
	"updatePolicyModelRateLimit":   "DDDDDDA",
	"updateProject":                "DDDDDDA",
	"updateRateLimit":              "DDDDDDA",
	"updateRateLimitRule":          "DDDDDDA",
	"updateRelayKey":               "DDDDDDA",
	"updateRoleBinding":            "DDDDDDA",
	"updateServiceAccount":         "DDDDDDA",
	"updateTeam":                   "DDDDDDA",
	"updateUser":                   "DDDDDDA",
	"whoami":                       "FFFFFFF",
}
