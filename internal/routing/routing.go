// Package routing decides which bindings and host keys may serve one
// request, and in what order: it resolves the request's model (name or
// name@host-slug), checks the caller's policy grants it, drops the
// bindings whose model cannot serve the request (context window, tools,
// images, structured output, chat or embeddings), keeps those on enabled
// hosts whose shape the inbound shape can be served by, each with the host
// keys that are enabled, usable, granted and not held back by a breaker
// (the key's own, or the key's for the binding's upstream model); then it
// orders the kept bindings by the strategy in force (priority, weighted,
// cost, latency, least busy — chosen by the policy, the caller's route
// hint or the model), orders each binding's keys by the session's
// rendezvous hash (prompt-cache affinity), and appends the bindings of the
// model's fallbacks for when every binding of the model fails.
//
// Every decision is kept in the Plan with its reason, so that the proxy's
// X-Relay-Route header, the usage event and the control plane's explain
// all say the same thing (AppendDetail, AppendSummary).
//
// It reads the snapshot, the breakers and the live figures (Stats) only; it
// does no I/O and does not allocate on the success path when handed a
// reused Plan.
package routing

import (
	"strings"
	"time"

	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Supports decides whether a request in an inbound shape can be served
// through a binding of an upstream shape. translator.Supports is the
// translator registry's answer (the caller's own shape, plus every pair a
// translator exists for); the proxy uses it unless configured otherwise.
type Supports func(in wire.Inbound, up wire.Shape) bool

// SameShape serves each inbound shape by its own upstream shape only:
// chat and embeddings by openai, responses by openai_responses, messages
// by anthropic.
func SameShape(in wire.Inbound, up wire.Shape) bool {
	switch in {
	case wire.InboundChat, wire.InboundEmbeddings:
		return up == wire.ShapeOpenAI
	case wire.InboundCompletions, wire.InboundImages, wire.InboundImageEdits, wire.InboundImageVariations,
		wire.InboundSpeech, wire.InboundTranscriptions, wire.InboundTranslations, wire.InboundModerations, wire.InboundRerank:
		return up == wire.ShapeOpenAI
	case wire.InboundResponses:
		return up == wire.ShapeOpenAIResponses
	case wire.InboundMessages, wire.InboundCountTokens:
		return up == wire.ShapeAnthropic
	}
	return false
}

// Skip says why a binding was left out.
type Skip uint8

// Reasons a binding was left out.
const (
	Kept            Skip = iota
	BindingDisabled      // the binding is disabled
	HostDisabled         // its host is disabled or gone
	HostNotPinned        // the request pinned another host
	ShapeNotServed       // no way to serve the inbound shape through it
	NoUsableKey          // no host key is enabled, usable, granted and ready
	// The model cannot serve the request (checked first, from the
	// model's catalog entry; see Needs).
	ContextTooSmall // prompt estimate + max output exceed the context window
	NoTools         // the request defines tools; the model has none
	NoVision        // the request holds images; the model reads none
	NoStructured    // the request asks for JSON output; the model cannot
	WrongKind       // a chat request to an embedding model, or the reverse
	// Set by the proxy, not the router: after a budget refused the
	// request, a candidate that would cost as much as what was refused.
	OverBudget
	// Set by the proxy: after the policy degraded the request rather than
	// let it wait, a candidate as dear as the model it degraded from.
	NotCheaper
)

// String names the reason for the log.
func (s Skip) String() string {
	switch s {
	case Kept:
		return "kept"
	case BindingDisabled:
		return "binding disabled"
	case HostDisabled:
		return "host disabled"
	case HostNotPinned:
		return "not the pinned host"
	case ShapeNotServed:
		return "shape not served"
	case NoUsableKey:
		return "no usable host key"
	case ContextTooSmall:
		return "context window too small"
	case NoTools:
		return "model has no tools"
	case NoVision:
		return "model reads no images"
	case NoStructured:
		return "model has no structured output"
	case WrongKind:
		return "wrong model kind"
	case OverBudget:
		return "over budget"
	case NotCheaper:
		return "not cheaper than the model degraded from"
	}
	return "unknown"
}

// Candidate is one binding the router walked.
type Candidate struct {
	Binding *snapshot.Binding
	Host    *snapshot.Host  // nil when the host is gone
	Model   *snapshot.Model // the binding's model: the request's, or a fallback's
	// Fallback is 0 for the request's own model, n for its n-th fallback.
	Fallback int
	Skip     Skip
	// Score is what the strategy ordered the candidate by, lower first:
	// the position (priority), a weighted draw (weighted), the estimated
	// cost in micro-units (cost), the EWMA time to first byte in
	// milliseconds (latency), the requests in flight (least_busy).
	Score float64
	// Keys are the host keys that may be tried, in order: position order,
	// or the session's rendezvous order when Affinity is set.
	Keys []*snapshot.HostKey
	// Affinity: Keys are in the session's rendezvous order, so Keys[0] is
	// the session's key while it stays healthy.
	Affinity bool
	// Why the host's other keys were left out.
	KeysDisabled, KeysUnusable, KeysNotGranted, KeysHeld int

	lo, hi int // Keys is Plan.keys[lo:hi]
}

// Dropped is a fallback model the router could not use, and why.
type Dropped struct {
	ID    snapshot.ID
	Model *snapshot.Model // nil when it is gone from the catalog
	Why   string
}

// Plan is the routing decision for one request. Reuse one (Reset) to route
// without allocating.
type Plan struct {
	Model  *snapshot.Model
	Pinned string // the host slug after '@', if any
	// Bindings are every binding walked, in routing order: the model's
	// (kept ones first, in the strategy's order), then each fallback's.
	// Those with Skip == Kept are the candidates.
	Bindings []Candidate
	// Strategy ordered the kept bindings; StrategyFrom says who chose it:
	// "policy", "hint", "model" or "default".
	Strategy     snapshot.RouteStrategy
	StrategyFrom string
	// Hint is the caller's route hint, HintIgnored set when the policy
	// fixes the strategy.
	Hint        Hint
	HintIgnored bool
	// Affinity is the affinity in force: AffinityOff when the policy turns
	// it off or the request has no session.
	Affinity snapshot.Affinity
	// Session and SessionFrom are the request's session identity, Session
	// scoped by the caller's project (ScopeSession).
	Session     uint64
	SessionFrom string
	// Project is the caller's: the scope of its session and of the key
	// labels X-Relay-Route shows it (KeyLabel).
	Project snapshot.ID
	// Panic is set when the breakers held every key of every candidate:
	// the held keys are tried, least recently failed first.
	Panic bool
	// Needs are what the request needs of a model.
	Needs Needs
	// Dropped lists the fallback models that could not be used.
	Dropped []Dropped

	keys   []*snapshot.HostKey
	scores []uint64
}

// Reset empties p, keeping its memory.
func (p *Plan) Reset() {
	clear(p.Bindings)
	clear(p.keys)
	clear(p.Dropped)
	*p = Plan{Bindings: p.Bindings[:0], keys: p.keys[:0], scores: p.scores[:0], Dropped: p.Dropped[:0]}
}

// First returns the first candidate: where the request goes first.
func (p *Plan) First() *Candidate {
	for i := range p.Bindings {
		if p.Bindings[i].Skip == Kept {
			return &p.Bindings[i]
		}
	}
	return nil
}

// Router routes requests. Its zero value serves same-shape requests only,
// consults no breakers and has no live figures.
type Router struct {
	Supports Supports         // nil: SameShape
	Breakers keypool.Breakers // nil: every key is ready
	// Stats are the live figures of the latency and least_busy
	// strategies; nil: those strategies keep the position order.
	Stats Stats
	// Rand draws the weighted strategy's order; nil: math/rand/v2. Tests
	// pass a seeded source.
	Rand func() uint64
}

// Route fills p for a request for model in shape in, by a caller with the
// given policy (nil grants nothing), knowing nothing else of the request.
func (r *Router) Route(snap *snapshot.Snapshot, policy *snapshot.Policy, model string, in wire.Inbound, now time.Time, p *Plan) error {
	return r.RouteRequest(snap, policy, &Request{Model: model, Inbound: in}, now, p)
}

// RouteRequest fills p for req, by a caller with the given policy (nil
// grants nothing). Errors are *wire.Error of kind ErrModelNotFound (a model
// or pinned host that does not exist, or that the policy does not grant:
// both answer alike, so a caller learns nothing of what others may use),
// ErrShapeNotServed, ErrUnsupportedFeature (no binding's model can serve
// the request) or ErrNoUsableHostKey.
//
// When the breakers hold every key of every candidate, the request is
// routed again in panic mode (Plan.Panic): the held keys panic may try
// (Breakers.Panicable: open breakers, not a cool-down or an auth or quota
// hold) are the candidates' keys, least recently failed first, so the
// request is tried rather than refused at once, as Envoy does past its
// panic threshold.
func (r *Router) RouteRequest(snap *snapshot.Snapshot, policy *snapshot.Policy, req *Request, now time.Time, p *Plan) error {
	err, held := r.route(snap, policy, req, now, p, false)
	if held && r.Breakers != nil {
		err, _ = r.route(snap, policy, req, now, p, true)
	}
	return err
}

// notFound is the refusal of a model, or a pinned host, that does not
// exist or that the caller may not use: the same words for both.
func notFound(model string) error {
	return wire.Errorf(wire.ErrModelNotFound, "The model %q does not exist.", model)
}

// route is RouteRequest without panic mode, or in it; held reports a
// refusal because the breakers held every key of every candidate.
func (r *Router) route(snap *snapshot.Snapshot, policy *snapshot.Policy, req *Request, now time.Time, p *Plan, panicking bool) (err error, held bool) {
	p.Reset()
	p.Panic = panicking
	p.Project = req.Project
	model, in := req.Model, req.Inbound
	p.Needs, p.Hint = req.Needs, req.Hint
	m := snap.ModelByName(model)
	if m == nil {
		if at := strings.LastIndexByte(model, '@'); at > 0 {
			m = snap.ModelByName(model[:at])
			p.Pinned = model[at+1:]
		}
	}
	if m == nil {
		return notFound(model), false
	}
	p.Model = m
	// The grant first: a caller the model is not granted to learns
	// nothing of the catalog's hosts by pinning one, nor that the model
	// exists.
	if policy == nil || !policy.GrantsModel(m.ID) {
		return notFound(model), false
	}
	if p.Pinned != "" && !grantsHost(snap, policy, snap.HostBySlug(p.Pinned)) {
		return notFound(model), false // gone, or none of its keys is the caller's
	}
	p.Strategy, p.StrategyFrom, p.HintIgnored = strategyFor(policy, m, req.Hint)
	p.Affinity, p.Session, p.SessionFrom = snapshot.AffinityOff, ScopeSession(req.Session, req.Project), req.SessionFrom
	if req.Session != 0 && policy.Affinity != snapshot.AffinityOff {
		p.Affinity = snapshot.AffinityKey
		if policy.Affinity == snapshot.AffinityBinding {
			p.Affinity = snapshot.AffinityBinding
		}
	}
	t := r.walk(snap, policy, m, 0, in, now, p)
	for i, id := range m.Fallbacks {
		fm := snap.Model(id)
		switch {
		case fm == nil:
			p.Dropped = append(p.Dropped, Dropped{ID: id, Why: "not in the catalog"})
		case fm.ID == m.ID || p.walked(fm.ID):
			p.Dropped = append(p.Dropped, Dropped{ID: id, Model: fm, Why: "already in the plan"})
		case !policy.GrantsModel(fm.ID):
			p.Dropped = append(p.Dropped, Dropped{ID: id, Model: fm, Why: "not granted"})
		default:
			r.walk(snap, policy, fm, i+1, in, now, p)
		}
	}
	for i := range p.Bindings {
		c := &p.Bindings[i]
		c.Keys = p.keys[c.lo:c.hi:c.hi]
	}
	if t.kept+p.keptFallbacks() > 0 {
		return nil, false
	}
	switch {
	case t.reachable == 0 && p.Pinned != "":
		return notFound(model), false
	case t.reachable == 0:
		return wire.Errorf(wire.ErrNoUsableHostKey, "The model %q has no enabled binding on an enabled host.", m.Name), false
	case t.capable == 0:
		return unsupported(m, t.firstSkip, &req.Needs), false
	case t.served == 0:
		return wire.Errorf(wire.ErrShapeNotServed, "The model %q has no binding that serves %s requests.", m.Name, in), false
	}
	e := wire.Errorf(wire.ErrNoUsableHostKey, "No host key is available for the model %q right now.", m.Name)
	for i := range p.Bindings {
		if p.Bindings[i].KeysHeld > 0 {
			return e, true
		}
	}
	return e, false
}

// grantsHost reports whether the policy may spend at least one key of host
// (nil: a host that does not exist grants nothing).
func grantsHost(snap *snapshot.Snapshot, policy *snapshot.Policy, host *snapshot.Host) bool {
	if host == nil {
		return false
	}
	if policy.AllHostKeys {
		return true
	}
	for _, k := range snap.HostKeys(host.ID) {
		if policy.GrantsHostKey(k.ID) {
			return true
		}
	}
	return false
}

// tally counts what happened to one model's bindings.
type tally struct {
	reachable, capable, served, kept int
	firstSkip                        Skip // the capability that dropped them
}

// walked reports whether the plan holds bindings of model id already.
func (p *Plan) walked(id snapshot.ID) bool {
	for i := range p.Bindings {
		if p.Bindings[i].Model.ID == id {
			return true
		}
	}
	return false
}

func (p *Plan) keptFallbacks() int {
	n := 0
	for i := range p.Bindings {
		if p.Bindings[i].Fallback > 0 && p.Bindings[i].Skip == Kept {
			n++
		}
	}
	return n
}

// walk appends the bindings of model m (the request's when fallback is 0)
// to p and orders them.
func (r *Router) walk(snap *snapshot.Snapshot, policy *snapshot.Policy, m *snapshot.Model, fallback int, in wire.Inbound, now time.Time, p *Plan) tally {
	supports := r.Supports
	if supports == nil {
		supports = SameShape
	}
	var t tally
	start := len(p.Bindings)
	capSkip := p.Needs.check(m, in)
	for _, b := range snap.Bindings(m.ID) {
		c := Candidate{Binding: b, Host: snap.Host(b.HostID), Model: m, Fallback: fallback}
		switch {
		case !b.Enabled:
			c.Skip = BindingDisabled
		case c.Host == nil || !c.Host.Enabled:
			c.Skip = HostDisabled
		case p.Pinned != "" && c.Host.Slug != p.Pinned:
			c.Skip = HostNotPinned
		case capSkip != Kept:
			t.reachable++
			c.Skip = capSkip
			t.firstSkip = capSkip
		case !supports(in, b.Shape):
			t.reachable++
			t.capable++
			c.Skip = ShapeNotServed
		default:
			t.reachable++
			t.capable++
			t.served++
			c.lo = len(p.keys)
			r.keys(snap, policy, &c, now, p)
			c.hi = len(p.keys)
			if c.lo == c.hi {
				c.Skip = NoUsableKey
			} else {
				t.kept++
			}
		}
		p.Bindings = append(p.Bindings, c)
	}
	if t.kept > 0 {
		r.order(p, p.Bindings[start:], now)
	}
	return t
}

// keys appends the host keys of c's host that may be tried.
func (r *Router) keys(snap *snapshot.Snapshot, policy *snapshot.Policy, c *Candidate, now time.Time, p *Plan) {
	for _, k := range snap.HostKeys(c.Host.ID) {
		switch {
		case !k.Enabled:
			c.KeysDisabled++
		case !k.Usable:
			c.KeysUnusable++
		case !policy.GrantsHostKey(k.ID):
			c.KeysNotGranted++
		case r.Breakers != nil && !r.Breakers.Ready(keypool.Ref(k), c.Binding.UpstreamModel, now):
			c.KeysHeld++
			if _, ok := r.Breakers.Panicable(keypool.Ref(k), c.Binding.UpstreamModel, now); p.Panic && ok {
				p.keys = append(p.keys, k)
			}
		default:
			p.keys = append(p.keys, k)
		}
	}
}
