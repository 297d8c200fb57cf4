package controlapi_test

import (
	"net/http"
	"testing"

	"github.com/relay-llm/relay/openapi/models"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/secret"
)

// TestHostKeys_RefuseEnvReferencesOutsideTheRule: a host key's value is
// sent to its host, so a reference to one of Relay's own settings would
// hand it to whoever may edit a host. Create and update answer 422 naming
// secret_ref, whatever the allow-list; a name outside the operator's
// allow-list likewise.
func TestHostKeys_RefuseEnvReferencesOutsideTheRule(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *controlapi.Config) {
		c.Box = c.Box.WithEnvRefs(secret.NewEnvRefs([]string{"RELAY_", "OPENAI_", "DATABASE_URL"}, []string{"RELAY_SECRET_ENV_PREFIXES"}))
	})
	ctx, c := b.ctx, b.admin
	h := b.host("h")
	ok := call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "ok", SecretRef: ptr("env:OPENAI_API_KEY")})).want(t, http.StatusCreated).JSON201
	for i, ref := range []string{
		"env:RELAY_MASTER_KEY", "env:RELAY_ADMIN_TOKEN", "env:RELAY_DATABASE_URL", "env:RELAY_MASTER_KEY_PREVIOUS",
		"env:RELAY_ADMIN_PASSWORD", "env:RELAY_SECRET_ENV_PREFIXES", "env:DATABASE_URL", "env:PGPASSWORD",
		"env:HOME", "env:MISTRAL_API_KEY", "env:relay_master_key",
	} {
		call(c.CreateHostKeyWithResponse(ctx, models.HostKeyCreate{HostID: h.ID, Slug: "k" + string(rune('a'+i)), SecretRef: ptr(ref)})).
			wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "secret_ref")
		call(c.UpdateHostKeyWithResponse(ctx, ok.ID, models.HostKeyUpdate{SecretRef: ptr(ref)})).
			wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "secret_ref")
	}
	got := call(c.GetHostKeyWithResponse(ctx, ok.ID)).want(t, http.StatusOK).JSON200
	if got.SecretRef == nil || *got.SecretRef != "env:OPENAI_API_KEY" {
		t.Fatalf("the refused updates changed the key: %+v", got.SecretRef)
	}
}
