// Command relay-bench is Relay's load harness. It runs the mock upstream and
// Relay as separate processes on loopback, drives both with the same
// OpenAI chat requests from a load generator in its own process, and prints
// one markdown table that sets direct-to-mock beside through-Relay (measured
// in alternating slices, so both see the same background load): requests
// per second, p50/p90/p99 latency (for streams, of the whole stream and of
// the first byte) and errors, per mode and number of concurrent callers;
// then Relay's added latency, its CPU time per request and its peak RSS.
//
//	go run ./cmd/relay-bench [-duration 5s] [-concurrency 1,64,256] [-mode nonstream,stream] [-relay-bin path]
//
// The harness builds cmd/relay (or takes -relay-bin), creates a fresh
// database on the Postgres server named by -database-url (default
// RELAY_DATABASE_URL, else RELAY_TEST_DATABASE_URL, else an embedded one in a
// temporary directory), seeds a catalog through internal/store, starts
// `relay serve` on it and waits for /readyz. Everything it starts it stops,
// and the database it created it drops.
//
// It is a measuring tool, not a test: it talks only to loopback, stops by
// itself (every run is bounded in time and in requests) and reads Relay's
// CPU time and peak RSS from /proc, so those figures need Linux.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if err == nil {
		_, err = run(ctx, cfg, os.Stdout, os.Stderr)
	}
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay-bench:", err)
		os.Exit(1)
	}
}

// mode is what the callers ask for: a whole response, or a stream.
type mode string

const (
	nonStream mode = "nonstream"
	stream    mode = "stream"
)

// config is everything a run needs, parsed from the flags.
type config struct {
	duration    time.Duration // measured time per (mode, concurrency, target)
	slice       time.Duration // the targets take turns in slices this long
	warmup      time.Duration // unmeasured load before each measurement
	concurrency []int
	modes       []mode
	relayBin    string // empty: build cmd/relay into a temporary directory
	databaseURL string // the Postgres server the bench database is created on; empty: embedded
	maxRequests int    // cap on requests per measurement, whatever the duration
	timeout     time.Duration
	limits      bool   // give the bench policy a rate limit (never reached), so the limiter runs on every request
	redisURL    string // hand Relay this Redis for its limiter (with -limits); empty: in process
}

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("relay-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	defaultDB := getenv("RELAY_DATABASE_URL")
	if defaultDB == "" {
		defaultDB = getenv("RELAY_TEST_DATABASE_URL")
	}
	var cfg config
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured time per mode, concurrency and target")
	fs.DurationVar(&cfg.slice, "slice", time.Second, "measure direct and relay in turns of this long, so both see the same background load")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured load before each measurement")
	conc := fs.String("concurrency", "1,64,256", "comma-separated numbers of concurrent callers")
	modes := fs.String("mode", "nonstream,stream", "comma-separated modes: nonstream, stream")
	fs.StringVar(&cfg.relayBin, "relay-bin", "", "relay binary to run (default: go build ./cmd/relay)")
	fs.StringVar(&cfg.databaseURL, "database-url", defaultDB,
		"Postgres server to create the bench database on (default RELAY_DATABASE_URL, else RELAY_TEST_DATABASE_URL, else embedded)")
	fs.IntVar(&cfg.maxRequests, "max-requests", 1_000_000, "most requests per measurement")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "per-request timeout")
	fs.BoolVar(&cfg.limits, "limits", false, "give the bench policy a rate limit that is never reached, so every request pays for a reservation")
	fs.StringVar(&cfg.redisURL, "redis-url", "", "Redis for Relay's limiter (e.g. redis://127.0.0.1:6379/0); empty keeps it in process")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.duration <= 0 || cfg.slice <= 0 || cfg.warmup < 0 || cfg.maxRequests < 1 || cfg.timeout <= 0 {
		return config{}, errors.New("-duration, -slice, -max-requests and -timeout must be positive, -warmup not negative")
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 4096 {
			return config{}, fmt.Errorf("-concurrency: %q is not a number from 1 to 4096", s)
		}
		cfg.concurrency = append(cfg.concurrency, n)
	}
	for _, s := range strings.Split(*modes, ",") {
		m := mode(strings.TrimSpace(s))
		if m != nonStream && m != stream {
			return config{}, fmt.Errorf("-mode: %q is not nonstream or stream", s)
		}
		cfg.modes = append(cfg.modes, m)
	}
	return cfg, nil
}
