// Package clienttest runs real clients — the official openai,
// @anthropic-ai/sdk and @google/genai JS SDKs, the AI SDK with its providers,
// LangChain JS, Claude Code, the Codex CLI, the Gemini CLI and opencode, installed from
// npm at the versions pinned in testdata/node/package-lock.json — against an
// in-process Relay whose models are bound to each upstream shape on the mock
// upstream, and replays the requests those clients sent (recorded once,
// committed under testdata/requests) through every binding shape. The agents
// also run against the demo catalog, held to a few requests a prompt.
//
// The package holds only tests; see clients_test.go, libraries_test.go,
// agents_test.go, opencode_test.go, demo_test.go and replay_test.go.
//
//	go test ./internal/clienttest/                       # clients and replay
//	RELAY_CLIENTTEST_RECORD=1 go test ./internal/clienttest/ -run 'TestSDKs|TestClaudeCode|TestCodex'
//	                                                     # rewrite the fixtures
//
// Without node and npm, or without the npm registry, the client tests skip with
// a message, except when CI is set, where they fail. The replay test needs
// neither.
package clienttest
