package configfile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
)

// A host's breaker thresholds apply, export and apply again into an empty
// control plane unchanged; dropping one from the file sets it back to null
// (the process setting); out of range names the field.
func TestApply_HostBreakerThresholdsRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := configfiletest.New(t), configfiletest.New(t)
	const strict = "kind: Host\nspec:\n  slug: strict\n  provider: openai\n  base_url: https://api.openai.com/v1\n"
	apply(t, a, parse(t, strict+"  breaker_server_failures: 1\n  breaker_network_failures: 7\n"), configfile.Options{})

	exported := export(t, a)
	if want := "  breaker_server_failures: 1\n  breaker_network_failures: 7\n"; !strings.Contains(exported, want) {
		t.Fatalf("export lacks %q:\n%s", want, exported)
	}
	docs, err := configfile.Parse("export.yaml", []byte(exported))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, b, docs, configfile.Options{})
	if again := export(t, b); again != exported {
		t.Errorf("export of the copy differs:\n--- original\n%s\n--- copy\n%s", exported, again)
	}

	p := apply(t, a, parse(t, strict+"  breaker_network_failures: 7\n"), configfile.Options{})
	if want := "~ update Host strict (breaker_server_failures: 1 → null)"; !strings.Contains(printed(t, p), want) {
		t.Errorf("plan lacks %q:\n%s", want, printed(t, p))
	}
	if again := plan(t, a, parse(t, strict+"  breaker_network_failures: 7\n"), configfile.Options{}); !again.Empty() {
		t.Errorf("not converged:\n%s", printed(t, again))
	}
	if exported := export(t, a); strings.Contains(exported, "breaker_server_failures") {
		t.Errorf("a null threshold is exported:\n%s", exported)
	}

	for _, bad := range []string{"  breaker_server_failures: 0\n", "  breaker_network_failures: 1001\n"} {
		docs := parse(t, strict+bad)
		_, err := configfile.NewPlan(t.Context(), a.Client, docs, configfile.Options{})
		field := strings.TrimSpace(strings.SplitN(bad, ":", 2)[0])
		var de *configfile.DocError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v; want a DocError naming %s", strings.TrimSpace(bad), err, field)
		}
	}
}

// A policy's degrade option applies, exports and applies again into an
// empty control plane unchanged; dropping it from the file sets it back to
// null (never degrade).
func TestApply_PolicyDegradeRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := configfiletest.New(t), configfiletest.New(t)
	const pol = "kind: Policy\nspec:\n  slug: agents\n"
	apply(t, a, parse(t, pol+"  degrade_after_ms: 1500\n  degrade_below_priority: 2\n"), configfile.Options{})
	exported := export(t, a)
	if want := "  degrade_after_ms: 1500\n  degrade_below_priority: 2\n"; !strings.Contains(exported, want) {
		t.Fatalf("export lacks %q:\n%s", want, exported)
	}
	docs, err := configfile.Parse("export.yaml", []byte(exported))
	if err != nil {
		t.Fatal(err)
	}
	apply(t, b, docs, configfile.Options{})
	if again := export(t, b); again != exported {
		t.Errorf("export of the copy differs:\n--- original\n%s\n--- copy\n%s", exported, again)
	}
	p := apply(t, a, parse(t, pol+"  degrade_below_priority: 2\n"), configfile.Options{})
	if want := "degrade_after_ms: 1500 → null"; !strings.Contains(printed(t, p), want) {
		t.Errorf("plan lacks %q:\n%s", want, printed(t, p))
	}
	if exported := export(t, a); strings.Contains(exported, "degrade_after_ms") {
		t.Errorf("a null degrade_after_ms is exported:\n%s", exported)
	}
}
