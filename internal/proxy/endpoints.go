package proxy

import "github.com/relay-llm/relay/internal/wire"

// The endpoints beyond chat, embeddings, responses and messages — legacy
// completions, images, audio, moderations and rerank — are served by the
// same request path as chat (serveInference): authentication, the
// policy's grant of the model, rate limits and budgets, the key pool,
// breakers and failover, usage and cost. Each passes through to openai
// bindings at its own path, bytes unchanged but for the upstream model
// name; a binding of another shape cannot serve them (400
// unsupported_feature), and the model must be of the endpoint's kind
// (wire.Inbound.ModelKind).

// endpointInbound is the inbound shape of one of those paths, else
// wire.InboundNone.
func endpointInbound(path string) wire.Inbound {
	for in := wire.InboundCompletions; in <= wire.InboundRerank; in++ {
		if in.EndpointPath() == path {
			return in
		}
	}
	return wire.InboundNone
}
