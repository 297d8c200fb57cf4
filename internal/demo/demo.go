// Package demo seeds a demo catalog into an empty database so that `make run`
// on a fresh machine ends with a relay key and a curl that works as printed:
// a host on Relay's in-process mock upstream with demo models of every shape,
// a service account with a relay key, and real provider hosts with
// env-reference host keys for whichever of OPENAI_API_KEY, ANTHROPIC_API_KEY
// and GEMINI_API_KEY are set. It writes through the store like any operator.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/credential"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

// MockHostSlug is the demo host served by the in-process mock upstream.
const MockHostSlug = "relay-mock"

const actor = "demo-seed"

// Result says what Seed did.
type Result struct {
	Seeded   bool   // false when the catalog was not empty
	RelayKey string // the demo relay key's plaintext, when seeded
	Models   []string
}

// Options for Seed.
type Options struct {
	MockBaseURL string              // where the in-process mock upstream answers
	Getenv      func(string) string // which provider keys are set
}

type modelSpec struct {
	name, kind, shape, upstream string
	maxOut                      int32
	in, out, cached             int64
}

// mockModels are the demo models on the mock host, one per binding shape
// and an embedding model.
func mockModels() []modelSpec {
	return []modelSpec{
		{"demo-gpt", "chat", "openai", "gpt-4o-mini", 16384, 150_000, 600_000, 75_000},
		{"demo-responses", "chat", "openai_responses", "gpt-4.1-mini", 32768, 400_000, 1_600_000, 100_000},
		{"demo-claude", "chat", "anthropic", "claude-sonnet-4-5", 64000, 3_000_000, 15_000_000, 300_000},
		{"demo-gemini", "chat", "gemini", "gemini-2.5-flash", 65536, 300_000, 2_500_000, 75_000},
		{"demo-embedding", "embedding", "openai", "text-embedding-3-small", 0, 20_000, 0, 0},
	}
}

// Model is a demo model on the mock host: its name, kind (chat or
// embedding), the shape and upstream model of its binding, and its
// context window.
type Model struct {
	Name, Kind, Shape, Upstream string
	ContextWindow               int32
}

// MockModels lists the demo models Seed puts on the mock host, for the
// start-up banner (which shows them on every start, seeded then or not).
func MockModels() []Model {
	var out []Model
	for _, m := range mockModels() {
		out = append(out, Model{Name: m.name, Kind: m.kind, Shape: m.shape, Upstream: m.upstream, ContextWindow: contextWindows[m.upstream]})
	}
	return out
}

// MockUpstreamOptions configure the mock upstream the demo host points at:
// no request log (it runs for as long as Relay does), and tools called
// only when asked, so an agent on the demo finishes its session.
func MockUpstreamOptions() mockupstream.Options {
	return mockupstream.Options{Record: -1, ToolsWhenAsked: true}
}

// contextWindows are the real context windows of the upstream models the
// demo names, so an agent on the demo catalog sees what it would see on
// the provider's own.
var contextWindows = map[string]int32{
	"gpt-4o-mini":            128_000,
	"gpt-4.1-mini":           1_047_576,
	"claude-sonnet-4-5":      200_000,
	"gemini-2.5-flash":       1_048_576,
	"text-embedding-3-small": 8_191,
}

// Seed fills an empty catalog (no hosts) with the demo. On a catalog that
// already has the demo host it only points that host at MockBaseURL, since
// the control port may differ between starts.
func Seed(ctx context.Context, st *store.Store, box *secret.Box, opts Options) (Result, error) {
	if h, err := st.Hosts().GetBySlug(ctx, MockHostSlug); err == nil {
		if h.BaseURL != opts.MockBaseURL {
			_, err := st.Hosts().Modify(ctx, actor, h.ID, func(h *store.Host) error { h.BaseURL = opts.MockBaseURL; return nil })
			if err != nil {
				return Result{}, fmt.Errorf("update demo host: %w", err)
			}
		}
		return Result{}, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return Result{}, fmt.Errorf("look up demo host: %w", err)
	}
	hosts, err := st.Hosts().List(ctx, store.Page{Limit: 1})
	if err != nil {
		return Result{}, fmt.Errorf("check catalog: %w", err)
	}
	if len(hosts) > 0 {
		return Result{}, nil // an operator's catalog: leave it alone
	}

	var res Result
	key := credential.NewRelayKey()
	err = st.InTx(ctx, func(tx *store.Tx) error {
		team, err := tx.Teams().Create(ctx, actor, store.Team{Slug: "demo", Name: "Demo"})
		if err != nil {
			return err
		}
		project, err := tx.Projects().Create(ctx, actor, store.Project{TeamID: team.ID, Slug: "playground", Name: "Playground"})
		if err != nil {
			return err
		}
		policy, err := tx.Policies().Create(ctx, actor, store.Policy{
			Slug: "demo", Name: "Demo: every model, every host key", AllModels: true, AllHostKeys: true,
			KeyStrategy: "round_robin", MaxAttempts: 3, LimiterFailureMode: "open",
		})
		if err != nil {
			return err
		}
		sa, err := tx.ServiceAccounts().Create(ctx, actor, store.ServiceAccount{
			ProjectID: project.ID, Slug: "demo-app", Name: "Demo app", PolicyID: &policy.ID,
		})
		if err != nil {
			return err
		}
		if _, err := tx.RelayKeys().Create(ctx, actor, store.RelayKey{
			KeyHash: key.Hash[:], DisplayPrefix: key.DisplayPrefix, Name: "demo",
			ProjectID: project.ID, ServiceAccountID: &sa.ID,
		}); err != nil {
			return err
		}

		mock, err := createHost(ctx, tx, MockHostSlug, "Relay mock upstream", "custom", opts.MockBaseURL)
		if err != nil {
			return err
		}
		for i, v := range []string{"sk-mock-demo-1", "sk-mock-demo-2"} {
			sealed, err := box.Seal(v)
			if errors.Is(err, secret.ErrNoMasterKey) {
				ref := "env:RELAY_SECRET_DEMO_MOCK_KEY"
				_, err = tx.HostKeys().Create(ctx, actor, store.HostKey{HostID: mock.ID, Slug: fmt.Sprintf("mock-key-%d", i+1), SecretRef: &ref, Position: int32(i), Enabled: true})
				if err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			if _, err := tx.HostKeys().Create(ctx, actor, store.HostKey{
				HostID: mock.ID, Slug: fmt.Sprintf("mock-key-%d", i+1), SecretCiphertext: sealed, Position: int32(i), Enabled: true,
			}); err != nil {
				return err
			}
		}
		for _, m := range mockModels() {
			if err := createModel(ctx, tx, mock.ID, m); err != nil {
				return err
			}
			res.Models = append(res.Models, m.name)
		}

		for _, p := range []struct {
			env, slug, provider, baseURL string
			models                       []modelSpec
		}{
			{"OPENAI_API_KEY", "openai", "openai", "https://api.openai.com", []modelSpec{
				{"gpt-4o-mini", "chat", "openai", "gpt-4o-mini", 16384, 150_000, 600_000, 75_000},
				{"text-embedding-3-small", "embedding", "openai", "text-embedding-3-small", 0, 20_000, 0, 0},
			}},
			{"ANTHROPIC_API_KEY", "anthropic", "anthropic", "https://api.anthropic.com", []modelSpec{
				{"claude-sonnet-4-5", "chat", "anthropic", "claude-sonnet-4-5", 64000, 3_000_000, 15_000_000, 300_000},
			}},
			{"GEMINI_API_KEY", "google", "google", "https://generativelanguage.googleapis.com", []modelSpec{
				{"gemini-2.5-flash", "chat", "gemini", "gemini-2.5-flash", 65536, 300_000, 2_500_000, 75_000},
			}},
		} {
			if opts.Getenv == nil || opts.Getenv(p.env) == "" {
				continue
			}
			h, err := createHost(ctx, tx, p.slug, p.slug, p.provider, p.baseURL)
			if err != nil {
				return err
			}
			ref := "env:" + p.env
			if _, err := tx.HostKeys().Create(ctx, actor, store.HostKey{HostID: h.ID, Slug: "default", SecretRef: &ref, Enabled: true}); err != nil {
				return err
			}
			for _, m := range p.models {
				if err := createModel(ctx, tx, h.ID, m); err != nil {
					return err
				}
				res.Models = append(res.Models, m.name)
			}
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("seed demo catalog: %w", err)
	}
	res.Seeded, res.RelayKey = true, key.Plaintext
	return res, nil
}

func createHost(ctx context.Context, tx *store.Tx, slug, name, provider, baseURL string) (store.Host, error) {
	return tx.Hosts().Create(ctx, actor, store.Host{
		Slug: slug, Name: name, Provider: provider, BaseURL: baseURL, Enabled: true,
		ConnectTimeoutMs: 5000, FirstByteTimeoutMs: 60000, IdleTimeoutMs: 60000, TotalTimeoutMs: 600000,
	})
}

// providerOf names the company whose API a shape is ("owned_by" in model
// lists).
func providerOf(shape string) string {
	switch shape {
	case "anthropic":
		return "anthropic"
	case "gemini":
		return "google"
	}
	return "openai"
}

func createModel(ctx context.Context, tx *store.Tx, host uuid.UUID, m modelSpec) error {
	model, err := tx.Models().GetByName(ctx, m.name)
	if errors.Is(err, store.ErrNotFound) {
		model, err = tx.Models().Create(ctx, actor, store.Model{
			Name: m.name, Provider: providerOf(m.shape), Kind: m.kind, MaxOutputTokens: m.maxOut, ContextWindow: contextWindows[m.upstream],
			SupportsTools: m.kind == "chat", SupportsJSON: m.kind == "chat", SupportsVision: m.kind == "chat",
		})
	}
	if err != nil {
		return err
	}
	_, err = tx.Bindings().Create(ctx, actor, store.Binding{
		ModelID: model.ID, HostID: host, Shape: m.shape, UpstreamModel: m.upstream, Enabled: true,
		InputPrice: m.in, OutputPrice: m.out, CachedInputPrice: m.cached, PriceTiers: json.RawMessage("[]"),
	})
	return err
}
