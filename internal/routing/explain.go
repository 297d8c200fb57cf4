package routing

import (
	"strconv"

	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
)

// Explanation is a Plan as the usage event, the log and the control
// plane's explain tell it: the strategy and who chose it, the affinity,
// what the request needs, every binding walked in routing order with its
// score or the reason it was skipped, the fallbacks left out, and where the
// request went (or would go first).
type Explanation struct {
	Model        string             `json:"model"`
	Strategy     string             `json:"strategy"`
	StrategyFrom string             `json:"strategy_from"`
	Hint         string             `json:"hint,omitempty"`
	HintIgnored  bool               `json:"hint_ignored,omitempty"`
	Affinity     string             `json:"affinity"`
	SessionFrom  string             `json:"session_from,omitempty"`
	Panic        bool               `json:"panic,omitempty"`
	Needs        ExplainedNeeds     `json:"needs"`
	Candidates   []ExplainedBinding `json:"candidates"`
	Dropped      []ExplainedDrop    `json:"dropped_fallbacks,omitempty"`
	Chosen       *ExplainedChoice   `json:"chosen,omitempty"`
}

// ExplainedNeeds is Needs for the explanation.
type ExplainedNeeds struct {
	PromptTokens int64 `json:"prompt_tokens"`
	MaxOutput    int64 `json:"max_output,omitempty"`
	Tools        bool  `json:"tools,omitempty"`
	Images       bool  `json:"images,omitempty"`
	Structured   bool  `json:"structured,omitempty"`
}

// ExplainedBinding is one candidate.
type ExplainedBinding struct {
	BindingID      string   `json:"binding_id"`
	Host           string   `json:"host"`
	Model          string   `json:"model"`
	UpstreamModel  string   `json:"upstream_model,omitempty"`
	Fallback       int      `json:"fallback,omitempty"`
	Shape          string   `json:"shape"`
	Position       int      `json:"position"`
	Skip           string   `json:"skip,omitempty"`
	Score          float64  `json:"score"`
	Keys           []string `json:"keys,omitempty"`
	Affinity       bool     `json:"affinity,omitempty"`
	KeysDisabled   int      `json:"keys_disabled,omitempty"`
	KeysUnusable   int      `json:"keys_unusable,omitempty"`
	KeysNotGranted int      `json:"keys_not_granted,omitempty"`
	KeysHeld       int      `json:"keys_held,omitempty"`
}

// ExplainedDrop is a fallback model left out.
type ExplainedDrop struct {
	Model string `json:"model"`
	Why   string `json:"why"`
}

// ExplainedChoice is where the request went: the binding, the host key
// and its slot (its index among its host's keys), and whether the
// session's affinity held ("hit"), was broken by a failover ("miss"), or
// did not apply ("off").
type ExplainedChoice struct {
	BindingID string `json:"binding_id"`
	Host      string `json:"host"`
	Model     string `json:"model"`
	HostKey   string `json:"host_key"`
	Slot      int    `json:"slot"`
	Affinity  string `json:"affinity"`
}

// Choice is where a request went: a candidate of the plan and a key of it.
type Choice struct {
	Candidate *Candidate
	Key       *snapshot.HostKey
	Slot      int
}

// FirstChoice is where the plan sends a request first: its first
// candidate's first key, as the prioritised walk of the keys takes them.
func (p *Plan) FirstChoice(snap *snapshot.Snapshot) Choice {
	c := p.First()
	if c == nil || len(c.Keys) == 0 {
		return Choice{}
	}
	return Choice{Candidate: c, Key: c.Keys[0], Slot: Slot(snap, c.Keys[0])}
}

// Slot is a host key's index among its host's keys.
func Slot(snap *snapshot.Snapshot, k *snapshot.HostKey) int {
	for i, hk := range snap.HostKeys(k.HostID) {
		if hk.ID == k.ID {
			return i
		}
	}
	return -1
}

// AffinityOutcome is "hit" when the request went to the session's key of
// the plan's first binding, "miss" when a failover took it elsewhere, and
// "off" when affinity did not apply (turned off, no session, one key).
func (p *Plan) AffinityOutcome(ch Choice) string {
	c := ch.Candidate
	if c == nil || !c.Affinity {
		return "off"
	}
	if c == p.First() && len(c.Keys) > 0 && ch.Key == c.Keys[0] {
		return "hit"
	}
	return "miss"
}

// Explain returns the plan's explanation, with ch as the choice when it
// has a candidate.
func (p *Plan) Explain(ch Choice) Explanation {
	e := Explanation{
		Strategy: string(p.Strategy), StrategyFrom: p.StrategyFrom,
		Hint: p.Hint.String(), HintIgnored: p.HintIgnored,
		Affinity: string(p.Affinity), SessionFrom: p.SessionFrom, Panic: p.Panic,
		Needs: ExplainedNeeds{PromptTokens: p.Needs.PromptTokens, MaxOutput: p.Needs.MaxOutput,
			Tools: p.Needs.Tools, Images: p.Needs.Images, Structured: p.Needs.Structured},
		Candidates: []ExplainedBinding{},
	}
	if p.Model != nil {
		e.Model = p.Model.Name
	}
	for i := range p.Bindings {
		c := &p.Bindings[i]
		b := ExplainedBinding{BindingID: c.Binding.ID.String(), Model: c.Model.Name, UpstreamModel: c.Binding.UpstreamModel, Fallback: c.Fallback,
			Shape: string(c.Binding.Shape), Position: c.Binding.Position, Score: c.Score, Affinity: c.Affinity,
			KeysDisabled: c.KeysDisabled, KeysUnusable: c.KeysUnusable, KeysNotGranted: c.KeysNotGranted, KeysHeld: c.KeysHeld}
		if c.Host != nil {
			b.Host = c.Host.Slug
		}
		if c.Skip != Kept {
			b.Skip = c.Skip.String()
		}
		for _, k := range c.Keys {
			b.Keys = append(b.Keys, k.Slug)
		}
		e.Candidates = append(e.Candidates, b)
	}
	for _, d := range p.Dropped {
		name := d.ID.String()
		if d.Model != nil {
			name = d.Model.Name
		}
		e.Dropped = append(e.Dropped, ExplainedDrop{Model: name, Why: d.Why})
	}
	if c := ch.Candidate; c != nil && ch.Key != nil {
		e.Chosen = &ExplainedChoice{BindingID: c.Binding.ID.String(), Model: c.Model.Name,
			HostKey: ch.Key.Slug, Slot: ch.Slot, Affinity: p.AffinityOutcome(ch)}
		if c.Host != nil {
			e.Chosen.Host = c.Host.Slug
		}
	}
	return e
}

// AppendDetail appends Explain(ch) as JSON to dst, by hand: the proxy
// calls it once per request for the usage event.
func (p *Plan) AppendDetail(dst []byte, ch Choice) []byte {
	str := func(name, v string) {
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		dst = wire.AppendString(dst, v)
		dst = append(dst, ',')
	}
	num := func(name string, v int64) {
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		dst = strconv.AppendInt(dst, v, 10)
		dst = append(dst, ',')
	}
	flag := func(name string, v bool) {
		if v {
			dst = append(dst, '"')
			dst = append(dst, name...)
			dst = append(dst, `":true,`...)
		}
	}
	end := func(c byte) {
		if dst[len(dst)-1] == ',' {
			dst[len(dst)-1] = c
		} else {
			dst = append(dst, c)
		}
	}
	dst = append(dst, '{')
	model := ""
	if p.Model != nil {
		model = p.Model.Name
	}
	str("model", model)
	str("strategy", string(p.Strategy))
	str("strategy_from", p.StrategyFrom)
	if h := p.Hint.String(); h != "" {
		str("hint", h)
	}
	flag("hint_ignored", p.HintIgnored)
	str("affinity", string(p.Affinity))
	if p.SessionFrom != "" {
		str("session_from", p.SessionFrom)
	}
	flag("panic", p.Panic)
	dst = append(dst, `"needs":{`...)
	num("prompt_tokens", p.Needs.PromptTokens)
	if p.Needs.MaxOutput != 0 {
		num("max_output", p.Needs.MaxOutput)
	}
	flag("tools", p.Needs.Tools)
	flag("images", p.Needs.Images)
	flag("structured", p.Needs.Structured)
	end('}')
	dst = append(dst, `,"candidates":[`...)
	for i := range p.Bindings {
		c := &p.Bindings[i]
		dst = append(dst, '{')
		str("binding_id", c.Binding.ID.String())
		host := ""
		if c.Host != nil {
			host = c.Host.Slug
		}
		str("host", host)
		str("model", c.Model.Name)
		if c.Binding.UpstreamModel != "" {
			str("upstream_model", c.Binding.UpstreamModel)
		}
		if c.Fallback != 0 {
			num("fallback", int64(c.Fallback))
		}
		str("shape", string(c.Binding.Shape))
		num("position", int64(c.Binding.Position))
		if c.Skip != Kept {
			str("skip", c.Skip.String())
		}
		dst = append(dst, `"score":`...)
		dst = strconv.AppendFloat(dst, c.Score, 'g', -1, 64)
		dst = append(dst, ',')
		if len(c.Keys) > 0 {
			dst = append(dst, `"keys":[`...)
			for j, k := range c.Keys {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = wire.AppendString(dst, k.Slug)
			}
			dst = append(dst, "],"...)
		}
		flag("affinity", c.Affinity)
		for _, kc := range [...]struct {
			name string
			n    int
		}{{"keys_disabled", c.KeysDisabled}, {"keys_unusable", c.KeysUnusable}, {"keys_not_granted", c.KeysNotGranted}, {"keys_held", c.KeysHeld}} {
			if kc.n != 0 {
				num(kc.name, int64(kc.n))
			}
		}
		end('}')
		dst = append(dst, ',')
	}
	end(']')
	if len(p.Dropped) > 0 {
		dst = append(dst, `,"dropped_fallbacks":[`...)
		for _, d := range p.Dropped {
			name := d.ID.String()
			if d.Model != nil {
				name = d.Model.Name
			}
			dst = append(dst, '{')
			str("model", name)
			str("why", d.Why)
			end('}')
			dst = append(dst, ',')
		}
		end(']')
	}
	if c := ch.Candidate; c != nil && ch.Key != nil {
		dst = append(dst, `,"chosen":{`...)
		str("binding_id", c.Binding.ID.String())
		host := ""
		if c.Host != nil {
			host = c.Host.Slug
		}
		str("host", host)
		str("model", c.Model.Name)
		str("host_key", ch.Key.Slug)
		num("slot", int64(ch.Slot))
		str("affinity", p.AffinityOutcome(ch))
		end('}')
	}
	return append(dst, '}')
}

// AppendSummary appends the X-Relay-Route value of choice ch: the
// binding (host/upstream model), the key as the caller's project sees it
// (KeyLabel: never its slot, which would tell tenants sharing a key that
// they do), the strategy, the affinity outcome, and — when they apply —
// the fallback model that served, the caller's hint and panic mode:
//
//	binding=openai-east/gpt-4o; key=3f9a0c21; strategy=cost; affinity=hit; hint=cost=min
func (p *Plan) AppendSummary(dst []byte, ch Choice) []byte {
	c := ch.Candidate
	if c == nil || ch.Key == nil {
		return dst
	}
	dst = append(dst, "binding="...)
	if c.Host != nil {
		dst = append(dst, c.Host.Slug...)
	}
	dst = append(dst, '/')
	dst = append(dst, c.Binding.UpstreamModel...)
	dst = append(dst, "; key="...)
	dst = AppendKeyLabel(dst, p.Project, ch.Key.ID)
	dst = append(dst, "; strategy="...)
	dst = append(dst, p.Strategy...)
	dst = append(dst, "; affinity="...)
	dst = append(dst, p.AffinityOutcome(ch)...)
	if c.Fallback > 0 {
		dst = append(dst, "; fallback="...)
		dst = append(dst, c.Model.Name...)
	}
	if h := p.Hint.String(); h != "" {
		dst = append(dst, "; hint="...)
		dst = append(dst, h...)
		if p.HintIgnored {
			dst = append(dst, " (ignored)"...)
		}
	}
	if p.Panic {
		dst = append(dst, "; panic=1"...)
	}
	return dst
}
