package controlapi_test

import (
	"net/http"
	"testing"

	"github.com/relay-llm/relay/openapi/models"
)

// A policy's guardrails are stored and returned, refused naming the field
// when a rule is unusable, kept by an update that leaves them out and
// removed by an empty rule list.
func TestPolicies_GuardrailSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin

	none := call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "gr-none"})).want(t, http.StatusCreated).JSON201
	if none.Guardrails == nil || len(none.Guardrails.Rules) != 0 {
		t.Errorf("default guardrails %+v, want no rules", none.Guardrails)
	}
	ds := []models.GuardrailRuleDetectors{models.GuardrailRuleDetectorsEmail, models.GuardrailRuleDetectorsCard}
	g := &models.Guardrails{Rules: []models.GuardrailRule{
		{Name: "pii", Stage: models.GuardrailRuleStageBoth, Action: models.GuardrailRuleActionRedact, Detectors: &ds},
		{Name: "words", Stage: models.GuardrailRuleStageInput, Action: models.GuardrailRuleActionBlock, DenyWords: &[]string{"falcon"}},
	}, MaxPromptBytes: ptr(4096)}
	p := call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "gr-on", Guardrails: g})).want(t, http.StatusCreated).JSON201
	got := call(c.GetPolicyWithResponse(ctx, p.ID)).want(t, http.StatusOK).JSON200.Guardrails
	if got == nil || len(got.Rules) != 2 || got.Rules[0].Name != "pii" || len(*got.Rules[0].Detectors) != 2 ||
		(*got.Rules[1].DenyWords)[0] != "falcon" || *got.MaxPromptBytes != 4096 {
		t.Fatalf("stored guardrails %+v", got)
	}
	// A rule that looks for nothing; a pattern that does not compile.
	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "gr-bad", Guardrails: &models.Guardrails{Rules: []models.GuardrailRule{
		{Name: "x", Stage: models.GuardrailRuleStageInput, Action: models.GuardrailRuleActionLog}}}})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "guardrails")
	call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{Guardrails: &models.Guardrails{Rules: []models.GuardrailRule{
		{Name: "x", Stage: models.GuardrailRuleStageInput, Action: models.GuardrailRuleActionLog, DenyPatterns: &[]string{"("}}}}})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "guardrails")

	upd := call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{Name: ptr("renamed")})).want(t, http.StatusOK).JSON200
	if len(upd.Guardrails.Rules) != 2 {
		t.Errorf("an update without guardrails changed them: %+v", upd.Guardrails)
	}
	upd = call(c.UpdatePolicyWithResponse(ctx, p.ID, models.PolicyUpdate{Guardrails: &models.Guardrails{Rules: []models.GuardrailRule{}}})).want(t, http.StatusOK).JSON200
	if len(upd.Guardrails.Rules) != 0 || upd.Guardrails.MaxPromptBytes != nil {
		t.Errorf("no rules kept them: %+v", upd.Guardrails)
	}
}

// A webhook rule is stored and returned with its settings; one that would
// redact, or whose URL is a cloud metadata address, is refused naming
// guardrails.
func TestPolicies_GuardrailWebhook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, c := b.ctx, b.admin
	open := models.GuardrailWebhookFailOpen
	hook := func(action models.GuardrailRuleAction, url string) *models.Guardrails {
		return &models.Guardrails{Rules: []models.GuardrailRule{{Name: "classifier", Stage: models.GuardrailRuleStageBoth, Action: action,
			Webhook: &models.GuardrailWebhook{URL: url, TimeoutMs: ptr(250), Fail: &open, MaxConcurrent: ptr(4)}}}}
	}
	p := call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "gr-hook", Guardrails: hook(models.GuardrailRuleActionBlock, "https://classifier.example.com/check")})).
		want(t, http.StatusCreated).JSON201
	got := call(c.GetPolicyWithResponse(ctx, p.ID)).want(t, http.StatusOK).JSON200.Guardrails
	if len(got.Rules) != 1 || got.Rules[0].Webhook == nil {
		t.Fatalf("stored guardrails %+v", got)
	}
	w := got.Rules[0].Webhook
	if w.URL != "https://classifier.example.com/check" || *w.TimeoutMs != 250 || *w.Fail != open || *w.MaxConcurrent != 4 {
		t.Errorf("stored webhook %+v", w)
	}
	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "gr-hook-redact", Guardrails: hook(models.GuardrailRuleActionRedact, "https://classifier.example.com/check")})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "guardrails")
	call(c.CreatePolicyWithResponse(ctx, models.PolicyCreate{Slug: "gr-hook-meta", Guardrails: hook(models.GuardrailRuleActionBlock, "http://169.254.169.254/latest/meta-data")})).
		wantErr(t, http.StatusUnprocessableEntity, "validation_failed", "guardrails")
}
