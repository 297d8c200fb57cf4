package proxy_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHotPathCannotReachPostgres proves the inference packages do not
// import pgx, the store or the loader, even indirectly.
func TestHotPathCannotReachPostgres(t *testing.T) {
	t.Parallel()
	const mod = "github.com/relay-llm/relay/internal/"
	out, err := exec.Command("go", "list", "-deps", mod+"proxy", mod+"routing", mod+"keypool", mod+"wire").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), mod+"snapshot") {
		t.Fatalf("implausible dependency list: %v", deps)
	}
	for _, d := range deps {
		for _, banned := range []string{"github.com/jackc/pgx", mod + "store", mod + "loader"} {
			if d == banned || strings.HasPrefix(d, banned+"/") || strings.HasPrefix(d, banned) && strings.HasPrefix(banned, "github.com/jackc") {
				t.Errorf("the hot path imports %s", d)
			}
		}
	}
}
