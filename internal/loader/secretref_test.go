package loader

import (
	"context"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/secret"
)

// TestLoader_StoredReferenceToRelaysOwnSettingIsUnusable: a host key row
// written before the rule (straight into the table here) that names
// RELAY_MASTER_KEY is not resolved: the variable is set, but the key is
// unusable and its problem says why.
func TestLoader_StoredReferenceToRelaysOwnSettingIsUnusable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t)
	b.exec(t, `UPDATE host_keys SET secret_ref = 'env:RELAY_MASTER_KEY' WHERE slug = 'from-env'`)
	box := b.box.WithEnvRefs(secret.NewEnvRefs([]string{"RELAY_", "LOADER_"}, nil))
	l := New(b.st, box, quiet(), Options{Getenv: func(k string) string {
		return map[string]string{"RELAY_MASTER_KEY": "the-master-key", "LOADER_TEST_KEY": "sk-upstream-env"}[k]
	}})
	if err := l.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys := l.Current().HostKeys(l.Current().HostBySlug("mock").ID)
	if keys[1].Usable || keys[1].Secret.Reveal() != "" || !strings.Contains(keys[1].Problem, "Relay's own settings") {
		t.Fatalf("a reference to RELAY_MASTER_KEY resolved: usable=%v problem=%q", keys[1].Usable, keys[1].Problem)
	}
	if !keys[0].Usable {
		t.Fatal("the sealed key next to it became unusable")
	}
}
