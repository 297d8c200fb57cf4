package main

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/mcpgw"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// withMCP serves /mcp and /mcp/{server} on the inference plane from the MCP
// gateway (docs/mcp.md) and everything else from the proxy. Tool calls are
// admitted by the same limiter as model calls (a scoped admission: one
// request of no tokens against the server's and the tool's rate limits,
// and the server's price per call against the caller's budgets),
// held by the same breakers (the server as a host key, a tool as a model),
// and recorded in the same ledger.
func withMCP(inference http.Handler, snap func() *snapshot.Snapshot, limiter admission.Limiter, breakers mcpgw.Breakers, observe func(server, tool string, status int, d time.Duration), tp trace.TracerProvider, ledger interface{ Record(event.Record) }, guard *egress.Guard, log *slog.Logger) (http.Handler, *mcpgw.Gateway) {
	gw := mcpgw.New(mcpgw.Config{
		Snapshot: snap, Recorder: ledger, Guard: guard, Log: log, NewID: proxy.NewRequestID,
		Admit: func(ctx context.Context, c *snapshot.Caller, s *snapshot.Snapshot, scopes []mcpgw.LimitScope, price int64) (func(wire.Usage), error) {
			as := make([]admission.Scope, len(scopes))
			for i, sc := range scopes {
				as[i] = admission.Scope(sc)
			}
			a := admission.Scoped(c, s, as...)
			a.CallPrice = price
			return limiter.Admit(ctx, a)
		},
		Breakers: breakers, Observe: observe, TracerProvider: tp,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/") {
			gw.ServeHTTP(w, r)
			return
		}
		inference.ServeHTTP(w, r)
	}), gw
}
