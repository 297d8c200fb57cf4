package proxy

import (
	"net/http/httptest"
	"testing"

	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/snapshot"
)

const guardBenchBody = `{"model":"model-ca","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"hello relay, please answer the question about the Q3 report (page 12) by 2026-10-01"}]}`

// guardBench is the hot path's handler with the request's policy's
// guardrails set to g (nil: none).
func guardBench(t testing.TB, g *guardrail.Policy) (*Handler, *snapshot.Snapshot, *request) {
	h, snap := hotPathHandler(snapshot.StrategyPrioritized)
	rq := hotPathRequest(h)
	rq.w = httptest.NewRecorder()
	caller, res := snap.Authenticate(hashKey(benchKey), h.now())
	if res != snapshot.AuthOK {
		t.Fatal(res)
	}
	caller.Policy.Guardrails = g
	rq.caller, rq.snap = caller, snap
	rq.body.WriteString(guardBenchBody)
	return h, snap, rq
}

func guardPolicy(t testing.TB, action guardrail.Action) *guardrail.Policy {
	s := guardrail.Settings{Rules: []guardrail.RuleSettings{{Name: "all", Stage: guardrail.StageBoth, Action: action, Detectors: guardrail.Builtins}}}
	p, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGuardrailsOff_AddsNoAllocation: with no guardrails on the request's
// policy, the hot path with the guardrails' hook costs no allocation; with
// a rule on, the same hook does work (so the measure can fail).
func TestGuardrailsOff_AddsNoAllocation(t *testing.T) {
	h, snap, rq := guardBench(t, nil)
	tried := make([]snapshot.ID, 0, maxTried)
	step := func() {
		hotPath(h, snap, rq, tried)
		if !rq.guardsIn() || rq.gd != nil {
			t.Fatal("guardrails ran with none on the policy")
		}
	}
	step()
	if allocs := testing.AllocsPerRun(200, step); allocs != 0 {
		t.Errorf("%v allocations per request with no guardrails", allocs)
	}
	rq.caller.Policy.Guardrails = guardPolicy(t, guardrail.ActionBlock)
	if allocs := testing.AllocsPerRun(20, func() { rq.gd = nil; rq.guardsIn() }); allocs == 0 || rq.gd == nil {
		t.Error("the hook did nothing with a rule on")
	}
}

// BenchmarkGuardrails is the request side of the guardrails on the hot
// path: off (one nil check), every built-in detector on a clean request
// (decode and scan), and the same rule redacting.
func BenchmarkGuardrails(b *testing.B) {
	run := func(b *testing.B, g *guardrail.Policy) {
		h, snap, rq := guardBench(b, g)
		tried := make([]snapshot.ID, 0, maxTried)
		b.ReportAllocs()
		for b.Loop() {
			hotPath(h, snap, rq, tried)
			rq.gd, rq.xin, rq.xinErr = nil, nil, nil
			rq.caller.Policy.Guardrails = g
			if !rq.guardsIn() {
				b.Fatal("blocked")
			}
		}
	}
	b.Run("off", func(b *testing.B) { run(b, nil) })
	b.Run("block_clean", func(b *testing.B) { run(b, guardPolicy(b, guardrail.ActionBlock)) })
	b.Run("redact_clean", func(b *testing.B) { run(b, guardPolicy(b, guardrail.ActionRedact)) })
}
