// Package keypool owns the health of host keys and the choice among them:
// circuit breakers behind the Breakers interface (so that a Redis-shared
// implementation can replace the in-process one), the classification of
// every upstream outcome into what it says failed (Classify), and the
// selection strategies a policy names (prioritized, round robin, least
// recently used).
//
// A breaker holds what failed, never more: a key-level failure (invalid
// key, quota exhausted, host unreachable) holds the host key at its secret
// version for every model; a model-level failure (5xx, 529, a per-model
// 429, model not found) holds only (host key, upstream model); the caller's
// own errors and cancels hold nothing. Every hold recovers by itself
// through one half-open probe after a capped backoff, and an operator can
// clear it (Clear).
//
// It never sees a secret's value, does no I/O on the request path and reads
// time only through the clock values its callers pass in. Memory keeps the
// breakers in process; RedisBreakers (redis.go) shares them between pods
// from background goroutines, the request path reading a local copy.
package keypool
