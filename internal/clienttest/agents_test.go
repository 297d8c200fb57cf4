package clienttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/wire"
)

// agentTimeout bounds one agent run: a few requests to an in-process Relay,
// which take 8–17 s on two idle cores. It is generous because the same run
// under a loaded machine (a user's make test beside other work) has taken
// more than 90 s for opencode's first run of a provider; a hang still
// fails, with the run's output.
const agentTimeout = 4 * time.Minute

// TestClaudeCode runs `claude -p` with its default flags against a model of
// each binding shape. The mock upstream calls Read (a tool Claude Code runs
// without asking), Claude Code runs it and sends the result back, and the
// mock's answer to the result is the printed reply.
func TestClaudeCode(t *testing.T) {
	modules := install(t)
	bin := filepath.Join(modules, "node_modules", ".bin", "claude")
	for _, b := range shapes {
		t.Run(string(b.shape), func(t *testing.T) {
			parallel(t)
			r := startRelay(t, "Glob", "LS", "Read")
			home, dir := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			model := modelName(b.shape)
			env := append(baseEnv(home),
				"ANTHROPIC_BASE_URL="+r.URL,
				"ANTHROPIC_API_KEY="+relayKey,
				"ANTHROPIC_MODEL="+model,
				"ANTHROPIC_SMALL_FAST_MODEL="+model,
				"ANTHROPIC_DEFAULT_HAIKU_MODEL="+model,
				"ANTHROPIC_DEFAULT_SONNET_MODEL="+model,
				"ANTHROPIC_DEFAULT_OPUS_MODEL="+model,
				"DISABLE_TELEMETRY=1",
				"DISABLE_AUTOUPDATER=1",
				"DISABLE_ERROR_REPORTING=1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			)
			out, err := runClient(t, dir, env, agentTimeout, bin, "-p", "Find the text files in this directory with a tool, then tell me what you found.")
			report(t, r, "claude-code", pinned(t, "@anthropic-ai/claude-code"), ownShape(b.shape, wire.ShapeAnthropic), model)
			if err != nil {
				t.Fatalf("claude -p: %v\n%s", err, out)
			}
			if !strings.Contains(out, "The tool returned") {
				t.Fatalf("claude -p did not answer after its tool ran:\n%s", out)
			}
		})
	}
}

// TestCodex runs `codex exec` through a custom provider (wire_api =
// "responses") against a model of each binding shape: the mock upstream
// calls its shell tool, Codex runs it and sends the output back.
func TestCodex(t *testing.T) {
	modules := install(t)
	bin := filepath.Join(modules, "node_modules", ".bin", "codex")
	for _, b := range shapes {
		t.Run(string(b.shape), func(t *testing.T) {
			parallel(t)
			r := startRelay(t, "shell", "exec_command", "shell_command")
			home, dir := t.TempDir(), t.TempDir()
			codexHome := codexSetup(t, home, dir, r.URL, modelName(b.shape), "")
			env := append(baseEnv(home), "CODEX_HOME="+codexHome, "RELAY_KEY="+relayKey)
			out, err := runClient(t, dir, env, agentTimeout, bin, "exec", "List the files in this directory with a shell command, then tell me what you found.")
			report(t, r, "codex", pinned(t, "@openai/codex"), ownShape(b.shape, wire.ShapeOpenAIResponses), modelName(b.shape))
			if err != nil {
				t.Fatalf("codex exec: %v\n%s", err, out)
			}
			if !strings.Contains(out, "The tool returned") {
				t.Fatalf("codex exec did not answer after its tool ran:\n%s", out)
			}
		})
	}
}

// codexSetup writes a Codex config in home's .codex, with Relay at base as
// its model provider (wire_api "responses", the relay key from RELAY_KEY)
// and model chosen, then extra; it makes dir a git repository (Codex
// works in one) and returns the config's directory, CODEX_HOME.
func codexSetup(t *testing.T, home, dir, base, model, extra string) string {
	t.Helper()
	codexHome := filepath.Join(home, ".codex")
	if err := os.MkdirAll(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	config := `model = "` + model + `"
model_provider = "relay"

[model_providers.relay]
name = "Relay"
base_url = "` + base + `/v1"
wire_api = "responses"
env_key = "RELAY_KEY"
` + extra
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return codexHome
}

// ownShape names the fixtures of an agent's run on its own shape, where it
// completes its conversation by passthrough, and "" for other shapes: there
// it sends its first request again and again (each run's prompt differs in
// paths and session ids), and the replay puts the recorded requests through
// every shape anyway.
func ownShape(shape, own wire.Shape) string {
	if shape == own {
		return string(shape)
	}
	return ""
}

// geminiEnv is the environment the Gemini CLI runs with against base: the
// base URL, the relay key as its API key, and no telemetry. Its settings
// in home select API-key auth, which a base URL alone does not (the CLI
// then takes it for a gateway and refuses it headless).
func geminiEnv(t *testing.T, home, base string) []string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(baseEnv(home),
		"GOOGLE_GEMINI_BASE_URL="+base,
		"GEMINI_API_KEY="+relayKey,
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		"GEMINI_TELEMETRY_ENABLED=false",
	)
}

// TestGeminiCLI runs the Gemini CLI headless (`gemini -p`) against a model
// of each binding shape: the mock upstream calls list_directory (a
// read-only tool the CLI runs without asking), the CLI runs it and sends
// the result back, and the mock's answer to the result is the printed
// reply.
func TestGeminiCLI(t *testing.T) {
	modules := install(t)
	bin := filepath.Join(modules, "node_modules", ".bin", "gemini")
	for _, b := range shapes {
		t.Run(string(b.shape), func(t *testing.T) {
			parallel(t)
			r := startRelay(t)
			home, dir := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			model := modelName(b.shape)
			out, err := runClient(t, dir, geminiEnv(t, home, r.URL), agentTimeout, bin, "-m", model, "-p", "List the files in this directory with a tool, then tell me what you found.")
			report(t, r, "gemini-cli", pinned(t, "@google/gemini-cli"), ownShape(b.shape, wire.ShapeGemini), model)
			if err != nil {
				t.Fatalf("gemini -p: %v\n%s", err, out)
			}
			if !strings.Contains(out, "The tool returned") {
				t.Fatalf("gemini -p did not answer after its tool ran:\n%s", out)
			}
		})
	}
}
