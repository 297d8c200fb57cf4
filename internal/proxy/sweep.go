package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/relay-llm/relay/internal/objects"
)

// The sweep: no finished batch goes unmetered for want of a caller who
// looks at it again. Every batch and message batch made through Relay is
// put on the index's pending list (objects.Index.Watch) when it is made
// and taken off once its usage is in the ledger. A sweep tick takes up to
// SweepBatch entries that are due (leased for sweepLease, so that two
// pods' sweeps do not look at one at once), retrieves each on its own
// host key exactly as a caller's retrieve does, and observes the answer
// through the same code (observeBatch, observeMessageBatch): the same
// Claim, so exactly one pod records it whoever looks first. A batch still
// running is due again after a delay that grows with its age (a tenth of
// it, between the sweep's period and sweepMaxDelay), not every tick. An
// entry the index no longer holds (deleted, past retention) or that the
// upstream answers 404 is dropped. The sweep reads Redis (or Memory) and
// the upstream only, never Postgres.

// Sweep defaults.
const (
	// DefaultSweepEvery is how often a sweep ticks.
	DefaultSweepEvery = time.Minute
	// SweepBatch bounds the batches one tick looks at.
	SweepBatch = 100
	// sweepLease is how long a taken entry is kept from other sweeps.
	sweepLease = 10 * time.Minute
	// sweepMaxDelay caps how long a running batch waits for its next look.
	sweepMaxDelay = time.Hour
	// sweepCallTimeout bounds one retrieve (and a message batch's results).
	sweepCallTimeout = 2 * time.Minute
)

// Sweep meters the batches on the pending list that nobody looks at.
type Sweep struct {
	h     *Handler
	every time.Duration
}

// Sweep returns the handler's sweep, ticking every every (0 or less:
// DefaultSweepEvery).
func (h *Handler) Sweep(every time.Duration) *Sweep {
	if every <= 0 {
		every = DefaultSweepEvery
	}
	return &Sweep{h: h, every: every}
}

// Run ticks until ctx ends; a tick's failure is logged and the next tick
// tries again.
func (s *Sweep) Run(ctx context.Context) error {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.h.log.Warn("batch sweep failed; the next tick tries again", "error", err)
		}
	}
}

// Tick looks once at up to SweepBatch due batches, and reports how many
// it looked at.
func (s *Sweep) Tick(ctx context.Context) (int, error) {
	h := s.h
	now := h.now()
	due, err := h.objects.Due(ctx, now, sweepLease, SweepBatch)
	if err != nil {
		return 0, err
	}
	for i, p := range due {
		o, err := h.objects.Get(ctx, p.ProjectID, p.Kind, p.ID)
		if errors.Is(err, objects.ErrNotFound) {
			_ = h.objects.Unwatch(ctx, p) // forgotten: nothing left to meter
			continue
		}
		if err != nil {
			return i, err
		}
		if s.look(ctx, o) {
			_ = h.objects.Unwatch(ctx, p)
			continue
		}
		delay := min(max(now.Sub(o.CreatedAt)/10, s.every), sweepMaxDelay)
		if err := h.objects.Watch(ctx, p, now.Add(delay)); err != nil {
			return i + 1, err
		}
	}
	return len(due), nil
}

// look retrieves one batch as a caller's retrieve would, and reports
// whether it is done with (metered, or gone upstream).
func (s *Sweep) look(ctx context.Context, o objects.Object) bool {
	h := s.h
	path := "/v1/batches/" + url.PathEscape(o.ID)
	if o.Kind == objects.KindMessageBatch {
		path = messageBatchPrefix + "/" + url.PathEscape(o.ID)
	} else if o.Kind != objects.KindBatch {
		return true // not a kind the sweep meters
	}
	ctx, cancel := context.WithTimeout(ctx, sweepCallTimeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, path, http.NoBody)
	if err != nil {
		return false
	}
	rq := h.reqs.Get().(*request)
	rq.init(h, sweepWriter{}, r)
	defer h.release(rq)
	rq.snap = h.snapshot()
	resp, ok := rq.quietObjectCall(ctx, o, path)
	if !ok {
		return false
	}
	body := rq.objectAnswer(resp, o)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		h.log.Warn("batch sweep: the upstream no longer has the batch; it is not metered", "batch_id", o.ID, "project_id", o.ProjectID)
		return true
	case resp.StatusCode >= 300:
		return false
	case o.Kind == objects.KindMessageBatch:
		return rq.observeMessageBatch(ctx, o, body)
	default:
		return rq.observeBatch(ctx, o, body)
	}
}

// sweepWriter is the sweep's request's writer: nothing is sent to anyone.
type sweepWriter struct{}

func (sweepWriter) Header() http.Header         { return http.Header{} }
func (sweepWriter) Write(p []byte) (int, error) { return len(p), nil }
func (sweepWriter) WriteHeader(int)             {}
