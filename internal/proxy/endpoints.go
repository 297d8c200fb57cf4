package proxy

// The endpoints beyond chat, embeddings, responses and messages — legacy
// completions, images, audio, moderations and rerank — are served by the
// same request path as chat (serveInference): authentication, the
// policy's grant of the model, rate limits and budgets, the key pool,
// breakers and failover, usage and cost. Each passes through to openai
// bindings at its own path, bytes unchanged but for the upstream model
// name; a binding of another shape cannot serve them (400
// unsupported_feature), and the model must be of the endpoint's kind
// (wire.Inbound.ModelKind). wire.ParseCall names their paths
// (wire.Inbound.EndpointPath).
