package controlapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
	gen "github.com/relay-llm/relay/openapi/controlgen"
)

// POST /api/route/explain and the console's explain tool share explain:
// the caller resolved as a request's would be, then Config.Explain on the
// pod's snapshot and breakers. relay serve wires planes.Explainer, which
// calls the function the inference plane's decision is built from
// (routing.Router.ExplainBody), so an explain says what a request sent now
// would get; the control plane takes it as a value and never links the
// router.

// Explainer routes q as the inference plane would, sending nothing, and
// explains it. The error is a failure to explain; a request that would be
// refused is an explanation with its Refusal.
type Explainer func(q ExplainQuery) (Explained, error)

// ExplainQuery is one request to route without sending it.
type ExplainQuery struct {
	Snapshot *snapshot.Snapshot
	Policy   *snapshot.Policy // nil: none applies, nothing is granted
	Model    string           // "": the body's
	Inbound  wire.Inbound
	Body     []byte // the request as a caller would send it: its needs, session identity and hint
	Header   http.Header
	Held     []HeldKey // nil: no breakers, every key is ready
	Now      time.Time
}

// HeldKey is a host key at one secret version whose breaker holds it now:
// for one upstream model, or for every model when Model is empty.
type HeldKey struct {
	HostKeyID     uuid.UUID
	SecretVersion int
	Model         string
}

// Explained is the router's explanation of an ExplainQuery.
type Explained struct {
	// JSON is the explanation as the router encodes it (RouteExplanation
	// in control.yaml); POST /api/route/explain answers with it as it is.
	JSON    json.RawMessage
	Refusal string // the error a request would get; empty when it routes
	// The fields the console shows, from the same explanation.
	Model, Strategy, StrategyFrom, Affinity, SessionFrom string
	// Bindings are the candidates in routing order; UpstreamModel and First
	// are left for the control plane to fill.
	Bindings []RouteCandidate
}

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
	SnapshotVersion uint64          `json:"snapshot_version"`
	Credential      string          `json:"credential,omitempty"`
	CredentialState string          `json:"credential_state"`
	Policy          string          `json:"policy,omitempty"`
	PolicyFrom      string          `json:"policy_from,omitempty"`
	Refusal         string          `json:"refusal,omitempty"`
	Explanation     json.RawMessage `json:"explanation"`
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
// console's view (RouteExplanation) and the router's own, as JSON.
func (s *Server) explain(ctx context.Context, q RouteQuery) (RouteExplanation, json.RawMessage, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return RouteExplanation{}, nil, err
	}
	if !c.Can(rbac.Read, rbac.System()) {
		return RouteExplanation{}, nil, forbidden(rbac.Need(rbac.Read, rbac.System()))
	}
	if q.Model == "" && len(q.Body) == 0 {
		return RouteExplanation{}, nil, invalid("choose a model, or give the request body", "model", "body")
	}
	if (q.RelayKeyID == nil) == (q.PolicyID == nil) {
		return RouteExplanation{}, nil, invalid("choose a relay key or a policy", "relay_key_id", "policy_id")
	}
	snap := s.currentSnapshot()
	if snap == nil {
		return RouteExplanation{}, nil, &apiError{status: http.StatusNotImplemented, code: codeNotImplemented, message: "this control plane has no snapshot to route on"}
	}
	if s.cfg.Explain == nil {
		return RouteExplanation{}, nil, &apiError{status: http.StatusNotImplemented, code: codeNotImplemented, message: "this control plane has no router to explain with"}
	}
	now := s.now()
	out := RouteExplanation{SnapshotVersion: snap.Version(), Model: q.Model, CredentialState: "ok"}
	policy, err := s.explainPolicy(snap, &q, &out, now)
	if err != nil {
		return RouteExplanation{}, nil, err
	}
	in := q.Inbound
	if in == wire.InboundNone {
		in = wire.InboundChat
	}
	body := q.Body
	if len(body) == 0 {
		body = []byte(`{}`) // a model alone: no needs, no session
	}
	e, err := s.cfg.Explain(ExplainQuery{Snapshot: snap, Policy: policy, Model: q.Model, Inbound: in,
		Body: body, Header: q.Header, Held: s.heldKeys(now), Now: now})
	if err != nil {
		return RouteExplanation{}, nil, fmt.Errorf("explain the route: %w", err)
	}
	out.Refusal = e.Refusal
	if out.CredentialState != "ok" {
		out.Refusal = "The relay key would be refused: " + out.CredentialState + "."
	}
	out.Model = e.Model
	s.consoleCandidates(snap, &out, &e)
	return out, e.JSON, nil
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
func (s *Server) consoleCandidates(snap *snapshot.Snapshot, out *RouteExplanation, e *Explained) {
	out.Strategy, out.StrategyFrom, out.Affinity, out.SessionFrom = e.Strategy, e.StrategyFrom, e.Affinity, e.SessionFrom
	first := true
	for _, rc := range e.Bindings {
		if bd := snap.Binding(rc.BindingID); bd != nil {
			rc.UpstreamModel = bd.UpstreamModel
		}
		if rc.Skip == "" {
			rc.First, first = first && out.Refusal == "", false
		}
		out.Bindings = append(out.Bindings, rc)
	}
	if out.Bindings == nil && e.Model == "" {
		out.Model = ""
	}
}
