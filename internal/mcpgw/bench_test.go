package mcpgw_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallTool compares one tools/call through Relay's /mcp with the
// same call made to the mock server directly, both with the SDK's client
// over loopback HTTP: the difference is what the gateway adds.
func BenchmarkCallTool(b *testing.B) {
	s := newSetup(b)
	args := map[string]any{"text": "hi"}
	b.Run("direct", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: s.mock.url, HTTPClient: &http.Client{Transport: bearer{"upstream-secret"}}, DisableStandaloneSSE: true,
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cs.Close() }()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("through_relay", func(b *testing.B) {
		cs := agent(b, s.relay, "/mcp", s.granted)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tools__echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
