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
//	    [-baseline-bin path] [-redis-limit redis://127.0.0.1:6379/0] [-pin] [-tls=false]
//	    [-peer-cmd 'gateway --upstream {mock}' -peer-url http://127.0.0.1:8080 -peer-key K -peer-model M]
//
// Beside direct and Relay to the plain-HTTP mock it measures, by default,
// the same Relay to the same mock behind TLS (HTTP/2 and HTTP/1.1
// negotiated: every real provider is HTTPS), with the TLS handshakes the
// mock completed per request. Beside those it can measure, in the same
// interleaved run, a
// second Relay binary (-baseline-bin, for before/after), a Relay whose policy
// has a limit enforced in Redis (-redis-limit; Redis's own CPU time from INFO
// cpu) and any other gateway (-peer-*). Every gateway's CPU time and write
// system calls come from /proc/<pid>/stat and /proc/<pid>/io, its resident
// memory from /proc/<pid>/status: idle (after start-up and one request of each
// mode), per open stream (-held-streams stalled at once, from idle) and peak.
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
	if dir := os.Getenv(tlsMockEnv); dir != "" { // the harness's own TLS mock (tlsmock.go)
		err := serveTLSMock(ctx, dir, os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay-bench tls mock:", err)
			os.Exit(1)
		}
		return
	}
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
	// A second Relay from another binary, measured in the same run.
	baselineBin string
	// A Relay whose policy has a (never reached) limit enforced in this
	// Redis, measured beside the others with Redis's own CPU time.
	redisLimitURL string
	pin           bool // gateways on core 1, the mock on core 0 (taskset)
	heldStreams   int  // at the end, hold this many stalled streams open at once and read RSS per stream; 0: skip
	tls           bool // also measure Relay to the TLS mock, HTTP/2 and HTTP/1.1 (relay-tls-h2, relay-tls-h1)
	// Another gateway: its command ({mock} is the mock's base URL), its base
	// URL, the key and model its callers send, and the name it is shown by.
	peerCmd, peerURL, peerKey, peerModel, peerName string
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
	fs.StringVar(&cfg.baselineBin, "baseline-bin", "", "a second relay binary (say, the previous commit's) measured beside -relay-bin as relay-base")
	fs.StringVar(&cfg.redisLimitURL, "redis-limit", "",
		"also measure relay+redis: a Relay whose policy has a never-reached limit enforced in this Redis (redis://127.0.0.1:6379/0), with Redis's own CPU from INFO cpu; with -baseline-bin also relay-base+redis, the baseline binary under the same limit")
	fs.IntVar(&cfg.heldStreams, "held-streams", 200, "at the end, hold this many streams open at once (the mock stalls them) and report RSS growth per stream; 0 skips")
	fs.BoolVar(&cfg.tls, "tls", true, "also measure Relay's route to a TLS mock, HTTP/2 and HTTP/1.1 negotiated (relay-tls-h2, relay-tls-h1), with TLS handshakes per request")
	fs.BoolVar(&cfg.pin, "pin", false, "run the gateways on core 1 and the mock on core 0 (taskset); run the harness under taskset -c 0 too")
	fs.StringVar(&cfg.peerCmd, "peer-cmd", "", "another gateway to measure: a shell command, {mock} replaced by the mock's base URL")
	fs.StringVar(&cfg.peerURL, "peer-url", "", "the other gateway's base URL (with -peer-cmd)")
	fs.StringVar(&cfg.peerKey, "peer-key", "", "the key its callers present (with -peer-cmd)")
	fs.StringVar(&cfg.peerModel, "peer-model", upstreamModel, "the model its callers name (with -peer-cmd)")
	fs.StringVar(&cfg.peerName, "peer-name", "peer", "the other gateway's name in the report")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.duration <= 0 || cfg.slice <= 0 || cfg.warmup < 0 || cfg.maxRequests < 1 || cfg.timeout <= 0 || cfg.heldStreams < 0 {
		return config{}, errors.New("-duration, -slice, -max-requests and -timeout must be positive, -warmup and -held-streams not negative")
	}
	if cfg.peerCmd != "" && cfg.peerURL == "" {
		return config{}, errors.New("-peer-cmd needs -peer-url")
	}
	cfg.peerURL = strings.TrimSuffix(cfg.peerURL, "/")
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
