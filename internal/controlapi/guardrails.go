package controlapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/openapi/models"
)

// Guardrails (docs/guardrails.md) as catalog data: a policy's rules, kept
// as policies.guardrails.

// guardrailsIn is the stored form of a policy's guardrails: nil when it
// has none. Bounds the schema cannot say (a rule that looks for nothing,
// a pattern that does not compile, names used twice) are checked here.
func (s *Server) guardrailsIn(ctx context.Context, b *models.Guardrails) (json.RawMessage, error) {
	if b == nil || len(b.Rules) == 0 && deref(b.MaxPromptBytes, 0) == 0 {
		return nil, nil
	}
	g := guardrail.Settings{MaxPromptBytes: deref(b.MaxPromptBytes, 0)}
	for _, r := range b.Rules {
		rs := guardrail.RuleSettings{Name: r.Name, Stage: guardrail.Stage(r.Stage), Action: guardrail.Action(r.Action)}
		if r.Detectors != nil {
			for _, d := range *r.Detectors {
				rs.Detectors = append(rs.Detectors, guardrail.Kind(d))
			}
		}
		if r.DenyWords != nil {
			rs.DenyWords = append([]string(nil), *r.DenyWords...)
		}
		if r.DenyPatterns != nil {
			rs.DenyPatterns = append([]string(nil), *r.DenyPatterns...)
		}
		if w := r.Webhook; w != nil {
			rs.Webhook = &guardrail.WebhookSettings{URL: w.URL, TimeoutMS: deref(w.TimeoutMs, 0), MaxConcurrent: deref(w.MaxConcurrent, 0)}
			if w.Fail != nil {
				rs.Webhook.Fail = string(*w.Fail)
			}
		}
		g.Rules = append(g.Rules, rs)
	}
	if err := g.Validate(); err != nil {
		return nil, invalid("guardrails: "+err.Error(), "guardrails")
	}
	// A webhook is dialled like a host: the same egress rule, on write too.
	for i, r := range g.Rules {
		if r.Webhook == nil {
			continue
		}
		if err := s.cfg.Egress.CheckURL(ctx, r.Webhook.URL, nil); err != nil {
			return nil, invalid(fmt.Sprintf("guardrails: rules[%d].webhook.url: %v", i, err), "guardrails")
		}
	}
	return json.Marshal(&g)
}

// guardrailsOut is the API form of stored guardrails: no rules when there
// are none (or they cannot be read, which the loader logs).
func guardrailsOut(raw json.RawMessage) *models.Guardrails {
	out := &models.Guardrails{Rules: []models.GuardrailRule{}}
	s, _, err := guardrail.Parse(raw)
	if err != nil || s == nil {
		return out
	}
	if s.MaxPromptBytes > 0 {
		out.MaxPromptBytes = &s.MaxPromptBytes
	}
	for _, r := range s.Rules {
		o := models.GuardrailRule{Name: r.Name, Stage: models.GuardrailRuleStage(r.Stage), Action: models.GuardrailRuleAction(r.Action)}
		if len(r.Detectors) > 0 {
			ds := make([]models.GuardrailRuleDetectors, len(r.Detectors))
			for i, d := range r.Detectors {
				ds[i] = models.GuardrailRuleDetectors(d)
			}
			o.Detectors = &ds
		}
		if len(r.DenyWords) > 0 {
			w := append([]string(nil), r.DenyWords...)
			o.DenyWords = &w
		}
		if len(r.DenyPatterns) > 0 {
			p := append([]string(nil), r.DenyPatterns...)
			o.DenyPatterns = &p
		}
		if w := r.Webhook; w != nil {
			ow := &models.GuardrailWebhook{URL: w.URL}
			if w.TimeoutMS > 0 {
				ow.TimeoutMs = &w.TimeoutMS
			}
			if w.MaxConcurrent > 0 {
				ow.MaxConcurrent = &w.MaxConcurrent
			}
			if w.Fail != "" {
				f := models.GuardrailWebhookFail(w.Fail)
				ow.Fail = &f
			}
			o.Webhook = ow
		}
		out.Rules = append(out.Rules, o)
	}
	return out
}
