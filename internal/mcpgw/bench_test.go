package mcpgw_test

import (
	"context"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-llm/relay/internal/snapshot"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per op since start: client,
// gateway and mock server together, so through_relay minus direct is the
// gateway's own.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

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
		start := cpuTime(b)
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("through_relay", func(b *testing.B) {
		cs := agent(b, s.relay, "/mcp", s.granted)
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tools__echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
	// The server's credential from OAuth client credentials: the token is
	// fetched once and cached, so a call costs what a static header's does.
	b.Run("through_relay_oauth", func(b *testing.B) {
		so := newSetup(b)
		so.useOAuth(snapshot.MCPOAuthBasic)
		cs := agent(b, so.relay, "/mcp", so.granted)
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tools__echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
		if g := so.tokens.grants.Load(); g != 1 {
			b.Fatalf("%d token grants, want 1", g)
		}
	})
}

// BenchmarkOpenSession is the memory one open agent session costs the
// process (agent and gateway together): the heap after b.N sessions were
// opened through Relay and tools/list asked once on each, per session.
// The gateway keeps no per-session state (stateless Streamable HTTP), so
// this is mostly the agent's own.
func BenchmarkOpenSession(b *testing.B) {
	s := newSetup(b)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sessions := make([]*mcp.ClientSession, 0, b.N)
	for range b.N {
		cs := agent(b, s.relay, "/mcp", s.granted)
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		sessions = append(sessions, cs)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-B/session")
	runtime.KeepAlive(sessions)
}

// BenchmarkReadResource is BenchmarkCallTool for resources/read: the
// server's own URI straight to the mock, its mcp+relay:// one through
// Relay's /mcp.
func BenchmarkReadResource(b *testing.B) {
	s := newPromptSetup(b)
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
		start := cpuTime(b)
		for b.Loop() {
			if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///readme.md"}); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
	b.Run("through_relay", func(b *testing.B) {
		cs := agent(b, s.relay, "/mcp", s.granted)
		b.ReportAllocs()
		start := cpuTime(b)
		for b.Loop() {
			if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcp+relay://tools/file:///readme.md"}); err != nil {
				b.Fatal(err)
			}
		}
		reportCPU(b, start)
	})
}
