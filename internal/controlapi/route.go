package controlapi

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/routing"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// POST /api/route/explain and the console's explain tool share explain:
// the caller resolved as a request's would be, then routing.ExplainBody
// on the pod's snapshot, breakers and live figures — the function the
// inference plane's decision is built from (routing.NewRequest and
// Router.RouteRequest), so an explain says what a request sent now would
// get.

// inbounds maps the API's inbound names to shapes.
var inbounds = map[gen.RouteExplainRequestInbound]wire.Inbound{
	gen.RouteExplainRequestInboundOpenaiChat:           wire.InboundChat,
	gen.RouteExplainRequestInboundOpenaiResponses:      wire.InboundResponses,
	gen.RouteExplainRequestInboundOpenaiEmbeddings:     wire.InboundEmbeddings,
	gen.RouteExplainRequestInboundAnthropicMessages:    wire.InboundMessages,
	gen.RouteExplainRequestInboundAnthropicCountTokens: wire.InboundCountTokens,
	gen.RouteExplainRequestInboundRelayGenerate:        wire.InboundGenerate,
	gen.RouteExplainRequestInboundGemini:               wire.InboundGemini,
}

// RouteExplain implements gen.StrictServerInterface.
func (s *Server) RouteExplain(ctx context.Context, req gen.RouteExplainRequestObject) (gen.RouteExplainResponseObject, error) {
	b := req.Body
	q := RouteQuery{RelayKeyID: b.RelayKeyID, PolicyID: b.PolicyID, Inbound: wire.InboundChat}
	if b.Model != nil {
		q.Model = *b.Model
	}
	if b.Inbound != nil {
		q.Inbound = inbounds[*b.Inbound]
	}
	if b.Body != nil {
		q.Body = *b.Body
	}
	if b.Headers != nil {
		q.Header = http.Header{}
		for k, v := range *b.Headers {
			q.Header.Set(k, v)
		}
	}
	out, e, err := s.explain(ctx, q)
	if err != nil {
		return nil, err
	}
	res := gen.RouteExplainResult{SnapshotVersion: int64(out.SnapshotVersion), CredentialState: out.CredentialState, Explanation: explanationOut(e)}
	opt := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	res.Credential, res.Policy, res.PolicyFrom, res.Refusal = opt(out.Credential), opt(out.Policy), opt(out.PolicyFrom), opt(out.Refusal)
	return gen.RouteExplain200JSONResponse(res), nil
}

// explain routes q as the inference plane would and explains it: the
// console's view (RouteExplanation) and the router's own (Explanation).
func (s *Server) explain(ctx context.Context, q RouteQuery) (RouteExplanation, routing.Explanation, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return RouteExplanation{}, routing.Explanation{}, err
	}
	if !c.Can(rbac.Read, rbac.System()) {
		return RouteExplanation{}, routing.Explanation{}, forbidden(rbac.Need(rbac.Read, rbac.System()))
	}
	if q.Model == "" && len(q.Body) == 0 {
		return RouteExplanation{}, routing.Explanation{}, invalid("choose a model, or give the request body", "model", "body")
	}
	if (q.RelayKeyID == nil) == (q.PolicyID == nil) {
		return RouteExplanation{}, routing.Explanation{}, invalid("choose a relay key or a policy", "relay_key_id", "policy_id")
	}
	snap := s.currentSnapshot()
	if snap == nil {
		return RouteExplanation{}, routing.Explanation{}, &apiError{status: http.StatusNotImplemented, code: codeNotImplemented, message: "this control plane has no snapshot to route on"}
	}
	now := s.now()
	out := RouteExplanation{SnapshotVersion: snap.Version(), Model: q.Model, CredentialState: "ok"}
	policy, err := s.explainPolicy(snap, &q, &out, now)
	if err != nil {
		return RouteExplanation{}, routing.Explanation{}, err
	}
	in := q.Inbound
	if in == wire.InboundNone {
		in = wire.InboundChat
	}
	body := q.Body
	if len(body) == 0 {
		body = []byte(`{}`) // a model alone: no needs, no session
	}
	r := routing.Router{Supports: s.cfg.Supports, Breakers: s.heldKeys(now), Stats: s.cfg.RouteStats}
	e, err := r.ExplainBody(snap, policy, q.Model, in, body, q.Header, now)
	if err != nil {
		out.Refusal = err.Error()
	}
	if out.CredentialState != "ok" {
		out.Refusal = "The relay key would be refused: " + out.CredentialState + "."
	}
	out.Model = e.Model
	s.consoleCandidates(snap, &out, &e)
	return out, e, nil
}

// explainPolicy resolves the policy q's caller would route with, and
// notes in out where it came from.
func (s *Server) explainPolicy(snap *snapshot.Snapshot, q *RouteQuery, out *RouteExplanation, now time.Time) (*snapshot.Policy, error) {
	var policy *snapshot.Policy
	if q.RelayKeyID != nil {
		rk := snap.RelayKey(*q.RelayKeyID)
		if rk == nil {
			return nil, notFound("relay key")
		}
		out.Credential = rk.Name + " (" + rk.DisplayPrefix + "…)"
		caller, res := snap.Authenticate(rk.Hash, now)
		out.CredentialState = res.String()
		policy = caller.Policy
		switch {
		case policy == nil:
		case rk.PolicyID == policy.ID:
			out.PolicyFrom = "the relay key's own policy"
		case rk.ServiceAccountID != uuid.Nil && snap.ServiceAccount(rk.ServiceAccountID) != nil && snap.ServiceAccount(rk.ServiceAccountID).PolicyID == policy.ID:
			out.PolicyFrom = "its service account's policy"
		default:
			out.PolicyFrom = "the first matching policy binding of its project"
		}
	} else {
		if policy = snap.Policy(*q.PolicyID); policy == nil {
			return nil, notFound("policy")
		}
		out.PolicyFrom = "chosen here"
	}
	if policy != nil {
		out.Policy, out.KeyStrategy = policy.Slug, string(policy.KeyStrategy)
	} else {
		out.PolicyFrom = "none applies: nothing is granted"
	}
	return policy, nil
}

// consoleCandidates fills the console's binding list from the router's
// explanation: the same bindings, in the same order.
func (s *Server) consoleCandidates(snap *snapshot.Snapshot, out *RouteExplanation, e *routing.Explanation) {
	out.Strategy, out.StrategyFrom, out.Affinity, out.SessionFrom = e.Strategy, e.StrategyFrom, e.Affinity, e.SessionFrom
	first := true
	for _, b := range e.Candidates {
		id, _ := uuid.Parse(b.BindingID)
		rc := RouteCandidate{BindingID: id, Host: b.Host, Model: b.Model, Fallback: b.Fallback, Shape: b.Shape, Position: b.Position,
			Skip: b.Skip, Score: b.Score, Keys: b.Keys, KeysDisabled: b.KeysDisabled, KeysUnusable: b.KeysUnusable,
			KeysNotGranted: b.KeysNotGranted, Held: b.KeysHeld}
		if bd := snap.Binding(id); bd != nil {
			rc.UpstreamModel = bd.UpstreamModel
		}
		if b.Skip == "" {
			rc.First, first = first && out.Refusal == "", false
		}
		out.Bindings = append(out.Bindings, rc)
	}
	if out.Bindings == nil && e.Model == "" {
		out.Model = ""
	}
}

// explanationOut is the API's copy of a routing.Explanation.
func explanationOut(e routing.Explanation) gen.RouteExplanation {
	out := gen.RouteExplanation{
		Model: e.Model, Strategy: gen.RouteExplanationStrategy(e.Strategy), StrategyFrom: gen.RouteExplanationStrategyFrom(e.StrategyFrom),
		Affinity:   gen.RouteExplanationAffinity(e.Affinity),
		Needs:      gen.RouteNeeds{PromptTokens: e.Needs.PromptTokens},
		Candidates: []gen.RouteCandidate{},
	}
	str := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	flag := func(v bool) *bool {
		if !v {
			return nil
		}
		return &v
	}
	num := func(v int) *int {
		if v == 0 {
			return nil
		}
		return &v
	}
	out.Hint, out.HintIgnored, out.SessionFrom = str(e.Hint), flag(e.HintIgnored), str(e.SessionFrom)
	if e.Needs.MaxOutput != 0 {
		out.Needs.MaxOutput = &e.Needs.MaxOutput
	}
	out.Needs.Tools, out.Needs.Images, out.Needs.Structured = flag(e.Needs.Tools), flag(e.Needs.Images), flag(e.Needs.Structured)
	for _, b := range e.Candidates {
		id, _ := uuid.Parse(b.BindingID)
		c := gen.RouteCandidate{BindingID: id, Host: b.Host, Model: b.Model, Shape: b.Shape, Position: b.Position, Score: float32(b.Score),
			Fallback: num(b.Fallback), Skip: str(b.Skip), Affinity: flag(b.Affinity),
			KeysDisabled: num(b.KeysDisabled), KeysUnusable: num(b.KeysUnusable), KeysNotGranted: num(b.KeysNotGranted), KeysHeld: num(b.KeysHeld)}
		if len(b.Keys) > 0 {
			keys := b.Keys
			c.Keys = &keys
		}
		out.Candidates = append(out.Candidates, c)
	}
	if len(e.Dropped) > 0 {
		d := make([]gen.RouteDroppedFallback, 0, len(e.Dropped))
		for _, x := range e.Dropped {
			d = append(d, gen.RouteDroppedFallback{Model: x.Model, Why: x.Why})
		}
		out.DroppedFallbacks = &d
	}
	if ch := e.Chosen; ch != nil {
		id, _ := uuid.Parse(ch.BindingID)
		out.Chosen = &gen.RouteChoice{BindingID: id, Host: ch.Host, Model: ch.Model, HostKey: ch.HostKey, Slot: ch.Slot, Affinity: gen.RouteChoiceAffinity(ch.Affinity)}
	}
	return out
}
