package proxy

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/translator"
)

// attempt is the state of one upstream attempt: the binding and host key
// it goes through, the translator and body for that binding, its
// relay.upstream_attempt span and its deadline. The request holds one by
// value; begin starts each attempt afresh. Once the last attempt is over,
// its binding and key stay for the response headers, the log line and
// the record.
type attempt struct {
	cand *routing.Candidate // the binding
	key  *snapshot.HostKey
	// xl is the binding's translator, nil on the passthrough path, and
	// xlBody its encoded body: translatable makes them once per binding,
	// before its first attempt, and the binding's attempts share them.
	xl     *translator.Translator
	xlBody []byte
	span   trace.Span       // nil when tracing is off, or between attempts
	dl     *attemptDeadline // nil before the request is sent
}

// begin starts an attempt through c with key: what the last attempt left
// (its span, its deadline) is gone; the binding's translation stays.
func (a *attempt) begin(c *routing.Candidate, key *snapshot.HostKey) {
	a.cand, a.key, a.span, a.dl = c, key, nil, nil
}

// choice is where the request went: its last attempt's binding and key
// (zero before any attempt).
func (a *attempt) choice(snap *snapshot.Snapshot) routing.Choice {
	if a.cand == nil || a.key == nil {
		return routing.Choice{}
	}
	return routing.Choice{Candidate: a.cand, Key: a.key, Slot: routing.Slot(snap, a.key)}
}

// injectTrace puts the attempt span's context on the upstream request.
func (a *attempt) injectTrace(ctx context.Context, h http.Header) {
	if a.span == nil {
		return
	}
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(ctx, a.span), propagation.HeaderCarrier(h))
}

// translatedHeaders fits the caller's headers to a translated body: it
// asks for the form (stream or not) Relay translates from. Which of the
// caller's headers go at all is the binding shape's allow-list
// (appendOutboundHeaders): the caller's own provider headers
// (anthropic-version, anthropic-beta …) mean nothing to another provider.
func (a *attempt) translatedHeaders(h http.Header, stream bool) {
	if a.xl == nil {
		return
	}
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
}

// attemptDeadline is an attempt's one timer. Until the response begins it
// runs to the first-byte timeout, then to the idle timeout from every read
// that brings bytes, and never past the total timeout; when it fires it
// cancels the attempt with the cause that applies.
type attemptDeadline struct {
	t      *time.Timer
	cancel context.CancelCauseFunc
	total  time.Time   // the total timeout, on the monotonic clock
	idle   atomic.Bool // the response began: a pause is an idle timeout
	every  time.Duration
}

func newAttemptDeadline(cancel context.CancelCauseFunc, to Timeouts) *attemptDeadline {
	dl := &attemptDeadline{cancel: cancel, total: time.Now().Add(to.Total), every: to.Idle}
	dl.t = time.AfterFunc(min(to.FirstByte, to.Total), dl.fire)
	return dl
}

// cause is the timeout that applies now.
func (dl *attemptDeadline) cause() error {
	switch {
	case !time.Now().Before(dl.total):
		return errTotalTimeout
	case dl.idle.Load():
		return errIdleTimeout
	}
	return errFirstByteTimeout
}

func (dl *attemptDeadline) fire() { dl.cancel(dl.cause()) }

// begin switches to the idle timeout once the response has begun.
func (dl *attemptDeadline) begin() {
	dl.idle.Store(true)
	dl.rearm()
}

// rearm runs the timer to the idle timeout from now, or to the total
// timeout if that comes first.
func (dl *attemptDeadline) rearm() {
	dl.t.Reset(min(dl.every, time.Until(dl.total)))
}

func (dl *attemptDeadline) stop() { dl.t.Stop() }
