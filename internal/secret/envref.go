package secret

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultEnvPrefixes is the allow-list of `relay serve` when
// RELAY_SECRET_ENV_PREFIXES is not set: the operator's own namespace
// (RELAY_SECRET_…) and the variables the providers' SDKs read.
const DefaultEnvPrefixes = "RELAY_SECRET_,OPENAI_,ANTHROPIC_,GEMINI_,GOOGLE_"

// EnvRefs decides which environment variables an "env:NAME" host key may
// name. Relay's own settings are never referable, whatever the allow-list:
// a host key's value is sent to the host's base URL, so a reference to
// RELAY_MASTER_KEY would hand the master key to whoever may edit a host.
// The zero value refuses only Relay's own settings; `relay serve` adds the
// operator's allow-list (RELAY_SECRET_ENV_PREFIXES).
type EnvRefs struct {
	allow []string        // entries ending in "_" are prefixes, others exact names; nil: anything not Relay's own
	own   map[string]bool // Relay's settings by name (config's table), on top of the RELAY_ namespace
}

// NewEnvRefs makes the rule: allow is the operator's allow-list (entries
// ending in "_" are prefixes, others exact names; an empty list allows
// nothing), own names Relay's settings.
func NewEnvRefs(allow, own []string) EnvRefs {
	r := EnvRefs{allow: []string{}, own: make(map[string]bool, len(own))}
	for _, a := range allow {
		if a = strings.TrimSpace(a); a != "" {
			r.allow = append(r.allow, a)
		}
	}
	for _, o := range own {
		r.own[o] = true
	}
	return r
}

// Check returns nil when a host key may name the variable; otherwise an
// error that says why (it names the variable, never a value).
func (r EnvRefs) Check(name string) error {
	if name == "" || strings.ContainsAny(name, "= \t\r\n\x00") {
		return fmt.Errorf("%q is not an environment variable name", name)
	}
	if r.own[name] || relaysOwn(name) {
		return fmt.Errorf("%s is one of Relay's own settings; a host key may not name it", name)
	}
	if r.allow == nil || slices.ContainsFunc(r.allow, func(a string) bool {
		if strings.HasSuffix(a, "_") {
			return strings.HasPrefix(name, a)
		}
		return name == a
	}) {
		return nil
	}
	return fmt.Errorf("%s is not in RELAY_SECRET_ENV_PREFIXES (%s); the operator decides which variables host keys may name", name, strings.Join(r.allow, ","))
}

// relaysOwn reports the names that are Relay's whatever the tables say:
// the RELAY_ namespace (settings, the bootstrap admin's password, the CLI's
// token) except RELAY_SECRET_…, which is the operator's for host keys; and
// the database's and Redis's addresses and passwords, which Relay may be
// given under their usual names.
func relaysOwn(name string) bool {
	n := strings.ToUpper(name)
	if strings.HasPrefix(n, "RELAY_") && !strings.HasPrefix(n, "RELAY_SECRET_") {
		return true
	}
	for _, s := range []string{"DATABASE_URL", "REDIS_URL", "REDIS_PASSWORD", "MASTER_KEY", "ADMIN_TOKEN"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return strings.HasPrefix(n, "PG") // libpq's PGPASSWORD, PGHOST …
}

// ParseRef returns the variable an "env:NAME" reference names, checked
// against r.
func (r EnvRefs) ParseRef(ref string) (string, error) {
	name, ok := strings.CutPrefix(ref, "env:")
	if !ok || name == "" {
		return "", fmt.Errorf("secret reference %q is not env:NAME", ref)
	}
	if err := r.Check(name); err != nil {
		return "", err
	}
	return name, nil
}
