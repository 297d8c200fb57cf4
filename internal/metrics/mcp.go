package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// mcpMetrics are the MCP gateway's (docs/mcp.md): one count and one
// duration per tools/call.
type mcpMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func (r *Registry) initMCP(f factory) {
	r.mcp.calls = f.counter("relay_mcp_calls_total",
		"MCP tools/calls through /mcp by MCP server, tool (empty for a call refused as not granted, so callers cannot mint series) and status (200, 403 refused, 429 rate limited, 502 server error or unavailable, 503 held by its breaker, 499 caller gone).",
		"mcp_server", "tool", "status")
	r.mcp.duration = f.histogram("relay_mcp_call_duration_seconds",
		"Time from a tools/call's arrival at /mcp to its answer, by MCP server and tool (as relay_mcp_calls_total).",
		[]float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		"mcp_server", "tool")
}

// MCPCall counts one tools/call. server and tool must be names of the
// catalog and the server's tool list, "" otherwise (the gateway's
// refusals), so that a caller cannot mint series.
func (r *Registry) MCPCall(server, tool string, status int, d time.Duration) {
	r.mcp.calls.WithLabelValues(server, tool, strconv.Itoa(status)).Inc()
	r.mcp.duration.WithLabelValues(server, tool).Observe(d.Seconds())
}
