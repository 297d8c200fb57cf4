package clienttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/wire"
)

// opencodeProviders are opencode's provider kinds, each the AI SDK package
// opencode loads for it and the base URL it takes.
var opencodeProviders = []struct{ kind, npm, path string }{
	{"openai-compatible", "@ai-sdk/openai-compatible", "/v1"},
	{"anthropic", "@ai-sdk/anthropic", "/v1"},
	{"google", "@ai-sdk/google", "/v1beta"},
}

// TestOpencode runs `opencode run` through a provider of each kind against
// a model of each binding shape: the mock upstream calls its list tool,
// opencode runs it and sends the result back, and the mock's answer to the
// result is the printed reply.
func TestOpencode(t *testing.T) {
	modules := install(t)
	bin := filepath.Join(modules, "node_modules", ".bin", "opencode")
	// One cache for every run: opencode installs a provider's package on
	// first use, and once is enough.
	cache := t.TempDir()
	for _, p := range opencodeProviders {
		t.Run(p.kind, func(t *testing.T) {
			for _, b := range shapes {
				t.Run(string(b.shape), func(t *testing.T) {
					r := startRelay(t)
					home, dir := t.TempDir(), t.TempDir()
					if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					model := modelName(b.shape)
					config := map[string]any{
						"$schema": "https://opencode.ai/config.json",
						"provider": map[string]any{"relay": map[string]any{
							"npm": p.npm, "name": "Relay",
							"options": map[string]any{"baseURL": r.URL + p.path, "apiKey": relayKey},
							"models":  map[string]any{model: map[string]any{"name": model, "tool_call": true}},
						}},
					}
					raw, _ := json.Marshal(config)
					if err := os.WriteFile(filepath.Join(dir, "opencode.json"), raw, 0o644); err != nil {
						t.Fatal(err)
					}
					env := append(baseEnv(home), "XDG_CACHE_HOME="+cache, "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1")
					out, err := runClient(t, dir, env, agentTimeout, bin, "run", "-m", "relay/"+model, "List the files in this directory with a tool, then tell me what you found.")
					report(t, r, "opencode", pinned(t, "opencode-ai"), opencodeRun(p.kind, b.shape), model)
					if err != nil {
						t.Fatalf("opencode run: %v\n%s", err, out)
					}
					if !strings.Contains(out, "The tool returned") {
						t.Fatalf("opencode run did not answer after its tool ran:\n%s", out)
					}
				})
			}
		})
	}
}

// opencodeRun names the fixtures of a provider kind's run on its own
// shape's binding, "" elsewhere (see ownShape).
func opencodeRun(kind string, shape wire.Shape) string {
	own := map[string]wire.Shape{"openai-compatible": wire.ShapeOpenAI, "anthropic": wire.ShapeAnthropic, "google": wire.ShapeGemini}[kind]
	if shape != own {
		return ""
	}
	return kind
}
