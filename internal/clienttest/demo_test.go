package clienttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/demo"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/wire"
)

// maxDemoRequests bounds one agent prompt on the demo catalog: a sane model
// takes a turn, perhaps a tool round trip, and the agent's own side
// requests (titles, checks). An agent that loops on sub-agents sends
// hundreds.
const maxDemoRequests = 10

// TestDemo_AgentsFinish runs a short Claude Code, Codex and Gemini CLI
// session against the demo catalog as `make run` serves it (the demo's
// models on a mock upstream with the demo's options, no tool reordering):
// each must finish its prompt with a tool round trip in at most
// maxDemoRequests requests.
func TestDemo_AgentsFinish(t *testing.T) {
	modules := install(t)
	var models []catalogModel
	byShape := map[wire.Shape]string{}
	for _, m := range demo.MockModels() {
		models = append(models, catalogModel{name: m.Name, kind: m.Kind, shape: wire.Shape(m.Shape), upstream: m.Upstream, context: m.ContextWindow})
		if m.Kind == "chat" {
			byShape[wire.Shape(m.Shape)] = m.Name
		}
	}
	const prompt = "List the files in this directory with a tool, then tell me what you found."
	agents := []struct {
		name string
		run  func(t *testing.T, r *relay, home, dir string) (string, error)
	}{
		{"claude-code", func(t *testing.T, r *relay, home, dir string) (string, error) {
			model := byShape[wire.ShapeAnthropic]
			env := append(baseEnv(home), "ANTHROPIC_BASE_URL="+r.URL, "ANTHROPIC_API_KEY="+relayKey, "ANTHROPIC_MODEL="+model,
				"ANTHROPIC_SMALL_FAST_MODEL="+model, "ANTHROPIC_DEFAULT_HAIKU_MODEL="+model, "DISABLE_TELEMETRY=1",
				"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
			return runClient(t, dir, env, agentTimeout, filepath.Join(modules, "node_modules", ".bin", "claude"), "-p", prompt)
		}},
		{"codex", func(t *testing.T, r *relay, home, dir string) (string, error) {
			codexHome := filepath.Join(home, ".codex")
			config := "model = \"" + byShape[wire.ShapeOpenAIResponses] + "\"\nmodel_provider = \"relay\"\n\n[model_providers.relay]\nname = \"Relay\"\nbase_url = \"" + r.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"RELAY_KEY\"\n"
			if err := os.MkdirAll(codexHome, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v\n%s", err, out)
			}
			env := append(baseEnv(home), "CODEX_HOME="+codexHome, "RELAY_KEY="+relayKey)
			return runClient(t, dir, env, agentTimeout, filepath.Join(modules, "node_modules", ".bin", "codex"), "exec", "List the files in this directory with a shell command, then tell me what you found.")
		}},
		{"gemini-cli", func(t *testing.T, r *relay, home, dir string) (string, error) {
			return runClient(t, dir, geminiEnv(t, home, r.URL), agentTimeout, filepath.Join(modules, "node_modules", ".bin", "gemini"), "-m", byShape[wire.ShapeGemini], "-p", prompt)
		}},
	}
	for _, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			parallel(t)
			r := startCatalog(t, mockupstream.New(demo.MockUpstreamOptions()), models, nil)
			home, dir := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := a.run(t, r, home, dir)
			xs := r.rec.exchanges()
			report(t, r, a.name, "", "", "")
			if err != nil {
				t.Fatalf("%s: %v\n%s", a.name, err, out)
			}
			if len(xs) > maxDemoRequests {
				t.Fatalf("%d requests for one prompt, want at most %d (a runaway)", len(xs), maxDemoRequests)
			}
			if !strings.Contains(out, "The tool returned") {
				t.Fatalf("%s did not answer after its tool ran:\n%s", a.name, out)
			}
		})
	}
}
