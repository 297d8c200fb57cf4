// Package translator serves a request in one wire shape through a binding
// of another, through package canonical: it decodes the caller's body into
// a canonical.Request, encodes that for the binding's shape, and turns the
// upstream's answer — a whole body, one SSE event at a time, or an error
// body — back into the caller's shape, with the usage the proxy records.
//
// Layout. One file per (inbound, upstream) pair, <in>_<out>.go, names the
// pair and declares where its support differs from its upstream's default.
// Each wire shape's hand-written code is split by concern, in the same
// order for every shape: <shape>_types.go (its wire types, finish
// reasons and encodings both sides share), <shape>_caller.go (decoding a
// caller's request), <shape>_caller_answer.go (encoding whole answers,
// then stream events, then errors; responses keeps its stream in
// responses_caller_stream.go), <shape>_upstream.go (the support table and
// encoding an upstream request) and <shape>_upstream_answer.go (decoding
// whole answers, then stream events). Shapes: anthropic (Messages
// callers; anthropic upstreams), openai (Chat callers; openai upstreams),
// responses (Responses callers; openai_responses upstreams), gemini
// (Gemini callers; gemini upstreams) and generate (callers only). What
// every shape shares is common.go, common_caller.go and
// common_upstream.go.
//
// Inbound names: chat (/v1/chat/completions), messages (/v1/messages),
// responses (/v1/responses), generate (/v1/generate, Relay's own shape,
// always translated), embeddings (/v1/embeddings, translated for gemini
// bindings only) and gemini (Gemini's own generateContent and embedding
// methods, /v1beta/models/{model}:…; the model and stream come from the
// path, Request.FromPath). Upstream names: the binding shape, with
// responses for openai_responses. The one switch in pairOf picks the
// pair; an unknown pair is ErrUnknownPair.
//
// A Translator lives for one upstream attempt and holds that attempt's
// stream state; a Request (the decoded caller body) is shared by every
// attempt of one caller request. Streams are translated event by event:
// Event returns the caller's bytes for each upstream event at once, so the
// proxy can flush them; nothing is buffered beyond one event (plus the text
// of an open thinking block, whose signature Chat callers receive whole,
// and the content of an open Responses output item, which Responses' .done
// events and terminal response repeat).
//
// What each pair does with each request feature — yes, emulated or
// rejected — is the support matrix (Matrix, docs/translation.md); encoders
// consult it, so the table is the code's own answer. A rejected feature is
// a *wire.Error of kind wire.ErrUnsupportedFeature naming the field and the
// binding. The field policy (fields.go) classes every field carried,
// advisory or semantic: an advisory field the binding cannot carry is left
// out and named by Translator.Dropped, for the X-Relay-Dropped-Fields
// header; only semantic ones are refused.
//
// The package does no I/O and holds no global mutable state. It must not
// import the proxy, the store or anything that reaches Postgres.
package translator
