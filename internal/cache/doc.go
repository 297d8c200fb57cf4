// Package cache is Relay's response cache: an answer kept under the
// canonical request that produced it, inside a scope that is at least the
// project, and served again in whatever shape the next caller speaks.
// Entries hold the answer as a canonical.Response, so the shape of the
// binding that produced it does not matter to the one that reads it.
//
// The exact cache (Cache, Key) keeps an answer under the digest of the
// whole request. The semantic cache (Semantic, Partition) keeps it under
// the vector of the request's last user turn, inside a partition that is
// the scope, the domain and the digest of everything else; a later
// request of the same partition whose turn is similar enough is answered
// by it.
//
// The semantic index is random-hyperplane LSH rather than a vector
// database: it must be shared by every pod without a module Redis 7.0
// lacks (no RediSearch), tenant-scoped by construction (the partition, and
// so the scope, is in every key: no query can reach another tenant's
// entries), and cheap on the request path (one script round trip that
// returns the candidates' int8 vectors, reranked by exact cosine here).
// Without Redis the same buckets live in process memory (MemoryIndex).
//
// Entries live in Redis when Relay has one, shared by every pod, else in
// process memory (Memory, MemoryIndex). The cache never decides whether a
// request may be cached — the proxy asks the policy's
// snapshot.ResponseCache — and never reaches Postgres.
package cache
