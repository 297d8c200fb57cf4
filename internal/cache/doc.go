// Package cache is Relay's exact response cache: an answer kept under the
// canonical request that produced it (Key), inside a scope that is at
// least the project, and served again in whatever shape the next caller
// speaks. Entries hold the answer as a canonical.Response, so the shape of
// the binding that produced it does not matter to the one that reads it.
//
// Entries live in Redis when Relay has one, shared by every pod, else in
// process memory (Memory). The cache never decides whether a request may
// be cached — the proxy asks the policy's snapshot.ResponseCache — and
// never reaches Postgres.
package cache
