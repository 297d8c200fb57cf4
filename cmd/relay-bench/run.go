package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/relay-llm/relay/internal/secret"
)

// directKey is what direct callers present to the mock, which takes any key.
const directKey = "sk-mock-bench-direct"

// run starts the mock and Relay, measures every mode, concurrency and target,
// prints the report to stdout and stops everything it started. Progress and
// the children's logs go to stderr, from several goroutines at once.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) (_ *report, err error) {
	dir, err := os.MkdirTemp("", "relay-bench-")
	if err != nil {
		return nil, fmt.Errorf("make temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	// Under root the embedded Postgres runs as an unprivileged user, which
	// must be able to reach its data directory inside this one.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}

	bin := cfg.relayBin
	if bin == "" {
		fmt.Fprintln(stderr, "relay-bench: building cmd/relay")
		if bin, err = buildRelay(ctx, dir, stderr); err != nil {
			return nil, err
		}
	}
	mock, mockURL, err := startMock(ctx, bin, stderr)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, mock.stop()) }()

	db, err := createDB(ctx, cfg.databaseURL, dir)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, db.close()) }()
	masterKey := secret.NewKey()
	key, err := secret.ParseKey(masterKey)
	if err != nil {
		return nil, err
	}
	box, err := secret.NewBox(key)
	if err != nil {
		return nil, err
	}
	relayKey, err := seed(ctx, db.url, box, mockURL, cfg.limits)
	if err != nil {
		return nil, err
	}
	relay, relayURL, err := startRelay(ctx, bin, db.url, masterKey, filepath.Join(dir, "relay-data"), cfg.redisURL, stderr)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, relay.stop()) }()
	fmt.Fprintf(stderr, "relay-bench: mock on %s, relay on %s\n", mockURL, relayURL)

	maxConc := slices.Max(cfg.concurrency)
	targets := []target{
		newTarget("direct", mockURL, directKey, upstreamModel, maxConc, cfg.timeout),
		newTarget("relay", relayURL, relayKey, benchModel, maxConc, cfg.timeout),
	}
	for _, t := range targets {
		for _, m := range cfg.modes {
			if _, err := call(ctx, t, requestBody(m, t.model), m == stream, make([]byte, 32<<10)); err != nil {
				return nil, fmt.Errorf("probe %s (%s): %w", t.name, m, err)
			}
		}
	}

	rep := &report{cores: runtime.NumCPU()}
	pids := procs{relay: relay.pid(), mock: mock.pid()}
	before, start := pids.usage(), time.Now()
	for _, m := range cfg.modes {
		for _, c := range cfg.concurrency {
			for _, res := range measureCell(ctx, cfg, targets, m, c, pids) {
				s := res.stats()
				fmt.Fprintf(stderr, "relay-bench: %-9s ×%-4d %-6s %8.0f req/s  p50 %-8s errors %d\n",
					m, c, res.target, s.rps, fmtDur(s.p50), res.errors)
				rep.rows = append(rep.rows, res)
			}
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
		}
	}
	rep.wall, rep.cpu = time.Since(start), pids.usage().since(before)
	if rep.peakRSS, err = peakRSS(relay.pid()); err != nil {
		fmt.Fprintln(stderr, "relay-bench:", err)
	}
	rep.write(stdout)
	return rep, nil
}

// procs are the processes whose CPU time a measurement reads.
type procs struct{ relay, mock int }

// cpuUse is CPU time used by the machine as a whole and by each of the
// processes of a run (the harness is the load generator); -1 where unknown.
type cpuUse struct{ machine, relay, mock, harness time.Duration }

func (p procs) usage() cpuUse {
	return cpuUse{machineCPU(), cpuTime(p.relay), cpuTime(p.mock), cpuTime(os.Getpid())}
}

// since is the CPU time used from before to u.
func (u cpuUse) since(before cpuUse) cpuUse {
	d := func(a, b time.Duration) time.Duration {
		if a < 0 || b < 0 {
			return -1
		}
		return a - b
	}
	return cpuUse{d(u.machine, before.machine), d(u.relay, before.relay), d(u.mock, before.mock), d(u.harness, before.harness)}
}

// measureCell measures every target with conc callers in mode m: a warm-up
// each, then cfg.duration each, taken in alternating slices of cfg.slice so
// that direct and relay see the same background load on a shared machine.
func measureCell(ctx context.Context, cfg config, targets []target, m mode, conc int, pids procs) []measurement {
	for _, t := range targets {
		if cfg.warmup > 0 {
			load(ctx, t, m, conc, cfg.warmup, cfg.maxRequests)
		}
	}
	out := make([]measurement, len(targets))
	for i, t := range targets {
		out[i] = measurement{mode: m, conc: conc, target: t.name}
	}
	for left := cfg.duration; left > 0 && ctx.Err() == nil; left -= cfg.slice {
		for i, t := range targets {
			budget := cfg.maxRequests - len(out[i].samples) - out[i].errors
			if budget <= 0 {
				continue
			}
			relay0, mock0 := cpuTime(pids.relay), cpuTime(pids.mock)
			res := load(ctx, t, m, conc, min(cfg.slice, left), budget)
			res.relayCPU, res.mockCPU = cpuSince(pids.relay, relay0), cpuSince(pids.mock, mock0)
			out[i].add(res)
		}
	}
	return out
}

// cpuSince is the CPU time pid has used since it had used before; -1 when
// either reading failed.
func cpuSince(pid int, before time.Duration) time.Duration {
	after := cpuTime(pid)
	if before < 0 || after < 0 {
		return -1
	}
	return after - before
}
