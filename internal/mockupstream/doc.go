// Package mockupstream is a fake LLM provider: one http.Handler that speaks the
// wire shapes of OpenAI (Chat Completions, Responses, Embeddings, Models),
// Anthropic (Messages, count_tokens, Models) and Google Gemini
// (generateContent, streamGenerateContent, embedContent, batchEmbedContents,
// countTokens, models), plus OpenAI's files and batches (files.go: objects
// kept per credential, batches moving one step per retrieve) and Anthropic's
// Message Batches (messagebatches.go), closely enough that the official SDKs, and Relay's
// translators, cannot tell it from the real thing.
//
// It is the only fake upstream in Relay's test suite and the target of the load
// harness (`relay mock-upstream`), so it owns three promises:
//
//   - Fidelity. Ids carry the providers' prefixes (chatcmpl-, resp_, msg_01,
//     toolu_01, call_, fc_, rs_), bodies and SSE framing follow each provider's
//     idiom, errors use each provider's body shape and status, and responses carry
//     the providers' headers (x-request-id; request-id and anthropic-ratelimit-*).
//     Requests are validated the way the providers validate them (missing model,
//     empty messages, Anthropic's required max_tokens and anthropic-version,
//     unpaired tool calls and results …) so translator bugs surface as 400s.
//   - Determinism. The reply is "Hello from <model>. You said: <first 40
//     characters of the last user text>", streamed word by word; token usage is
//     estimated from the request text; tools are called with arguments generated
//     from their JSON schema; embeddings are a hashed bag of the input's words
//     (texts that share most words are near, as a real model's). Model-name
//     markers switch on cached-prompt, cache-write, reasoning and parallel-tool
//     behaviour (see [Server]).
//   - Faults on demand. A `fault-<spec>` token in the model name, in the
//     presented credential, or an `X-Mock-Fault: <spec>` header makes a request
//     fail in a chosen way (error statuses, slow first byte, stalled or reset
//     streams, malformed bodies, errors after the 200). See [Server].
//
// Every request is recorded (method, path, headers, body, what was parsed, the
// fault applied, status, and whether and when the client went away), so tests
// assert on what Relay actually sent and use [Server.WaitFor] instead of sleeps.
//
// The package holds no package-level mutable state and touches nothing outside
// the handler it returns; it must not import other Relay packages.
package mockupstream
