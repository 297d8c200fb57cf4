package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Limiter admits a request once it is routed, before the first host key is
// picked. internal/ratelimit implements it; the default admits all.
type Limiter interface {
	// Admit may wait (pacing) while ctx lives. It returns a func to call
	// once with the actual usage when the response has ended, or an error:
	// a *wire.Error of kind wire.ErrRateLimited (with RetryAfter) becomes a
	// 429, anything else a 503.
	Admit(ctx context.Context, a *Admission) (done func(wire.Usage), err error)
}

// Admission is what the limiter sees of a request. It is valid only
// during Admit (or Reserve).
type Admission struct {
	RequestID string
	Caller    *snapshot.Caller
	Model     *snapshot.Model
	Plan      *routing.Plan
	Inbound   wire.Inbound
	Stream    bool
	BodyBytes int
	// MaxTokens is the request's max_tokens (or max_completion_tokens,
	// max_output_tokens), 0 when it sets none.
	MaxTokens int64
	// Snapshot is the snapshot the request was routed with.
	Snapshot *snapshot.Snapshot
	// Header is the caller's request header (X-Relay-Priority).
	Header http.Header
	// Cached marks a response cache hit: it counts as a request against
	// the request limits and spends no tokens (BodyBytes and MaxTokens
	// are 0); nothing goes upstream.
	Cached bool
	// Degrade says the request has a cheaper fallback its policy may
	// degrade it to (docs/rate-limits.md#degrade-instead-of-wait): the
	// limiter lets it wait on this model only as long as the policy's
	// degrade option allows, then refuses it with a Degradable error
	// instead of letting it wait on.
	Degrade bool
	// Waited is how long the request already waited for the limiter
	// before it was degraded: its max wait is shortened by as much.
	Waited time.Duration
	// Batch is set for a batch (batches.go), whose lines the request
	// stands for: at creation with their token totals, so that a batch
	// its budgets cannot cover is refused; when it has finished with zero
	// tokens, settled with its actual usage. A batch counts against the
	// caller's budgets only, at the batch price (pricing.BatchDivisor):
	// never against the policy's request, token and concurrency rules,
	// which pace interactive traffic (a provider runs batches apart).
	Batch *BatchTokens
}

// BatchTokens are a batch's token totals, taken as they are: no learned
// estimate lowers them, no model's max output caps them.
type BatchTokens struct {
	Input, Output int64
}

// Degradable is implemented by a limiter's refusal of a request the
// policy degrades rather than lets wait (Admission.Degrade): the proxy
// serves it by the cheaper fallback instead.
type Degradable interface {
	Degradable() bool
}

type nopLimiter struct{}

func (nopLimiter) Admit(context.Context, *Admission) (func(wire.Usage), error) { return nil, nil }

// KeyLimiter is a Limiter that also admits every upstream attempt with its
// host key, so that the host key's tier limit and pacing apply, retries
// included. The proxy calls Reserve instead of Admit, the Reservation's
// Attempt before each attempt, and Done once when the response has ended.
type KeyLimiter interface {
	Limiter
	// Reserve prepares a request's reservation. It does no I/O: the
	// first Attempt reserves the policy's limits together with the host
	// key's, in one round trip to the limiter's store.
	Reserve(a *Admission) (Reservation, error)
}

// Reservation is one request's claim on its limits.
type Reservation interface {
	// Attempt admits one upstream attempt through binding b with key. It
	// may wait (pacing) while ctx lives. Errors are as for Limiter.Admit.
	Attempt(ctx context.Context, key *snapshot.HostKey, b *snapshot.Binding) error
	// Done settles the reservation with the actual usage. It must not block.
	Done(wire.Usage)
}

// RateHeaders is implemented by a Reservation that tells the caller its
// own remaining budget: the x-ratelimit-* headers of the caller's policy,
// set on the response after the upstream's headers (so they replace a
// shared host key's).
type RateHeaders interface {
	SetRateHeaders(http.Header)
}

// setRateHeaders sets the reservation's x-ratelimit-* headers, if any.
func (rq *request) setRateHeaders(hd http.Header) {
	if rh, ok := rq.res.(RateHeaders); ok {
		rh.SetRateHeaders(hd)
	}
}

// limiterFailed answers a limiter's refusal (its *wire.Error, with any
// headers it sets, such as x-ratelimit-*) or failure (503).
func (rq *request) limiterFailed(err error) {
	if rq.retryOnFallback(err) {
		return
	}
	var we *wire.Error
	if !errors.As(err, &we) {
		rq.h.log.LogAttrs(rq.r.Context(), slog.LevelError, "limiter failed", slog.String("request_id", rq.id), slog.Any("error", err))
		err = wire.Errorf(wire.ErrUnavailable, "The rate limiter is unavailable; try again shortly.")
	}
	var hs interface{ SetHeaders(http.Header) }
	if errors.As(err, &hs) {
		hs.SetHeaders(rq.w.Header())
	}
	rq.fail(err)
}

// Recorder receives one Record per authenticated request, after its
// response has ended. Record must not block: an implementation hands the
// record to a bounded queue and drops (and counts) when it is full.
type Recorder interface {
	Record(event.Record)
}

type nopRecorder struct{}

func (nopRecorder) Record(event.Record) {}
