package demo

import (
	"context"
	"testing"

	"github.com/relay-llm/relay/internal/credential"
	"github.com/relay-llm/relay/internal/pgtest"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
)

func TestSeed_EmptyCatalogOnceThenOnlyRepointsTheMockHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	key, _ := secret.ParseKey(secret.NewKey())
	box, _ := secret.NewBox(key)
	env := map[string]string{"ANTHROPIC_API_KEY": "set"}
	res, err := Seed(ctx, st, box, Options{MockBaseURL: "http://127.0.0.1:8081/mock-upstream", Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Seeded || len(res.Models) != 6 {
		t.Fatalf("result = %+v", res)
	}
	rk, err := st.RelayKeys().GetByHash(ctx, func() []byte { h := credential.Hash(res.RelayKey); return h[:] }())
	if err != nil || rk.ServiceAccountID == nil {
		t.Fatalf("relay key not stored by hash: %v", err)
	}
	if h, err := st.Hosts().GetBySlug(ctx, "anthropic"); err != nil || h.BaseURL != "https://api.anthropic.com" {
		t.Fatalf("anthropic host: %v", err)
	}
	if _, err := st.Hosts().GetBySlug(ctx, "openai"); err == nil {
		t.Fatal("openai host seeded without OPENAI_API_KEY")
	}
	// Model lists show who owns each model.
	for name, want := range map[string]string{"demo-gpt": "openai", "demo-claude": "anthropic", "demo-gemini": "google"} {
		if m, err := st.Models().GetByName(ctx, name); err != nil || m.Provider != want {
			t.Errorf("%s: provider %q, want %q (%v)", name, m.Provider, want, err)
		}
	}

	// Context windows are the real models' own, so an agent compacts when it would upstream.
	for name, want := range map[string]int32{"demo-gpt": 128_000, "demo-claude": 200_000, "demo-gemini": 1_048_576, "demo-embedding": 8_191} {
		if m, err := st.Models().GetByName(ctx, name); err != nil || m.ContextWindow != want {
			t.Errorf("%s: context window %d, want %d (%v)", name, m.ContextWindow, want, err)
		}
	}
	// The banner's list is the seeded one.
	for _, m := range MockModels() {
		if _, err := st.Models().GetByName(ctx, m.Name); err != nil {
			t.Errorf("MockModels names %s, which Seed did not create: %v", m.Name, err)
		}
	}

	again, err := Seed(ctx, st, box, Options{MockBaseURL: "http://127.0.0.1:9999/mock-upstream"})
	if err != nil || again.Seeded {
		t.Fatalf("second seed = %+v, %v", again, err)
	}
	if h, _ := st.Hosts().GetBySlug(ctx, MockHostSlug); h.BaseURL != "http://127.0.0.1:9999/mock-upstream" {
		t.Fatalf("mock host not repointed: %s", h.BaseURL)
	}
}
