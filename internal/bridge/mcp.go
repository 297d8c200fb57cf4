package bridge

import (
	"time"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/mcpgw"
	"github.com/relay-llm/relay/internal/snapshot"
)

// MCPBreakers are the MCP gateway's breakers on keypool's (the model
// breakers' store: shared by pods on Redis, listed and cleared by the
// control API like a host key's, under the MCP server's id): the server is
// held like a host key (keypool.ScopeKey), a tool like a (host key,
// model) pair (keypool.ScopeModel), with the same thresholds, backoff
// and half-open probes.
func MCPBreakers(b keypool.Breakers) mcpgw.Breakers { return mcpBreakers{b} }

type mcpBreakers struct{ b keypool.Breakers }

// Acquire implements mcpgw.Breakers.
func (m mcpBreakers) Acquire(server snapshot.ID, tool string, now time.Time) (func(mcpgw.Outcome, string, time.Time), bool) {
	t, ok := m.b.Acquire(keypool.KeyRef{ID: server}, tool, now)
	if !ok {
		return nil, false
	}
	return func(o mcpgw.Outcome, reason string, at time.Time) {
		r := keypool.Result{Outcome: keypool.OutcomeNeutral, Reason: reason}
		switch o {
		case mcpgw.OutcomeSuccess:
			r.Outcome = keypool.OutcomeSuccess
		case mcpgw.OutcomeServerFailed:
			r.Outcome, r.Scope, r.Evidence = keypool.OutcomeFailure, keypool.ScopeKey, keypool.EvidenceNetwork
		case mcpgw.OutcomeToolFailed:
			r.Outcome, r.Scope, r.Evidence = keypool.OutcomeFailure, keypool.ScopeModel, keypool.EvidenceServer
		}
		m.b.Report(t, r, at)
	}, true
}
