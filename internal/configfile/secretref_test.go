package configfile_test

import (
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
)

// TestApply_RefusesASecretRefToRelaysOwnSetting: `relay apply` keeps the
// control API's rule — a host key naming RELAY_MASTER_KEY is refused, the
// error names the document and secret_ref, and nothing is written.
func TestApply_RefusesASecretRefToRelaysOwnSetting(t *testing.T) {
	t.Parallel()
	srv := configfiletest.New(t)
	for _, name := range []string{"RELAY_MASTER_KEY", "RELAY_ADMIN_TOKEN", "RELAY_DATABASE_URL"} {
		docs := parse(t, `
kind: Host
spec: {slug: echo, provider: openai, base_url: https://echo.example.com/v1}
---
kind: HostKey
spec: {host: echo, slug: stolen, secret_ref: env:`+name+`}
`)
		_, err := plan(t, srv, docs, configfile.Options{}).Apply(t.Context())
		if err == nil || !strings.Contains(err.Error(), "secret_ref") || !strings.Contains(err.Error(), "HostKey") {
			t.Fatalf("apply with env:%s = %v, want a 422 naming the HostKey and secret_ref", name, err)
		}
	}
	r, err := srv.Client.ListHostKeysWithResponse(t.Context(), nil)
	if err != nil || r.JSON200 == nil || len(r.JSON200.Items) != 0 {
		t.Fatalf("host keys after the refused applies: %v %s", err, r.Body)
	}
}
