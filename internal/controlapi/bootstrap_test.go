package controlapi_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
)

func TestBootstrap_GeneratesAdminOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	none := func(string) string { return "" }
	var out bytes.Buffer
	if err := controlapi.Bootstrap(b.ctx, b.st, none, &out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`email:\s+(\S+)\n\s+password:\s+(\S+)\n`).FindStringSubmatch(out.String())
	if m == nil || m[1] != "admin@localhost" {
		t.Fatalf("bootstrap printed %q", out.String())
	}
	s := b.login(m[1], m[2])
	w := call(s.WhoamiWithResponse(b.ctx)).want(t, http.StatusOK).JSON200
	if len(w.RoleBindings) != 1 || w.RoleBindings[0].Role != models.RoleAdmin || w.RoleBindings[0].TeamID != nil || w.RoleBindings[0].ProjectID != nil {
		t.Errorf("bootstrapped admin's bindings = %+v", w.RoleBindings)
	}
	// The admin can do admin things.
	call(s.CreateHostWithResponse(b.ctx, models.HostCreate{Slug: "h", Provider: models.ProviderOpenai, BaseURL: "https://x"})).want(t, http.StatusCreated)

	out.Reset()
	if err := controlapi.Bootstrap(b.ctx, b.st, none, &out); err != nil || out.Len() != 0 {
		t.Errorf("second bootstrap: %v, printed %q", err, out.String())
	}
	// The audit log records the bootstrap without the password.
	for _, l := range []string{b.logs.String()} {
		if strings.Contains(l, m[2]) {
			t.Error("the generated password reached the log")
		}
	}
}

func TestBootstrap_FromEnvironment(t *testing.T) {
	t.Parallel()
	b := setup(t)
	env := map[string]string{"RELAY_ADMIN_EMAIL": "Root@Example.com", "RELAY_ADMIN_PASSWORD": "from-the-environment"}
	var out bytes.Buffer
	if err := controlapi.Bootstrap(b.ctx, b.st, func(k string) string { return env[k] }, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), env["RELAY_ADMIN_PASSWORD"]) || !strings.Contains(out.String(), "Root@Example.com") {
		t.Errorf("bootstrap printed %q", out.String())
	}
	b.login("root@example.com", "from-the-environment")

	// Half a configuration is an error, not a silent default (on an empty database).
	b2 := setup(t)
	if err := controlapi.Bootstrap(b2.ctx, b2.st, func(k string) string {
		if k == "RELAY_ADMIN_EMAIL" {
			return "x@example.com"
		}
		return ""
	}, &out); err == nil {
		t.Error("bootstrap with an email and no password succeeded")
	}
}
