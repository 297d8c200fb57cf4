package usage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/relay-llm/relay/internal/backoff"
	"github.com/relay-llm/relay/internal/store"
)

// The JetStream sink (RELAY_USAGE_SINK=jetstream, docs/scale-out.md) puts a
// distributed log between the pods and the ledger: a pod's Writer publishes
// its batches to a stream instead of writing them to Postgres, and any number
// of `relay usage-consume` processes, sharing one durable consumer, load them
// into the ledger with the same idempotent batch write. A pod then never
// waits for Postgres, and the ledger's write rate is the consumers' to scale.
//
// Each event is one message whose Nats-Msg-Id is its request id, so the
// server drops a republished event (a retried or replayed batch) within the
// stream's duplicate window; past it, the ledger's own ON CONFLICT does. The
// message body is the journal's row encoding (codec.go), versioned, so a
// consumer of a later Relay can read an earlier pod's events.

// Defaults of a JetStreamConfig.
const (
	DefaultStream          = "RELAY_USAGE"
	DefaultDurable         = "relay-usage-consume"
	DefaultDuplicateWindow = 10 * time.Minute
	DefaultPublishTimeout  = 10 * time.Second
)

// JetStreamConfig names the stream usage events go through.
type JetStreamConfig struct {
	// URL is the NATS server (RELAY_NATS_URL), e.g. nats://127.0.0.1:4222;
	// a comma-separated list names a cluster.
	URL string
	// Stream and Subject: the stream Relay creates (or updates) and the
	// subject events are published on. "": the defaults.
	Stream, Subject string
	// Replicas of the stream (1 for one server, 3 in a cluster). 0: 1.
	Replicas int
	// MaxBytes caps the stream (events not yet consumed); at the cap a
	// publish is refused and the pod's Writer spools the batch. 0: no cap.
	MaxBytes int64
	// DuplicateWindow is how long the server remembers message ids. 0:
	// DefaultDuplicateWindow.
	DuplicateWindow time.Duration
	// Name is this connection's name on the server (the pod or consumer).
	Name   string
	Logger *slog.Logger
}

func (c JetStreamConfig) withDefaults() JetStreamConfig {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Subject == "" {
		c.Subject = c.Stream + ".events"
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// JetStream is a connection to the usage stream. As a Sink it publishes; its
// Consume loads what was published into the ledger.
type JetStream struct {
	cfg    JetStreamConfig
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
}

// OpenJetStream connects to NATS and creates the stream, or updates its
// settings to cfg's. The connection reconnects by itself for as long as the
// process lives; while it is away, publishes fail and the Writer spools.
func OpenJetStream(ctx context.Context, cfg JetStreamConfig) (*JetStream, error) {
	cfg = cfg.withDefaults()
	nc, err := nats.Connect(cfg.URL,
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				cfg.Logger.Warn("usage stream: disconnected from NATS", "err", err)
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { cfg.Logger.Info("usage stream: reconnected to NATS") }),
	)
	if err != nil {
		return nil, fmt.Errorf("usage stream: connect to NATS: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("usage stream: %w", err)
	}
	maxBytes := cfg.MaxBytes
	if maxBytes == 0 {
		maxBytes = -1
	}
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        cfg.Stream,
		Description: "Relay usage events, consumed into the ledger by relay usage-consume",
		Subjects:    []string{cfg.Subject},
		// A work queue: an event is gone from the stream once a consumer
		// has acknowledged it, that is once it is in the ledger.
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   cfg.Replicas,
		MaxBytes:   maxBytes,
		Discard:    jetstream.DiscardNew,
		Duplicates: cfg.DuplicateWindow,
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("usage stream: create stream %s: %w", cfg.Stream, err)
	}
	return &JetStream{cfg: cfg, nc: nc, js: js, stream: stream}, nil
}

// Close drains nothing: a Writer closes first and so has had its publishes
// acknowledged or spooled.
func (j *JetStream) Close() { j.nc.Close() }

// IngestUsageEvents publishes events, one message each with its request id
// as the message id, and waits for the server to acknowledge all of them. It
// returns how many the server had not seen (a republished event is a
// duplicate). Any failure fails the whole call: the Writer retries the batch
// or spools it, and the duplicates it then sends are dropped.
func (j *JetStream) IngestUsageEvents(ctx context.Context, events []store.UsageEvent) (int64, error) {
	if len(events) == 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultPublishTimeout)
	defer cancel()
	acks := make([]jetstream.PubAckFuture, 0, len(events))
	var buf []byte
	for i := range events {
		buf = appendRow(buf[:0], &events[i])
		msg := &nats.Msg{Subject: j.cfg.Subject, Data: append([]byte(nil), buf...), Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, events[i].RequestID)
		f, err := j.js.PublishMsgAsync(msg)
		if err != nil {
			return 0, fmt.Errorf("usage stream: publish: %w", err)
		}
		acks = append(acks, f)
	}
	var fresh int64
	for _, f := range acks {
		select {
		case ack := <-f.Ok():
			if !ack.Duplicate {
				fresh++
			}
		case err := <-f.Err():
			return fresh, fmt.Errorf("usage stream: publish: %w", err)
		case <-ctx.Done():
			return fresh, fmt.Errorf("usage stream: waiting for acknowledgements: %w", ctx.Err())
		}
	}
	return fresh, nil
}

// ConsumeConfig tunes a consumer.
type ConsumeConfig struct {
	// Durable is the consumer every `relay usage-consume` shares (a consumer
	// group: each event goes to one of them). "": DefaultDurable.
	Durable string
	// Batch is the most events one ledger write carries. 0:
	// DefaultBatchSize.
	Batch int
	// MaxWait is the longest a partial batch waits for more events. 0:
	// DefaultFlushInterval.
	MaxWait time.Duration
	// AckWait is how long the server waits for a batch's acknowledgement
	// before delivering its events to another consumer (a consumer killed
	// mid-batch). 0: a minute.
	AckWait time.Duration
	// WriteTimeout bounds one ledger write. 0: DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// ConsumeStats are what a consumer has done.
type ConsumeStats struct {
	Batches    uint64
	Events     uint64 // events written (new or already in the ledger)
	New        uint64 // events the ledger had not held
	Undecoded  uint64 // messages that are not usage events (acknowledged and dropped, logged)
	WriteFails uint64 // ledger writes that failed (their events are redelivered)
}

// Consume loads the stream into sink (the ledger) until ctx ends: it
// fetches a batch, writes it with one idempotent ledger write, and
// acknowledges the batch's messages only once the write has committed. A
// consumer killed between the two leaves its batch unacknowledged; the
// server redelivers it after AckWait and the ledger skips what it already
// holds, so every event is in the ledger exactly once. onBatch, if set, sees
// the stats after every batch.
func (j *JetStream) Consume(ctx context.Context, sink Sink, cfg ConsumeConfig, onBatch func(ConsumeStats)) error {
	if cfg.Durable == "" {
		cfg.Durable = DefaultDurable
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatchSize
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = DefaultFlushInterval
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = time.Minute
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	cons, err := j.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       cfg.Durable,
		Description:   "relay usage-consume: loads usage events into the ledger",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxAckPending: 64 * cfg.Batch, // room for 64 consumers, each holding a batch
		// An event that keeps failing is kept (MaxDeliver unlimited): a
		// ledger that refuses writes is an outage to fix, not data to drop.
		MaxDeliver: -1,
	})
	if err != nil {
		return fmt.Errorf("usage stream: consumer %s: %w", cfg.Durable, err)
	}
	var st ConsumeStats
	rows := make([]store.UsageEvent, 0, cfg.Batch)
	msgs := make([]jetstream.Msg, 0, cfg.Batch)
	retry := backoff.Policy{Base: DefaultRetryBackoff, Max: DefaultRetryBackoffMax, Jitter: backoff.Equal}
	failures := 0
	for ctx.Err() == nil {
		batch, err := cons.Fetch(cfg.Batch, jetstream.FetchMaxWait(cfg.MaxWait))
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			j.cfg.Logger.Warn("usage stream: fetch", "err", err)
			failures++
			if !retry.Wait(ctx, failures) {
				break
			}
			continue
		}
		rows, msgs = rows[:0], msgs[:0]
		for m := range batch.Messages() {
			row, err := decodeRow(m.Data())
			if err != nil {
				st.Undecoded++
				j.cfg.Logger.Error("usage stream: a message that is not a usage event, dropped", "subject", m.Subject(), "bytes", len(m.Data()))
				_ = m.Term()
				continue
			}
			rows, msgs = append(rows, row), append(msgs, m)
		}
		if batch.Error() != nil && !errors.Is(batch.Error(), nats.ErrTimeout) && ctx.Err() == nil {
			j.cfg.Logger.Warn("usage stream: fetch", "err", batch.Error())
		}
		if len(rows) == 0 {
			continue
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.WriteTimeout)
		n, err := sink.IngestUsageEvents(wctx, rows)
		cancel()
		if err != nil {
			// Not acknowledged: redelivered after AckWait, or at once when
			// told so. A batch Postgres rejects for its data is the same:
			// dropping events is never this process's call.
			st.WriteFails++
			if ctx.Err() != nil {
				// Stopping: leave the batch unacknowledged; the server
				// redelivers it to another consumer after AckWait.
				break
			}
			j.cfg.Logger.Error("usage stream: ledger write failed; the batch will be redelivered", "events", len(rows), "err", err)
			for _, m := range msgs {
				_ = m.NakWithDelay(retry.Next(failures + 1))
			}
			failures++
			if !retry.Wait(ctx, failures) {
				break
			}
			continue
		}
		failures = 0
		for _, m := range msgs {
			// Fire and forget: an acknowledgement lost on the way only
			// causes a redelivery, which the ledger skips.
			_ = m.Ack()
		}
		st.Batches++
		st.Events += uint64(len(rows))
		st.New += uint64(n)
		if onBatch != nil {
			onBatch(st)
		}
	}
	return nil
}
