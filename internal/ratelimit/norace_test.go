//go:build !race

package ratelimit

const raceDetector = false
