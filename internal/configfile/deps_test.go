package configfile_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestConfigfile_OnlyTalksToTheAPI proves the package reaches Relay through
// the generated client alone: not the store, pgx or the control API's
// handlers, even indirectly (its test helper configfiletest may).
func TestConfigfile_OnlyTalksToTheAPI(t *testing.T) {
	t.Parallel()
	const mod = "github.com/relay-llm/relay/"
	out, err := exec.Command("go", "list", "-deps", mod+"internal/configfile").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), mod+"openapi/client") {
		t.Fatalf("implausible dependency list: %v", deps)
	}
	for _, d := range deps {
		for _, banned := range []string{"github.com/jackc/pgx", mod + "internal/store", mod + "internal/controlapi"} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("configfile imports %s", d)
			}
		}
	}
}
