//go:build race

package ratelimit

// raceDetector: the race detector slows every goroutine several times over,
// and with it the jitter between a request's admission and its arrival
// upstream.
const raceDetector = true
