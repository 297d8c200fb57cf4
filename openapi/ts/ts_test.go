// Package ts_test checks openapi/control.yaml from TypeScript: it installs
// the pinned tools of package.json with `npm ci`, generates types with
// openapi-typescript, type-checks and runs smoke.ts (openapi-fetch) against a
// running control API, and lints the spec with Redocly. It needs node and npm
// on PATH and skips only when node is missing.
package ts_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

const adminToken = "ts-test-admin-token-0123456789"

var (
	installOnce sync.Once
	installErr  error
	installOut  []byte
)

// install runs `npm ci` once per test process. node_modules lands in this
// directory (gitignored); the npm cache makes repeat runs quick.
func install(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("node is on PATH but npm is not")
	}
	installOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
		installOut, installErr = cmd.CombinedOutput()
	})
	if installErr != nil {
		t.Fatalf("npm ci: %v\n%s", installErr, installOut)
	}
}

// run runs a tool installed by npm ci and returns its combined output.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join("node_modules", ".bin", name), args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestTypeScriptClient_AgainstControlAPI(t *testing.T) {
	install(t)
	st, err := store.Open(t.Context(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	box, err := secret.NewBox(bytes.Repeat([]byte{1}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	h, err := controlapi.New(controlapi.Config{Store: st, Box: box, AdminToken: adminToken, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// The flag keeps properties with a default optional in request bodies;
	// without it openapi-typescript makes callers send every default.
	run(t, nil, "openapi-typescript", "../control.yaml", "--default-non-nullable=false", "-o", "gen/relay.d.ts")
	run(t, nil, "tsc", "--noEmit", "-p", ".")
	out := run(t, []string{"RELAY_URL=" + srv.URL, "RELAY_ADMIN_TOKEN=" + adminToken}, "tsx", "smoke.ts")
	if !strings.Contains(out, "ts smoke: ok") {
		t.Fatalf("smoke.ts did not finish:\n%s", out)
	}
	// What the script did is in the store: the host it created is gone again.
	if hosts, err := st.Hosts().List(t.Context(), store.Page{Limit: 10}); err != nil || len(hosts) != 0 {
		t.Errorf("hosts left behind: %v, %v", hosts, err)
	}
}

// TestRedoclyLint lints the specs as the docs say to, from the same
// package.json: control.yaml and inference.yaml, with no errors.
func TestRedoclyLint(t *testing.T) {
	install(t)
	for _, spec := range []string{"control.yaml", "inference.yaml"} {
		t.Run(spec, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "npx", "--no-install", "redocly", "lint", "--config", "../redocly.yaml", "../"+spec)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("redocly lint found errors (%v):\n%s", err, out)
			}
			if strings.Contains(strings.ToLower(string(out)), "warning") {
				t.Logf("redocly lint warnings:\n%s", out)
			}
		})
	}
}
