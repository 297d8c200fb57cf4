package proxy

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/relay-llm/relay/internal/canonical"
	"github.com/relay-llm/relay/internal/event"
	"github.com/relay-llm/relay/internal/guardhook"
	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/keypool"
	"github.com/relay-llm/relay/internal/translator"
	"github.com/relay-llm/relay/internal/wire"
)

// Guardrails (package guardrail; docs/guardrails.md) on the request path:
// the policy's input rules check the request's text before anything else
// reads the body — block answers in the caller's shape naming the rule,
// redact rewrites the body with typed placeholders — and its output rules
// check the answer before the caller gets it: a whole body is read first,
// a stream is held back chunk by chunk (guardrail.Hold) so no unchecked
// byte leaves. Placeholders the request got are restored in the answer.
// With no guardrails on the caller's policy none of this runs: one nil
// check.

// errGuardrailBlocked cancels an upstream stream a guardrail ended.
var errGuardrailBlocked = errors.New("blocked by guardrail")

// guardState is a guarded request's.
type guardState struct {
	g    *guardrail.Policy
	red  guardrail.Redactor
	fs   []guardrail.Finding
	hold *guardrail.Hold       // a stream's; nil for a whole answer
	col  *translator.Collector // the current attempt's upstream answer, read for its text
	text []byte                // the text of a stream's last event (or a collected stream's)
	// whole is a stream's text so far, kept when an output webhook is to
	// judge it at the end.
	whole []byte
	hooks bool // output rules include a webhook
	// rec is what the usage event says the guardrails did.
	rec []event.Guardrail
	buf []byte
}

// answers reports whether the answer is checked: output rules, or
// placeholders to restore.
func (gd *guardState) answers() bool {
	return gd != nil && (len(gd.g.Output) > 0 || gd.red.Placeholders())
}

// guardsIn runs the input rules of the caller's policy, when it has
// guardrails: it reports whether the request goes on.
func (rq *request) guardsIn() bool {
	p := rq.caller.Policy
	if p == nil || p.Guardrails == nil {
		return true
	}
	return rq.guardRequest(p.Guardrails)
}

// guardRequest runs the input rules of g. It reports whether the request
// goes on; when it does not, the caller has its answer.
func (rq *request) guardRequest(g *guardrail.Policy) bool {
	gd := &guardState{g: g}
	rq.gd = gd
	if g.Unreadable() {
		rq.guardFail(&guardrail.Finding{Rule: "unreadable", Kind: guardrail.Deny, Action: guardrail.ActionBlock}, "request")
		return false
	}
	if g.MaxPromptBytes > 0 && rq.body.Len() > g.MaxPromptBytes {
		rq.noteGuard(guardrail.Finding{Rule: "max_prompt_bytes", Kind: guardrail.Deny, Action: guardrail.ActionBlock}, stageInput)
		rq.fail(&wire.Error{Kind: wire.ErrGuardrail, Param: "max_prompt_bytes",
			Msg: "The request is larger than the " + strconv.Itoa(g.MaxPromptBytes) + " bytes the policy's guardrails allow (max_prompt_bytes)."})
		return false
	}
	if len(g.Input) == 0 || rq.in.Multipart() {
		return true
	}
	texts, ok := rq.requestTexts()
	if !ok {
		rq.fail(&wire.Error{Kind: wire.ErrMalformedRequest, Msg: "The request could not be read for the policy's guardrails."})
		return false
	}
	out, block, fs := guardrail.Request(g.Input, &gd.red, rq.body.Bytes(), texts, gd.fs[:0])
	gd.fs = fs
	for _, f := range fs {
		if f.Action != guardrail.ActionBlock { // a block is counted once, by guardFail
			rq.noteGuard(f, stageInput)
		}
	}
	if block == nil {
		block = rq.askHooks(g.Input, "input", texts)
	}
	if block != nil {
		rq.guardFail(block, "request")
		return false
	}
	if out != nil {
		rq.body.Reset()
		rq.body.Write(out)
		rq.xin, rq.xinErr = nil, nil // decoded again from the redacted body
	}
	return true
}

// requestTexts are the texts the request carries: for the shapes Relay
// decodes, the system prompt, every turn's text, tool calls' arguments
// and tool results; for the others, every JSON string value.
func (rq *request) requestTexts() ([]string, bool) {
	switch rq.in {
	case wire.InboundChat, wire.InboundMessages, wire.InboundResponses, wire.InboundGenerate, wire.InboundGemini:
	default:
		return jsonStrings(rq.body.Bytes())
	}
	x, err := translator.Decode(rq.in, rq.body.Bytes())
	if err != nil {
		return nil, false
	}
	c := &x.C
	var texts []string
	add := func(ps []canonical.Part) {
		for i := range ps {
			p := &ps[i]
			if p.Text != "" {
				texts = append(texts, p.Text)
			}
			if p.ToolCall != nil && p.ToolCall.Arguments != "" {
				texts = append(texts, p.ToolCall.Arguments)
			}
			if p.ToolResult != nil {
				for j := range p.ToolResult.Content {
					if t := p.ToolResult.Content[j].Text; t != "" {
						texts = append(texts, t)
					}
				}
			}
		}
	}
	add(c.System)
	for i := range c.Messages {
		add(c.Messages[i].Parts)
	}
	return texts, true
}

// jsonStrings are the string values (not keys) of a JSON body.
func jsonStrings(body []byte) ([]string, bool) {
	var texts []string
	guardrail.Strings(body, func(s string) { texts = append(texts, s) })
	return texts, true
}

// Stages, as the metrics label them.
const (
	stageInput  = 0
	stageOutput = 1
)

// guardFail answers a blocked request (what: "request" or "answer") in
// the caller's shape, naming the rule and the kind, never the text.
func (rq *request) guardFail(f *guardrail.Finding, what string) {
	rq.noteGuard(guardrail.Finding{Rule: f.Rule, Kind: f.Kind, Action: guardrail.ActionBlock, Failure: f.Failure}, stageOf(what))
	rq.fail(&wire.Error{Kind: wire.ErrGuardrail, Msg: blockedMessage(f, what)})
}

func stageOf(what string) int {
	if what == "request" || what == "input" {
		return stageInput
	}
	return stageOutput
}

func blockedMessage(f *guardrail.Finding, what string) string {
	if f.Kind == guardrail.WebhookKind {
		why := "its webhook said block"
		if f.Failure != "" {
			why = "its webhook failed: " + f.Failure
		}
		return "The " + what + " was blocked by the policy's guardrail \"" + f.Rule + "\" (" + why + ")."
	}
	return "The " + what + " was blocked by the policy's guardrail \"" + f.Rule + "\" (" + string(f.Kind) + " found)."
}

// beginAnswer readies the check of an attempt's answer from a binding of
// shape shape.
func (gd *guardState) beginAnswer(shape wire.Shape, stream bool, now time.Time) {
	gd.col, _ = translator.NewCollector(shape, now) // nil: a shape it cannot read; checked below
	gd.text, gd.hold, gd.whole = gd.text[:0], nil, gd.whole[:0]
	gd.hooks = len(guardrail.Hooks(gd.g.Output)) > 0
	if stream {
		window := 0
		if gd.g.HoldsWhole() {
			window = holdWhole // a blocking webhook judges the answer whole
		}
		gd.hold = guardrail.NewHold(gd.g.Output, &gd.red, window)
	}
}

// answerText is the text of a whole upstream body.
func (gd *guardState) answerText(raw []byte) (string, bool) {
	if gd.col == nil {
		return "", false
	}
	r, err := gd.col.Body(raw)
	if err != nil {
		return "", false
	}
	var b []byte
	for i := range r.Parts {
		p := &r.Parts[i]
		b = append(b, p.Text...)
		if p.ToolCall != nil {
			b = append(b, p.ToolCall.Arguments...)
		}
	}
	return string(b), true
}

// checkWhole checks a whole answer out (in the caller's shape) whose
// upstream body was raw. It returns the body to send, or false when the
// caller was answered with the block.
func (rq *request) checkWhole(out, raw []byte) ([]byte, bool) {
	gd := rq.gd
	text, ok := gd.answerText(raw)
	if !ok {
		rq.guardFail(&guardrail.Finding{Rule: "unreadable_answer", Kind: guardrail.Deny}, "answer")
		return nil, false
	}
	return rq.checkText(out, text)
}

func (rq *request) checkText(out []byte, text string) ([]byte, bool) {
	gd := rq.gd
	n := len(gd.fs)
	out, block, fs := guardrail.Answer(gd.g.Output, &gd.red, out, text, gd.fs)
	gd.fs = fs
	for _, f := range fs[n:] {
		if f.Action != guardrail.ActionBlock { // a block is counted once, by guardFail
			rq.noteGuard(f, stageOutput)
		}
	}
	if block == nil {
		block = rq.askHooks(gd.g.Output, "output", []string{text})
	}
	if block != nil {
		rq.guardFail(block, "answer")
		return nil, false
	}
	return out, true
}

// pipeGuardedBody is pipeBody for a checked answer: read whole, checked,
// then sent.
func (rq *request) pipeGuardedBody(ctx, actx context.Context, body io.Reader, shape wire.Shape, status int) keypool.Result {
	raw, err := io.ReadAll(io.LimitReader(body, maxEventBytes))
	if err != nil {
		if ctx.Err() != nil {
			rq.canceled()
			return keypool.Result{Outcome: keypool.OutcomeNeutral}
		}
		what, _ := describe(err, actx)
		rq.fail(wire.Errorf(wire.ErrUpstream, "The upstream's answer broke off: %s.", what))
		return keypool.Result{Outcome: keypool.OutcomeFailure, Reason: what}
	}
	rq.usage = wire.ParseUsage(shape, raw)
	rq.gd.beginAnswer(shape, false, rq.at)
	out, ok := rq.checkWhole(raw, raw)
	if !ok {
		return keypool.Result{Outcome: keypool.OutcomeSuccess}
	}
	kept := rq.keptBody()
	kept.add(out)
	kept.keep(rq)
	rq.setHeader(rq.w.Header(), "Content-Length", strconv.Itoa(len(out)))
	rq.w.WriteHeader(status)
	rq.ttfb = time.Since(rq.start)
	_, _ = rq.w.Write(out)
	return keypool.Result{Outcome: keypool.OutcomeSuccess}
}

// guardEvent passes one stream chunk (out, made of upstream event ev)
// through the hold. It returns what may be sent now; blocked when the
// stream ended with the guardrail's error event, which it wrote.
func (rq *request) guardEvent(sw *streamWriter, ev *wire.Event, out []byte, seq int64) ([]byte, bool) {
	gd := rq.gd
	if gd.col == nil {
		// A shape whose text Relay cannot read: nothing unchecked leaves.
		rq.guardBlockStream(sw, &guardrail.Finding{Rule: "unreadable_answer", Kind: guardrail.Deny}, seq)
		return nil, true
	}
	var text []byte
	if ev != nil {
		gd.col.Event(*ev)
		text = gd.col.Text(gd.text[:0])
		gd.text = text
		if gd.hooks {
			gd.whole = append(gd.whole, text...)
		}
	}
	n := len(gd.hold.Findings())
	rel, block := gd.hold.Add(gd.buf[:0], out, string(text))
	gd.buf = rel
	rq.countHold(n)
	if block != nil {
		rq.guardBlockStream(sw, block, seq)
		return nil, true
	}
	return rel, false
}

// guardEnd releases what the hold kept at the end of the stream; blocked
// as guardEvent.
func (rq *request) guardEnd(sw *streamWriter, seq int64) bool {
	gd := rq.gd
	if f := rq.askHooks(gd.g.Output, "output", []string{string(gd.whole)}); f != nil {
		rq.guardBlockStream(sw, f, seq)
		return true
	}
	n := len(gd.hold.Findings())
	rel, block := gd.hold.End(gd.buf[:0])
	gd.buf = rel
	rq.countHold(n)
	if block != nil {
		rq.guardBlockStream(sw, block, seq)
		return true
	}
	if len(rel) > 0 {
		_ = sw.write(rel)
	}
	return false
}

func (rq *request) countHold(from int) {
	fs := rq.gd.hold.Findings()
	for _, f := range fs[from:] {
		if f.Action != guardrail.ActionBlock {
			rq.noteGuard(f, stageOutput)
		}
	}
}

// holdWhole is a hold-back window no answer reaches: nothing is released
// before the answer's end.
const holdWhole = 1 << 40

// askHooks calls the webhook rules among rules, in order, with texts. It
// records what they find and returns the first finding that blocks; nil
// when the text may pass.
func (rq *request) askHooks(rules []guardrail.Rule, stage string, texts []string) *guardrail.Finding {
	var call *guardhook.Call
	for i := range rules {
		r := &rules[i]
		if r.Webhook == nil {
			continue
		}
		if call == nil {
			call = &guardhook.Call{Stage: stage, Project: rq.caller.ProjectID.String(), Texts: texts}
			if p := rq.caller.Policy; p != nil {
				call.Policy = p.Slug
			}
			if m := rq.plan.Model; m != nil {
				call.Model = m.Name
			}
		}
		f := rq.h.hooks.Check(rq.r.Context(), r, call)
		if f == nil {
			continue
		}
		rq.gd.fs = append(rq.gd.fs, *f)
		if f.Action == guardrail.ActionBlock {
			return f // counted by guardFail or guardBlockStream
		}
		rq.noteGuard(*f, stageOf(stage))
	}
	return nil
}

// guardBlockStream ends the caller's stream with an in-shape error event
// naming the guardrail.
func (rq *request) guardBlockStream(sw *streamWriter, f *guardrail.Finding, seq int64) {
	rq.noteGuard(guardrail.Finding{Rule: f.Rule, Kind: f.Kind, Action: guardrail.ActionBlock, Failure: f.Failure}, stageOutput)
	msg := blockedMessage(f, "answer")
	rq.errKind, rq.errMsg = wire.ErrGuardrailCode, msg
	if rq.attempt.xl != nil && !rq.attempt.xl.Done() {
		rq.out = rq.attempt.xl.AppendBroken(rq.out[:0], msg)
	} else {
		// Passthrough, or a translation whose end is held back: the
		// caller's own error event.
		rq.out = wire.AppendStreamError(rq.out[:0], rq.in, msg, seq)
	}
	_ = sw.write(rq.out)
}

// maxGuardRecords bounds the distinct guardrail actions one usage event
// lists; more are folded into the last.
const maxGuardRecords = 32

// noteGuard counts a guardrail's action in the metrics and on the
// request's usage event.
func (rq *request) noteGuard(f guardrail.Finding, stage int) {
	rq.h.guards.count(f, stage)
	gd := rq.gd
	if gd == nil {
		return
	}
	st := [...]string{"input", "output"}[stage]
	for i := range gd.rec {
		r := &gd.rec[i]
		if r.Stage == st && r.Rule == f.Rule && r.Kind == string(f.Kind) && r.Action == string(f.Action) && r.Failure == f.Failure {
			r.N++
			return
		}
	}
	if len(gd.rec) == maxGuardRecords {
		gd.rec[len(gd.rec)-1].N++
		return
	}
	gd.rec = append(gd.rec, event.Guardrail{Stage: st, Rule: f.Rule, Kind: string(f.Kind), Action: string(f.Action), Failure: f.Failure, N: 1})
}

// guardCounters count the guardrails' actions: by stage, action and kind.
type guardCounters struct {
	n [2][3][len(guardKinds)]atomic.Int64
}

var guardActions = [...]guardrail.Action{guardrail.ActionBlock, guardrail.ActionRedact, guardrail.ActionLog}

var guardKinds = [...]guardrail.Kind{guardrail.Email, guardrail.Phone, guardrail.Card, guardrail.IBAN, guardrail.NationalID, guardrail.Secret, guardrail.WebhookKind, guardrail.Deny}

func (c *guardCounters) count(f guardrail.Finding, stage int) {
	a, k := -1, len(guardKinds)-1
	for i, x := range guardActions {
		if x == f.Action {
			a = i
		}
	}
	for i, x := range guardKinds {
		if x == f.Kind {
			k = i
		}
	}
	if a >= 0 {
		c.n[stage][a][k].Add(1)
	}
}

// GuardrailCount is one counter of the guardrails' actions.
type GuardrailCount struct {
	Stage, Action, Kind string
	N                   int64
}

// GuardrailStats returns the guardrails' counters, for the metrics.
func (h *Handler) GuardrailStats() []GuardrailCount {
	var out []GuardrailCount
	for s, stage := range [...]string{"input", "output"} {
		for a, action := range guardActions {
			for k, kind := range guardKinds {
				if n := h.guards.n[s][a][k].Load(); n > 0 {
					out = append(out, GuardrailCount{Stage: stage, Action: string(action), Kind: string(kind), N: n})
				}
			}
		}
	}
	return out
}
