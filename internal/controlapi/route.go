package controlapi

import (
	"context"
	"encoding/json"
	"fmt"
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
var inbounds = map[string]wire.Inbound{
	"openai_chat":            wire.InboundChat,
	"openai_responses":       wire.InboundResponses,
	"openai_embeddings":      wire.InboundEmbeddings,
	"anthropic_messages":     wire.InboundMessages,
	"anthropic_count_tokens": wire.InboundCountTokens,
	"relay_generate":         wire.InboundGenerate,
	"gemini":                 wire.InboundGemini,
}

// routeExplainResult is the answer's JSON (RouteExplainResult in
// control.yaml); the explanation is the router's own, whose JSON the spec
// describes as RouteExplanation.
type routeExplainResult struct {
	SnapshotVersion uint64              `json:"snapshot_version"`
	Credential      string              `json:"credential,omitempty"`
	CredentialState string              `json:"credential_state"`
	Policy          string              `json:"policy,omitempty"`
	PolicyFrom      string              `json:"policy_from,omitempty"`
	Refusal         string              `json:"refusal,omitempty"`
	Explanation     routing.Explanation `json:"explanation"`
}

// RouteExplain implements gen.StrictServerInterface.
func (s *Server) RouteExplain(ctx context.Context, req gen.RouteExplainRequestObject) (gen.RouteExplainResponseObject, error) {
	b := req.Body
	q := RouteQuery{RelayKeyID: b.RelayKeyID, PolicyID: b.PolicyID, Inbound: wire.InboundChat}
	if b.Model != nil {
		q.Model = *b.Model
	}
	if b.Inbound != nil {
		q.Inbound = inbounds[string(*b.Inbound)]
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
	// The router's explanation is the answer's, field for field: encode it
	// once and read it back as the generated type.
	raw, err := json.Marshal(routeExplainResult{
		SnapshotVersion: out.SnapshotVersion, Credential: out.Credential, CredentialState: out.CredentialState,
		Policy: out.Policy, PolicyFrom: out.PolicyFrom, Refusal: out.Refusal, Explanation: e,
	})
	if err != nil {
		return nil, fmt.Errorf("encode the route explanation: %w", err)
	}
	var res gen.RouteExplain200JSONResponse
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("decode the route explanation: %w", err)
	}
	return res, nil
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
