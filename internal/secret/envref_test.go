package secret

import (
	"strings"
	"testing"
)

func TestEnvRefs_RefusesRelaysOwnSettings(t *testing.T) {
	allowAll := NewEnvRefs([]string{"RELAY_", "DATABASE_URL", "PG", "OPENAI_"}, []string{"RELAY_SECRET_ENV_PREFIXES"})
	defaults := NewEnvRefs(strings.Split(DefaultEnvPrefixes, ","), []string{"RELAY_SECRET_ENV_PREFIXES"})
	for _, tc := range []struct {
		name  string
		rule  EnvRefs
		ok    bool
		cause string
	}{
		{"RELAY_MASTER_KEY", allowAll, false, "Relay's own"},
		{"RELAY_ADMIN_TOKEN", allowAll, false, "Relay's own"},
		{"RELAY_DATABASE_URL", allowAll, false, "Relay's own"},
		{"RELAY_ADMIN_PASSWORD", allowAll, false, "Relay's own"},
		{"RELAY_MASTER_KEY_PREVIOUS", EnvRefs{}, false, "Relay's own"},
		{"RELAY_SECRET_ENV_PREFIXES", allowAll, false, "Relay's own"},
		{"DATABASE_URL", allowAll, false, "Relay's own"},
		{"PGPASSWORD", allowAll, false, "Relay's own"},
		{"OPENAI_ADMIN_TOKEN", allowAll, false, "Relay's own"},
		{"relay_master_key", allowAll, false, "Relay's own"},
		{"RELAY_SECRET_MISTRAL", defaults, true, ""},
		{"OPENAI_API_KEY", defaults, true, ""},
		{"MISTRAL_API_KEY", defaults, false, "RELAY_SECRET_ENV_PREFIXES"},
		{"HOME", defaults, false, "RELAY_SECRET_ENV_PREFIXES"},
		{"OPENAI", NewEnvRefs([]string{"OPENAI_", "MISTRAL_API_KEY"}, nil), false, "RELAY_SECRET_ENV_PREFIXES"},
		{"MISTRAL_API_KEY", NewEnvRefs([]string{"MISTRAL_API_KEY"}, nil), true, ""},
		{"MISTRAL_API_KEY2", NewEnvRefs([]string{"MISTRAL_API_KEY"}, nil), false, "RELAY_SECRET_ENV_PREFIXES"},
		{"ANY_NAME", NewEnvRefs(nil, nil), false, "RELAY_SECRET_ENV_PREFIXES"},
		{"ANY_NAME", EnvRefs{}, true, ""},
		{"A=B", EnvRefs{}, false, "not an environment variable name"},
	} {
		err := tc.rule.Check(tc.name)
		if tc.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.cause)) {
			t.Errorf("Check(%q) = %v, want ok=%v (%s)", tc.name, err, tc.ok, tc.cause)
		}
	}
}

// A reference stored before the rule is not resolved: the variable is not
// even read, and the error says why.
func TestBox_ResolveRefusesAStoredReferenceToRelaysOwnSetting(t *testing.T) {
	box, _ := NewBox(nil)
	box = box.WithEnvRefs(NewEnvRefs(strings.Split(DefaultEnvPrefixes, ","), nil))
	read := false
	getenv := func(string) string { read = true; return "the-master-key" }
	for _, ref := range []string{"env:RELAY_MASTER_KEY", "env:RELAY_ADMIN_TOKEN", "env:RELAY_DATABASE_URL", "env:HOME"} {
		v, err := box.Resolve(&ref, nil, getenv)
		if err == nil || v != "" || read {
			t.Fatalf("Resolve(%s) = %q, %v (variable read: %v)", ref, v, err, read)
		}
		if err := box.CheckRef(ref); err == nil {
			t.Fatalf("CheckRef(%s) accepted it", ref)
		}
	}
	ref := "env:RELAY_SECRET_PROVIDER"
	if v, err := box.Resolve(&ref, nil, func(string) string { return "v" }); err != nil || v != "v" {
		t.Fatalf("Resolve(%s) = %q, %v", ref, v, err)
	}
}
