package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/bridge"
	"github.com/relay-llm/relay/internal/cache"
	"github.com/relay-llm/relay/internal/capture"
	"github.com/relay-llm/relay/internal/config"
	"github.com/relay-llm/relay/internal/controlapi"
	"github.com/relay-llm/relay/internal/demo"
	"github.com/relay-llm/relay/internal/egress"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/loader"
	"github.com/relay-llm/relay/internal/metrics"
	"github.com/relay-llm/relay/internal/mockupstream"
	"github.com/relay-llm/relay/internal/objects"
	"github.com/relay-llm/relay/internal/proxy"
	"github.com/relay-llm/relay/internal/ratelimit"
	"github.com/relay-llm/relay/internal/respstore"
	"github.com/relay-llm/relay/internal/secret"
	"github.com/relay-llm/relay/internal/store"
	"github.com/relay-llm/relay/internal/tracing"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/upstream"
	usageledger "github.com/relay-llm/relay/internal/usage"
	"github.com/relay-llm/relay/ui"
)

// The writers the inference plane hands its records and payloads to; usage
// and capture do not import the proxy, so the fit is checked here.
var (
	_ proxy.Recorder = (*usageledger.Writer)(nil)
	_ proxy.Capturer = (*capture.Writer)(nil)
)

// planes is what `relay serve` mounts on its two listeners.
type planes struct {
	inference http.Handler
	control   http.Handler
	// start runs once both listeners are bound: it seeds the demo (whose
	// host points at the bound control port) and tells the user what to do.
	start func(ctx context.Context, inference, control net.Addr) error
}

// demoEnabled: the demo seeds by default only on the embedded default.
func demoEnabled(cfg *config.Config) bool {
	if cfg.DemoSet {
		return cfg.Demo
	}
	return cfg.DatabaseURL == ""
}

// newPlanes builds both planes' handlers and starts what they need, adding
// each running component to svcs (which stops them in reverse).
func newPlanes(ctx context.Context, cfg *config.Config, st *store.Store, box *secret.Box, ld *loader.Loader,
	svcs *services, getenv func(string) string, stdout io.Writer, log *slog.Logger) (*planes, error) {
	// Traces, when OTEL_EXPORTER_OTLP_ENDPOINT asks for them; flushed last.
	tr, err := tracing.New(ctx, getenv, version)
	if err != nil {
		return nil, err
	}
	if tr != nil {
		log.Info("exporting traces over OTLP/HTTP", "endpoint", tr.Endpoint())
	}
	svcs.add("tracing", tr.Shutdown)
	// Limits and breakers: shared through Redis when RELAY_REDIS_URL is set,
	// else in process memory for one pod.
	limiter, breakers, err := limits(cfg, svcs, log)
	if err != nil {
		return nil, err
	}
	// Metrics and the usage ledger: every request's record is priced, counted
	// and queued for the batch writer, off the request path.
	reg := metrics.New(metrics.Options{Snapshot: ld.Current, Status: ld})
	limiter.ObservePacing(reg) // relay_pacing_wait_seconds and the queue length, so Waiting stays 0 below
	reg.WatchLimiter(func() metrics.LimiterStats {
		st := limiter.Stats()
		return metrics.LimiterStats{
			Admitted: st.Admitted, Paced: st.Paced, Refused: st.Refused,
			BudgetRefused: st.BudgetRefused, FailOpen: st.FailOpen, FailClosed: st.FailClosed,
			StoreErrors: st.StoreErrors, SettleDropped: st.SettleDropped, LeasesDropped: st.LeasesDropped, StoreAvailable: cfg.RedisURL != "" && st.RedisAvailable,
			PacedAdmitted: st.PacedAdmitted, RefusedNeverFits: st.RefusedNeverFits, RefusedWaitTooLong: st.RefusedWaitTooLong, RefusedQueueFull: st.RefusedQueueFull,
			Degraded: st.Degraded,
		}
	})
	breakers = reg.Breakers(breakers)
	// The ledger's sink: Postgres itself, or the JetStream stream that
	// `relay usage-consume` loads into it (RELAY_USAGE_SINK).
	sink, err := usageSink(ctx, cfg, st, svcs, log)
	if err != nil {
		return nil, err
	}
	ledger := usageledger.NewWriter(usageledger.WriterConfig{Sink: sink, Snapshot: ld.Current, Observer: reg, Logger: log, SpoolDir: filepath.Join(cfg.DataDir, "spool", "usage"),
		TrimRouteDetail: true, RouteDetailSample: cfg.UsageDetailSample, Transactions: cfg.UsageTransactions})
	svcs.add("usage ledger", ledger.Close)
	reg.WatchUsage(ledger)
	// Payload captures of policies that turn them on: queued, written in
	// batches, expired after RELAY_PAYLOAD_RETENTION.
	captures := capture.NewWriter(capture.Config{Sink: st, Logger: log, QueueSize: cfg.PayloadQueue, Retention: cfg.PayloadRetention})
	svcs.add("payload captures", captures.Close)
	reg.WatchCaptures(func() metrics.CaptureStats {
		s := captures.Stats()
		return metrics.CaptureStats{Dropped: s.Dropped, Written: s.Written, Lost: s.Lost}
	})
	// Where upstream requests may go: never Relay's own listeners (known
	// once bound, in start), metadata addresses only when listed,
	// RELAY_UPSTREAM_ALLOW when set. Checked on write and on every dial.
	guard, err := egress.New(cfg.UpstreamAllow)
	if err != nil {
		return nil, fmt.Errorf("RELAY_UPSTREAM_ALLOW: %w", err)
	}
	// Stored Responses, the object index and the response cache of
	// policies that turn it on: shared through Redis like the limits, else
	// in process memory for one pod.
	responses, objectIndex, respCache, err := stateStores(cfg, svcs)
	if err != nil {
		return nil, err
	}
	maintainer := usageledger.NewMaintainer(usageledger.MaintainerConfig{Store: st, Logger: log})
	svcs.goRun(ctx, "usage maintenance", maintainer.Run)
	reg.WatchCache(func() metrics.CacheStats {
		s, sem := respCache.Stats(), respCache.Semantic().Stats()
		return metrics.CacheStats{Hits: s.Hits, Misses: s.Misses, Bypasses: s.Bypasses, Fills: s.Fills,
			FillBytes: s.FillBytes, TooLarge: s.TooLarge, Errors: s.Errors, Saved: s.Saved,
			SemanticHits: sem.Hits, SemanticMisses: sem.Misses, SemanticFills: sem.Fills, SemanticErrors: sem.Errors}
	})
	inference := proxy.New(proxy.Config{
		Snapshot:       ld.Current,
		Cache:          respCache,
		Breakers:       breakers,
		Limiter:        limiter,
		Recorder:       ledger,
		Capturer:       captures,
		Responses:      responses,
		Objects:        objectIndex,
		MaxInflight:    cfg.MaxInflight,
		Logger:         log,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		Egress:         guard,
		Transport:      upstream.New(upstream.Options{Guard: guard, HTTP2: cfg.UpstreamHTTP2}),
		MaxHeaders:     cfg.MaxHeaders,
		MaxHeaderBytes: cfg.MaxHeaderBytes,

		TracerProvider: tr.Provider(),
	})
	// The batch sweep meters the batches nobody looks at after they
	// finish; stopped before the ledger and the index it writes to.
	svcs.goRun(ctx, "batch sweep", inference.Sweep(proxy.DefaultSweepEvery).Run)
	reg.WatchGuardrails(func() []metrics.GuardrailCount {
		var out []metrics.GuardrailCount
		for _, c := range inference.GuardrailStats() {
			out = append(out, metrics.GuardrailCount(c))
		}
		return out
	})

	if err := controlapi.Bootstrap(ctx, st, getenv, stdout); err != nil {
		return nil, fmt.Errorf("bootstrap the first admin: %w", err)
	}
	// A bootstrap that hashed a password let go of argon2's 19 MiB just now,
	// but the collector's goal was set while it was live, so the control
	// API's spec (below) would grow the heap on top of it. Collecting here
	// lets start-up reuse those pages: the process's peak resident memory
	// is ~15 MB lower. One collection of a small heap, once.
	runtime.GC()
	listBreakers, clearBreakers := bridge.Breakers(breakers, time.Now)
	api, err := controlapi.New(controlapi.Config{
		Store:      st,
		Box:        box,
		AdminToken: cfg.AdminToken,
		// The admin token may expire and rotate through a file (re-read on change).
		AdminTokenExpires: cfg.AdminTokenExpires,
		AdminTokenFile:    cfg.AdminTokenFile,
		AdminTokenGrace:   cfg.AdminTokenGrace,
		Egress:            guard,
		Logger:            log,
		Snapshot:          ld,
		Breakers:          listBreakers,
		ClearBreakers:     clearBreakers,
		PurgeCache:        respCache,
		Objects:           objectIndex,
		PacingQueue:       func() int64 { return limiter.Stats().Waiting },
		Explain:           bridge.Explainer(translator.Supports, inference.RouteStats()),
		HostKeyTester: func(ctx context.Context, id uuid.UUID) (controlapi.HostKeyTestResult, error) {
			r, err := inference.TestHostKey(ctx, id)
			if errors.Is(err, proxy.ErrUnknownHostKey) {
				return controlapi.HostKeyTestResult{Message: "the host key is not in this pod's snapshot yet"}, nil
			}
			return controlapi.HostKeyTestResult(r), err
		},
		Version: version,
	})
	if err != nil {
		return nil, fmt.Errorf("build the control API: %w", err)
	}
	control := http.NewServeMux()
	control.Handle("/api/", api)
	control.Handle("GET /metrics", metrics.RequireToken(cfg.MetricsToken, reg.Handler()))
	control.Handle("/", ui.New(api.(*controlapi.Server), log))

	served, gateway := withMCP(inference, ld.Current, limiter, bridge.MCPBreakers(breakers), reg.MCPCall, tr.Provider(), ledger, guard, log)
	svcs.add("mcp gateway", func(context.Context) error { gateway.Close(); return nil })
	p := &planes{inference: served, control: control}
	if !demoEnabled(cfg) {
		p.start = func(_ context.Context, in, ctl net.Addr) error {
			guard.SetListeners(in, ctl)
			fmt.Fprintf(stdout, "Relay is up: inference on %s, control on %s\n", in, ctl)
			return nil
		}
		return p, nil
	}

	// The demo host is Relay's own mock upstream, on a loopback listener of
	// its own: no host may point at Relay's own listeners.
	mock := mockupstream.New(demo.MockUpstreamOptions())
	p.start = func(ctx context.Context, in, ctl net.Addr) error {
		guard.SetListeners(in, ctl)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("listen for the demo mock upstream: %w", err)
		}
		mockSrv := &http.Server{Handler: http.StripPrefix("/mock-upstream", mock), ReadHeaderTimeout: 10 * time.Second}
		go mockSrv.Serve(ln) // ends with ErrServerClosed when stopped
		svcs.add("demo mock upstream", mockSrv.Shutdown)
		mockURL := "http://" + ln.Addr().String() + "/mock-upstream"
		res, err := demo.Seed(ctx, st, box, demo.Options{MockBaseURL: mockURL, Getenv: getenv})
		if err != nil {
			return err
		}
		keyFile := filepath.Join(cfg.DataDir, "demo-relay-key")
		relayKey := res.RelayKey
		if res.Seeded {
			log.Info("seeded the demo catalog", "models", res.Models)
			if cfg.DatabaseURL == "" {
				// The embedded default is a developer's own machine: keep the demo
				// key beside the master key so later `make run`s print it again.
				if err := os.WriteFile(keyFile, []byte(relayKey+"\n"), 0o600); err != nil {
					log.Warn("could not keep the demo relay key", "err", err)
				}
			}
		} else if cfg.DatabaseURL == "" {
			if b, err := os.ReadFile(keyFile); err == nil {
				relayKey = string(trimNL(b))
			}
		}
		keptAt := ""
		if cfg.DatabaseURL == "" && relayKey != "" {
			keptAt = keyFile
		}
		printWelcome(stdout, in, ctl, relayKey, keptAt)
		return nil
	}
	return p, nil
}

// printWelcome writes the start-up banner in one write, so no log line
// lands inside it: where Relay listens, the demo relay key (where it is
// kept) and every demo model with the base URL its own SDK takes.
func printWelcome(stdout io.Writer, in, ctl net.Addr, relayKey, keptAt string) {
	inPort := in.(*net.TCPAddr).Port
	var b bytes.Buffer
	fmt.Fprintf(&b, "\nRelay is up: inference on %s, control on %s\nAdmin console: http://127.0.0.1:%d/\n", in, ctl, ctl.(*net.TCPAddr).Port)
	switch {
	case relayKey == "":
		fmt.Fprintln(&b, "The demo catalog is in place; its relay key was shown when it was created (Relay keeps only its hash).")
	case keptAt != "":
		fmt.Fprintf(&b, "\nDemo relay key (Relay checks it by its hash; this machine's copy is in %s): %s\n", keptAt, relayKey)
	default:
		fmt.Fprintf(&b, "\nDemo relay key (keep it; Relay stores only its hash): %s\n", relayKey)
	}
	key := relayKey
	if key == "" {
		key = "<relay key>"
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", inPort)
	fmt.Fprintf(&b, `
Try it:

  curl -s %s/v1/chat/completions \
    -H "Authorization: Bearer %s" \
    -H "Content-Type: application/json" \
    -d '{"model":"demo-gpt","messages":[{"role":"user","content":"Hello, Relay"}]}'

Demo models (on Relay's mock upstream; any SDK below may call any of them):
`, base, key)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, m := range demo.MockModels() {
		sdk, url := "OpenAI SDK", base+"/v1"
		switch m.Shape {
		case "anthropic":
			sdk, url = "Anthropic SDK, Claude Code", base
		case "gemini":
			sdk, url = "Gemini SDK, Gemini CLI", base
		case "openai_responses":
			sdk = "OpenAI SDK (Responses), Codex"
		}
		fmt.Fprintf(w, "  %s\t%s, %s binding\t%s base URL\t%s\n", m.Name, m.Kind, m.Shape, sdk, url)
	}
	w.Flush()
	b.WriteString("\n")
	_, _ = stdout.Write(b.Bytes()) // a banner nobody reads is no error
}

// limits builds the rate limiter and the breakers: on Redis when
// RELAY_REDIS_URL is set, in process memory otherwise — never both.
func limits(cfg *config.Config, svcs *services, log *slog.Logger) (*ratelimit.Limiter, keypool.Breakers, error) {
	if cfg.RedisURL == "" {
		limiter := ratelimit.New(ratelimit.Options{Logger: log, LongContextTokens: int64(cfg.LongContextTokens), LongContextWeight: cfg.LongContextWeight})
		svcs.add("rate limiter", func(context.Context) error { return limiter.Close() })
		return limiter, keypool.NewMemory(breakerConfig(cfg)), nil
	}
	rc, err := ratelimit.NewRedisClient(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("RELAY_REDIS_URL: %w", err)
	}
	svcs.add("redis client", func(context.Context) error { return rc.Close() })
	limiter := ratelimit.New(ratelimit.Options{Redis: rc, Prefix: cfg.RedisPrefix, Timeout: cfg.RedisTimeout, Logger: log,
		LongContextTokens: int64(cfg.LongContextTokens), LongContextWeight: cfg.LongContextWeight})
	svcs.add("rate limiter", func(context.Context) error { return limiter.Close() }) // flushes settlements
	rb := keypool.NewRedisBreakers(rc, breakerConfig(cfg), keypool.RedisBreakerOptions{Prefix: cfg.RedisPrefix, Logger: log})
	svcs.add("breakers", func(context.Context) error { return rb.Close() })
	return limiter, rb, nil
}

// stateStores are the inference plane's shared state beside the limiter:
// stored Responses, the index of upstream objects that finds the host key
// holding an openai_responses upstream's, and the response cache. With
// RELAY_REDIS_URL all three share one Redis client (every pod sees every
// entry); without it each lives in process memory.
func stateStores(cfg *config.Config, svcs *services) (respstore.Store, objects.Index, *cache.Cache, error) {
	limits := respstore.Limits{TTL: cfg.ResponsesTTL, MaxBytes: cfg.ResponsesMaxBytes, ProjectMaxBytes: cfg.ResponsesProjectBytes}
	if cfg.RedisURL == "" {
		return respstore.NewMemory(limits, nil), objects.NewMemory(objects.Options{}), cache.New(cache.Config{}), nil
	}
	rc, err := ratelimit.NewRedisClient(cfg.RedisURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("RELAY_REDIS_URL: %w", err)
	}
	svcs.add("response store and cache redis client", func(context.Context) error { return rc.Close() })
	return respstore.NewRedis(rc, cfg.RedisPrefix, limits, nil), objects.NewRedis(rc, cfg.RedisPrefix, objects.Options{}),
		cache.New(cache.Config{Store: cache.NewRedis(rc, cfg.RedisPrefix), Index: cache.NewRedisIndex(rc, cfg.RedisPrefix)}), nil
}

// breakerConfig is the breakers' thresholds from the settings; the rest
// take keypool's defaults.
func breakerConfig(cfg *config.Config) keypool.BreakerConfig {
	return keypool.BreakerConfig{
		ServerFailures: cfg.BreakerServerFailures, NetworkFailures: cfg.BreakerNetworkFailures, AuthWindow: cfg.BreakerAuthWindow,
	}
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// mockUpstream runs the mock provider as its own process.
func mockUpstream(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("mock-upstream", stderr)
	addr := fs.String("addr", "127.0.0.1:9999", "address to listen on")
	latency := fs.Duration("latency", 0, "added before the first byte of every response")
	chunkDelay := fs.Duration("chunk-delay", 0, "delay between stream events")
	if err := fs.Parse(args); err != nil {
		return err
	}
	srv := mockupstream.New(mockupstream.Options{Latency: *latency, ChunkDelay: *chunkDelay, Record: -1})
	return srv.Serve(ctx, *addr, func(a net.Addr) {
		fmt.Fprintf(stdout, "mock upstream listening on http://%s\n", a)
	})
}
