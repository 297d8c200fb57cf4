package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/configfile/configfiletest"
	"github.com/relay-llm/relay/internal/credential"
)

// catalog is the config-as-code fixture of internal/configfile.
const catalog = "../../internal/configfile/testdata/catalog"

// cli runs one relay command against srv; it returns stdout, stderr and
// run's error.
func cli(t *testing.T, srv *configfiletest.Server, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	vars := map[string]string{"RELAY_URL": srv.URL, "RELAY_ADMIN_TOKEN": configfiletest.AdminToken}
	for k, v := range env {
		vars[k] = v
	}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, func(k string) string { return vars[k] }, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func mustCLI(t *testing.T, srv *configfiletest.Server, args ...string) string {
	t.Helper()
	out, errOut, err := cli(t, srv, nil, args...)
	if err != nil {
		t.Fatalf("relay %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func TestApply_DryRunChangesNothing(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	out := mustCLI(t, srv, "apply", "-f", catalog, "--dry-run")
	if !strings.Contains(out, "+ create Host openai\n") || !strings.HasSuffix(out, "plan: 31 to create, 0 to update, 0 to delete\n") {
		t.Errorf("dry run prints:\n%s", out)
	}
	if n := srv.AuditRows(t); n != 0 {
		t.Errorf("--dry-run wrote %d audit rows", n)
	}
	if out := mustCLI(t, srv, "export"); strings.Contains(out, "kind:") {
		t.Errorf("--dry-run created objects:\n%s", out)
	}
}

func TestApply_TwiceIsANoop(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	out := mustCLI(t, srv, "apply", "-f", catalog)
	if !regexp.MustCompile(`(?m)^applied: 31 created, 0 updated, 0 deleted in \S+$`).MatchString(out) {
		t.Errorf("first apply prints:\n%s", out)
	}
	audit := srv.AuditRows(t)
	if out := mustCLI(t, srv, "apply", "-f", catalog, "--prune"); out != "no changes\n" {
		t.Errorf("second apply prints:\n%s", out)
	}
	if n := srv.AuditRows(t) - audit; n != 0 {
		t.Errorf("second apply wrote %d audit rows", n)
	}
}

func TestExport_ApplyIntoAnEmptyDatabaseReproducesIt(t *testing.T) {
	t.Parallel()
	a, b := configfiletest.New(t), configfiletest.New(t)
	mustCLI(t, a, "apply", "-f", catalog)
	file := filepath.Join(t.TempDir(), "relay.yaml")
	mustCLI(t, a, "export", "-o", file)

	mustCLI(t, b, "apply", "-f", file)
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustCLI(t, b, "export"); got != string(want) {
		t.Errorf("exports differ:\n--- a\n%s\n--- b\n%s", want, got)
	}
	if out := mustCLI(t, b, "apply", "-f", file, "--prune"); out != "no changes\n" {
		t.Errorf("apply of the export again:\n%s", out)
	}
}

func TestApply_ErrorsExitNonZeroNamingTheDocument(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "hosts.yaml")
	os.WriteFile(bad, []byte("kind: Host\nspec: {slug: ok, provider: openai, base_url: https://a.example}\n---\n"+
		"kind: Host\nspec: {slug: bad, provider: openia, base_url: https://b.example}\n"), 0o644)
	_, _, err := cli(t, srv, nil, "apply", "-f", dir)
	if err == nil || !strings.Contains(err.Error(), bad+":2 (line 4) Host bad: provider: value is not one of the allowed values") {
		t.Errorf("err = %v", err)
	}

	// Prune would delete a policy a service account (not in the files) still
	// uses: Relay would answer 409, so the plan refuses before any change.
	mustCLI(t, srv, "apply", "-f", catalog)
	policies := filepath.Join(dir, "policies.yaml")
	os.WriteFile(policies, []byte("kind: Policy\nspec: {slug: everything, all_models: true, all_host_keys: true, limiter_failure_mode: closed, route_strategy: cost, affinity: binding}\n"), 0o644)
	_, _, err = cli(t, srv, nil, "apply", "-f", policies, "--prune")
	if err == nil || !strings.Contains(err.Error(), "--prune would delete Policy default, but ServiceAccount platform/chat/ci (which this apply keeps) names it in policy") {
		t.Errorf("err = %v", err)
	}
	if r, err := srv.Client.ListPoliciesWithResponse(t.Context(), nil); err != nil || r.JSON200 == nil || !slices.ContainsFunc(r.JSON200.Items, func(p models.Policy) bool { return p.Slug == "default" }) {
		t.Errorf("the refused apply deleted policy default (or the list failed: %v)", err)
	}
}

func TestApply_Stdin(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string {
		return map[string]string{"RELAY_URL": srv.URL, "RELAY_ADMIN_TOKEN": configfiletest.AdminToken}[k]
	}
	err := applyCmd(t.Context(), []string{"-f", "-"}, getenv, strings.NewReader("kind: Team\nspec: {slug: platform}\n"), &stdout, &stderr)
	if err != nil || !strings.HasPrefix(stdout.String(), "+ create Team platform\n") {
		t.Errorf("err = %v, stdout:\n%s", err, &stdout)
	}
}

func TestCLI_ConnectionErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unreachable", map[string]string{"RELAY_URL": "http://127.0.0.1:1"}, []string{"export"}, "export: cannot reach the control plane at http://127.0.0.1:1: "},
		{"wrong token", nil, []string{"export", "--token", "nope"}, "export: the control plane refused the credentials (401 unauthenticated)"},
		{"no token", map[string]string{"RELAY_ADMIN_TOKEN": ""}, []string{"keys", "mint", "--project", "a/b", "--user", "x@y.z"}, "keys mint: no admin token"},
		{"bad url", nil, []string{"export", "--url", "localhost:8081"}, "want http(s)://host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := cli(t, srv, tt.env, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q; want one line with %q", err, tt.want)
			}
		})
	}
}

func TestKeysMint_PrintsAKeyTheStoreFinds(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	mustCLI(t, srv, "apply", "-f", catalog)

	out, errOut, err := cli(t, srv, nil, "keys", "mint", "--project", "platform/chat", "--service-account", "ci",
		"--name", "deploy", "--expires-in", "720h", "--policy", "everything")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !regexp.MustCompile(`^sk-wr-[A-Za-z0-9_-]{64}\n$`).MatchString(out) {
		t.Fatalf("stdout is not one key: %q", out)
	}
	hash := credential.Hash(strings.TrimSpace(out))
	key, err := srv.Store.RelayKeys().GetByHash(t.Context(), hash[:])
	if err != nil {
		t.Fatalf("the store does not find the key: %v", err)
	}
	if key.Name != "deploy" || key.ServiceAccountID == nil || key.PolicyID == nil || key.ExpiresAt == nil {
		t.Errorf("key = %+v", key)
	}
	if !strings.Contains(errOut, key.ID.String()) || !strings.Contains(errOut, key.DisplayPrefix) || strings.Contains(errOut, strings.TrimSpace(out)) {
		t.Errorf("stderr = %q; want the id and prefix, not the key", errOut)
	}

	out, errOut, err = cli(t, srv, nil, "keys", "mint", "--project", "platform/chat", "--user", "Ada@Example.com")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	hash = credential.Hash(strings.TrimSpace(out))
	if key, err := srv.Store.RelayKeys().GetByHash(t.Context(), hash[:]); err != nil || key.UserID == nil || key.ExpiresAt != nil {
		t.Errorf("user key: %+v, %v", key, err)
	}

	_, _, err = cli(t, srv, nil, "keys", "mint", "--project", "platform/chat", "--service-account", "nobody")
	if err == nil || !strings.Contains(err.Error(), `no service account "nobody"`) {
		t.Errorf("err = %v", err)
	}
}

func TestTokenMint_SignsInAndPrintsAToken(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	mustCLI(t, srv, "apply", "-f", catalog)
	ctx := context.Background()
	pw := "correct horse battery"
	u, err := srv.Client.CreateUserWithResponse(ctx, models.UserCreate{Email: "dev@example.com", Password: &pw})
	if err != nil || u.JSON201 == nil {
		t.Fatalf("create user: %v %s", err, u.Body)
	}
	// A developer of platform/chat (through the group ops, which has that role).
	docs := "kind: User\nspec: {email: dev@example.com, groups: [ops]}\n"
	file := filepath.Join(t.TempDir(), "dev.yaml")
	os.WriteFile(file, []byte(docs), 0o644)
	mustCLI(t, srv, "apply", "-f", file)

	out, errOut, err := cli(t, srv, map[string]string{"RELAY_PASSWORD": pw, "RELAY_ADMIN_TOKEN": ""},
		"token", "mint", "--project", "platform/chat", "--email", "dev@example.com", "--ttl", "10m")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	hash := credential.Hash(strings.TrimSpace(out))
	tok, err := srv.Store.InferenceTokens().GetByHash(t.Context(), hash[:])
	if err != nil {
		t.Fatalf("the store does not find the token: %v (stdout %q)", err, out)
	}
	if tok.UserID != u.JSON201.ID {
		t.Errorf("token of user %s; want %s", tok.UserID, u.JSON201.ID)
	}

	_, _, err = cli(t, srv, nil, "token", "mint", "--project", "platform/chat")
	if err == nil || !strings.Contains(err.Error(), "the admin token has none: pass --email") {
		t.Errorf("without --email: err = %v", err)
	}
}
