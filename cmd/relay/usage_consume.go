package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/relay-llm/relay/internal/config"
	"github.com/relay-llm/relay/internal/store"
	usageledger "github.com/relay-llm/relay/internal/usage"
)

// usageSink is where `relay serve`'s usage Writer sends its batches: the
// store, or with RELAY_USAGE_SINK=jetstream the usage stream (closed after
// the Writer, which svcs stops first as it was added later).
func usageSink(ctx context.Context, cfg *config.Config, st *store.Store, svcs *services, log *slog.Logger) (usageledger.Sink, error) {
	if cfg.UsageSink != "jetstream" {
		return st, nil
	}
	js, err := openUsageStream(ctx, cfg, "relay serve", log)
	if err != nil {
		return nil, err
	}
	svcs.add("usage stream", func(context.Context) error { js.Close(); return nil })
	log.Info("usage events go to the JetStream stream; run relay usage-consume to load them into the ledger", "stream", cfg.UsageStream)
	return js, nil
}

func openUsageStream(ctx context.Context, cfg *config.Config, role string, log *slog.Logger) (*usageledger.JetStream, error) {
	host, _ := os.Hostname()
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	js, err := usageledger.OpenJetStream(octx, usageledger.JetStreamConfig{
		URL: cfg.NATSURL, Stream: cfg.UsageStream, Replicas: cfg.UsageStreamReplicas,
		Name: fmt.Sprintf("%s %s/%d", role, host, os.Getpid()), Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("RELAY_NATS_URL: %w", err)
	}
	return js, nil
}

// usageConsume is `relay usage-consume`: it loads the usage stream into the
// ledger until it is stopped (SIGINT, SIGTERM). Any number may run; they
// share one durable consumer, so each event goes to one of them, and an
// event a killed consumer had not acknowledged goes to another.
func usageConsume(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := config.Load(args, getenv, stderr)
	if err != nil {
		return err
	}
	if cfg.NATSURL == "" {
		return fmt.Errorf("usage-consume: set RELAY_NATS_URL (or --nats-url) to the NATS server of the usage stream")
	}
	if cfg.DatabaseURL == "" && len(cfg.UsageShardURLs) == 0 {
		return fmt.Errorf("usage-consume: set RELAY_DATABASE_URL (or --database-url) to the ledger's Postgres; the embedded one is a single pod's")
	}
	log := cfg.Logger(stderr)
	var sink usageledger.Sink
	if len(cfg.UsageShardURLs) == 0 {
		st, err := store.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return err
		}
		defer st.Close()
		sink = st
	} else {
		shards := make([]usageledger.Sink, len(cfg.UsageShardURLs))
		for i, u := range cfg.UsageShardURLs {
			st, err := store.Open(ctx, u)
			if err != nil {
				return fmt.Errorf("usage-consume: shard %d of RELAY_USAGE_SHARD_URLS: %w", i, err)
			}
			defer st.Close()
			shards[i] = st
		}
		sink = usageledger.NewShards(shards...)
		log.Info("the ledger is sharded by project", "shards", len(shards))
	}
	js, err := openUsageStream(ctx, cfg, "relay usage-consume", log)
	if err != nil {
		return err
	}
	defer js.Close()
	log.Info("loading usage events into the ledger", "stream", cfg.UsageStream)
	var last usageledger.ConsumeStats
	err = js.Consume(ctx, sink, usageledger.ConsumeConfig{AckWait: cfg.UsageAckWait}, func(s usageledger.ConsumeStats) { last = s })
	log.Info("usage-consume stopped", "batches", last.Batches, "events", last.Events, "new", last.New)
	return err
}
