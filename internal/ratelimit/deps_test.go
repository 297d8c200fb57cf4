package ratelimit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLimiterCannotReachPostgres proves the limiter, which runs on the
// request path, imports neither pgx, the store, the loader nor usage.
func TestLimiterCannotReachPostgres(t *testing.T) {
	t.Parallel()
	const mod = "github.com/relay-llm/relay/internal/"
	out, err := exec.Command("go", "list", "-deps", mod+"ratelimit").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !strings.Contains(string(out), "github.com/redis/go-redis/v9") {
		t.Fatalf("implausible dependency list: %v", deps)
	}
	for _, d := range deps {
		for _, banned := range []string{"github.com/jackc/pgx", mod + "store", mod + "loader", mod + "usage"} {
			if d == banned || strings.HasPrefix(d, banned+"/") {
				t.Errorf("the limiter imports %s", d)
			}
		}
	}
}
