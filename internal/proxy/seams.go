package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/wire"
)

// nopLimiter admits all: the proxy's limiter when Config.Limiter is nil.
type nopLimiter struct{}

func (nopLimiter) Admit(context.Context, *admission.Admission) (func(wire.Usage), error) {
	return nil, nil
}

// setRateHeaders sets the reservation's x-ratelimit-* headers, if any.
func (rq *request) setRateHeaders(hd http.Header) {
	if rh, ok := rq.res.(admission.RateHeaders); ok {
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
