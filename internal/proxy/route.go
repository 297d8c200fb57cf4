package proxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Routing, as the proxy feeds it and tells it (docs/routing.md): the
// request's session identity, needs and hint go to the router; the
// decision goes back to the caller as X-Relay-Route, to the log line and
// to the usage event; each answer's time to first byte feeds the latency
// strategy's moving average.

// routeRequest fills rq.route from the request (routing.NewRequest).
func (rq *request) routeRequest(facts *wire.RouteFacts) {
	rq.route = routing.NewRequest(&rq.scan, rq.in, facts, rq.r.Header)
	rq.route.Project = rq.caller.ProjectID // sessions and key labels stay inside the tenant
	rq.hintCut = facts.HintCut
}

// withoutHint is body (the caller's, verbatim) without the route hint it
// carries in metadata.relay_route: the hint is Relay's, and Anthropic
// refuses unknown metadata members while Gemini has no metadata at all.
// A body without one is returned as it is; otherwise the cut is spliced
// out into rq.upBody.
func (rq *request) withoutHint(body []byte) []byte {
	if rq.hintCut.Empty() {
		return body
	}
	if rq.sending.Load() > 0 {
		rq.upBody = nil // an earlier attempt's body may still be on the wire
	}
	rq.upBody = wire.AppendCut(rq.upBody[:0], body, rq.hintCut)
	return rq.upBody
}

// decodable is the caller's body for a translator to decode: without the
// route hint, in a fresh buffer the decoded request may keep, when it has
// one. The callers' decoders refuse members they do not know (Anthropic's
// metadata holds user_id only; Gemini has no metadata), so a hint must
// not fail the translation, and no translated body carries it.
func (rq *request) decodable() []byte {
	if st := rq.st; st != nil && st.expanded != nil && !st.relayMade {
		return st.expanded // the upstream keeps the state; translations need its items
	}
	if rq.hintCut.Empty() {
		return rq.body.Bytes()
	}
	return wire.AppendCut(nil, rq.body.Bytes(), rq.hintCut)
}

// routed prepares the request to go where the plan says: with affinity,
// the keys are tried in the plan's (the session's) order whatever the
// policy's key strategy, so the prioritised walk is used; and the first
// binding counts one more request in flight.
func (rq *request) routed() {
	policy := rq.caller.Policy
	affinity := false
	for i := range rq.plan.Bindings {
		affinity = affinity || rq.plan.Bindings[i].Affinity
	}
	if affinity && policy != nil && policy.KeyStrategy != snapshot.StrategyPrioritized && policy.KeyStrategy != "" {
		rq.policy = *policy
		rq.policy.KeyStrategy = snapshot.StrategyPrioritized
		rq.caller.Policy = &rq.policy
	}
	if c := rq.plan.First(); c != nil && rq.busy == (snapshot.ID{}) {
		rq.busy = c.Binding.ID
		rq.h.live.Begin(rq.busy)
	}
}

// retryOnFallback serves the request on a cheaper fallback when a
// budget refused it and the policy allows that (budgetFallback), or when
// the policy degrades it rather than let it wait (degrade). It returns
// false when the refusal stands. The limiter's refusals all come through
// limiterFailed, before any attempt (Admit) or at an attempt
// (Reservation.Attempt): in both cases no byte has gone upstream.
func (rq *request) retryOnFallback(err error) bool {
	if rq.attempts > 0 || !(rq.budgetFallback(rq.r.Context(), err) || rq.degrade(rq.r.Context(), err)) {
		return false
	}
	// The cache's key and partition name the model refused: the
	// fallback's answer is not kept for it.
	rq.rc = nil
	rq.routed()
	rq.forward()
	return true
}

// budgetFallback answers a budget's refusal by routing the request to the
// first fallback of its model, cheaper by estimate than the model's first
// binding, that the limiter admits, when the policy allows it. It returns
// true when the request was admitted on a fallback: rq.plan, rq.settle (or
// rq.res, whose first Attempt then reserves) are set. Otherwise the
// refusal stands.
func (rq *request) budgetFallback(ctx context.Context, refusal error) bool {
	var we *wire.Error
	policy := rq.caller.Policy
	if policy == nil || !policy.BudgetFallback || !errors.As(refusal, &we) || !errors.Is(we.Kind, wire.ErrBudgetExceeded) {
		return false
	}
	fm := rq.cheaperFallback(ctx, routing.OverBudget, 0)
	if fm == nil {
		return false
	}
	rq.downgraded = fm.Name
	return true
}

// degrade answers a refusal the limiter made because the policy degrades
// the request rather than let it wait (Admission.Degrade, a Degradable
// refusal): the request goes to the first cheaper fallback of its model
// (degradeTarget said there is one), where it may wait what is left of its
// max wait. It returns true when the request was admitted there.
func (rq *request) degrade(ctx context.Context, refusal error) bool {
	var d admission.Degradable
	if !rq.adm.Degrade || !errors.As(refusal, &d) || !d.Degradable() {
		return false
	}
	from := rq.plan.Model
	waited := time.Since(rq.start) - rq.overhead
	fm := rq.cheaperFallback(ctx, routing.NotCheaper, max(waited, 0))
	if fm == nil {
		return false
	}
	rq.degradedFrom = from.Name
	return true
}

// degradeTarget reports whether the policy may degrade the request rather
// than let it wait, and its plan holds a fallback to degrade to: a kept
// candidate of a fallback model, cheaper by estimate than the first.
func (rq *request) degradeTarget() bool {
	p := rq.caller.Policy
	if p == nil || !(p.HasDegradeAfter || p.HasDegradeBelow) {
		return false
	}
	first := rq.plan.First()
	if first == nil {
		return false
	}
	est := rq.estimate(first)
	for i := range rq.plan.Bindings {
		if c := &rq.plan.Bindings[i]; c.Fallback > 0 && c.Skip == routing.Kept && rq.estimate(c) < est {
			return true
		}
	}
	return false
}

// cheaperFallback routes the request to the first fallback of its model,
// cheaper by estimate than the model's first binding, that the limiter
// admits (it may wait there up to its max wait less waited). Candidates
// of that plan as dear as what was refused are skipped with why. It
// returns the fallback model, with rq.plan, rq.settle (or rq.res, whose
// first Attempt then reserves) set; nil when none serves, rq.plan then
// the model's own again.
func (rq *request) cheaperFallback(ctx context.Context, why routing.Skip, waited time.Duration) *snapshot.Model {
	policy := rq.caller.Policy
	m := rq.plan.Model
	first := rq.plan.First()
	if m == nil || first == nil {
		return nil
	}
	est := rq.estimate(first)
	rerouted := false
	for _, id := range m.Fallbacks {
		fm := rq.snap.Model(id)
		if fm == nil || !policy.GrantsModel(fm.ID) {
			continue
		}
		req := rq.route
		req.Model = fm.Name
		if rq.plan.Pinned != "" {
			req.Model += "@" + rq.plan.Pinned
		}
		rerouted = true
		if err := rq.h.router.RouteRequest(rq.snap, policy, &req, rq.at, &rq.plan); err != nil {
			continue
		}
		c := rq.plan.First()
		if c == nil || rq.estimate(c) >= est {
			continue // not cheaper: the budget would refuse it as well
		}
		// The fallback's own fallbacks may lead back to what was refused
		// (mutual fallbacks): no candidate as dear is tried.
		for i := range rq.plan.Bindings {
			if b := &rq.plan.Bindings[i]; b.Skip == routing.Kept && rq.estimate(b) >= est {
				b.Skip = why
			}
		}
		adm := rq.admission()
		adm.Degrade, adm.Waited = false, waited // on a fallback already: it waits there
		if kl, ok := rq.h.limiter.(admission.KeyLimiter); ok {
			// The refused reservation held nothing; settle it empty.
			if rq.res != nil {
				rq.res.Done(wire.Usage{})
			}
			rq.res, rq.settle = nil, nil
			res, err := kl.Reserve(adm)
			if err != nil {
				continue
			}
			rq.res, rq.settle = res, res.Done
		} else {
			done, err := rq.h.limiter.Admit(ctx, adm)
			if err != nil {
				continue
			}
			rq.settle = done
		}
		return fm
	}
	if rerouted {
		// The refusal stands on the model asked for: its record and log
		// line tell its own route, not the last fallback's.
		_ = rq.h.router.RouteRequest(rq.snap, policy, &rq.route, rq.at, &rq.plan)
	}
	return nil
}

// estimate is the most the request may cost on candidate c, in micro-units.
func (rq *request) estimate(c *routing.Candidate) int64 {
	out := rq.route.Needs.MaxOutput
	if out <= 0 {
		out = int64(c.Model.MaxOutputTokens)
	}
	return pricing.AddMicros(pricing.EstimateMicros(&c.Binding.Pricing, rq.route.Needs.PromptTokens, out),
		pricing.UnitMicros(&c.Binding.Pricing, rq.adm.Units))
}

// admission is what the limiter sees of the request as routed now; it
// may be degraded when its plan has a cheaper fallback (degradeTarget).
func (rq *request) admission() *admission.Admission {
	rq.adm = admission.Admission{
		RequestID: rq.id, Caller: &rq.caller, Model: rq.plan.Model, Plan: &rq.plan,
		Inbound: rq.in, Stream: rq.stream, BodyBytes: rq.scan.Size,
		MaxTokens: rq.scan.MaxTokens, Snapshot: rq.snap, Header: rq.r.Header,
		Degrade: rq.degradeTarget(), Units: rq.estimatedUnits(),
	}
	return &rq.adm
}

// setRouteHeader tells the caller where the request went.
func (rq *request) setRouteHeader(hd http.Header) {
	ch := rq.attempt.choice(rq.snap)
	if ch.Candidate == nil {
		return
	}
	rq.routeBuf = rq.plan.AppendSummary(rq.routeBuf[:0], ch)
	if rq.downgraded != "" {
		rq.routeBuf = append(rq.routeBuf, "; budget_fallback="...)
		rq.routeBuf = append(rq.routeBuf, rq.downgraded...)
	}
	if rq.degradedFrom != "" && rq.plan.Model != nil {
		rq.routeBuf = append(rq.routeBuf, "; degraded="...)
		rq.routeBuf = append(rq.routeBuf, rq.degradedFrom...)
		rq.routeBuf = append(rq.routeBuf, "->"...)
		rq.routeBuf = append(rq.routeBuf, rq.plan.Model.Name...)
	}
	rq.setHeader(hd, routing.HeaderRoute, string(rq.routeBuf))
}

// routeSummary is the X-Relay-Route value set on the response, "" when none.
func (rq *request) routeSummary() string {
	return rq.w.Header().Get(routing.HeaderRoute)
}

// observe feeds the live figures once the request is over: the first
// binding's in-flight count drops; a request answered on its first
// attempt gives its binding a time to first byte (the caller's, less
// Relay's own time before the attempt); and a first binding that failed
// over to another is charged the time the caller waited for an answer, so
// a failing binding does not keep a fast average.
func (rq *request) observe() {
	if rq.busy == (snapshot.ID{}) {
		return
	}
	live := rq.h.live
	live.End(rq.busy)
	wait := rq.ttfb - rq.overhead
	switch {
	case wait <= 0:
	case rq.attempts == 1 && rq.attempt.cand != nil && rq.status >= 200 && rq.status < 300:
		live.Observe(rq.attempt.cand.Binding.ID, wait)
	case len(rq.fails) > 0 && (rq.attempt.cand == nil || rq.attempt.cand.Binding.ID != rq.busy || rq.status >= 500):
		live.Observe(rq.busy, wait)
	}
}

// routeDetail is the decision in full, for the usage event: a fresh copy.
func (rq *request) routeDetail() []byte {
	d := rq.planDetail()
	return rq.appendContentDetail(d)
}

func (rq *request) planDetail() []byte {
	if rq.plan.Model == nil {
		return nil
	}
	d := rq.plan.AppendDetail(make([]byte, 0, 512), rq.attempt.choice(rq.snap))
	if rq.downgraded != "" {
		d = append(d[:len(d)-1], `,"budget_fallback":`...)
		d = wire.AppendString(d, rq.downgraded)
		d = append(d, '}')
	}
	if rq.degradedFrom != "" {
		d = append(d[:len(d)-1], `,"degraded":{"from":`...)
		d = wire.AppendString(d, rq.degradedFrom)
		d = append(d, `,"to":`...)
		d = wire.AppendString(d, rq.plan.Model.Name)
		d = append(d, "}}"...)
	}
	return d
}

// appendContentDetail adds to the decision d (nil: none, then a new
// object) what the content controls did: "cache" for a hit (its age, the
// binding that produced the entry, what it saved in nano-units) and
// "guardrails" (each action with its count, never the matched text).
func (rq *request) appendContentDetail(d []byte) []byte {
	hit := rq.cache == cacheHit
	var gs []event.Guardrail
	if rq.gd != nil {
		gs = rq.gd.rec
	}
	if !hit && len(gs) == 0 {
		return d
	}
	if len(d) == 0 {
		d = append(d, '{', '}')
	}
	d = d[:len(d)-1]
	sep := func() {
		if d[len(d)-1] != '{' {
			d = append(d, ',')
		}
	}
	if hit {
		sep()
		d = append(d, `"cache":{"state":"hit",`...)
		if sh := rq.semHit; sh != nil {
			d = append(d, `"kind":"semantic","domain":`...)
			d = wire.AppendString(d, sh.domain)
			d = append(d, `,"entry":`...)
			d = wire.AppendString(d, sh.entry)
			d = append(d, `,"similarity":`...)
			d = formatSimilarity(d, sh.similarity)
			d = append(d, ',')
		}
		d = append(d, `"age_ms":`...)
		d = strconv.AppendInt(d, rq.cacheAge.Milliseconds(), 10)
		d = append(d, `,"binding_id":"`...)
		d = append(d, rq.cacheBinding.String()...)
		d = append(d, `","saved":`...)
		d = strconv.AppendInt(d, rq.cacheCost, 10)
		d = append(d, '}')
	}
	if len(gs) > 0 {
		sep()
		d = append(d, `"guardrails":[`...)
		for i, g := range gs {
			if i > 0 {
				d = append(d, ',')
			}
			d = append(d, `{"stage":`...)
			d = wire.AppendString(d, g.Stage)
			d = append(d, `,"rule":`...)
			d = wire.AppendString(d, g.Rule)
			d = append(d, `,"kind":`...)
			d = wire.AppendString(d, g.Kind)
			d = append(d, `,"action":`...)
			d = wire.AppendString(d, g.Action)
			if g.Failure != "" {
				d = append(d, `,"failure":`...)
				d = wire.AppendString(d, g.Failure)
			}
			d = append(d, `,"n":`...)
			d = strconv.AppendInt(d, int64(g.N), 10)
			d = append(d, '}')
		}
		d = append(d, ']')
	}
	return append(d, '}')
}
