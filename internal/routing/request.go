package routing

import (
	"cmp"
	"strings"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Request is what the router knows of one request.
type Request struct {
	Model   string // as the caller named it: name or name@host-slug
	Inbound wire.Inbound
	Needs   Needs
	// Session identifies the caller's session for prompt-cache affinity
	// (SessionHash of its identity); 0: none. SessionFrom names where it
	// came from: "header", "prompt_cache_key", "prefix" …
	Session     uint64
	SessionFrom string
	// Hint is the caller's route hint.
	Hint Hint
	// Project is the caller's project: equal sessions of two projects
	// land on keys independently (ScopeSession).
	Project snapshot.ID
}

// Needs is what a request needs of a model. The zero value needs nothing.
type Needs struct {
	PromptTokens int64 // estimated
	MaxOutput    int64 // the request's output limit, 0 when it sets none
	Tools        bool
	Images       bool
	Structured   bool // JSON (schema) output
}

// check returns why model m cannot serve a request with these needs in
// shape in, or Kept. A model whose context window is unset (0) is not
// described in the catalog: nothing is checked against it, so an
// undescribed model is never dropped for what its catalog entry does not
// say.
func (n *Needs) check(m *snapshot.Model, in wire.Inbound) Skip {
	if want, have := in.ModelKind(), cmp.Or(m.Kind, "chat"); otherKind(want) || otherKind(have) {
		// Images, audio, moderation and rerank: the kind must match, and
		// there is no context window to check.
		if want != have {
			return WrongKind
		}
		return Kept
	}
	if m.ContextWindow <= 0 {
		return Kept
	}
	embedding := in == wire.InboundEmbeddings || in == wire.InboundGeminiEmbed || in == wire.InboundGeminiBatchEmbed
	// Embedding inputs are limited one by one, not as a body, and counting
	// tokens generates nothing: the window is checked for generation only.
	generates := !embedding && in != wire.InboundCountTokens && in != wire.InboundGeminiCountTokens
	switch {
	case m.Kind == "embedding" && !embedding, m.Kind == "chat" && embedding:
		return WrongKind
	case generates && n.PromptTokens+n.output(m) > int64(m.ContextWindow):
		return ContextTooSmall
	case n.Tools && !m.SupportsTools:
		return NoTools
	case n.Images && !m.SupportsVision:
		return NoVision
	case n.Structured && !m.SupportsJSON:
		return NoStructured
	}
	return Kept
}

// output is the output the request may produce on m: its own limit, else
// nothing (a provider fits the answer into what the window leaves).
func (n *Needs) output(m *snapshot.Model) int64 {
	if n.MaxOutput > 0 {
		return n.MaxOutput
	}
	return 0
}

// unsupported is the refusal when no binding's model can serve the request.
func unsupported(m *snapshot.Model, why Skip, n *Needs) error {
	var e *wire.Error
	switch why {
	case ContextTooSmall:
		e = wire.Errorf(wire.ErrUnsupportedFeature, "The model %q has a context window of %d tokens; this request needs about %d (prompt) + %d (max output).",
			m.Name, m.ContextWindow, n.PromptTokens, n.output(m))
		e.Param = "messages"
	case NoTools:
		e = wire.Errorf(wire.ErrUnsupportedFeature, "The model %q does not support tools.", m.Name)
		e.Param = "tools"
	case NoVision:
		e = wire.Errorf(wire.ErrUnsupportedFeature, "The model %q does not read images.", m.Name)
		e.Param = "messages"
	case NoStructured:
		e = wire.Errorf(wire.ErrUnsupportedFeature, "The model %q does not support structured (JSON) output.", m.Name)
		e.Param = "response_format"
	default:
		e = wire.Errorf(wire.ErrUnsupportedFeature, "The model %q is an %s model; it cannot serve this request.", m.Name, kindWord(m.Kind))
		e.Param = "model"
	}
	return e
}

// otherKind reports whether a model kind is one beyond chat and embedding.
func otherKind(k string) bool { return k != "chat" && k != "embedding" }

func kindWord(k string) string {
	if otherKind(k) {
		return k + " (not chat)"
	}
	if k == "embedding" {
		return "embedding"
	}
	return "chat (not embedding)"
}

// Hint is a caller's route hint (X-Relay-Route, or metadata.relay_route).
type Hint uint8

// Route hints.
const (
	HintNone    Hint = iota
	HintCost         // cost=min: the cheapest binding first
	HintLatency      // latency=min: the fastest binding first
	HintQuality      // quality=max: the catalog's own order (priority)
)

// ParseHint reads a hint: "cost=min", "latency=min" or "quality=max"
// (case and spaces ignored; in a list, the first one Relay knows).
func ParseHint(v string) Hint {
	for part := range strings.SplitSeq(v, ",") {
		switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(part), " ", "")) {
		case "cost=min":
			return HintCost
		case "latency=min":
			return HintLatency
		case "quality=max":
			return HintQuality
		}
	}
	return HintNone
}

// String is the hint as a caller writes it.
func (h Hint) String() string {
	switch h {
	case HintCost:
		return "cost=min"
	case HintLatency:
		return "latency=min"
	case HintQuality:
		return "quality=max"
	}
	return ""
}

func (h Hint) strategy() snapshot.RouteStrategy {
	switch h {
	case HintCost:
		return snapshot.RouteCost
	case HintLatency:
		return snapshot.RouteLatency
	case HintQuality:
		return snapshot.RoutePriority
	}
	return ""
}

// strategyFor is the strategy in force, and who chose it: a policy that
// sets one fixes it (a hint is then ignored); else the caller's hint;
// else the model's own; else priority.
func strategyFor(policy *snapshot.Policy, m *snapshot.Model, h Hint) (s snapshot.RouteStrategy, from string, hintIgnored bool) {
	switch {
	case policy != nil && policy.RouteStrategy != "":
		return policy.RouteStrategy, "policy", h != HintNone
	case h != HintNone:
		return h.strategy(), "hint", false
	case m.Strategy != "":
		return m.Strategy, "model", false
	}
	return snapshot.RoutePriority, "default", false
}

// SessionHash turns a session identity into the Request.Session the
// router hashes keys with. Every pod computes the same value, so a
// session lands on the same host key whichever pod serves it.
func SessionHash(from string, id []byte) uint64 {
	h := uint64(14695981039346656037) // FNV-1a, seeded by the source
	for i := 0; i < len(from); i++ {
		h = (h ^ uint64(from[i])) * 1099511628211
	}
	for _, c := range id {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return mix(h | 1) // never 0: 0 means no session
}

// ScopeSession is session scoped by project: two projects naming the same
// session (a prompt_cache_key, a header) hash onto keys independently, so
// one tenant cannot steer its requests onto the key another tenant's
// session uses and probe the provider's prompt cache there. 0 stays 0.
func ScopeSession(session uint64, project snapshot.ID) uint64 {
	if session == 0 || project == (snapshot.ID{}) {
		return session
	}
	return hrw(session, project) | 1
}

// KeyLabel is how X-Relay-Route names a host key to a caller of project:
// a short hash of (project, key), stable for that project and meaningless
// to any other — never the key's slot or slug, which would let tenants
// sharing a key see that they do.
func KeyLabel(project, key snapshot.ID) string {
	return string(AppendKeyLabel(nil, project, key))
}

// AppendKeyLabel appends KeyLabel(project, key) to dst.
func AppendKeyLabel(dst []byte, project, key snapshot.ID) []byte {
	const hexdigits = "0123456789abcdef"
	h := hrw(hrw(0x6b6579, project), key)
	for i := range 8 {
		dst = append(dst, hexdigits[h>>(60-4*i)&0xf])
	}
	return dst
}

// SessionFromPrefix turns a stable-prefix hash into a session identity.
func SessionFromPrefix(prefix uint64) uint64 {
	if prefix == 0 {
		return 0
	}
	return mix(prefix) | 1
}

// mix is splitmix64's finaliser: a bijective scramble of 64 bits.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
