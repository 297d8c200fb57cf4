package guardrail

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// Stage is where a rule runs: on the request before it goes upstream, on
// the answer before it reaches the caller, or both.
type Stage string

// Stages.
const (
	StageInput  Stage = "input"
	StageOutput Stage = "output"
	StageBoth   Stage = "both"
)

// Action is what a rule does with what it finds.
type Action string

// Actions.
const (
	ActionBlock  Action = "block"  // refuse, naming the rule, never the matched text
	ActionRedact Action = "redact" // replace with a typed placeholder
	ActionLog    Action = "log"    // count and record only
)

// Settings are a policy's guardrails as the catalog keeps them
// (policies.guardrails, migration 00018) and the control API speaks them.
type Settings struct {
	Rules []RuleSettings `json:"rules"`
	// MaxPromptBytes refuses a request body larger than this (0: no ceiling
	// beyond the proxy's own).
	MaxPromptBytes int `json:"max_prompt_bytes,omitempty"`
}

// RuleSettings is one guardrail: what it looks for, where, and what it does.
type RuleSettings struct {
	Name         string   `json:"name"`
	Stage        Stage    `json:"stage"`
	Action       Action   `json:"action"`
	Detectors    []Kind   `json:"detectors,omitempty"`
	DenyWords    []string `json:"deny_words,omitempty"`
	DenyPatterns []string `json:"deny_patterns,omitempty"`
	// Webhook makes the rule an external guardrail (webhook.go).
	Webhook *WebhookSettings `json:"webhook,omitempty"`
}

// Bounds of Settings.
const (
	MaxRules          = 16
	MaxDenyWords      = 256
	MaxDenyWordBytes  = 200
	MaxDenyPatterns   = 32
	MaxPatternBytes   = 1000
	MaxPromptCeiling  = 64 << 20
	maxRuleNameLength = 64
)

// Validate reports the first setting out of bounds, naming it.
func (s *Settings) Validate() error {
	if len(s.Rules) > MaxRules {
		return fmt.Errorf("at most %d rules", MaxRules)
	}
	if s.MaxPromptBytes < 0 || s.MaxPromptBytes > MaxPromptCeiling {
		return fmt.Errorf("max_prompt_bytes must be 0 to %d", MaxPromptCeiling)
	}
	seen := map[string]bool{}
	for i := range s.Rules {
		r := &s.Rules[i]
		if !validName(r.Name) {
			return fmt.Errorf("rules[%d].name must be 1 to %d of a-z, 0-9, _ and -", i, maxRuleNameLength)
		}
		if seen[r.Name] {
			return fmt.Errorf("rules[%d].name %q is used twice", i, r.Name)
		}
		seen[r.Name] = true
		switch r.Stage {
		case StageInput, StageOutput, StageBoth:
		default:
			return fmt.Errorf("rules[%d].stage must be input, output or both", i)
		}
		switch r.Action {
		case ActionBlock, ActionRedact, ActionLog:
		default:
			return fmt.Errorf("rules[%d].action must be block, redact or log", i)
		}
		for _, k := range r.Detectors {
			if _, ok := Builtin(k); !ok {
				return fmt.Errorf("rules[%d].detectors: unknown detector %q", i, k)
			}
		}
		if len(r.DenyWords) > MaxDenyWords {
			return fmt.Errorf("rules[%d].deny_words: at most %d", i, MaxDenyWords)
		}
		for _, w := range r.DenyWords {
			if len(w) > MaxDenyWordBytes {
				return fmt.Errorf("rules[%d].deny_words: a word is longer than %d bytes", i, MaxDenyWordBytes)
			}
		}
		if len(r.DenyPatterns) > MaxDenyPatterns {
			return fmt.Errorf("rules[%d].deny_patterns: at most %d", i, MaxDenyPatterns)
		}
		for j, p := range r.DenyPatterns {
			if len(p) > MaxPatternBytes {
				return fmt.Errorf("rules[%d].deny_patterns[%d] is longer than %d bytes", i, j, MaxPatternBytes)
			}
			re, err := regexp.Compile(p)
			if err != nil {
				return fmt.Errorf("rules[%d].deny_patterns[%d] is not a regular expression", i, j)
			}
			if re.MatchString("") {
				return fmt.Errorf("rules[%d].deny_patterns[%d] matches empty text", i, j)
			}
		}
		if r.Webhook != nil {
			if err := r.Webhook.validate(i, r.Action); err != nil {
				return err
			}
		}
		if r.Webhook == nil && len(r.Detectors) == 0 && !slices.ContainsFunc(r.DenyWords, func(w string) bool { return w != "" }) && len(r.DenyPatterns) == 0 {
			return fmt.Errorf("rules[%d] looks for nothing: give detectors, deny_words, deny_patterns or a webhook", i)
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > maxRuleNameLength {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Rule is a compiled guardrail.
type Rule struct {
	Name      string
	Action    Action
	Detectors []Detector
	// Webhook is set for an external guardrail: called by the proxy
	// (package guardhook) after the rule's detectors, if any.
	Webhook *Webhook
}

// Policy is a policy's compiled guardrails, as the snapshot holds them.
type Policy struct {
	// Input and Output are the rules of each stage, in the catalog's order.
	Input, Output  []Rule
	MaxPromptBytes int
	// unreadable: the settings could not be read; every request is refused.
	unreadable bool
}

// Unreadable reports whether p stands for settings that could not be
// read.
func (p *Policy) Unreadable() bool { return p.unreadable }

// Redacts reports whether a rule of the stage redacts.
func redacts(rs []Rule) bool {
	return slices.ContainsFunc(rs, func(r Rule) bool { return r.Action == ActionRedact })
}

// CacheSafe reports whether requests under p may use the response cache:
// no rule changes a request or looks at an answer, so a cached answer is
// what the guardrails would have let through.
func (p *Policy) CacheSafe() bool { return len(p.Output) == 0 && !redacts(p.Input) }

// Compile builds the Policy of s, which Validate accepted.
func (s *Settings) Compile() (*Policy, error) {
	p := &Policy{MaxPromptBytes: s.MaxPromptBytes}
	for i := range s.Rules {
		rs := &s.Rules[i]
		r := Rule{Name: rs.Name, Action: rs.Action}
		if rs.Webhook != nil {
			r.Webhook = rs.Webhook.compile()
		}
		for _, k := range rs.Detectors {
			d, _ := Builtin(k)
			r.Detectors = append(r.Detectors, d)
		}
		deny, err := DenyList(rs.DenyWords, rs.DenyPatterns)
		if err != nil {
			return nil, fmt.Errorf("rules[%d]: %w", i, err)
		}
		if deny != nil {
			r.Detectors = append(r.Detectors, deny)
		}
		if rs.Stage != StageOutput {
			p.Input = append(p.Input, r)
		}
		if rs.Stage != StageInput {
			p.Output = append(p.Output, r)
		}
	}
	return p, nil
}

// Parse reads stored settings (nil or JSON null: none) and compiles them.
func Parse(raw json.RawMessage) (*Settings, *Policy, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var s Settings
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("parse guardrails: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("guardrails: %w", err)
	}
	if len(s.Rules) == 0 && s.MaxPromptBytes == 0 {
		return &s, nil, nil
	}
	p, err := s.Compile()
	if err != nil {
		return nil, nil, fmt.Errorf("guardrails: %w", err)
	}
	return &s, p, nil
}

// Finding is what a rule found: never the matched text.
type Finding struct {
	Rule   string
	Kind   Kind
	Action Action
	// Failure is set when a webhook rule's call failed ("timeout",
	// "busy", "unreachable", "status", "unreadable"); Action is then what
	// its fail mode did: block (closed) or log (open).
	Failure string
}

// Check runs rules over text. It returns the matches of redacting rules
// (in order, not overlapping, earlier rules winning), the first match of a
// blocking rule, and appends every finding to fs.
func Check(rules []Rule, text string, fs []Finding) (redact []Match, block *Finding, _ []Finding) {
	for i := range rules {
		r := &rules[i]
		ms := Scan(r.Detectors, text)
		for _, m := range ms {
			f := Finding{Rule: r.Name, Kind: m.Kind, Action: r.Action}
			fs = append(fs, f)
			switch r.Action {
			case ActionBlock:
				if block == nil {
					block = &f
				}
			case ActionRedact:
				if !overlaps(redact, m) {
					redact = append(redact, m)
				}
			}
		}
	}
	slices.SortFunc(redact, func(a, b Match) int { return a.Start - b.Start })
	return redact, block, fs
}

// Unreadable is the Policy of settings the loader could not read: every
// request is refused, since serving it unguarded is what the operator
// meant to prevent.
func Unreadable() *Policy {
	return &Policy{Input: []Rule{{Name: "unreadable", Action: ActionBlock, Detectors: []Detector{everything{}}}}, unreadable: true}
}

// everything matches any text, from its first byte.
type everything struct{}

func (everything) Kind() Kind { return Deny }

func (everything) Find(dst []Match, text string) []Match {
	return append(dst, Match{Kind: Deny, Start: 0, End: min(len(text), 1)})
}
