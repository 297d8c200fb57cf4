package proxy

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/relay-llm/relay/internal/genai"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Tracing. With Config.TracerProvider set, every inference request is a
// server span, relay.request, continuing the caller's W3C traceparent, with
// children relay.auth, relay.route, relay.reserve (each limiter admission,
// pacing waits included), one relay.upstream_attempt per attempt (whose
// context goes upstream as traceparent) and relay.stream under the attempt
// that answered. Attributes name things by id, slug and shape, never a key
// or any content. Next to Relay's own attributes, the request and attempt
// spans carry the OpenTelemetry GenAI ones (package genai, pinned to one
// semantic-conventions version). Without a provider rq.span stays nil and every hook is a
// nil check: no span, no attribute, no allocation.

// tracerName is the instrumentation scope of Relay's spans.
const tracerName = "github.com/relay-llm/relay/internal/proxy"

// Span names.
const (
	spanRequest  = "relay.request"
	spanAuth     = "relay.auth"
	spanRoute    = "relay.route"
	spanReserve  = "relay.reserve"
	spanUpstream = "relay.upstream_attempt"
	spanStream   = "relay.stream"
)

// startTrace opens the request span, continuing the caller's trace.
func (rq *request) startTrace() {
	ctx := propagation.TraceContext{}.Extract(rq.r.Context(), propagation.HeaderCarrier(rq.r.Header))
	rq.tctx, rq.span = rq.h.tracer.Start(ctx, spanRequest,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", rq.r.Method),
			attribute.String("url.path", rq.r.URL.Path),
			attribute.String("relay.request_id", rq.id),
		))
	if rq.client != "" {
		rq.span.SetAttributes(attribute.String("relay.client_request_id", rq.client))
	}
}

// endTrace closes the request span with the outcome.
func (rq *request) endTrace() {
	s := rq.span
	s.SetAttributes(
		attribute.Int("http.response.status_code", rq.status),
		attribute.Int("relay.attempts", rq.attempts),
		attribute.Bool("relay.stream", rq.stream),
	)
	if rq.in != 0 {
		s.SetAttributes(attribute.String("relay.inbound", rq.in.String()))
	}
	if m := rq.plan.Model; m != nil {
		s.SetAttributes(attribute.String("relay.model", m.Name))
	} else if rq.scan.Model != "" {
		s.SetAttributes(attribute.String("relay.model", rq.scan.Model))
	}
	if rq.recorded {
		s.SetAttributes(attribute.String("relay.project_id", rq.caller.ProjectID.String()))
	}
	if rq.attempt.cand != nil && rq.attempt.cand.Host != nil {
		s.SetAttributes(attribute.String("relay.host", rq.attempt.cand.Host.Slug))
	}
	if !rq.usage.IsZero() {
		s.SetAttributes(attribute.Int64("relay.usage.input_tokens", rq.usage.Input), attribute.Int64("relay.usage.output_tokens", rq.usage.Output))
	}
	rq.genAIRequest(s)
	spanOutcome(s, rq.status, rq.errKind)
	s.End()
	rq.span, rq.tctx = nil, nil
}

// spanOutcome marks a span as failed when its status or error kind say so.
func spanOutcome(s trace.Span, status int, errKind string) {
	if errKind != "" {
		s.SetAttributes(attribute.String("relay.error_kind", errKind))
	}
	if status >= 500 || status == 0 && errKind != "" {
		s.SetStatus(codes.Error, errKind)
	}
}

// child starts a child of the request span; nil when tracing is off.
func (rq *request) child(name string) trace.Span {
	if rq.span == nil {
		return nil
	}
	_, s := rq.h.tracer.Start(rq.tctx, name)
	return s
}

// endAuth closes a relay.auth span.
func (rq *request) endAuth(s trace.Span, ok bool) {
	if ok {
		s.SetAttributes(
			attribute.String("relay.credential.kind", credentialKind(rq.caller.Kind)),
			attribute.String("relay.credential.id", rq.caller.CredentialID.String()),
			attribute.String("relay.project_id", rq.caller.ProjectID.String()),
		)
	}
	spanOutcome(s, 0, rq.errKind)
	s.End()
}

// endRoute closes a relay.route span with the candidates it weighed.
func (rq *request) endRoute(s trace.Span, err error) {
	kept := 0
	for i := range rq.plan.Bindings {
		if rq.plan.Bindings[i].Skip == routing.Kept {
			kept++
		}
	}
	s.SetAttributes(
		attribute.String("relay.model", rq.scan.Model),
		attribute.Int("relay.route.candidates", len(rq.plan.Bindings)),
		attribute.Int("relay.route.kept", kept),
	)
	if err != nil {
		spanOutcome(s, 0, rq.errKind)
	}
	s.End()
}

// endReserve closes a relay.reserve span.
func (rq *request) endReserve(s trace.Span, err error) {
	s.SetAttributes(attribute.Int("relay.attempt", rq.attempts+1))
	if err != nil {
		s.SetAttributes(attribute.Bool("relay.reserve.refused", true))
		spanOutcome(s, 0, rq.errKind)
	}
	s.End()
}

// startAttempt opens the span of upstream attempt number rq.attempts.
func (rq *request) startAttempt(c *routing.Candidate, key *snapshot.HostKey) {
	if rq.span == nil {
		return
	}
	_, rq.attempt.span = rq.h.tracer.Start(rq.tctx, spanUpstream,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.Int("relay.attempt", rq.attempts),
			attribute.String("relay.host", c.Host.Slug),
			attribute.String("relay.binding.id", c.Binding.ID.String()),
			attribute.String("relay.binding.shape", string(c.Binding.Shape)),
			attribute.String("relay.host_key.id", key.ID.String()),
			attribute.String("relay.host_key.slug", key.Slug),
		))
	if op := genai.Operation(rq.in.String()); op != "" {
		rq.attempt.span.SetAttributes(
			attribute.String(genai.OperationName, op),
			attribute.String(genai.ProviderName, genai.Provider(c.Host.Provider)),
			attribute.String(genai.RequestModel, c.Binding.UpstreamModel),
		)
	}
}

// genAIRequest puts the GenAI attributes on the request span: the model the
// caller asked for, the upstream model that answered and the usage the
// upstream reported.
func (rq *request) genAIRequest(s trace.Span) {
	op := genai.Operation(rq.in.String())
	if op == "" {
		return
	}
	s.SetAttributes(attribute.String(genai.OperationName, op))
	if m := rq.plan.Model; m != nil {
		s.SetAttributes(attribute.String(genai.RequestModel, m.Name))
	} else if rq.scan.Model != "" {
		s.SetAttributes(attribute.String(genai.RequestModel, rq.scan.Model))
	}
	if c := rq.attempt.cand; c != nil && c.Host != nil && c.Binding != nil {
		s.SetAttributes(
			attribute.String(genai.ProviderName, genai.Provider(c.Host.Provider)),
			attribute.String(genai.ResponseModel, c.Binding.UpstreamModel),
		)
	}
	genAIUsage(s, rq.usage)
	if rq.errKind != "" {
		s.SetAttributes(attribute.String(genai.ErrorType, rq.errKind))
	}
}

// genAIUsage sets the GenAI usage attributes when the upstream reported any.
func genAIUsage(s trace.Span, u wire.Usage) {
	if u.IsZero() {
		return
	}
	s.SetAttributes(
		attribute.Int64(genai.InputTokens, u.Input),
		attribute.Int64(genai.OutputTokens, u.Output),
	)
	if u.CacheRead > 0 {
		s.SetAttributes(attribute.Int64(genai.CacheReadTokens, u.CacheRead))
	}
	if u.CacheWrite > 0 {
		s.SetAttributes(attribute.Int64(genai.CacheCreationTokens, u.CacheWrite))
	}
	if u.Reasoning > 0 {
		s.SetAttributes(attribute.Int64(genai.ReasoningTokens, u.Reasoning))
	}
}

// endAttempt closes the attempt span: the request's outcome when the
// attempt answered, else the failure that moves on to the next one.
func (rq *request) endAttempt(f *failure, done bool) {
	s := rq.attempt.span
	if s == nil {
		return
	}
	if done {
		s.SetAttributes(attribute.Int("http.response.status_code", rq.status))
		genAIUsage(s, rq.usage)
		spanOutcome(s, rq.status, rq.errKind)
	} else {
		if f.status != 0 {
			s.SetAttributes(attribute.Int("http.response.status_code", f.status))
		}
		s.SetAttributes(attribute.String("relay.error_kind", f.what))
		s.SetStatus(codes.Error, f.what)
	}
	s.End()
	rq.attempt.span = nil
}

// startStream opens relay.stream under the attempt that answered; nil when
// tracing is off.
func (rq *request) startStream() trace.Span {
	if rq.attempt.span == nil {
		return nil
	}
	_, s := rq.h.tracer.Start(trace.ContextWithSpan(rq.tctx, rq.attempt.span), spanStream,
		trace.WithAttributes(attribute.Bool("relay.stream", rq.stream)))
	return s
}

// endStream closes relay.stream.
func (rq *request) endStream(s trace.Span) {
	if !rq.usage.IsZero() {
		s.SetAttributes(attribute.Int64("relay.usage.input_tokens", rq.usage.Input), attribute.Int64("relay.usage.output_tokens", rq.usage.Output))
	}
	spanOutcome(s, rq.status, rq.errKind)
	s.End()
}

func credentialKind(k snapshot.CredentialKind) string {
	if k == snapshot.CredentialInferenceToken {
		return "inference_token"
	}
	return "relay_key"
}
