// Package respstore keeps the state of stored Responses — the response
// objects, the input items each one was made from and its output items — so
// that previous_response_id, item_reference input items and GET/DELETE
// /v1/responses/{id} work whatever shape the binding speaks; and the
// conversations of the Conversations API (conversation.go), whose items
// the responses that name them continue and extend.
//
// Why this design. The inference plane must not read Postgres, and every pod
// must see a response another pod made, so the state lives where the
// limiter's counters live: in Redis when RELAY_REDIS_URL is set (Redis), in
// process memory otherwise (Memory, correct for one pod), with the same
// semantics. Each Record holds the whole context of its response — every
// item the model saw (the history it continued, references expanded) and
// what it answered — so continuing from a response is one read, never a
// walk along a chain, and the oldest responses of a project can be evicted
// without breaking the conversations that continued from them. The price is
// space: a conversation's items are repeated in each of its turns, which
// the per-response bound (Limits.MaxBytes) caps. Item references resolve
// through a per-project index, item id → the newest response holding the
// item, read in the same round trip (a Lua script) as the previous
// response. Everything is scoped by project: the project is part of every
// key, so another project's id is not found, exactly like a missing one.
//
// Bounds. A Record expires TTL after it was made. A Record larger than
// MaxBytes is not kept: a small marker (Record.Dropped) takes its place, so
// a later reference says why it cannot be continued. A project holding more
// than ProjectMaxBytes loses its oldest responses first.
//
// The package does no routing and knows nothing of wire shapes beyond the
// "id" of an item; it must not import the proxy, the store or anything that
// reaches Postgres.
package respstore
