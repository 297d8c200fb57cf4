package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/secret"
)

// directKey is what direct callers present to the mock, which takes any key.
const directKey = "sk-mock-bench-direct"

// Target names in the report.
const (
	targetDirect   = "direct"
	targetRelay    = "relay"
	targetBaseline = "relay-base"
	targetRedis    = "relay+redis"
	// The baseline binary with the same Redis-enforced limit, beside
	// relay+redis: the limiter's before/after in one run.
	targetBaseRedis = "relay-base+redis"
	// A Relay's routes to the TLS mock are its name with these after it.
	tlsH2      = "-tls-h2"
	tlsH1      = "-tls-h1"
	targetTLS2 = targetRelay + tlsH2
	targetTLS1 = targetRelay + tlsH1
)

// run starts the mock, Relay and whatever else the flags ask for, measures
// every mode, concurrency and target, prints the report to stdout and stops
// everything it started. Progress and the children's logs go to stderr, from
// several goroutines at once.
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
	mock, mockURL, err := startMock(ctx, bin, cfg.pin, stderr)
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
	mocks := mockURLs{plain: mockURL}
	var tm *tlsMock
	if cfg.tls {
		if tm, err = startTLSMock(ctx, dir, cfg.pin, stderr); err != nil {
			return nil, err
		}
		defer func() { err = errors.Join(err, tm.stop()) }()
		mocks.h2, mocks.h1 = tm.h2URL, tm.h1URL
		fmt.Fprintf(stderr, "relay-bench: TLS mock on %s (h2) and %s (h1)\n", tm.h2URL, tm.h1URL)
	}
	keys, err := seed(ctx, db.url, box, mocks, cfg.limits)
	if err != nil {
		return nil, err
	}
	var relayEnv []string // Relay trusts the TLS mock's certificate as its system roots
	if tm != nil {
		relayEnv = append(relayEnv, "SSL_CERT_FILE="+tm.certFile)
	}

	maxConc := slices.Max(cfg.concurrency)
	targets := []target{newTarget(targetDirect, mockURL, directKey, upstreamModel, maxConc, cfg.timeout)}
	var children []*child
	defer func() {
		for _, c := range children {
			err = errors.Join(err, c.stop())
		}
	}()
	relays := []struct {
		name, bin, redisURL, key string
	}{{targetRelay, bin, cfg.redisURL, keys.plain}}
	if cfg.baselineBin != "" {
		relays = append(relays, struct{ name, bin, redisURL, key string }{targetBaseline, cfg.baselineBin, cfg.redisURL, keys.plain})
	}
	if cfg.redisLimitURL != "" {
		relays = append(relays, struct{ name, bin, redisURL, key string }{targetRedis, bin, cfg.redisLimitURL, keys.limited})
		if cfg.baselineBin != "" {
			relays = append(relays, struct{ name, bin, redisURL, key string }{targetBaseRedis, cfg.baselineBin, cfg.redisLimitURL, keys.limited})
		}
	}
	run := "relay-bench-" + randomHex(4) // apart from whatever else uses this Redis
	for i, r := range relays {
		// A prefix per Relay: two binaries never share counters (whose
		// layout may differ) nor each other's pub/sub wake-ups.
		prefix := fmt.Sprintf("%s-%d:", run, i)
		c, url, err := startRelay(ctx, r.bin, db.url, masterKey, filepath.Join(dir, fmt.Sprintf("relay-data-%d", i)), r.redisURL, prefix, cfg.pin, relayEnv, stderr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		children = append(children, c)
		t := newTarget(r.name, url, r.key, benchModel, maxConc, cfg.timeout)
		t.pid = c.pid()
		targets = append(targets, t)
		fmt.Fprintf(stderr, "relay-bench: %s on %s\n", r.name, url)
		if tm != nil && (r.name == targetRelay || r.name == targetBaseline) {
			// The same process, to the same mock behind TLS.
			for _, h2 := range []bool{true, false} {
				name, model := r.name+tlsH2, benchModelTLS2
				if !h2 {
					name, model = r.name+tlsH1, benchModelTLS1
				}
				tt := newTarget(name, url, r.key, model, maxConc, cfg.timeout)
				tt.pid, tt.mockPID = c.pid(), tm.pid()
				tt.handshakes = func(ctx context.Context) int64 { return tm.handshakes(ctx, h2) }
				targets = append(targets, tt)
			}
		}
	}
	if cfg.peerCmd != "" {
		c, err := startPeer(ctx, cfg, mockURL, stderr)
		if err != nil {
			return nil, err
		}
		children = append(children, c)
		t := newTarget(cfg.peerName, cfg.peerURL, cfg.peerKey, cfg.peerModel, maxConc, cfg.timeout)
		t.pid = c.pid()
		targets = append(targets, t)
	}
	fmt.Fprintf(stderr, "relay-bench: mock on %s\n", mockURL)

	for _, t := range targets {
		for _, m := range cfg.modes {
			if _, err := call(ctx, t, requestBody(m, t.model), m == stream, make([]byte, 32<<10)); err != nil {
				return nil, fmt.Errorf("probe %s (%s): %w", t.name, m, err)
			}
		}
	}
	var redis *redisCPU
	if cfg.redisLimitURL != "" {
		if redis, err = newRedisCPU(cfg.redisLimitURL); err != nil {
			return nil, err
		}
		defer redis.close()
	}

	rep := &report{cores: runtime.NumCPU()}
	pids := procs{mock: mock.pid()}
	if tm != nil {
		pids.tlsMock = tm.pid()
	}
	for _, t := range targets {
		if t.pid != 0 {
			pids.gateways = append(pids.gateways, t.pid)
		}
	}
	// Idle: started, each path tried once, a moment to settle.
	settle(ctx, time.Second)
	for _, t := range targets {
		rep.mem = append(rep.mem, targetMem(t.name, t.pid, mock.pid()))
	}
	// Then what each open stream costs, from idle (Relay's passes the
	// mock's fault header through; another gateway's may not).
	rep.held = cfg.heldStreams
	for i, t := range targets {
		if cfg.heldStreams == 0 || (t.name != targetDirect && !strings.HasPrefix(t.name, targetRelay)) || t.handshakes != nil {
			continue
		}
		pid := t.pid
		if pid == 0 {
			pid = mock.pid()
		}
		if rep.mem[i].perStream, err = heldStreams(ctx, t, pid, cfg.heldStreams); err != nil {
			fmt.Fprintln(stderr, "relay-bench: held streams:", err)
			rep.mem[i].perStream = -1
		}
	}
	before, start := pids.usage(), time.Now()
	for _, m := range cfg.modes {
		for _, c := range cfg.concurrency {
			for _, res := range measureCell(ctx, cfg, targets, m, c, mock.pid(), redis) {
				s := res.stats()
				fmt.Fprintf(stderr, "relay-bench: %-9s ×%-4d %-11s %8.0f req/s  p50 %-8s errors %d\n",
					m, c, res.target, s.rps, fmtDur(s.p50), res.errors)
				rep.rows = append(rep.rows, res)
			}
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
		}
	}
	rep.wall, rep.cpu = time.Since(start), pids.usage().since(before)
	for i, t := range targets {
		pid := t.pid
		if pid == 0 {
			pid = mock.pid()
		}
		if rep.mem[i].peak, err = procStatusKB(pid, "VmHWM:"); err != nil {
			fmt.Fprintln(stderr, "relay-bench:", err)
		}
	}
	rep.write(stdout)
	return rep, nil
}

// settle waits d, or less if ctx ends.
func settle(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// targetMem reads a target's resident memory at idle: the gateway's, or the
// mock's for the direct target.
func targetMem(name string, pid, mockPID int) memory {
	if pid == 0 {
		pid = mockPID
	}
	rss, _ := procStatusKB(pid, "VmRSS:")
	return memory{target: name, idle: rss, peak: -1, perStream: -1}
}

// procs are the processes whose CPU time a run reads.
type procs struct {
	mock     int
	tlsMock  int // 0: none
	gateways []int
}

// cpuUse is CPU time used by the machine as a whole, by the gateways under
// test together, by the mock and by the harness (the load generator); -1
// where unknown.
type cpuUse struct{ machine, gateways, mock, harness time.Duration }

func (p procs) usage() cpuUse {
	u := cpuUse{machine: machineCPU(), mock: cpuTime(p.mock), harness: cpuTime(os.Getpid())}
	if p.tlsMock != 0 {
		u.mock = addCPU(u.mock, cpuTime(p.tlsMock))
	}
	for _, pid := range p.gateways {
		u.gateways = addCPU(u.gateways, cpuTime(pid))
	}
	return u
}

// since is the CPU time used from before to u.
func (u cpuUse) since(before cpuUse) cpuUse {
	d := func(a, b time.Duration) time.Duration {
		if a < 0 || b < 0 {
			return -1
		}
		return a - b
	}
	return cpuUse{d(u.machine, before.machine), d(u.gateways, before.gateways), d(u.mock, before.mock), d(u.harness, before.harness)}
}

// counters are the per-process figures read before and after each slice.
type counters struct {
	cpu    time.Duration // user+system; -1 unknown
	writes int64         // write syscalls (syscw); -1 unknown
}

func readCounters(pid int) counters {
	if pid == 0 {
		return counters{-1, -1}
	}
	return counters{cpuTime(pid), syscw(pid)}
}

// since is what the process used from before to c.
func (c counters) since(before counters) counters {
	out := counters{-1, -1}
	if c.cpu >= 0 && before.cpu >= 0 {
		out.cpu = c.cpu - before.cpu
	}
	if c.writes >= 0 && before.writes >= 0 {
		out.writes = c.writes - before.writes
	}
	return out
}

// measureCell measures every target with conc callers in mode m: a warm-up
// each, then cfg.duration each, taken in alternating slices of cfg.slice so
// that every target sees the same background load on a shared machine.
func measureCell(ctx context.Context, cfg config, targets []target, m mode, conc, mockPID int, redis *redisCPU) []measurement {
	for _, t := range targets {
		if cfg.warmup > 0 {
			load(ctx, t, m, conc, cfg.warmup, cfg.maxRequests)
		}
	}
	out := make([]measurement, len(targets))
	for i, t := range targets {
		out[i] = measurement{mode: m, conc: conc, target: t.name, redisCPU: -1, handshakes: -1}
		if t.handshakes != nil {
			out[i].handshakes = 0
		}
		if redis != nil {
			out[i].redisCPU = 0
		}
	}
	for left := cfg.duration; left > 0 && ctx.Err() == nil; left -= cfg.slice {
		for i, t := range targets {
			budget := cfg.maxRequests - len(out[i].samples) - out[i].errors
			if budget <= 0 {
				continue
			}
			mpid := cmp.Or(t.mockPID, mockPID)
			gw0, mock0 := readCounters(t.pid), readCounters(mpid)
			redis0 := redis.used(ctx)
			hs0 := int64(-1)
			if t.handshakes != nil {
				hs0 = t.handshakes(ctx)
			}
			res := load(ctx, t, m, conc, min(cfg.slice, left), budget)
			res.gw, res.mock = readCounters(t.pid).since(gw0), readCounters(mpid).since(mock0)
			res.handshakes = -1
			if hs0 >= 0 {
				if hs := t.handshakes(ctx); hs >= 0 {
					res.handshakes = hs - hs0
				}
			}
			res.redisCPU = -1
			if redis0 >= 0 {
				if r := redis.used(ctx); r >= 0 {
					res.redisCPU = r - redis0
				}
			}
			out[i].add(res)
		}
	}
	return out
}
