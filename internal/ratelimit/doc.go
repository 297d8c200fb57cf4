// Package ratelimit owns Relay's admission control: the rate limits of
// policies and the tier limits of host keys (requests, input/output/total
// tokens and concurrency, each per window), the pacing queue that makes a
// request wait for room instead of failing, spend budgets per team, project
// and relay key, and what happens when Redis is down.
//
// A Limiter implements admission.KeyLimiter. The proxy reserves once per request
// (Reserve, no I/O) and admits each upstream attempt with its host key
// (Attempt): the first attempt checks and takes every counter that applies —
// the policy's limits, the per-model limit, the budgets and the host key's
// tier limit and pacing — in one atomic Redis script call (limiter.lua, run
// by EVALSHA). A refusal says how long until the request would fit; if that
// is within the policy's max wait the request waits in a FIFO queue (by
// priority, then arrival) and retries at that moment. Token counters are
// reserved from an estimate and settled with the actual usage after the
// response, off the request path (a bounded queue drained by one goroutine).
//
// Without Redis the same counters live in process memory (Memory), correct
// for one pod. With Redis, a failed or slow call (bounded by a tight timeout)
// falls back per policy: "open" admits against a local share of each limit,
// "closed" answers 503 limiter_unavailable; Redis is tried again after a short
// pause, so recovery is automatic.
//
// The package reads the snapshot and never reaches Postgres. It must not
// import the store, the loader or usage. docs/rate-limits.md explains the
// algorithms and the Redis key layout.
package ratelimit
