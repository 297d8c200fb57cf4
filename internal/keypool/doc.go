// Package keypool owns the health of host keys and the choice among them:
// a circuit breaker per (host key, secret version) behind the Breakers
// interface, so that a Redis-shared implementation can replace the
// in-process one, and the selection strategies a policy names
// (prioritized, round robin, least recently used).
//
// It never sees a secret's value, does no I/O on the request path and reads
// time only through the clock values its callers pass in. Memory keeps the
// breakers in process; RedisBreakers (redis.go) shares them between pods
// from background goroutines, the request path reading a local copy.
package keypool
