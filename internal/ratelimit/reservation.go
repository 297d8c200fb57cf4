package ratelimit

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/admission"
	"github.com/relay-llm/relay/internal/pricing"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Redis keys (after the prefix; the owner in braces is the hash tag, so an
// owner's counters share one Redis Cluster slot):
//
//	{pol:<policy>}:<rate limit>:<rule>:<window s>[:<principal>]:w   a policy's window rule
//	{pol:<policy>}:<rate limit>:<rule>[:<principal>]:lease          a policy's concurrency rule
//	{pol:<policy>}:<rate limit>/<scope>:<rule>…                     the same, of an admission.Scope
//	{key:<host key>}:<rate limit>:<rule>:<window s>:w               a host key's tier rule
//	{key:<host key>}:<rate limit>:<rule>:lease                      its tier concurrency
//	{key:<host key>}:pace:tat                                       its minimum interval
//	{budget:<budget>}:<day YYYYMMDD | month YYYYMM>                 a budget's spend
//	{rl}:pods                                                       live pods (heartbeats)

func policyTag(policy snapshot.ID) string { return "pol:" + policy.String() }

func tierTag(key snapshot.ID) string { return "key:" + key.String() }

func policyKey(policy, rl snapshot.ID) string { return policyTag(policy) + ":" + rl.String() }

func tierKey(key, rl snapshot.ID) string { return tierTag(key) + ":" + rl.String() }

// ownerTag is the tag of a key made by policyKey or tierKey: its owner.
func ownerTag(base string) string {
	if i := strings.IndexByte(base, ':'); i >= 0 {
		if j := strings.IndexByte(base[i+1:], ':'); j >= 0 {
			return base[:i+1+j]
		}
	}
	return base
}

// ruleCounter is the counter of one rule under base (a policyKey or a
// tierKey). amount is what a request takes of a window meter; lease names a
// concurrency lease.
func ruleCounter(base string, r *snapshot.Rule, principal snapshot.ID, amount int64, lease string, ttl time.Duration) Counter {
	key := base + ":" + r.ID.String()
	if r.Meter != snapshot.MeterConcurrency {
		key += ":" + strconv.FormatInt(int64(r.Window/time.Second), 10)
	}
	return keyedRuleCounter(counterKey{key: key, tag: ownerTag(base)}, r, principal, amount, lease, ttl)
}

// keyedRuleCounter is ruleCounter with the key (short of the principal)
// and the tag already made.
func keyedRuleCounter(k counterKey, r *snapshot.Rule, principal snapshot.ID, amount int64, lease string, ttl time.Duration) Counter {
	c := Counter{Key: k.key, Tag: k.tag, Limit: r.Amount, Meter: r.Meter}
	if r.Meter == snapshot.MeterConcurrency {
		c.Kind, c.Window, c.Amount, c.Lease = KindLease, ttl, 1, lease
	} else {
		c.Kind, c.Window, c.Amount = KindWindow, r.Window, amount
	}
	if principal != uuid.Nil {
		c.Key = withPrincipal(c.Key, principal)
	}
	return c
}

// ruleKey is the keyID of a rule of rate limit rl held by owner (a policy,
// or a host key when tier).
func ruleKey(tier bool, owner, rl snapshot.ID, r *snapshot.Rule) keyID {
	id := keyID{owner: owner, rl: rl, rule: r.ID}
	switch {
	case r.Meter == snapshot.MeterConcurrency && tier:
		id.kind = keyTierLease
	case r.Meter == snapshot.MeterConcurrency:
		id.kind = keyPolicyLease
	case tier:
		id.kind, id.windowSec = keyTierWindow, int64(r.Window/time.Second)
	default:
		id.kind, id.windowSec = keyPolicyWindow, int64(r.Window/time.Second)
	}
	return id
}

// rulesCounter is the counter of rule of rl for this request, its key from
// the limiter's cache.
func (r *reservation) rulesCounter(tier bool, owner snapshot.ID, rl *snapshot.RateLimit, rule *snapshot.Rule, principal snapshot.ID, i int) Counter {
	return r.scopedCounter(tier, owner, rl, rule, uuid.Nil, principal, i)
}

// scopedCounter is rulesCounter under scope (admission.Scope.ID).
func (r *reservation) scopedCounter(tier bool, owner snapshot.ID, rl *snapshot.RateLimit, rule *snapshot.Rule, scope, principal snapshot.ID, i int) Counter {
	var lease string
	if rule.Meter == snapshot.MeterConcurrency {
		lease = r.leaseID(i)
	}
	id := ruleKey(tier, owner, rl.ID, rule)
	id.scope = scope
	k := r.l.counterKey(r.snap, id)
	return keyedRuleCounter(k, rule, principal, r.amount(rule.Meter), lease, r.l.opts.LeaseTTL)
}

// meta says what a counter stands for, to explain a refusal.
type meta struct {
	rl     *snapshot.RateLimit // nil for a budget
	rule   *snapshot.Rule      // nil for spacing and budgets
	tier   bool                // a host key's tier limit
	budget *snapshot.Budget
}

// reservation is one request's claim, made by Reserve and taken attempt
// by attempt. The proxy calls Attempt and Done from the request's
// goroutine, one after the other.
type reservation struct {
	l         *Limiter
	snap      *snapshot.Snapshot
	policy    *snapshot.Policy
	model     *snapshot.Model
	principal snapshot.ID // relay key, or the user of an inference token
	team      snapshot.ID
	project   snapshot.ID
	relayKey  snapshot.ID
	prio      int
	seq       uint64
	estIn     int64
	estOut    int64
	maxTokens int64 // the request's own, for estimating again while it waits
	embedding bool
	batch     bool              // Admission.Batch: budgets only, at the batch price
	scopes    []admission.Scope // Admission.Scopes: these rate limits instead of the policy's, no wait
	degrade   bool              // Admission.Degrade
	waited    time.Duration     // Admission.Waited
	units     wire.Units        // Admission.Units: the estimate of what it uses per unit
	callPrice int64             // Admission.CallPrice
	binding   *snapshot.Binding // of the last admitted attempt
	fallback  *snapshot.Binding // priced when Admit has no attempt

	// rate is the caller's own x-ratelimit-* headers (name, value pairs),
	// from the policy's counters as the first attempt took them.
	rate []string

	started bool
	n       int   // attempts so far
	pol     grant // the policy's counters and budgets, taken with the first attempt
	key     grant // the last attempt's host-key counters
	done    bool
}

// grant is what one reservation took from one store.
type grant struct {
	store Store
	at    int64
	atOf  []int64 // per counter when taken on several Redis nodes
	cs    []Counter
}

// Reserve implements admission.KeyLimiter: it reads what the reservation needs
// from the admission and does no I/O.
func (l *Limiter) Reserve(a *admission.Admission) (admission.Reservation, error) {
	c := a.Caller
	r := &reservation{l: l, snap: a.Snapshot, policy: c.Policy, model: a.Model, seq: l.seq.Add(1),
		team: c.TeamID, project: c.ProjectID, degrade: a.Degrade, waited: a.Waited,
		units: a.Units, callPrice: max(a.CallPrice, 0)}
	if c.Kind == snapshot.CredentialRelayKey {
		r.principal, r.relayKey = c.CredentialID, c.CredentialID
	} else {
		r.principal = c.UserID
	}
	if r.policy != nil {
		r.prio = r.policy.Priority
	}
	if c.HasPriority {
		r.prio = c.Priority
	}
	if v := a.Header.Get(priorityHeader); v != "" {
		// A caller may lower its own priority, never raise it.
		if p, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && p < r.prio {
			r.prio = p
		}
	}
	if a.Scopes != nil {
		// One request of no tokens (admission.Admission.Scopes).
		r.scopes = a.Scopes
		return r, nil
	}
	r.embedding = a.Inbound == wire.InboundEmbeddings || (a.Model != nil && a.Model.Kind == "embedding")
	if a.Batch != nil {
		// A batch's totals, as they are (admission.Admission.Batch).
		r.batch, r.estIn, r.estOut = true, a.Batch.Input, a.Batch.Output
	} else {
		r.estIn = l.inputEstimate(a.BodyBytes)
	}
	if !r.embedding && !r.batch {
		r.maxTokens = a.MaxTokens
		r.estOut = l.outputEstimate(a.MaxTokens, a.Model, r.policy)
	}
	if a.Plan != nil {
		for i := range a.Plan.Bindings {
			if a.Plan.Bindings[i].Skip == routing.Kept {
				r.fallback = a.Plan.Bindings[i].Binding
				break
			}
		}
	}
	return r, nil
}

// inputEstimate is what a request of bodyBytes reserves of input
// tokens: bytes / 4, rounded up, the tokens past LongContextTokens
// weighted LongContextWeight times (long prompts: denser text, or a
// provider that counts long context dearer, as the operator tunes it).
func (l *Limiter) inputEstimate(bodyBytes int) int64 {
	n := int64(bodyBytes+3) / 4
	if t := l.opts.LongContextTokens; t > 0 && n > t && l.opts.LongContextWeight > 1 {
		n = t + int64(math.Ceil(float64(n-t)*l.opts.LongContextWeight))
	}
	return n
}

// outputEstimate is what a request reserves of output tokens: its
// max_tokens (else the model's max output, else DefaultOutputTokens),
// lowered to what such requests were seen to use — the learned percentile
// of the policy's requests to the model, else of all requests to it, not
// below EstimateFloor — and never above the model's max output.
// Settlement corrects the estimate to the actual count either way.
func (l *Limiter) outputEstimate(maxTokens int64, model *snapshot.Model, policy *snapshot.Policy) int64 {
	var maxOut int64
	if model != nil {
		maxOut = int64(model.MaxOutputTokens)
	}
	est := maxTokens
	switch {
	case est > 0:
	case maxOut > 0:
		est = maxOut
	default:
		est = l.opts.DefaultOutputTokens
	}
	if model != nil && l.estimates != nil {
		var pid snapshot.ID
		if policy != nil {
			pid = policy.ID
		}
		if p := l.estimates.learned(pid, model.ID); p > 0 {
			est = min(est, max(p, l.opts.EstimateFloor))
		}
	}
	if maxOut > 0 {
		est = min(est, maxOut)
	}
	return est
}

// reestimate updates the output estimate of a request that waited, and the
// token amounts of its counters cs with it: what was learned meanwhile
// (from the very settlements it waited for) applies to it too.
func (r *reservation) reestimate(cs []Counter) {
	est := r.l.outputEstimate(r.maxTokens, r.model, r.policy)
	if est == r.estOut {
		return
	}
	r.estOut = est
	for i := range cs {
		if c := &cs[i]; c.Kind == KindWindow && (c.Meter == snapshot.MeterOutputTokens || c.Meter == snapshot.MeterTotalTokens) {
			c.Amount = r.amount(c.Meter)
		}
	}
}

// Admit implements admission.Limiter for callers that admit once per request:
// the policy's limits and budgets, no host key.
func (l *Limiter) Admit(ctx context.Context, a *admission.Admission) (func(wire.Usage), error) {
	res, err := l.Reserve(a)
	if err != nil {
		return nil, err
	}
	r := res.(*reservation)
	if err := r.Attempt(ctx, nil, r.fallback); err != nil {
		return nil, err
	}
	return r.Done, nil
}

// amount is what a request takes of a meter.
func (r *reservation) amount(m snapshot.Meter) int64 {
	switch m {
	case snapshot.MeterRequests:
		return 1
	case snapshot.MeterInputTokens:
		return r.estIn
	case snapshot.MeterOutputTokens:
		return r.estOut
	case snapshot.MeterTotalTokens:
		return r.estIn + r.estOut
	}
	return 0
}

// actual is what a request took of a meter, by its usage.
func actual(m snapshot.Meter, u wire.Usage) (int64, bool) {
	switch m {
	case snapshot.MeterInputTokens:
		return u.Input, true
	case snapshot.MeterOutputTokens:
		return u.Output, true
	case snapshot.MeterTotalTokens:
		return u.Input + u.Output, true
	}
	return 0, false
}

// leaseID names the lease of counter i of the current attempt: unique
// across pods.
func (r *reservation) leaseID(i int) string {
	return r.l.opts.Pod + ":" + strconv.FormatUint(r.seq, 36) + ":" + strconv.Itoa(r.n) + ":" + strconv.Itoa(i)
}

// policyLimits are the rate limits of the policy for the model: its own
// and, on top, the per-model one.
func (r *reservation) policyLimits() (own, perModel *snapshot.RateLimit) {
	if r.policy == nil || r.snap == nil || r.scopes != nil {
		return nil, nil
	}
	if r.policy.RateLimitID != uuid.Nil {
		own = r.snap.RateLimit(r.policy.RateLimitID)
	}
	if r.model != nil {
		if id := r.policy.RateLimitFor(r.model.ID); id != uuid.Nil && id != r.policy.RateLimitID {
			perModel = r.snap.RateLimit(id)
		}
	}
	return own, perModel
}

// perPrincipal reports whether any of the policy's rules is a per-principal
// sub-limit: those requests queue apart from other principals'.
func (r *reservation) perPrincipal() bool {
	own, pm := r.policyLimits()
	rls := []*snapshot.RateLimit{own, pm}
	for _, sc := range r.scopes {
		rls = append(rls, r.snap.RateLimit(sc.RateLimitID))
	}
	for _, rl := range rls {
		if rl == nil {
			continue
		}
		for _, rule := range rl.Rules {
			if rule.PerPrincipal {
				return true
			}
		}
	}
	return false
}

// scopeCounters appends the rules of the admission's scopes, counted as
// the policy's own are, under each scope's counters.
func (r *reservation) scopeCounters(cs []Counter, ms []meta) ([]Counter, []meta) {
	if r.policy == nil || r.snap == nil {
		return cs, ms
	}
	for _, sc := range r.scopes {
		rl := r.snap.RateLimit(sc.RateLimitID)
		if rl == nil {
			continue
		}
		for _, rule := range rl.Rules {
			var who snapshot.ID
			if rule.PerPrincipal {
				who = r.principal
			}
			cs = append(cs, r.scopedCounter(false, r.policy.ID, rl, rule, sc.ID, who, len(cs)))
			ms = append(ms, meta{rl: rl, rule: rule})
		}
	}
	return cs, ms
}

// policyCounters appends the policy's rules and the caller's budgets,
// priced at b.
func (r *reservation) policyCounters(cs []Counter, ms []meta, b *snapshot.Binding) ([]Counter, []meta) {
	own, pm := r.policyLimits()
	if r.batch {
		own, pm = nil, nil
	}
	for _, rl := range []*snapshot.RateLimit{own, pm} {
		if rl == nil {
			continue
		}
		for _, rule := range rl.Rules {
			var who snapshot.ID
			if rule.PerPrincipal {
				who = r.principal
			}
			cs = append(cs, r.rulesCounter(false, r.policy.ID, rl, rule, who, len(cs)))
			ms = append(ms, meta{rl: rl, rule: rule})
		}
	}
	cs, ms = r.scopeCounters(cs, ms)
	if budgets := r.l.budgetsFor(r.snap); budgets != nil {
		est := r.estimatedCost(b)
		now := r.l.now()
		for _, bu := range budgets.of(r.team, r.project, r.relayKey) {
			c := r.l.budgetCounter(r.snap, bu, now)
			c.Amount = est
			cs = append(cs, c)
			ms = append(ms, meta{budget: bu})
		}
	}
	return cs, ms
}

// keyCounters appends the host key's tier rules and its pacing.
func (r *reservation) keyCounters(cs []Counter, ms []meta, key *snapshot.HostKey) ([]Counter, []meta) {
	if key == nil || key.TierRateLimitID == uuid.Nil || r.snap == nil {
		return cs, ms
	}
	rl := r.snap.RateLimit(key.TierRateLimitID)
	if rl == nil {
		return cs, ms
	}
	var interval time.Duration
	for _, rule := range rl.Rules {
		cs = append(cs, r.rulesCounter(true, key.ID, rl, rule, uuid.Nil, len(cs)))
		ms = append(ms, meta{rl: rl, rule: rule, tier: true})
		if rule.Meter == snapshot.MeterRequests && rule.Amount > 0 {
			interval = max(interval, (rule.Window+r.l.opts.SpacingSlack)/time.Duration(rule.Amount))
		}
	}
	if interval > 0 && r.policy != nil && r.policy.MaxWait > 0 {
		// Sends spaced evenly, so a burst reaches the provider as a ramp:
		// n sends per window + slack, the slack absorbing the jitter
		// between our clock and the provider's. Spacing means waiting, so
		// it applies only where the policy lets requests wait.
		k := r.l.counterKey(r.snap, keyID{kind: keyPace, owner: key.ID})
		cs = append(cs, Counter{Kind: KindSpacing, Tag: k.tag, Key: k.key, Window: interval})
		ms = append(ms, meta{rl: rl, tier: true})
	}
	return cs, ms
}

// Attempt implements admission.Reservation.
func (r *reservation) Attempt(ctx context.Context, key *snapshot.HostKey, b *snapshot.Binding) error {
	l := r.l
	first := !r.started
	r.n++
	if !first && r.key.store != nil {
		// The previous attempt failed before any byte reached the caller:
		// its key's tokens go back and its leases are released. Its
		// request counts stay: the provider saw the request.
		l.settle(r.key.store, r.key.adjust(wire.Usage{}, 0))
		l.dropLeases(r.key.cs)
		r.key = grant{}
	}
	cs := make([]Counter, 0, 12)
	ms := make([]meta, 0, 12)
	if first {
		cs, ms = r.policyCounters(cs, ms, b)
	}
	policyN := len(cs)
	cs, ms = r.keyCounters(cs, ms, key)
	if len(cs) == 0 {
		r.started, r.binding = true, b
		return nil
	}
	a := ask{cs: cs, prio: r.prio, seq: r.seq, project: r.project}
	if !r.embedding && !r.batch && l.estimates != nil {
		a.refresh = r.reestimate
	}
	if r.policy != nil {
		a.closed = r.policy.LimiterFailureMode == failureModeClosed
		if r.policy.MaxWait > 0 && r.scopes == nil {
			a.deadline = time.Now().Add(max(r.policy.MaxWait-r.waited, time.Millisecond))
		}
		a.qk.policy = r.policy.ID
		if d, ok := r.policy.Degrades(r.prio); ok && first && r.degrade {
			// Wait on this model no longer than the degrade option
			// allows, then go to the cheaper fallback.
			a.degrade = true
			switch {
			case d <= 0:
				a.deadline = time.Time{}
			case !a.deadline.IsZero():
				a.deadline = minTime(a.deadline, time.Now().Add(d))
			}
		}
	}
	if dl, ok := ctx.Deadline(); ok && !a.deadline.IsZero() && dl.Before(a.deadline) {
		a.deadline = dl
	}
	if key != nil {
		a.qk.key = key.ID
	}
	if first && r.perPrincipal() {
		a.qk.principal = r.principal
	}
	g, v, ok, err := l.acquire(ctx, &a)
	if err != nil {
		return err
	}
	if !ok {
		return r.refusal(cs, ms, v, a.degrade)
	}
	l.admitted.Add(1)
	r.started, r.binding = true, b
	if first {
		r.rate = r.rateHeaders(cs[:policyN], ms[:policyN], v)
		r.pol = grant{store: g.store, at: g.at, cs: cs[:policyN:policyN]}
		if g.atOf != nil {
			r.pol.atOf = g.atOf[:policyN:policyN]
		}
		l.holdLeases(g.store, r.pol.cs)
	}
	r.key = grant{store: g.store, at: g.at, cs: cs[policyN:]}
	if g.atOf != nil {
		r.key.atOf = g.atOf[policyN:]
	}
	l.holdLeases(g.store, r.key.cs)
	return nil
}

// SetRateHeaders implements admission.RateHeaders.
func (r *reservation) SetRateHeaders(h http.Header) {
	for i := 0; i+1 < len(r.rate); i += 2 {
		h.Set(r.rate[i], r.rate[i+1])
	}
}

// rateHeaders describes the policy's own rate limit (else its per-model
// one) after the request took its share: what is left, and when the window
// is all free again (a window, since the request's own share counts for
// that long).
func (r *reservation) rateHeaders(cs []Counter, ms []meta, v Verdict) []string {
	own, pm := r.policyLimits()
	if own == nil {
		own = pm
	}
	if own == nil || len(v.Used) < len(cs) {
		return nil
	}
	after := Verdict{Used: make([]int64, len(cs)), Reset: make([]time.Duration, len(cs))}
	for i := range cs {
		after.Used[i] = v.Used[i] + cs[i].Amount
		after.Reset[i] = cs[i].Window
		if i < len(v.Reset) {
			after.Reset[i] = max(v.Reset[i], cs[i].Window)
		}
	}
	return rateHeaders(cs, ms, after, own)
}

// Done implements admission.Reservation: it hands the settlement to the settle
// goroutine and returns at once.
func (r *reservation) Done(u wire.Usage) { r.DoneUnits(u, wire.Units{}) }

// DoneUnits implements admission.UnitSettler: Done, with the units the
// request used priced into its budgets' settlement at the binding's unit
// prices, as the ledger prices them (pricing.UnitCost).
func (r *reservation) DoneUnits(u wire.Usage, units wire.Units) {
	if r.done || !r.started {
		return
	}
	r.done = true
	if !r.embedding && !r.batch && r.model != nil {
		var pid snapshot.ID
		if r.policy != nil {
			pid = r.policy.ID
		}
		r.l.estimates.record(pid, r.model.ID, u.Output)
	}
	var cost int64
	switch {
	case r.binding != nil && r.batch:
		cost = pricing.BatchMicros(&r.binding.Pricing, u)
	case r.binding != nil:
		cost = pricing.AddMicros(pricing.Micros(&r.binding.Pricing, u), pricing.UnitMicros(&r.binding.Pricing, units))
	}
	cost = pricing.AddMicros(cost, r.callPrice)
	if r.pol.store != nil {
		r.l.settle(r.pol.store, r.pol.adjust(u, cost))
		r.l.dropLeases(r.pol.cs)
	}
	if r.key.store != nil {
		r.l.settle(r.key.store, r.key.adjust(u, cost))
		r.l.dropLeases(r.key.cs)
	}
}

// adjust is what settling g with usage u (and cost, for budgets) takes.
func (g *grant) adjust(u wire.Usage, cost int64) []Adjust {
	var adj []Adjust
	for i, c := range g.cs {
		at := g.at
		if i < len(g.atOf) {
			at = g.atOf[i]
		}
		switch c.Kind {
		case KindWindow:
			if n, ok := actual(c.Meter, u); ok && n != c.Amount {
				adj = append(adj, Adjust{Counter: c, At: at, Delta: n - c.Amount})
			}
		case KindLease:
			adj = append(adj, Adjust{Counter: c})
		case KindPeriod:
			if cost != c.Amount {
				adj = append(adj, Adjust{Counter: c, At: at, Delta: cost - c.Amount})
			}
		}
	}
	return adj
}

// estimatedCost is the most the request may cost through b: the prompt
// estimate at the uncached input price, the output estimate at the
// output (or reasoning, if dearer) price, the units it asked for at b's
// unit prices, and its price per call.
func (r *reservation) estimatedCost(b *snapshot.Binding) int64 {
	switch {
	case b == nil:
		return r.callPrice
	case r.batch:
		return pricing.AddMicros(pricing.BatchEstimateMicros(&b.Pricing, r.estIn, r.estOut), r.callPrice)
	}
	est := pricing.AddMicros(pricing.EstimateMicros(&b.Pricing, r.estIn, r.estOut), pricing.UnitMicros(&b.Pricing, r.units))
	return pricing.AddMicros(est, r.callPrice)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
