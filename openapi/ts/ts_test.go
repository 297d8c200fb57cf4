// Package ts_test checks the specs from TypeScript: it installs the pinned
// tools of package.json with `npm ci`, generates types with
// openapi-typescript from openapi/control.yaml and openapi/inference.yaml,
// type-checks and runs smoke.ts (openapi-fetch) against a running control API
// and generate.ts against the inference handler, and lints both specs with
// Redocly. It needs node and npm
// on PATH and skips only when node is missing.
package ts_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/wire"
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

	generateTypes(t)
	out := run(t, []string{"RELAY_URL=" + srv.URL, "RELAY_ADMIN_TOKEN=" + adminToken}, "tsx", "smoke.ts")
	if !strings.Contains(out, "ts smoke: ok") {
		t.Fatalf("smoke.ts did not finish:\n%s", out)
	}
	// What the script did is in the store: the host it created is gone again.
	if hosts, err := st.Hosts().List(t.Context(), store.Page{Limit: 10}); err != nil || len(hosts) != 0 {
		t.Errorf("hosts left behind: %v, %v", hosts, err)
	}
}

var (
	typesOnce sync.Once
	typesErr  string
)

// generateTypes writes gen/relay.d.ts and gen/inference.d.ts from the specs
// and type-checks both scripts against them, once per test process.
func generateTypes(t *testing.T) {
	t.Helper()
	typesOnce.Do(func() {
		ok := t.Run("types", func(t *testing.T) {
			// The flag keeps properties with a default optional in request
			// bodies; without it openapi-typescript makes callers send every
			// default.
			run(t, nil, "openapi-typescript", "../control.yaml", "--default-non-nullable=false", "-o", "gen/relay.d.ts")
			run(t, nil, "openapi-typescript", "../inference.yaml", "--default-non-nullable=false", "-o", "gen/inference.d.ts")
			run(t, nil, "tsc", "--noEmit", "-p", ".")
		})
		if !ok {
			typesErr = "generating or type-checking the TypeScript types failed"
		}
	})
	if typesErr != "" {
		t.Fatal(typesErr)
	}
}

// TestTypeScriptClient_Generate calls /v1/generate from TypeScript, typed by
// openapi/inference.yaml, through a binding of every upstream shape on the
// mock upstream, with X-Relay-Usage: full.
func TestTypeScriptClient_Generate(t *testing.T) {
	install(t)
	const key = "sk-wr-ts-generate-0123456789abcdef0123"
	up := httptest.NewServer(mockupstream.New(mockupstream.Options{}))
	t.Cleanup(up.Close)
	policy := &snapshot.Policy{ID: uuid.New(), Slug: "p", AllModels: true, AllHostKeys: true, KeyStrategy: snapshot.StrategyPrioritized, MaxAttempts: 1}
	team, project, sa := uuid.New(), uuid.New(), uuid.New()
	host := &snapshot.Host{ID: uuid.New(), Slug: "mock", Name: "mock", BaseURL: up.URL, Enabled: true}
	d := &snapshot.Data{
		Teams:           []*snapshot.Team{{ID: team, Slug: "t"}},
		Projects:        []*snapshot.Project{{ID: project, TeamID: team, Slug: "p"}},
		ServiceAccounts: []*snapshot.ServiceAccount{{ID: sa, ProjectID: project, Slug: "app", PolicyID: policy.ID}},
		Policies:        []*snapshot.Policy{policy},
		RelayKeys:       []*snapshot.RelayKey{{ID: uuid.New(), Hash: sha256.Sum256([]byte(key)), DisplayPrefix: key[:10], ProjectID: project, ServiceAccountID: sa}},
		Hosts:           []*snapshot.Host{host},
		HostKeys:        []*snapshot.HostKey{{ID: uuid.New(), HostID: host.ID, Slug: "k", Secret: snapshot.NewSecret("sk-up-ts"), SecretVersion: 1, Enabled: true, Usable: true}},
	}
	var models []string
	for _, b := range []struct {
		shape    wire.Shape
		upstream string
	}{{wire.ShapeOpenAI, "gpt-4o-mini"}, {wire.ShapeOpenAIResponses, "gpt-4.1-mini"}, {wire.ShapeAnthropic, "claude-sonnet-4-5"}, {wire.ShapeGemini, "gemini-2.5-flash"}} {
		m := &snapshot.Model{ID: uuid.New(), Name: "ts-" + string(b.shape), Provider: "test", Kind: "chat"}
		d.Models = append(d.Models, m)
		d.Bindings = append(d.Bindings, &snapshot.Binding{ID: uuid.New(), ModelID: m.ID, HostID: host.ID, Shape: b.shape, UpstreamModel: b.upstream,
			Enabled: true, Pricing: snapshot.Pricing{Input: 2_500_000, Output: 10_000_000}})
		models = append(models, m.Name)
	}
	snap := snapshot.Build(d, 1, time.Now())
	srv := httptest.NewServer(proxy.New(proxy.Config{Snapshot: func() *snapshot.Snapshot { return snap }, Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)

	generateTypes(t)
	out := run(t, []string{"RELAY_URL=" + srv.URL, "RELAY_KEY=" + key, "RELAY_MODELS=" + strings.Join(models, ",")}, "tsx", "generate.ts")
	if !strings.Contains(out, "ts generate: ok") {
		t.Fatalf("generate.ts did not finish:\n%s", out)
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
