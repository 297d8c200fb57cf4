// Package translator serves a request in one wire shape through a binding
// of another, through package canonical: it decodes the caller's body into
// a canonical.Request, encodes that for the binding's shape, and turns the
// upstream's answer — a whole body, one SSE event at a time, or an error
// body — back into the caller's shape, with the usage the proxy records.
//
// Layout. One file per (inbound, upstream) pair, <in>_<out>.go, names the
// pair and declares where its support differs from its upstream's default;
// <shape>_helper.go holds one wire shape's hand-written types and both of
// its sides (decoding it as a caller's request and encoding answers in it;
// encoding it as an upstream request and decoding its answers). Inbound
// names: chat (/v1/chat/completions), messages (/v1/messages), responses
// (/v1/responses), generate (/v1/generate, Relay's own shape, always
// translated) and embeddings (/v1/embeddings, translated for gemini
// bindings only). Upstream names: the binding shape, with responses for
// openai_responses. The one switch in pairOf picks the pair; an unknown
// pair is ErrUnknownPair.
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
