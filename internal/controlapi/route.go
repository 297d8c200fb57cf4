package controlapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/relay-llm/relay/internal/guardrail"
	"github.com/relay-llm/relay/internal/rbac"
	"github.com/relay-llm/relay/internal/snapshot"
	"github.com/relay-llm/relay/internal/wire"
	"github.com/relay-llm/relay/openapi/models"
)

// POST /api/route/explain (the console's explain tool calls it too): the
// caller resolved as a request's would be, then Config.Explain on the pod's
// snapshot and breakers. relay serve wires planes.Explainer, which
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
	Project  uuid.UUID        // the relay key's project, which scopes its session; zero for a policy alone
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
}

// routeQuery is one explain: the caller (a relay key, or a policy as a
// project's policy binding would give it) and the request as a caller would
// send it — its model, endpoint, body and headers.
type routeQuery struct {
	RelayKeyID *uuid.UUID
	PolicyID   *uuid.UUID
	Model      string       // "": the body's
	Inbound    wire.Inbound // InboundNone: chat completions
	Body       []byte
	Header     http.Header
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
// describes as RouteExplanation; explain fills it.
type routeExplainResult struct {
	SnapshotVersion uint64          `json:"snapshot_version"`
	Credential      string          `json:"credential,omitempty"`
	CredentialState string          `json:"credential_state"`
	Policy          string          `json:"policy,omitempty"`
	PolicyFrom      string          `json:"policy_from,omitempty"`
	Refusal         string          `json:"refusal,omitempty"`
	Content         []string        `json:"content,omitempty"`
	Explanation     json.RawMessage `json:"explanation"`
}

// RouteExplain is the operation of the same name in openapi/control.yaml.
func (v *Service) RouteExplain(ctx context.Context, b *models.RouteExplainRequest) (res models.RouteExplainResult, err error) {
	s, ctx, done, err := v.enter(ctx, "RouteExplain")
	if err != nil {
		return res, err
	}
	defer done(&err)
	q := routeQuery{RelayKeyID: b.RelayKeyID, PolicyID: b.PolicyID, Inbound: wire.InboundChat}
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
	ex, err := s.explain(ctx, q)
	if err != nil {
		return res, err
	}
	// The router's explanation is the answer's, field for field: encode it
	// once and read it back as the generated type.
	raw, err := json.Marshal(ex)
	if err != nil {
		return res, fmt.Errorf("encode the route explanation: %w", err)
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return res, fmt.Errorf("decode the route explanation: %w", err)
	}
	return res, nil
}

// explain routes q as the inference plane would and explains it: who the
// caller is, and the router's own explanation, as JSON.
func (s *Server) explain(ctx context.Context, q routeQuery) (routeExplainResult, error) {
	c, err := callerFrom(ctx)
	if err != nil {
		return routeExplainResult{}, err
	}
	if !c.Can(rbac.Read, rbac.System()) {
		return routeExplainResult{}, forbidden(rbac.Need(rbac.Read, rbac.System()))
	}
	if q.Model == "" && len(q.Body) == 0 {
		return routeExplainResult{}, invalid("choose a model, or give the request body", "model", "body")
	}
	if (q.RelayKeyID == nil) == (q.PolicyID == nil) {
		return routeExplainResult{}, invalid("choose a relay key or a policy", "relay_key_id", "policy_id")
	}
	snap := s.currentSnapshot()
	if snap == nil {
		return routeExplainResult{}, &apiError{status: http.StatusNotImplemented, code: codeNotImplemented, message: "this control plane has no snapshot to route on"}
	}
	if s.cfg.Explain == nil {
		return routeExplainResult{}, &apiError{status: http.StatusNotImplemented, code: codeNotImplemented, message: "this control plane has no router to explain with"}
	}
	now := s.now()
	out := routeExplainResult{SnapshotVersion: snap.Version(), CredentialState: "ok"}
	policy, err := s.explainPolicy(snap, &q, &out, now)
	if err != nil {
		return routeExplainResult{}, err
	}
	in := q.Inbound
	if in == wire.InboundNone {
		in = wire.InboundChat
	}
	body := q.Body
	if len(body) == 0 {
		body = []byte(`{}`) // a model alone: no needs, no session
	}
	var project uuid.UUID
	if q.RelayKeyID != nil {
		project = snap.RelayKey(*q.RelayKeyID).ProjectID // explainPolicy found it
	}
	e, err := s.cfg.Explain(ExplainQuery{Snapshot: snap, Policy: policy, Project: project, Model: q.Model, Inbound: in,
		Body: body, Header: q.Header, Held: s.heldKeys(now), Now: now})
	if err != nil {
		return routeExplainResult{}, fmt.Errorf("explain the route: %w", err)
	}
	out.Refusal = e.Refusal
	if out.CredentialState != "ok" {
		out.Refusal = "The relay key would be refused: " + out.CredentialState + "."
	}
	out.Explanation = e.JSON
	out.Content = explainContent(policy, q.Body)
	if line := explainSemantic(snap, policy, q.Model, q.Body); line != "" {
		out.Content = append(out.Content, line)
	}
	return out, nil
}

// explainPolicy resolves the policy q's caller would route with, and
// notes in out where it came from.
func (s *Server) explainPolicy(snap *snapshot.Snapshot, q *routeQuery, out *routeExplainResult, now time.Time) (*snapshot.Policy, error) {
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
		out.Policy = policy.Slug
	} else {
		out.PolicyFrom = "none applies: nothing is granted"
	}
	return policy, nil
}

// explainContent says what policy p's content controls would do with a
// request of body: its input guardrails' verdict on the body's string
// values (every one, a little more than the proxy reads for the shapes it
// decodes), the webhooks it would ask, and whether the response cache
// would answer a repeat of it. It never names the matched text.
func explainContent(p *snapshot.Policy, body []byte) []string {
	if p == nil {
		return nil
	}
	var out []string
	g := p.Guardrails
	if g != nil {
		if g.MaxPromptBytes > 0 && len(body) > g.MaxPromptBytes {
			out = append(out, "would be blocked by guardrail max_prompt_bytes (the body is larger than "+strconv.Itoa(g.MaxPromptBytes)+" bytes)")
		}
		var texts []string
		guardrail.Strings(body, func(s string) { texts = append(texts, s) })
		seen := map[string]bool{}
		for _, t := range texts {
			_, _, fs := guardrail.Check(g.Input, t, nil)
			for _, f := range fs {
				line := "would be logged by guardrail " + f.Rule + " (" + string(f.Kind) + " found)"
				switch f.Action {
				case guardrail.ActionBlock:
					line = "would be blocked by guardrail " + f.Rule + " (" + string(f.Kind) + " found)"
				case guardrail.ActionRedact:
					line = "would be redacted by guardrail " + f.Rule + " (" + string(f.Kind) + " found)"
				}
				if !seen[line] {
					seen[line] = true
					out = append(out, line)
				}
			}
		}
		for _, r := range guardrail.Hooks(g.Input) {
			out = append(out, "would ask the webhook guardrail "+r.Name+" (fails "+failMode(r.Webhook)+")")
		}
		if hooks := guardrail.Hooks(g.Output); len(hooks) > 0 && g.HoldsWhole() {
			out = append(out, "a streamed answer would be held whole for the webhook guardrail "+hooks[0].Name)
		}
	}
	switch {
	case p.Cache == nil:
	case g != nil && !g.CacheSafe():
		out = append(out, "would not use the response cache: the policy's guardrails redact requests or check answers")
	default:
		out = append(out, "would be answered from cache when a byte-identical deterministic request of the same scope is there (the response cache is on)")
	}
	return out
}

// explainSemantic says which of policy p's semantic cache domains would
// look a request of body up (the first that takes it, as the proxy
// chooses), or "" when none would. model is the one asked for when the
// body names none.
func explainSemantic(snap *snapshot.Snapshot, p *snapshot.Policy, model string, body []byte) string {
	if p == nil || p.Cache == nil || len(p.Cache.Semantic) == 0 {
		return ""
	}
	var b struct {
		Model    string            `json:"model"`
		Metadata map[string]string `json:"metadata"`
	}
	_ = json.Unmarshal(body, &b) // metadata that is not all strings takes no domain that asks for tags
	if b.Model != "" {
		model = b.Model
	}
	m := snap.ModelByName(model)
	if m == nil || !p.Cache.Caches(m.ID) {
		return ""
	}
	for i := range p.Cache.Semantic {
		d := &p.Cache.Semantic[i]
		if !d.Takes(m.ID, b.Metadata) {
			continue
		}
		line := "would be looked up in the semantic cache's domain " + d.Name + " after an exact miss: its last user turn embedded by "
		if e := snap.Model(d.EmbeddingsModel); e != nil {
			line += e.Name
		} else {
			line += "a model the catalog no longer has (so: a miss)"
		}
		line += ", answered by an earlier request of the same scope at similarity " + strconv.FormatFloat(d.Threshold, 'f', -1, 64) + " or more"
		if d.Systems != nil {
			line += ", when its system prompt is one the domain names"
		}
		return line
	}
	return ""
}

func failMode(w *guardrail.Webhook) string {
	if w.FailOpen {
		return "open"
	}
	return "closed"
}
