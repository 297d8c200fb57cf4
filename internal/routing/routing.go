// Package routing decides which bindings and host keys may serve one
// request: it resolves the request's model (name or name@host-slug),
// checks the caller's policy grants it, walks the model's bindings in
// order and keeps those on enabled hosts whose shape the inbound shape can
// be served by, each with the host keys that are enabled, usable, granted
// and not held back by a breaker (the key's own, or the key's for the
// binding's upstream model).
//
// It reads the snapshot and the breakers only; it does no I/O and does
// not allocate on the success path when handed a reused Plan.
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
	}
	return "unknown"
}

// Candidate is one binding the router walked.
type Candidate struct {
	Binding *snapshot.Binding
	Host    *snapshot.Host // nil when the host is gone
	Skip    Skip
	// Keys are the host keys that may be tried, in position order.
	Keys []*snapshot.HostKey
	// Why the host's other keys were left out.
	KeysDisabled, KeysUnusable, KeysNotGranted, KeysHeld int

	lo, hi int // Keys is Plan.keys[lo:hi]
}

// Plan is the routing decision for one request. Reuse one (Reset) to route
// without allocating.
type Plan struct {
	Model  *snapshot.Model
	Pinned string // the host slug after '@', if any
	// Bindings are every binding walked, in routing order; those with Skip
	// == Kept are the candidates.
	Bindings []Candidate

	keys []*snapshot.HostKey
}

// Reset empties p, keeping its memory.
func (p *Plan) Reset() {
	clear(p.Bindings)
	clear(p.keys)
	*p = Plan{Bindings: p.Bindings[:0], keys: p.keys[:0]}
}

// Router routes requests. Its zero value serves same-shape requests only
// and consults no breakers.
type Router struct {
	Supports Supports         // nil: SameShape
	Breakers keypool.Breakers // nil: every key is ready
}

// Route fills p for a request for model in shape in, by a caller with the
// given policy (nil grants nothing). Errors are *wire.Error of kind
// ErrModelNotFound, ErrForbidden, ErrShapeNotServed or ErrNoUsableHostKey.
func (r *Router) Route(snap *snapshot.Snapshot, policy *snapshot.Policy, model string, in wire.Inbound, now time.Time, p *Plan) error {
	p.Reset()
	m := snap.ModelByName(model)
	if m == nil {
		if at := strings.LastIndexByte(model, '@'); at > 0 {
			m = snap.ModelByName(model[:at])
			p.Pinned = model[at+1:]
		}
	}
	if m == nil {
		return wire.Errorf(wire.ErrModelNotFound, "The model %q does not exist.", model)
	}
	p.Model = m
	if p.Pinned != "" && snap.HostBySlug(p.Pinned) == nil {
		return wire.Errorf(wire.ErrModelNotFound, "The host %q in model %q does not exist.", p.Pinned, model)
	}
	if policy == nil || !policy.GrantsModel(m.ID) {
		return wire.Errorf(wire.ErrForbidden, "The model %q is not granted to this relay key.", m.Name)
	}
	supports := r.Supports
	if supports == nil {
		supports = SameShape
	}
	var reachable, served, kept int
	for _, b := range snap.Bindings(m.ID) {
		c := Candidate{Binding: b, Host: snap.Host(b.HostID)}
		switch {
		case !b.Enabled:
			c.Skip = BindingDisabled
		case c.Host == nil || !c.Host.Enabled:
			c.Skip = HostDisabled
		case p.Pinned != "" && c.Host.Slug != p.Pinned:
			c.Skip = HostNotPinned
		case !supports(in, b.Shape):
			reachable++
			c.Skip = ShapeNotServed
		default:
			reachable++
			served++
			c.lo = len(p.keys)
			r.keys(snap, policy, &c, now, p)
			c.hi = len(p.keys)
			if c.lo == c.hi {
				c.Skip = NoUsableKey
			} else {
				kept++
			}
		}
		p.Bindings = append(p.Bindings, c)
	}
	for i := range p.Bindings {
		c := &p.Bindings[i]
		c.Keys = p.keys[c.lo:c.hi:c.hi]
	}
	switch {
	case kept > 0:
		return nil
	case reachable == 0 && p.Pinned != "":
		return wire.Errorf(wire.ErrModelNotFound, "The model %q has no enabled binding on host %q.", m.Name, p.Pinned)
	case reachable == 0:
		return wire.Errorf(wire.ErrNoUsableHostKey, "The model %q has no enabled binding on an enabled host.", m.Name)
	case served == 0:
		return wire.Errorf(wire.ErrShapeNotServed, "The model %q has no binding that serves %s requests.", m.Name, in)
	}
	return wire.Errorf(wire.ErrNoUsableHostKey, "No host key is available for the model %q right now.", m.Name)
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
		default:
			p.keys = append(p.keys, k)
		}
	}
}
