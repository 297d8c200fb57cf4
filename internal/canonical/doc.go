// Package canonical is Relay's one representation of a generation: the
// request (system prompt, messages made of typed parts, tools and tool
// choice, sampling, stop sequences, output limit, structured output,
// reasoning, metadata, Responses-API state), the response (content parts, a
// finish reason, token usage) and the events a streamed response is made of.
// It also carries the embeddings request and response, so every inbound
// shape Relay serves has a home here.
//
// Every translation goes through it: a translator decodes the caller's body
// into a Request, encodes that Request for the binding's shape, decodes the
// upstream's answer (a whole body, or one SSE event at a time) into a
// Response or Events, and encodes those in the caller's shape. Same-shape
// traffic never comes here: the proxy passes its bytes through untouched.
//
// The four shapes the package is complete for, and where each of their
// concepts lands:
//
//   - OpenAI Chat Completions: system/developer messages → System (leading
//     ones) or a RoleSystem Message (later ones); user/assistant/tool
//     messages → Messages with PartText, PartImage, PartAudio, PartFile,
//     PartToolCall and PartToolResult parts; tools, tool_choice,
//     parallel_tool_calls, max_completion_tokens, sampling, stop, n, logprobs,
//     logit_bias, seed, response_format, reasoning_effort, metadata, user,
//     safety_identifier, prompt_cache_key, service_tier, store, verbosity.
//   - OpenAI Responses: instructions → System; input items → Messages
//     (message items by role; function_call → PartToolCall with ItemID and
//     CallID; function_call_output → a RoleTool message; reasoning items →
//     PartThinking with Origin OriginOpenAI and the encrypted content in
//     Signature); text.format → ResponseFormat; reasoning → Reasoning;
//     previous_response_id, conversation, store, include → State.
//   - Anthropic Messages: system → System; user/assistant messages with text,
//     image, document, tool_use, tool_result (→ a RoleTool message), thinking
//     and redacted_thinking blocks; max_tokens, stop_sequences, top_k,
//     thinking, output_config, metadata.user_id, cache_control (CacheHint).
//   - Relay's /v1/generate: this package's types with their JSON tags are
//     the natural body of that endpoint; its OpenAPI description
//     (openapi/inference.yaml) is to follow them field for field.
//
// Token usage follows wire.Usage exactly (Input counts every prompt token,
// cached ones included; Output counts every generated token, reasoning
// included), so a translated response feeds the same usage record as a
// passed-through one.
//
// The package is pure data plus small, allocation-conscious helpers
// (normalising a conversation for providers with strict turn rules,
// accumulating stream events into a response). It does no I/O, knows no
// provider's wire format and must not import other Relay packages.
package canonical
